package mysqlfake

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/lbd-go/lbd/internal/wire"
)

// capabilities the fake announces; CLIENT_DEPRECATE_EOF is added by Config.DeprecateEOF.
const capabilities = ClientLongPassword | ClientFoundRows | ClientLongFlag | ClientConnectWithDB |
	ClientProtocol41 | ClientTransactions | ClientSecureConnection | ClientMultiStatements |
	ClientMultiResults | ClientPluginAuth | ClientConnectAttrs | ClientPluginAuthLenenc

const nativePlugin = "mysql_native_password"

type stmt struct {
	text    string
	params  int
	columns int
	types   []byte // parameter types from the last execute that sent them
}

// conn serves one client connection; it runs on one goroutine.
type conn struct {
	srv      *Server
	nc       net.Conn // what packets are read from and written to: under, or compressed over it
	under    net.Conn // raw, or TLS over it
	raw      net.Conn // the TCP connection
	n        int
	salt     []byte
	caps     uint32
	user     string
	stmts    map[uint32]*stmt
	nextStmt uint32
	inTx     bool // a transaction begun by BEGIN or START TRANSACTION is open (trackTx)
}

// segment is one phase's share of an answer.
type segment struct {
	phase Phase
	bytes []byte
}

func (c *conn) run() {
	cmd := Command{Conn: c.n}
	if !c.send(cmd, segment{PhaseAccept, nil}) {
		return
	}
	c.salt = make([]byte, 20) // printable and without NUL, as servers send it
	for i := range c.salt {
		c.salt[i] = 'A' + byte((c.n*7+i*13)%26)
	}
	if !c.send(cmd, segment{PhaseGreeting, Packet(0, c.greeting())}) {
		return
	}
	seq := byte(1)
	resp, err := c.readPacket(time.Now().Add(c.srv.cfg.IOTimeout), seq)
	if err != nil {
		return
	}
	if tc := c.srv.cfg.TLS; tc != nil && len(resp) == 32 && binary.LittleEndian.Uint32(resp)&ClientSSL != 0 {
		// The SSL request: TLS, then the handshake response again, numbered on.
		t := tls.Server(c.raw, tc)
		t.SetDeadline(time.Now().Add(c.srv.cfg.IOTimeout))
		if t.Handshake() != nil {
			return
		}
		t.SetDeadline(time.Time{})
		c.nc, c.under = t, t
		c.srv.tlsConns.Add(1)
		seq++
		if resp, err = c.readPacket(time.Now().Add(c.srv.cfg.IOTimeout), seq); err != nil {
			return
		}
	}
	answer, ok := c.authenticate(resp)
	seq++
	if ok && c.srv.cfg.Plugin == pluginCachingSHA2 {
		// The full authentication: over TLS the client sends the password itself.
		if !c.write(Packet(seq, []byte{0x01, 0x04})) {
			return
		}
		pw, err := c.readPacket(time.Now().Add(c.srv.cfg.IOTimeout), seq+1)
		if err != nil {
			return
		}
		answer, ok = c.clearPassword(pw)
		seq += 2
	}
	if !c.send(cmd, segment{PhaseAuth, Packet(seq, answer)}) || !ok {
		return
	}
	if c.srv.cfg.Compress && c.caps&ClientCompress != 0 {
		c.nc = &compressed{Conn: c.under, z: wire.NewCompression(c.under)}
		c.srv.zConns.Add(1)
	}
	for {
		p, err := c.readPacket(time.Now().Add(c.srv.cfg.IdleTimeout), 0)
		if err != nil || len(p) == 0 {
			return
		}
		if p[0] == ComQuit {
			return
		}
		c.srv.commands.Add(1)
		if p[0] == ComStmtClose {
			if len(p) >= 5 {
				delete(c.stmts, binary.LittleEndian.Uint32(p[1:]))
			}
			continue // no answer
		}
		cmd, segs := c.answer(p)
		if !c.sendAnswer(cmd, segs) {
			return
		}
	}
}

// sendAnswer sends the segments of one command's answer, or the whole answer replaced by a
// PhaseCommand fault.
func (c *conn) sendAnswer(cmd Command, segs []segment) bool {
	if f := c.srv.fault(PhaseCommand, cmd); f != nil {
		var all []byte
		for _, s := range segs {
			all = append(all, s.bytes...)
		}
		return c.fire(f, all)
	}
	if _, z := c.nc.(*compressed); !z && !c.srv.armed(cmd, segs) {
		// One write for the whole answer, as a server flushes its buffer once per small
		// result: the client reads a short result's end together with its rows. (Compressed,
		// each part goes in a flush of its own, so the packets inside are numbered on from the
		// compressed packets' count, as servers do.)
		var all []byte
		for _, s := range segs {
			all = append(all, s.bytes...)
		}
		return c.write(all)
	}
	for _, s := range segs {
		if !c.send(cmd, s) {
			return false
		}
	}
	return true
}

// send sends one segment, or what an armed fault puts in its place; false ends the connection.
func (c *conn) send(cmd Command, s segment) bool {
	if f := c.srv.fault(s.phase, cmd); f != nil {
		return c.fire(f, s.bytes)
	}
	return c.write(s.bytes)
}

func (c *conn) fire(f *Fault, normal []byte) bool {
	b := normal
	if f.Bytes != nil {
		b = f.Bytes(append([]byte(nil), normal...))
	}
	w := c.nc
	if f.Beneath {
		w = c.under
	}
	if !c.writeTo(w, b) {
		return false
	}
	switch f.After {
	case Stall:
		c.under.SetReadDeadline(time.Now().Add(c.srv.cfg.StallTimeout))
		io.Copy(io.Discard, c.under) // until the client leaves, Close, or the stall timeout
		return false
	case Close:
		return false
	case Reset:
		if tc, ok := c.raw.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		return false
	}
	return true
}

func (c *conn) write(b []byte) bool { return c.writeTo(c.nc, b) }

func (c *conn) writeTo(w net.Conn, b []byte) bool {
	if len(b) == 0 {
		return true
	}
	w.SetWriteDeadline(time.Now().Add(c.srv.cfg.IOTimeout))
	_, err := w.Write(b)
	return err == nil
}

// compressed is a connection speaking the compressed protocol: each Write goes out as one or
// more compressed packets (so a fault's bytes arrive inside the framing), reads are inflated.
// Each Write is a flush of a server's buffer, after which MySQL and MariaDB number the packets
// inside on from the compressed packets' count (net_flush sets pkt_nr to compress_pkt_nr):
// the fake does the same, so a client that checks those numbers as on a plain connection
// fails here as there.
type compressed struct {
	net.Conn
	z    *wire.Compression
	walk wire.SeqWalker
}

func (c *compressed) Read(b []byte) (int, error) { return c.z.Read(b) }

func (c *compressed) Write(b []byte) (int, error) {
	b = append([]byte(nil), b...)
	nr := c.z.Seq()
	c.walk.Walk(b, func(seq *byte) { *seq = nr; nr++ })
	return c.z.Write(b)
}

// readPacket reads one client packet; a payload over maxCommand or split over several packets
// ends the connection.
func (c *conn) readPacket(deadline time.Time, wantSeq byte) ([]byte, error) {
	c.nc.SetReadDeadline(deadline)
	var h [4]byte
	if _, err := io.ReadFull(c.nc, h[:1]); err != nil {
		return nil, err
	}
	c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.IOTimeout))
	if _, err := io.ReadFull(c.nc, h[1:]); err != nil {
		return nil, err
	}
	size := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if size > maxCommand {
		return nil, fmt.Errorf("mysqlfake: client packet of %d bytes", size)
	}
	if h[3] != wantSeq {
		return nil, fmt.Errorf("mysqlfake: client packet numbered %d, want %d", h[3], wantSeq)
	}
	p := make([]byte, size)
	if _, err := io.ReadFull(c.nc, p); err != nil {
		return nil, err
	}
	return p, nil
}

func (c *conn) greeting() []byte {
	caps := capabilities
	if c.srv.cfg.TLS != nil {
		caps |= ClientSSL
	}
	if c.srv.cfg.Compress {
		caps |= ClientCompress
	}
	if c.srv.cfg.DeprecateEOF {
		caps |= ClientDeprecateEOF
	}
	if c.srv.cfg.SessionTrack {
		caps |= ClientSessionTrack
	}
	b := []byte{10}
	b = append(b, "8.0.36-mysqlfake"...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(c.n))
	b = append(b, c.salt[:8]...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps))
	b = append(b, 33)                               // utf8_general_ci
	b = binary.LittleEndian.AppendUint16(b, 0x0002) // SERVER_STATUS_AUTOCOMMIT
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, 21) // length of the auth plugin data
	b = append(b, make([]byte, 10)...)
	b = append(b, c.salt[8:]...)
	b = append(b, 0)
	plugin := c.srv.cfg.Plugin
	if plugin == "" {
		plugin = nativePlugin
	}
	b = append(b, plugin...)
	return append(b, 0)
}

var errShort = errors.New("mysqlfake: handshake response too short")

// authenticate reads a HandshakeResponse41 and returns the answer payload and whether the
// client is in.
func (c *conn) authenticate(p []byte) ([]byte, bool) {
	user, auth, err := c.parseHandshakeResponse(p)
	if err != nil {
		return ErrPayload(1043, "08S01", "Bad handshake"), false
	}
	c.user = user
	cfg := c.srv.cfg
	switch cfg.Plugin {
	case pluginCachingSHA2:
		return nil, true // the full authentication follows
	case pluginSHA256:
		return c.clearPassword(auth)
	}
	if cfg.User != "" && (user != cfg.User || !bytes.Equal(auth, nativePassword(c.salt, cfg.Password))) {
		return c.denied(len(auth) > 0), false
	}
	return OKPayload(), true
}

// Auth plugins the fake can name besides mysql_native_password.
const (
	pluginCachingSHA2 = "caching_sha2_password"
	pluginSHA256      = "sha256_password"
)

// clearPassword checks a password sent in clear (NUL-terminated), which the fake accepts over
// TLS only.
func (c *conn) clearPassword(p []byte) ([]byte, bool) {
	if c.under == c.raw {
		return ErrPayload(1045, "28000", "mysqlfake: a password in clear needs TLS"), false
	}
	pw, _ := bytes.CutSuffix(p, []byte{0})
	if cfg := c.srv.cfg; cfg.User != "" && (c.user != cfg.User || string(pw) != cfg.Password) {
		return c.denied(len(pw) > 0), false
	}
	return OKPayload(), true
}

func (c *conn) denied(withPassword bool) []byte {
	return ErrPayload(1045, "28000", fmt.Sprintf("Access denied for user '%s'@'127.0.0.1' (using password: %s)", c.user, yesNo(withPassword)))
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

func (c *conn) parseHandshakeResponse(p []byte) (user string, auth []byte, err error) {
	if len(p) < 32 {
		return "", nil, errShort
	}
	c.caps = binary.LittleEndian.Uint32(p)
	rest := p[32:]
	nul := bytes.IndexByte(rest, 0)
	if nul < 0 {
		return "", nil, errShort
	}
	user, rest = string(rest[:nul]), rest[nul+1:]
	switch {
	case c.caps&ClientPluginAuthLenenc != 0:
		n, size, ok := readLenencInt(rest)
		if !ok || uint64(len(rest)-size) < n {
			return "", nil, errShort
		}
		auth = rest[size : size+int(n)]
	case c.caps&ClientSecureConnection != 0:
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return "", nil, errShort
		}
		auth = rest[1 : 1+int(rest[0])]
	default:
		if nul = bytes.IndexByte(rest, 0); nul >= 0 {
			auth = rest[:nul]
		}
	}
	return user, auth, nil
}

func (c *conn) deprecateEOF() bool {
	return c.srv.cfg.DeprecateEOF && c.caps&ClientDeprecateEOF != 0
}

// answer builds the answer to one command, split into its phases.
func (c *conn) answer(p []byte) (Command, []segment) {
	cmd := Command{Op: p[0], Conn: c.n}
	ok := func() []segment { return []segment{{PhaseAnswer, Packet(1, OKPayload())}} }
	fail := func(num uint16, state, msg string) []segment {
		return []segment{{PhaseAnswer, Packet(1, ErrPayload(num, state, msg))}}
	}
	switch p[0] {
	case ComPing, ComInitDB, ComStmtReset:
		return cmd, ok()
	case ComQuery:
		cmd.Text = string(p[1:])
		res := c.srv.cfg.Answer(cmd.Text)
		c.trackTx(cmd.Text, res)
		return cmd, c.results(res, false)
	case ComStmtPrepare:
		cmd.Text = string(p[1:])
		return cmd, c.prepare(cmd.Text)
	case ComStmtExecute:
		if len(p) < 5 {
			return cmd, fail(1243, "HY000", "Unknown prepared statement handler")
		}
		st := c.stmts[binary.LittleEndian.Uint32(p[1:])]
		if st == nil {
			return cmd, fail(1243, "HY000", "Unknown prepared statement handler")
		}
		cmd.Text = st.text
		args, err := st.arguments(p[5:])
		if err != nil {
			return cmd, fail(1210, "HY000", "Incorrect arguments to mysqld_stmt_execute: "+err.Error())
		}
		return cmd, c.results(c.srv.cfg.Answer(bind(st.text, args)), true)
	}
	return cmd, fail(1047, "08S01", "Unknown command")
}

// results builds the answer to a query: an OK, an ERR or a result set (text, or for binary a
// prepared statement's), followed by the next statement's when res.Next is set. The sequence
// numbers run on through every result of the answer.
func (c *conn) results(res *Result, binaryRows bool) []segment {
	seq := byte(1)
	var segs []segment
	for ; ; res = res.Next {
		more := res != nil && res.Next != nil && res.Err == nil
		status := uint16(statusAutocommit)
		if c.inTx {
			status |= statusInTrans
		}
		if more {
			status |= statusMoreResults
		}
		switch {
		case res != nil && res.Err != nil:
			segs = append(segs, segment{PhaseAnswer, Packet(seq, ErrPayload(res.Err.Number, res.Err.State, res.Err.Message))})
			return segs
		case res == nil || res.Columns == nil:
			segs = append(segs, segment{PhaseAnswer, Packet(seq, c.withSession(okPayload(status), res))})
			seq++
		default:
			var rs []segment
			rs, seq = c.resultSet(res, binaryRows, seq, status)
			segs = append(segs, rs...)
		}
		if !more {
			return segs
		}
	}
}

// trackTx follows the transaction a text opens or ends, as a server's status flags do: BEGIN
// and START TRANSACTION open one, COMMIT and ROLLBACK end it, when the answer is no error. Only
// a text that starts with the keyword counts; the fake runs no SQL.
func (c *conn) trackTx(text string, res *Result) {
	if res != nil && res.Err != nil {
		return
	}
	word := strings.ToUpper(strings.TrimSpace(text))
	switch {
	case strings.HasPrefix(word, "BEGIN"), strings.HasPrefix(word, "START TRANSACTION"):
		c.inTx = true
	case strings.HasPrefix(word, "COMMIT"), strings.HasPrefix(word, "ROLLBACK"):
		c.inTx = false
	}
}

// Server status flags (MySQL's SERVER_STATUS_IN_TRANS, SERVER_STATUS_AUTOCOMMIT and
// SERVER_MORE_RESULTS_EXISTS).
const (
	statusInTrans     = 0x0001
	statusAutocommit  = 0x0002
	statusMoreResults = 0x0008
)

// withSession adds res's session-state block to ok, an OK packet's payload ending with its
// warnings, when the client negotiated session tracking.
func (c *conn) withSession(ok []byte, res *Result) []byte {
	if res == nil || res.Session == nil || !c.srv.cfg.SessionTrack || c.caps&ClientSessionTrack == 0 {
		return ok
	}
	ok[4] |= 0x40      // SERVER_SESSION_STATE_CHANGED
	ok = append(ok, 0) // the info, empty
	return append(LenencInt(ok, uint64(len(res.Session))), res.Session...)
}

// okPayload is an OK packet with no affected rows and the given status flags.
func okPayload(status uint16) []byte {
	return []byte{0x00, 0, 0, byte(status), byte(status >> 8), 0, 0}
}

// resultSet builds one result set starting at sequence number seq, ending with status; it
// returns the segments and the next sequence number.
func (c *conn) resultSet(res *Result, binaryRows bool, seq byte, status uint16) ([]segment, byte) {
	next := func(payload []byte) []byte { b := Packet(seq, payload); seq++; return b }
	segs := []segment{{PhaseResultHeader, next(LenencInt(nil, uint64(len(res.Columns))))}}
	var cols []byte
	for _, name := range res.Columns {
		cols = append(cols, next(ColumnDef(name, typeVarString))...)
	}
	segs = append(segs, segment{PhaseColumns, cols})
	if !c.deprecateEOF() {
		segs = append(segs, segment{PhaseColumnsEOF, next(EOFPayload())})
	}
	var rows []byte
	for _, r := range res.Rows {
		var b []byte
		if binaryRows {
			b = append(b, 0)
			b = append(b, make([]byte, (len(r)+7+2)/8)...) // NULL bitmap, offset 2: no NULLs
		}
		for _, v := range r {
			b = LenencString(b, v)
		}
		rows = append(rows, next(b)...)
	}
	segs = append(segs, segment{PhaseRows, rows})
	end := []byte{0xfe, 0, 0, byte(status), byte(status >> 8)}
	if c.deprecateEOF() {
		end = c.withSession([]byte{0xfe, 0, 0, byte(status), byte(status >> 8), 0, 0}, res)
	}
	return append(segs, segment{PhaseResultEnd, next(end)}), seq
}

func (c *conn) prepare(text string) []segment {
	params := strings.Count(text, "?")
	columns := 0
	if res := c.srv.cfg.Answer(bind(text, make([]string, params))); res != nil {
		columns = len(res.Columns)
	}
	c.nextStmt++
	id := c.nextStmt
	c.stmts[id] = &stmt{text: text, params: params, columns: columns}
	b := []byte{0}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = binary.LittleEndian.AppendUint16(b, uint16(columns))
	b = binary.LittleEndian.AppendUint16(b, uint16(params))
	b = append(b, 0, 0, 0)
	seq := byte(1)
	next := func(payload []byte) []byte { p := Packet(seq, payload); seq++; return p }
	out := next(b)
	for range params {
		out = append(out, next(ColumnDef("?", typeVarString))...)
	}
	if params > 0 && !c.deprecateEOF() {
		out = append(out, next(EOFPayload())...)
	}
	for i := range columns {
		out = append(out, next(ColumnDef(strconv.Itoa(i), typeVarString))...)
	}
	if columns > 0 && !c.deprecateEOF() {
		out = append(out, next(EOFPayload())...)
	}
	return []segment{{PhasePrepare, out}}
}

// arguments decodes COM_STMT_EXECUTE's parameters (after the statement id) as text.
func (st *stmt) arguments(p []byte) ([]string, error) {
	if len(p) < 5 {
		return nil, errors.New("short packet")
	}
	p = p[5:] // flags, iteration count
	args := make([]string, st.params)
	if st.params == 0 {
		return args, nil
	}
	nb := (st.params + 7) / 8
	if len(p) < nb+1 {
		return nil, errors.New("short NULL bitmap")
	}
	nulls, bound := p[:nb], p[nb]
	p = p[nb+1:]
	if bound == 1 {
		if len(p) < 2*st.params {
			return nil, errors.New("short parameter types")
		}
		st.types = append([]byte(nil), p[:2*st.params]...)
		p = p[2*st.params:]
	}
	if len(st.types) != 2*st.params {
		return nil, errors.New("no parameter types")
	}
	for i := range args {
		if nulls[i/8]&(1<<(i%8)) != 0 {
			args[i] = "NULL"
			continue
		}
		v, rest, err := binaryValue(st.types[2*i], st.types[2*i+1]&0x80 != 0, p)
		if err != nil {
			return nil, fmt.Errorf("parameter %d: %w", i+1, err)
		}
		args[i], p = v, rest
	}
	return args, nil
}

func binaryValue(typ byte, unsigned bool, p []byte) (string, []byte, error) {
	fixed := map[byte]int{0x01: 1, 0x02: 2, 0x03: 4, 0x08: 8, 0x04: 4, 0x05: 8}
	if n, ok := fixed[typ]; ok {
		if len(p) < n {
			return "", nil, errors.New("short value")
		}
		var buf [8]byte
		copy(buf[:], p[:n])
		u := binary.LittleEndian.Uint64(buf[:])
		switch {
		case typ == 0x04:
			return strconv.FormatFloat(float64(math.Float32frombits(uint32(u))), 'g', -1, 32), p[n:], nil
		case typ == 0x05:
			return strconv.FormatFloat(math.Float64frombits(u), 'g', -1, 64), p[n:], nil
		case unsigned:
			return strconv.FormatUint(u, 10), p[n:], nil
		}
		shift := 64 - 8*n
		return strconv.FormatInt(int64(u<<shift)>>shift, 10), p[n:], nil
	}
	n, size, ok := readLenencInt(p)
	if !ok || uint64(len(p)-size) < n {
		return "", nil, errors.New("value runs past the packet")
	}
	return string(p[size : size+int(n)]), p[size+int(n):], nil
}

// bind replaces each ? of text with its argument, in order.
func bind(text string, args []string) string {
	var b strings.Builder
	i := 0
	for _, r := range text {
		if r == '?' && i < len(args) {
			b.WriteString(args[i])
			i++
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DefaultAnswer answers "SELECT <value>" (after any leading /* comment */, such as lbd's probe
// "/* ping */ SELECT 1") with one column named <value> and one row holding it, where <value> is
// a number or a word without spaces; it answers every other query with OK (nil).
func DefaultAnswer(query string) *Result {
	q := strings.TrimSpace(query)
	for strings.HasPrefix(q, "/*") {
		end := strings.Index(q, "*/")
		if end < 0 {
			return nil
		}
		q = strings.TrimSpace(q[end+2:])
	}
	if len(q) < 7 || !strings.EqualFold(q[:7], "SELECT ") {
		return nil
	}
	v := strings.TrimSpace(q[7:])
	if v == "" || strings.ContainsAny(v, " \t\n,") {
		return nil
	}
	return &Result{Columns: []string{v}, Rows: [][]string{{v}}}
}
