package lbdtest

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	vmysql "github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// memHandler answers MySQL protocol commands from the vitess listener by
// running them on a go-mysql-server engine. It keeps one session per
// connection. It covers what database/sql clients use: text queries
// (several per COM_QUERY when the client asks for multi-statements),
// prepared statements, USE / COM_INIT_DB and COM_RESET_CONNECTION.
// Prepared statements are checked only for syntax at prepare time;
// everything else is reported when they execute.
//
// The in-memory storage is not safe for concurrent use: each session
// works on its own copy of the tables it touches and writes them back
// whole when its transaction commits. So statements run one at a time
// (exec), which makes autocommit statements behave as on a real server.
// Explicit transactions are not isolated from each other: a transaction
// that commits a table overwrites changes other connections made to that
// table since the transaction first used it.
type memHandler struct {
	engine *sqle.Engine
	pro    *memory.DbProvider
	addr   string // server address recorded in sessions

	exec sync.Mutex // held while the engine works

	mu       sync.Mutex
	sessions map[uint32]gms.Session
	pid      atomic.Uint64
}

var _ vmysql.Handler = (*memHandler)(nil)

func newMemHandler(engine *sqle.Engine, pro *memory.DbProvider, addr string) *memHandler {
	return &memHandler{engine: engine, pro: pro, addr: addr, sessions: make(map[uint32]gms.Session)}
}

// session returns the connection's session, creating it on first use
// (after authentication, when the user is known).
func (h *memHandler) session(c *vmysql.Conn) gms.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.sessions[c.ConnectionID]; ok {
		return s
	}
	s := h.newSession(c)
	h.sessions[c.ConnectionID] = s
	return s
}

func (h *memHandler) newSession(c *vmysql.Conn) gms.Session {
	client := gms.Client{Capabilities: c.Capabilities}
	if u, ok := c.UserData.(gms.MysqlConnectionUser); ok {
		client.User, client.Address = u.User, u.Host
	}
	s := memory.NewSession(gms.NewBaseSessionWithClientServer(h.addr, client, c.ConnectionID), h.pro)
	s.SetConnectionId(c.ConnectionID)
	return s
}

// newContext builds the query context for one command on c.
func (h *memHandler) newContext(ctx context.Context, c *vmysql.Conn, query string) *gms.Context {
	return gms.NewContext(ctx,
		gms.WithSession(h.session(c)),
		gms.WithPid(h.pid.Add(1)),
		gms.WithQuery(query),
		gms.WithMemoryManager(h.engine.MemoryManager),
	)
}

// NewConnection starts c in autocommit mode with no transaction open, as a MySQL session
// starts, so that its OK and EOF packets carry those status flags from the first command on.
func (h *memHandler) NewConnection(c *vmysql.Conn) {
	c.StatusFlags |= uint16(vmysql.ServerStatusAutocommit)
}

// setStatusFlags sets the status flags the answer to a statement carries from the session
// after it, as MySQL does (and as go-mysql-server's own handler does): autocommit, and
// whether a transaction is open. Clients read them; lbd's read retries rely on them.
func setStatusFlags(sctx *gms.Context, c *vmysql.Conn) {
	auto := true
	if v, err := sctx.GetSessionVariable(sctx, gms.AutoCommitSessionVar); err == nil {
		if b, err := gms.ConvertToBool(sctx, v); err == nil {
			auto = b
		}
	}
	if auto {
		c.StatusFlags |= uint16(vmysql.ServerStatusAutocommit)
	} else {
		c.StatusFlags &^= uint16(vmysql.ServerStatusAutocommit)
	}
	if sctx.GetTransaction() != nil {
		c.StatusFlags |= uint16(vmysql.ServerInTransaction)
	} else {
		c.StatusFlags &^= uint16(vmysql.ServerInTransaction)
	}
}

func (h *memHandler) ConnectionClosed(c *vmysql.Conn) {
	h.exec.Lock()
	defer h.exec.Unlock()
	h.mu.Lock()
	s, ok := h.sessions[c.ConnectionID]
	delete(h.sessions, c.ConnectionID)
	h.mu.Unlock()
	h.engine.CloseSession(c.ConnectionID)
	if ok {
		gms.SessionEnd(s)
	}
}

func (h *memHandler) ConnectionAborted(*vmysql.Conn, string) error { return nil }

func (h *memHandler) ComInitDB(c *vmysql.Conn, name string) error {
	h.exec.Lock()
	defer h.exec.Unlock()
	return h.useDatabase(h.newContext(context.Background(), c, ""), name)
}

func (h *memHandler) useDatabase(ctx *gms.Context, name string) error {
	db, err := h.pro.Database(ctx, name)
	if err != nil {
		return sqlError(err)
	}
	ctx.Session.SetCurrentDatabase(name)
	return sqlError(ctx.Session.UseDatabase(ctx, db))
}

func (h *memHandler) ComQuery(ctx context.Context, c *vmysql.Conn, query string, callback vmysql.ResultSpoolFn) error {
	if isPing(query) {
		// A health probe is answered without queueing behind the engine, as a real proxy
		// answers it while busy; otherwise probes would time out whenever the test load is high.
		return callback(pingResult(), false)
	}
	if res, ok := literalResult(query); ok {
		// So is a role check, which the relay turns into a SELECT of one literal (see Role),
		return callback(res, false)
	}
	if res, ok := literalTable(query); ok {
		// or of rows of two quoted literals (Galera's status rows).
		return callback(res, false)
	}
	res, err := h.execute(ctx, c, query, nil, nil)
	if err != nil {
		return err
	}
	return callback(res, false)
}

// isPing reports lbd's probe query and a bare SELECT 1.
func isPing(query string) bool {
	q := strings.TrimSpace(query)
	return q == "/* ping */ SELECT 1" || strings.EqualFold(q, "SELECT 1")
}

// pingResult is the answer to isPing's queries: one INT column "1" holding 1.
func pingResult() *sqltypes.Result {
	return &sqltypes.Result{
		Fields: []*querypb.Field{{
			Name: "1", Type: querypb.Type_INT64, Charset: 63, ColumnLength: 1,
			Flags: uint32(querypb.MySqlFlag_NOT_NULL_FLAG | querypb.MySqlFlag_NUM_FLAG),
		}},
		Rows: [][]sqltypes.Value{{sqltypes.NewInt64(1)}},
	}
}

// ComMultiQuery runs the first statement of query and returns the rest,
// which the listener hands back in the next call.
func (h *memHandler) ComMultiQuery(ctx context.Context, c *vmysql.Conn, query string, callback vmysql.ResultSpoolFn) (string, error) {
	h.exec.Lock()
	parsed, first, rest, err := h.engine.Parser.Parse(h.newContext(ctx, c, query), query, true)
	h.exec.Unlock()
	if err != nil {
		return "", sqlError(err)
	}
	if first != "" {
		query = first
	}
	res, err := h.execute(ctx, c, query, parsed, nil)
	if err != nil {
		return "", err
	}
	return rest, callback(res, rest != "")
}

func (h *memHandler) ComPrepare(context.Context, *vmysql.Conn, string, *vmysql.PrepareData) ([]*querypb.Field, error) {
	// The listener has parsed the statement and counted its parameters;
	// result columns are announced when it executes.
	return nil, nil
}

func (h *memHandler) ComStmtExecute(ctx context.Context, c *vmysql.Conn, prepare *vmysql.PrepareData, callback func(*sqltypes.Result) error) error {
	res, err := h.execute(ctx, c, prepare.PrepareStmt, nil, prepare.BindVars)
	if err != nil {
		return err
	}
	return callback(res)
}

func (h *memHandler) WarningCount(c *vmysql.Conn) uint16 {
	return h.session(c).WarningCount()
}

func (h *memHandler) ComResetConnection(c *vmysql.Conn) error {
	h.exec.Lock()
	defer h.exec.Unlock()
	h.mu.Lock()
	old := h.sessions[c.ConnectionID]
	h.sessions[c.ConnectionID] = h.newSession(c)
	h.mu.Unlock()
	h.engine.CloseSession(c.ConnectionID)
	db := ""
	if old != nil {
		db = old.GetCurrentDatabase()
		gms.SessionEnd(old)
	}
	if db == "" {
		return nil
	}
	return h.useDatabase(h.newContext(context.Background(), c, ""), db)
}

func (h *memHandler) ParserOptionsForConnection(c *vmysql.Conn) (sqlparser.ParserOptions, error) {
	h.exec.Lock()
	defer h.exec.Unlock()
	return gms.LoadSqlMode(h.newContext(context.Background(), c, "")).ParserOptions(), nil
}

// execute runs one statement (already parsed when parsed is not nil) with
// optional bind variables and returns its complete result. Only the
// execution holds h.exec: sending the result to a slow client afterwards
// does not hold up other connections.
func (h *memHandler) execute(ctx context.Context, c *vmysql.Conn, query string, parsed sqlparser.Statement, binds map[string]*querypb.BindVariable) (*sqltypes.Result, error) {
	h.exec.Lock()
	defer h.exec.Unlock()
	sctx := h.newContext(ctx, c, query)
	if err := gms.SessionCommandBegin(sctx.Session); err != nil {
		return nil, sqlError(err)
	}
	defer gms.SessionCommandEnd(sctx.Session)

	var bindings map[string]sqlparser.Expr
	if len(binds) > 0 {
		bindings = make(map[string]sqlparser.Expr, len(binds))
		for name, bv := range binds {
			v, err := sqltypes.BindVariableToValue(bv)
			if err != nil {
				return nil, sqlError(err)
			}
			e, err := sqlparser.ExprFromValue(v)
			if err != nil {
				return nil, sqlError(err)
			}
			bindings[name] = e
		}
	}
	schema, iter, _, err := h.engine.QueryWithBindings(sctx, query, parsed, bindings, nil)
	if err != nil {
		return nil, sqlError(err)
	}
	res, err := collectResult(sctx, schema, iter)
	setStatusFlags(sctx, c)
	if err != nil {
		return nil, sqlError(err)
	}
	return res, nil
}

// collectResult drains iter into a wire result. Statements that modify
// data yield a result without fields, which the listener sends as an OK
// packet.
func collectResult(ctx *gms.Context, schema gms.Schema, iter gms.RowIter) (res *sqltypes.Result, err error) {
	defer func() {
		// Closing may commit the statement's transaction.
		if cerr := iter.Close(ctx); err == nil && cerr != nil {
			res, err = nil, cerr
		}
	}()
	if types.IsOkResultSchema(schema) {
		out := &sqltypes.Result{}
		for {
			row, err := iter.Next(ctx)
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			if ok, isOK := row[0].(types.OkResult); isOK {
				out.RowsAffected += ok.RowsAffected
				out.InsertID = ok.InsertID
				if ok.Info != nil {
					out.Info = ok.Info.String()
				}
			}
		}
	}
	out := &sqltypes.Result{Fields: wireFields(ctx, schema)}
	for {
		row, err := iter.Next(ctx)
		if errors.Is(err, io.EOF) {
			out.RowsAffected = uint64(len(out.Rows))
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		vals := make([]sqltypes.Value, len(schema))
		for i, col := range schema {
			if i >= len(row) {
				break
			}
			if vals[i], err = col.Type.SQL(ctx, nil, row[i]); err != nil {
				return nil, err
			}
		}
		out.Rows = append(out.Rows, vals)
	}
}

// wireFields describes result columns for the client.
func wireFields(ctx *gms.Context, schema gms.Schema) []*querypb.Field {
	fields := make([]*querypb.Field, len(schema))
	for i, col := range schema {
		charset := uint32(gms.Collation_Default.CharacterSet())
		if ct, ok := col.Type.(gms.TypeWithCollation); ok {
			charset = uint32(ct.Collation().CharacterSet())
		}
		if types.IsBinaryType(col.Type) {
			charset = uint32(gms.Collation_binary)
		}
		var flags querypb.MySqlFlag
		if !col.Nullable {
			flags |= querypb.MySqlFlag_NOT_NULL_FLAG
		}
		if col.PrimaryKey {
			flags |= querypb.MySqlFlag_PRI_KEY_FLAG
		}
		if col.AutoIncrement {
			flags |= querypb.MySqlFlag_AUTO_INCREMENT_FLAG
		}
		if types.IsUnsigned(col.Type) {
			flags |= querypb.MySqlFlag_UNSIGNED_FLAG
		}
		f := &querypb.Field{
			Name:         col.Name,
			OrgName:      col.Name,
			Table:        col.Source,
			OrgTable:     col.Source,
			Database:     col.DatabaseSource,
			Type:         col.Type.Type(),
			Charset:      charset,
			ColumnLength: col.Type.MaxTextResponseByteLength(ctx),
			Flags:        uint32(flags),
		}
		if dt, ok := col.Type.(gms.DecimalType); ok {
			f.Decimals = uint32(dt.Scale())
		} else if dt, ok := col.Type.(gms.DatetimeType); ok {
			f.Decimals = uint32(dt.Precision())
		}
		fields[i] = f
	}
	return fields
}

// sqlError converts an engine error into the listener's error type, which
// carries the MySQL error number and SQLSTATE. nil stays nil.
func sqlError(err error) error {
	if err == nil {
		return nil
	}
	return gms.CastSQLError(err)
}

// literalSelect matches a SELECT of one integer or one quoted string of words, with an optional
// alias: the shape of the relay's answers to role checks.
var literalSelect = regexp.MustCompile(`(?i)^\s*SELECT\s+(-?[0-9]+|'[A-Za-z_][A-Za-z_ ]*')(?:\s+AS\s+([A-Za-z_][A-Za-z0-9_]*))?\s*$`)

// literalRows matches a SELECT of two quoted strings named by aliases, followed by UNION ALL
// SELECTs of two more: the relay's answer to Galera's status query. literalRow reads each row.
var (
	literalRows = regexp.MustCompile(`(?i)^\s*SELECT\s+'[A-Za-z0-9_/]*'\s+AS\s+([A-Za-z_]+)\s*,\s*'[A-Za-z0-9_/]*'\s+AS\s+([A-Za-z_]+)` +
		`(?:\s+UNION\s+ALL\s+SELECT\s+'[A-Za-z0-9_/]*'\s*,\s*'[A-Za-z0-9_/]*')*\s*$`)
	literalRow = regexp.MustCompile(`(?i)SELECT\s+'([A-Za-z0-9_/]*)'(?:\s+AS\s+[A-Za-z_]+)?\s*,\s*'([A-Za-z0-9_/]*)'`)
)

// literalTable answers a query literalRows matches without the engine: its rows, two VARCHAR
// columns named by the first SELECT's aliases.
func literalTable(query string) (*sqltypes.Result, bool) {
	m := literalRows.FindStringSubmatch(query)
	if m == nil {
		return nil, false
	}
	res := &sqltypes.Result{Fields: []*querypb.Field{
		{Name: m[1], Type: querypb.Type_VARCHAR, Charset: 33, ColumnLength: 256},
		{Name: m[2], Type: querypb.Type_VARCHAR, Charset: 33, ColumnLength: 256},
	}}
	for _, row := range literalRow.FindAllStringSubmatch(query, -1) {
		res.Rows = append(res.Rows, []sqltypes.Value{sqltypes.NewVarChar(row[1]), sqltypes.NewVarChar(row[2])})
	}
	return res, true
}

// literalResult answers a query literalSelect matches without the engine: one row, one column.
func literalResult(query string) (*sqltypes.Result, bool) {
	m := literalSelect.FindStringSubmatch(query)
	if m == nil {
		return nil, false
	}
	value, name := m[1], m[2]
	if name == "" {
		name = value
	}
	if value[0] == '\'' {
		word := value[1 : len(value)-1]
		return &sqltypes.Result{
			Fields: []*querypb.Field{{Name: name, Type: querypb.Type_VARCHAR, Charset: 33, ColumnLength: uint32(4 * len(word))}},
			Rows:   [][]sqltypes.Value{{sqltypes.NewVarChar(word)}},
		}, true
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return nil, false
	}
	return &sqltypes.Result{
		Fields: []*querypb.Field{{
			Name: name, Type: querypb.Type_INT64, Charset: 63, ColumnLength: uint32(len(value)),
			Flags: uint32(querypb.MySqlFlag_NOT_NULL_FLAG | querypb.MySqlFlag_NUM_FLAG),
		}},
		Rows: [][]sqltypes.Value{{sqltypes.NewInt64(n)}},
	}, true
}
