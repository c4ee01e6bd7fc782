package lbd

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/nodes"
)

// Routing by proof, against scripted proxies: what a refusal proves, where a pinned logical
// connection may run, how long a causal wait may take, and what the split counts.

// scripted answers queries by the first matching prefix in answers (DefaultAnswer otherwise)
// and records every text it is asked, in order.
type scripted struct {
	queryLog
	answers map[string]func(q string) *mysqlfake.Result
}

func (s *scripted) answer(q string) *mysqlfake.Result {
	s.queryLog.answer(q)
	for prefix, f := range s.answers {
		if strings.HasPrefix(q, prefix) {
			return f(q)
		}
	}
	return mysqlfake.DefaultAnswer(q)
}

// count returns how many recorded texts start with prefix.
func (s *scripted) count(prefix string) int {
	n := 0
	for _, q := range s.all() {
		if strings.HasPrefix(q, prefix) {
			n++
		}
	}
	return n
}

func refusal(number uint16) func(string) *mysqlfake.Result {
	return func(string) *mysqlfake.Result {
		return &mysqlfake.Result{Err: &mysqlfake.Error{Number: number, State: "HY000", Message: "refused: not the primary"}}
	}
}

func oneRow(value string) func(string) *mysqlfake.Result {
	return func(string) *mysqlfake.Result {
		return &mysqlfake.Result{Columns: []string{"v"}, Rows: [][]string{{value}}}
	}
}

// startScripted starts one fake per script.
func startScripted(t *testing.T, scripts ...*scripted) []*mysqlfake.Server {
	t.Helper()
	srvs := make([]*mysqlfake.Server, len(scripts))
	for i, s := range scripts {
		srvs[i] = mysqlfake.Start(t, mysqlfake.Config{Answer: s.answer, StallTimeout: 10 * time.Second})
	}
	return srvs
}

// rolesDSN lists srvs with roles[i] as each one's role from the DSN.
func rolesDSN(srvs []*mysqlfake.Server, roles []string, params string) string {
	addrs := make([]string, len(srvs))
	for i, s := range srvs {
		addrs[i] = s.Addr() + "#" + roles[i]
	}
	return "u:p@lb(" + strings.Join(addrs, ",") + ")/db?timeout=2s&" + params
}

func openRoles(t *testing.T, srvs []*mysqlfake.Server, roles []string, params string, opts ...Option) (*sql.DB, *Connector) {
	t.Helper()
	c, err := NewConnector(rolesDSN(srvs, roles, params), append([]Option{WithLogger(discardLogger())}, opts...)...)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c
}

func ctx5s(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A primary that runs the first statement of a two-statement text and refuses the second:
// the text reached it once, and the caller learns that part of it ran, with the server's error.
func TestPartlyRunTextIsNotSentAgain(t *testing.T) {
	const text = "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)"
	for _, mode := range []struct{ name, params string }{
		{"target=primary", "target=primary&multiStatements=true"},
		{"split", "balance=statement&readWriteSplit=true&multiStatements=true"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			primary := &scripted{answers: map[string]func(string) *mysqlfake.Result{
				text: func(string) *mysqlfake.Result {
					return &mysqlfake.Result{Next: &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1290, State: "HY000", Message: "read-only"}}}
				},
			}}
			replica := &scripted{}
			srvs := startScripted(t, primary, replica)
			db, _ := openRoles(t, srvs, []string{"primary", "replica"}, mode.params, quiet()...)
			_, err := db.ExecContext(ctx5s(t), text)
			var me *mysql.MySQLError
			if !errors.Is(err, ErrPartialRun) || !errors.As(err, &me) || me.Number != 1290 {
				t.Fatalf("error %v; want ErrPartialRun wrapping the server's 1290", err)
			}
			if n := primary.count(text); n != 1 {
				t.Fatalf("the partly run text reached the primary %d times, want once", n)
			}
			if n := replica.count("INSERT"); n != 0 {
				t.Fatalf("the replica saw %d INSERTs", n)
			}
		})
	}
}

// A node that passes its role check as primary but refuses every write: after database/sql's
// retries the caller gets the server's own error, not a bare "driver: bad connection". 1792
// outside a transaction the caller made read-only is such a refusal: the server's transactions
// are read-only by default.
func TestPersistentRefusalReturnsTheServersError(t *testing.T) {
	for _, number := range []uint16{4782, 1290, 1792} {
		t.Run(fmt.Sprint(number), func(t *testing.T) {
			primary := &scripted{answers: map[string]func(string) *mysqlfake.Result{
				"SELECT @@global.read_only": oneRow("0"),
				"INSERT":                    refusal(number),
			}}
			srvs := startScripted(t, primary)
			logs := &logRecorder{}
			db, _ := openFakeDB(t, srvs, "target=primary&roleCheck=mysql&failoverTimeoutMillis=3000",
				fast(100*time.Millisecond, time.Second, time.Hour, logs)...)
			_, err := db.ExecContext(ctx5s(t), "INSERT INTO t VALUES (1)")
			var me *mysql.MySQLError
			var refused *RefusedError
			if !errors.As(err, &me) || me.Number != number || !errors.As(err, &refused) || refused.Addr != srvs[0].Addr() {
				t.Fatalf("error %v; want a RefusedError naming %s with the server's %d", err, srvs[0].Addr(), number)
			}
			if !strings.Contains(err.Error(), me.Message) {
				t.Fatalf("error %q does not quote the server's message", err)
			}
			if n := primary.count("INSERT"); n < 1 || n > 3 {
				t.Fatalf("the write reached the node %d times, want database/sql's 1 to 3", n)
			}
		})
	}
}

// 1792 in a transaction the caller began read-only is the caller's own error: it comes back as
// it is, the node keeps its role, and nothing runs again.
func TestReadOnlyTransactionRefusalIsTheCallers(t *testing.T) {
	primary := &scripted{answers: map[string]func(string) *mysqlfake.Result{
		"SELECT @@global.read_only": oneRow("0"),
		"INSERT":                    refusal(1792),
	}}
	srvs := startScripted(t, primary)
	db, c := openFakeDB(t, srvs, "target=primary&roleCheck=mysql&failoverTimeoutMillis=3000", quiet()...)
	ctx := ctx5s(t)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, "INSERT INTO t VALUES (1)")
	var me *mysql.MySQLError
	var refused *RefusedError
	if !errors.As(err, &me) || me.Number != 1792 || errors.As(err, &refused) || errors.Is(err, ErrPrimaryChanged) {
		t.Fatalf("error %v; want the server's 1792 as it is", err)
	}
	if n := primary.count("INSERT"); n != 1 {
		t.Fatalf("the write reached the node %d times, want once", n)
	}
	if ns, _ := c.Stats().Node(srvs[0].Addr()); ns.State != StateUp || ns.Role.String() != "primary" {
		t.Fatalf("the node is %v/%v; the caller's read-only transaction says nothing of its role", ns.State, ns.Role)
	}
}

// A replica that refuses a read as read-only: the read runs on the primary instead, and the
// replica is not asked again until a probe passes. 30 of 30 reads succeed, through the pool and
// through one *sql.Conn.
func TestReadRefusedByAReplicaRunsOnThePrimary(t *testing.T) {
	const read = "SELECT v FROM t WHERE id = 1"
	primary := &scripted{answers: map[string]func(string) *mysqlfake.Result{read: oneRow("7")}}
	replica := &scripted{answers: map[string]func(string) *mysqlfake.Result{read: refusal(1290)}}
	srvs := startScripted(t, replica, primary) // the replica is listed first: the first read goes there
	db, c := openRoles(t, srvs, []string{"replica", "primary"}, "balance=statement&readWriteSplit=true", quiet()...)
	ctx := ctx5s(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range 30 {
		var v int
		q := db.QueryRowContext
		if i%2 == 1 {
			q = conn.QueryRowContext
		}
		if err := q(ctx, read).Scan(&v); err != nil || v != 7 {
			t.Fatalf("read %d: %d, %v", i, v, err)
		}
	}
	if n := replica.count(read); n != 1 {
		t.Fatalf("the refusing replica was asked %d times, want once", n)
	}
	if ns, _ := c.Stats().Node(srvs[0].Addr()); ns.State != StateUp || ns.Role.String() != "replica" {
		t.Fatalf("the replica is %v/%v; a refused read is not a fault and changes no role", ns.State, ns.Role)
	}
}

// splitConnOverFakes opens the split over a scripted replica and primary, the replica listed
// first so that the first read-only transaction binds there, and checks out one *sql.Conn.
func splitConnOverFakes(t *testing.T) (primary, replica *scripted, db *sql.DB, conn *sql.Conn) {
	t.Helper()
	primary, replica = &scripted{}, &scripted{}
	srvs := startScripted(t, replica, primary)
	db, _ = openRoles(t, srvs, []string{"replica", "primary"}, "balance=statement&readWriteSplit=true", quiet()...)
	conn, err := db.Conn(ctx5s(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return primary, replica, db, conn
}

// A read-only transaction ran on a replica and set a user variable there: the logical
// connection is pinned to that replica connection, and every statement that needs the primary
// fails with ErrPinnedToReplica before it is sent — in the transaction, after it, prepared, and
// as a read-write BEGIN. Nothing is written on the replica, which does not refuse writes here
// (a proxy fleet without read_only, a user with SUPER).
func TestWriteNeverRunsOnAPinnedReplica(t *testing.T) {
	primary, replica, db, conn := splitConnOverFakes(t)
	ctx := ctx5s(t)
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SET @x = 1"); err != nil {
		t.Fatalf("a user variable in a read-only transaction: %v", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (1)"); !errors.Is(err, ErrPinnedToReplica) {
		t.Fatalf("INSERT in the read-only transaction: %v, want ErrPinnedToReplica", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"INSERT INTO t VALUES (2)", "SELECT GET_LOCK('k', 0)", "SELECT IS_FREE_LOCK('k')", "DELETE FROM t"} {
		if _, err := conn.ExecContext(ctx, q); !errors.Is(err, ErrPinnedToReplica) {
			t.Fatalf("%s after the transaction: %v, want ErrPinnedToReplica", q, err)
		}
	}
	if _, err := conn.PrepareContext(ctx, "INSERT INTO t VALUES (?)"); !errors.Is(err, ErrPinnedToReplica) {
		t.Fatalf("preparing an INSERT: %v, want ErrPinnedToReplica", err)
	}
	if _, err := conn.BeginTx(ctx, nil); !errors.Is(err, ErrPinnedToReplica) {
		t.Fatalf("read-write BEGIN: %v, want ErrPinnedToReplica", err)
	}
	var x int
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&x); err != nil {
		t.Fatalf("a read on the pinned replica connection: %v", err)
	}
	if n := replica.count("INSERT") + replica.count("DELETE") + replica.count("SELECT GET_LOCK") + replica.count("SELECT IS_FREE_LOCK"); n != 0 {
		t.Fatalf("the replica received %d writes or lock questions: %q", n, replica.all())
	}
	conn.Close()
	// Back in the pool the stranded logical connection is dropped: a write goes to the primary.
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (4)"); err != nil {
		t.Fatalf("a write through the pool afterwards: %v", err)
	}
	if n := primary.count("INSERT INTO t VALUES (4)"); n != 1 {
		t.Fatalf("the primary saw the later write %d times, want once", n)
	}
}

// A read-only transaction given OnPrimary runs on the primary, and writes after it are fine.
func TestReadOnlyTransactionOnPrimary(t *testing.T) {
	primary, replica, _, conn := splitConnOverFakes(t)
	ctx := ctx5s(t)
	tx, err := conn.BeginTx(OnPrimary(ctx), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SET @x = 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatalf("a write after a read-only transaction on the primary: %v", err)
	}
	if replica.count("SET @x") != 0 || primary.count("INSERT") != 1 {
		t.Fatalf("replica %q, primary %q", replica.all(), primary.all())
	}
}

// causalPair is a primary whose @@last_gtid answers position() and a replica, listed first so
// that reads bind there, in the split with GTID causal reads.
func causalPair(t *testing.T, position func() string, replicaFaults ...mysqlfake.Fault) (primary, replica *scripted, db *sql.DB, c *Connector) {
	t.Helper()
	primary = &scripted{answers: map[string]func(string) *mysqlfake.Result{
		"SELECT @@last_gtid": func(string) *mysqlfake.Result {
			return &mysqlfake.Result{Columns: []string{"@@last_gtid"}, Rows: [][]string{{position()}}}
		},
		"INSERT INTO t VALUES (1), (2) RETURNING id": func(string) *mysqlfake.Result {
			return &mysqlfake.Result{Columns: []string{"id"}, Rows: [][]string{{"1"}, {"2"}}}
		},
	}}
	replica = &scripted{answers: map[string]func(string) *mysqlfake.Result{"SELECT MASTER_GTID_WAIT": oneRow("0")}}
	srvs := startScripted(t, replica, primary)
	for _, f := range replicaFaults {
		srvs[0].AddFault(f)
	}
	db, c = openRoles(t, srvs, []string{"replica", "primary"},
		"balance=statement&readWriteSplit=true&readConsistency=gtid&readAfterWriteMillis=300", quiet()...)
	return primary, replica, db, c
}

// A transaction begun and ended by SQL text records its position once its COMMIT has run, as
// one begun with BeginTx does at Commit: the next read of the scope, on the replica, waits
// there for the transaction's writes. A COMMIT AND CHAIN commits too, though a transaction is
// open after it. Nothing is asked inside a transaction, where no position is final yet.
func TestCausalCaptureAfterATextTransaction(t *testing.T) {
	var seq atomic.Int64
	seq.Store(8)
	primary, replica, db, c := causalPair(t, func() string { return fmt.Sprintf("0-1-%d", seq.Add(1)) })
	ctx := ctx5s(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run := func(texts ...string) {
		t.Helper()
		for _, q := range texts {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	asked := func(want int) {
		t.Helper()
		if n := primary.count("SELECT @@last_gtid"); n != want {
			t.Fatalf("the primary was asked for its position %d times, want %d: %q", n, want, primary.all())
		}
	}
	read := func(want string) {
		t.Helper()
		var v int
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
			t.Fatalf("the read after the transaction: %v", err)
		}
		if n := replica.count("SELECT MASTER_GTID_WAIT('" + want + "'"); n != 1 {
			t.Fatalf("the replica waited %d times for %s, want once: replica %q", n, want, replica.all())
		}
	}
	run("BEGIN", "INSERT INTO t VALUES (1)")
	asked(0)
	run("COMMIT")
	asked(1)
	read("0-1-9")
	run("START TRANSACTION", "INSERT INTO t VALUES (2)", "COMMIT AND CHAIN")
	asked(2)
	run("ROLLBACK")
	read(fmt.Sprintf("0-1-%d", seq.Load()))
	if cs := c.Stats().Causal; cs.Captures != uint64(seq.Load()-8) || cs.Waits != 2 || cs.Fallbacks != 0 {
		t.Fatalf("causal stats %+v; want every position asked for captured, two waits and no fallback", cs)
	}
}

// On Galera (roleCheck=galera), a read waits on its replica for its scope's position
// (WSREP_SYNC_WAIT_UPTO_GTID) and, once the replica answers that it has it, settles the wait
// with a causal read there (wsrep_sync_wait for one statement), since the function may answer
// while the node is still committing the write; only then does the read run there. MariaDB
// flags SET STATEMENT as a change of the session's state; the settle leaves nothing in the
// session all the same, so a *sql.Conn that read there writes next on the writer, not pinned
// to the replica. A wait that times out is not settled: the read runs on the writer.
func TestCausalGaleraWaitIsSettled(t *testing.T) {
	var tracking trackingAnswers // every node tracks sessions, as MariaDB does
	var position, waitAnswer atomic.Value
	position.Store("0-1-7")
	waitAnswer.Store(oneRow("1"))
	galeraNode := func() *scripted {
		return &scripted{answers: map[string]func(string) *mysqlfake.Result{
			"/* lbd": tracking.answer,
			"SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready'": func(string) *mysqlfake.Result {
				return &mysqlfake.Result{Columns: []string{"Variable_name", "Value"},
					Rows: [][]string{{"wsrep_ready", "ON"}, {"wsrep_cluster_status", "Primary"}, {"wsrep_local_state", "4"}}}
			},
			"SELECT WSREP_LAST_WRITTEN_GTID()": func(q string) *mysqlfake.Result {
				return oneRow(position.Load().(string))(q)
			},
			"SELECT WSREP_SYNC_WAIT_UPTO_GTID(": func(q string) *mysqlfake.Result {
				return waitAnswer.Load().(func(string) *mysqlfake.Result)(q)
			},
			"SET STATEMENT wsrep_sync_wait = 1 FOR SELECT 1": func(string) *mysqlfake.Result {
				return &mysqlfake.Result{Columns: []string{"1"}, Rows: [][]string{{"1"}}, Session: stateChanged}
			},
		}}
	}
	writer, replica := galeraNode(), galeraNode()
	var srvs []*mysqlfake.Server
	for _, s := range []*scripted{writer, replica} {
		srvs = append(srvs, mysqlfake.Start(t, mysqlfake.Config{SessionTrack: true, DeprecateEOF: true, Answer: s.answer}))
	}
	db, c := openFakeDB(t, srvs, "balance=statement&readWriteSplit=true&roleCheck=galera&singleWriter=true&readConsistency=gtid&readAfterWriteMillis=1000",
		fast(20*time.Millisecond, time.Second, time.Hour, &logRecorder{})...)
	waitFor(t, 3*time.Second, "the first node the writer, the second a replica", func() bool {
		w, _ := c.Stats().Node(srvs[0].Addr())
		r, _ := c.Stats().Node(srvs[1].Addr())
		return w.Role == nodes.RolePrimary && r.Role == nodes.RoleReplica
	})
	ctx := ctx5s(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var v int
	if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
		t.Fatalf("the read after the write: %v", err)
	}
	var sent []string // what the replica got for the read, in order
	for _, q := range replica.all() {
		if strings.HasPrefix(q, "SELECT WSREP") || strings.HasPrefix(q, "SET STATEMENT") || q == "SELECT 1" {
			sent = append(sent, q)
		}
	}
	if want := []string{"SELECT WSREP_SYNC_WAIT_UPTO_GTID('0-1-7', 1)", "SET STATEMENT wsrep_sync_wait = 1 FOR SELECT 1", "SELECT 1"}; !slices.Equal(sent, want) {
		t.Fatalf("the replica got %q for the read; want the wait, its settle and the read, in that order", sent)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatalf("the write after a settled read, on the same *sql.Conn: %v", err)
	}
	if writer.count("INSERT") != 2 || replica.count("INSERT") != 0 {
		t.Fatalf("writer %q, replica %q: want both writes on the writer", writer.all(), replica.all())
	}

	// A new position, and a replica that does not reach it: no settle, the read on the writer.
	waitAnswer.Store(func(string) *mysqlfake.Result {
		return &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1205, State: "HY000", Message: "Lock wait timeout exceeded"}}
	})
	position.Store("0-1-8")
	if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
		t.Fatalf("the read after the write: %v", err)
	}
	if n := replica.count("SET STATEMENT"); n != 1 {
		t.Fatalf("the replica settled %d waits, want only the one that reached its position", n)
	}
	if writer.count("SELECT 1") != 1 || replica.count("SELECT 1") != 1 {
		t.Fatalf("writer %q, replica %q: want the second read on the writer", writer.all(), replica.all())
	}
	if cs := c.Stats().Causal; cs.Captures != 3 || cs.Waits != 2 || cs.Fallbacks != 1 {
		t.Fatalf("causal stats %+v; want three captures, two waits and one fallback", cs)
	}
}

// A write answered with rows (INSERT ... RETURNING sent through QueryContext, as bun sends
// every insert on MariaDB 10.5 and newer) reads its position once its rows are closed: while
// they are open the session takes no other command. The rows come back whole, and the next
// read of the scope waits on the replica for the write.
func TestCausalCaptureWaitsForTheRowsOfAWrite(t *testing.T) {
	primary, replica, db, c := causalPair(t, func() string { return "0-1-7" })
	ctx := context.Background()
	for i := range 2 {
		rows, err := db.QueryContext(ctx, "INSERT INTO t VALUES (1), (2) RETURNING id")
		if err != nil {
			t.Fatal(err)
		}
		var ids []int
		for rows.Next() {
			var id int
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil || rows.Err() != nil || fmt.Sprint(ids) != "[1 2]" {
			t.Fatalf("INSERT ... RETURNING %d through QueryContext: ids %v, close %v, %v", i, ids, err, rows.Err())
		}
	}
	var v int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
		t.Fatalf("the read after the write: %v", err)
	}
	if cs := c.Stats().Causal; cs.Captures != 2 || cs.Waits != 1 || cs.Fallbacks != 0 {
		t.Fatalf("causal stats %+v; want the two writes' positions captured and one wait on the replica", cs)
	}
	if primary.count("INSERT") != 2 || replica.count("INSERT") != 0 || replica.count("SELECT 1") != 1 {
		t.Fatalf("primary %q, replica %q", primary.all(), replica.all())
	}
}

// A replica that never answers its GTID wait holds the read no longer than readAfterWriteMillis
// plus a little: the read then runs on the primary.
func TestCausalWaitIsBoundedWhenTheReplicaNeverAnswers(t *testing.T) {
	stall := mysqlfake.Fault{Name: "gtid-wait/stall", Phase: mysqlfake.PhaseResultHeader, After: mysqlfake.Stall,
		Bytes: func([]byte) []byte { return nil }, Match: mysqlfake.QueryContains("MASTER_GTID_WAIT")}
	primary, replica, db, c := causalPair(t, func() string { return "0-1-5" }, stall)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
		t.Fatalf("the read after the write: %v", err)
	}
	cs := c.Stats().Causal
	if cs.Waits != 1 || cs.Fallbacks != 1 {
		t.Fatalf("causal stats %+v; want one wait that fell back", cs)
	}
	// The fakes offer no session tracking: the position was asked for, once, after the write.
	if cs.Captures != 1 || cs.Reported != 0 || primary.count("SELECT @@last_gtid") != 1 {
		t.Fatalf("causal stats %+v, %d questions for the position; want one capture, asked once", cs, primary.count("SELECT @@last_gtid"))
	}
	if bound := 300*time.Millisecond + 100*time.Millisecond; cs.WaitTime > bound {
		t.Fatalf("the unanswered wait took %v, more than readAfterWriteMillis + 100 ms (%v)", cs.WaitTime, bound)
	}
	t.Logf("unanswered GTID wait gave up after %v (readAfterWriteMillis 300)", cs.WaitTime)
	if primary.count("SELECT 1") != 1 || replica.count("SELECT 1") != 0 {
		t.Fatalf("the read ran on the replica (%q) instead of the primary (%q)", replica.all(), primary.all())
	}
}

// A primary that reports a new replication domain with every write: the scope's position stays
// under its bound, no wait text the replica receives grows past it, and once the position
// overflowed the reads go to the primary.
func TestCausalPositionStaysBounded(t *testing.T) {
	var domain atomic.Int64
	primary, replica, db, c := causalPair(t, func() string {
		d := domain.Add(1)
		return fmt.Sprintf("%d-1-%d", d, d)
	})
	ctx := context.Background()
	var mu sync.Mutex
	for i := range 300 {
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			mu.Lock()
			var v int
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
				t.Fatal(err)
			}
			mu.Unlock()
		}
	}
	for _, q := range replica.all() {
		if len(q) > 4200 {
			t.Fatalf("the replica received a %d-byte wait", len(q))
		}
	}
	before, cs := primary.count("SELECT 1"), c.Stats().Causal
	var v int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	after := c.Stats().Causal
	if primary.count("SELECT 1") != before+1 || after.Waits != cs.Waits || after.Fallbacks != cs.Fallbacks+1 {
		t.Fatalf("a read of an overflowed scope: primary reads %d -> %d, causal %+v -> %+v; want it on the primary without a wait",
			before, primary.count("SELECT 1"), cs, after)
	}
}

// Every statement of the split is counted once, on the node it ran on, with and without
// interpolateParams (without it database/sql prepares each statement with arguments).
func TestSplitCountsStatementsOnce(t *testing.T) {
	for _, interpolate := range []bool{false, true} {
		t.Run(fmt.Sprintf("interpolateParams=%v", interpolate), func(t *testing.T) {
			read := func(string) *mysqlfake.Result { return oneRow("7")("") }
			primary := &scripted{answers: map[string]func(string) *mysqlfake.Result{"SELECT v": read}}
			replica := &scripted{answers: map[string]func(string) *mysqlfake.Result{"SELECT v": read}}
			srvs := startScripted(t, replica, primary)
			db, c := openRoles(t, srvs, []string{"replica", "primary"},
				fmt.Sprintf("balance=statement&readWriteSplit=true&readAfterWriteMillis=60000&interpolateParams=%v", interpolate), quiet()...)
			ctx := ctx5s(t)
			const reads, writes = 20, 10
			for i := range reads {
				var v int
				if err := db.QueryRowContext(ctx, "SELECT v FROM t WHERE id = ?", i).Scan(&v); err != nil {
					t.Fatal(err)
				}
			}
			for i := range writes {
				if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (?)", i); err != nil {
					t.Fatal(err)
				}
			}
			for i := range reads {
				var v int
				if err := db.QueryRowContext(ctx, "SELECT v FROM t WHERE id = ?", i).Scan(&v); err != nil {
					t.Fatal(err)
				}
			}
			s := c.Stats()
			var r, w uint64
			for _, n := range s.Nodes {
				r, w = r+n.Reads, w+n.Writes
			}
			if r != 2*reads || w != writes || s.ReadsToPrimaryAfterWrite != reads {
				t.Fatalf("counted %d reads, %d writes, %d reads after a write; want %d, %d, %d", r, w, s.ReadsToPrimaryAfterWrite, 2*reads, writes, reads)
			}
		})
	}
}

// A write of the split with no primary up: the error names the target the write needed (not
// the Connector's), says where the roles came from, and shows each node's role and any failed
// role check, with advice that applies.
func TestNoPrimaryForAWriteSaysWhatIsKnown(t *testing.T) {
	replica := &scripted{answers: map[string]func(string) *mysqlfake.Result{"SELECT @@global.read_only": oneRow("1")}}
	broken := &scripted{answers: map[string]func(string) *mysqlfake.Result{"SELECT @@global.read_only": refusal(1227)}}
	srvs := startScripted(t, replica, broken)
	logs := &logRecorder{}
	db, c := openFakeDB(t, srvs, "balance=statement&readWriteSplit=true&roleCheck=mysql&failoverTimeoutMillis=300",
		fast(100*time.Millisecond, time.Second, time.Hour, logs)...)
	waitFor(t, 5*time.Second, "the role checks", func() bool {
		r, _ := c.Stats().Node(srvs[0].Addr())
		b, _ := c.Stats().Node(srvs[1].Addr())
		return r.Role.String() == "replica" && b.RoleError != ""
	})
	_, err := db.ExecContext(ctx5s(t), "INSERT INTO t VALUES (1)")
	var ce *ConnectError
	if !errors.As(err, &ce) || !ce.NoTarget || ce.Target != TargetPrimary || !ce.RoleCheck {
		t.Fatalf("error %v; want a ConnectError: no target, target=primary, roles by role check", err)
	}
	msg := err.Error()
	for _, want := range []string{"target=primary", srvs[0].Addr() + " (replica by role check mysql)", srvs[1].Addr() + ": lbd: role check mysql", "1227"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "set a role check") {
		t.Errorf("error %q advises a role check that is already set", msg)
	}
}

// ConnProxy names the proxy a *sql.Conn is on: in connection mode its physical connection's,
// in statement mode the one its latest statement and its transaction ran on.
func TestConnProxy(t *testing.T) {
	ctx := ctx5s(t)
	t.Run("connection", func(t *testing.T) {
		srvs := startScripted(t, &scripted{}, &scripted{})
		db, _ := openFakeDB(t, srvs, "", quiet()...)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		addr, err := ConnProxy(conn)
		if err != nil || addr != srvs[0].Addr() {
			t.Fatalf("ConnProxy = %q, %v; want the first listed %s", addr, err, srvs[0].Addr())
		}
		conn.Close()
		if _, err := ConnProxy(conn); !errors.Is(err, sql.ErrConnDone) {
			t.Fatalf("ConnProxy of a closed conn: %v, want sql.ErrConnDone", err)
		}
	})
	t.Run("statement", func(t *testing.T) {
		_, replica, _, conn := splitConnOverFakes(t)
		if addr, err := ConnProxy(conn); err != nil || addr != "" {
			t.Fatalf("before any statement: %q, %v; want \"\"", addr, err)
		}
		var v int
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
			t.Fatal(err)
		}
		readOn, _ := ConnProxy(conn)
		if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		writeOn, _ := ConnProxy(conn)
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		txOn, _ := ConnProxy(conn)
		tx.Rollback()
		if readOn == "" || writeOn == "" || readOn == writeOn || txOn != writeOn {
			t.Fatalf("read on %q, write on %q, transaction on %q; want the read on the replica, the rest on the primary", readOn, writeOn, txOn)
		}
		if replica.count("SELECT 1") != 1 {
			t.Fatalf("the read did not run on the replica listed first: %q", replica.all())
		}
	})
	t.Run("not lbd", func(t *testing.T) {
		srv := startScripted(t, &scripted{})[0]
		db, err := sql.Open("mysql", "u:p@tcp("+srv.Addr()+")/db")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := ConnProxy(conn); err == nil || !strings.Contains(err.Error(), "not one of lbd's") {
			t.Fatalf("ConnProxy of a plain go-sql-driver conn: %v", err)
		}
	})
}

// A refusal that opens the answer to a CALL or to a compound statement does not prove that
// nothing ran: the procedure's or the block's earlier statements ran before the one refused,
// and the server answers the whole command with that one error. The text must reach the node
// once, and the caller learn that part of it may have run.
func TestRefusedProcedureIsNotSentAgain(t *testing.T) {
	for _, text := range []string{
		"CALL move_money(1, 2)",
		"BEGIN NOT ATOMIC INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); END",
	} {
		t.Run(strings.Fields(text)[0], func(t *testing.T) {
			primary := &scripted{answers: map[string]func(string) *mysqlfake.Result{
				"SELECT @@global.read_only": oneRow("0"),
				text:                        refusal(1290),
			}}
			srvs := startScripted(t, primary)
			db, _ := openFakeDB(t, srvs, "target=primary&roleCheck=mysql&failoverTimeoutMillis=3000",
				fast(100*time.Millisecond, time.Second, time.Hour, &logRecorder{})...)
			_, err := db.ExecContext(ctx5s(t), text)
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1290 {
				t.Fatalf("error %v; want the server's 1290", err)
			}
			if n := primary.count(text); n != 1 {
				t.Fatalf("%q reached the node %d times, want once: its body may have run in part", text, n)
			}
			if !errors.Is(err, ErrPartialRun) {
				t.Fatalf("error %v; want ErrPartialRun: part of the procedure may have run", err)
			}
		})
	}
}

// demotablePair starts two scripted nodes whose role checks (roleCheck=mysql in params) make
// node 0 the primary, opens a Connector over them with fast probes, and waits for the roles.
// switchover(i) makes node i the primary and waits until the Connector sees it. a is node 0.
func demotablePair(t *testing.T, params string) (a *scripted, db *sql.DB, switchover func(primary int)) {
	t.Helper()
	var readOnly [2]atomic.Value
	readOnly[0].Store("0") // before the first role check
	readOnly[1].Store("1")
	nodesOf := make([]*scripted, 2)
	for i := range nodesOf {
		nodesOf[i] = &scripted{answers: map[string]func(string) *mysqlfake.Result{
			"SELECT @@global.read_only": func(string) *mysqlfake.Result {
				return &mysqlfake.Result{Columns: []string{"v"}, Rows: [][]string{{readOnly[i].Load().(string)}}}
			},
		}}
	}
	srvs := startScripted(t, nodesOf...)
	db, c := openFakeDB(t, srvs, params, fast(50*time.Millisecond, time.Second, time.Hour, &logRecorder{})...)
	switchover = func(primary int) {
		t.Helper()
		for i := range readOnly {
			readOnly[i].Store(map[bool]string{true: "0", false: "1"}[i == primary])
		}
		waitFor(t, 3*time.Second, fmt.Sprintf("node %d the primary, the other a replica", primary), func() bool {
			for i, srv := range srvs {
				n, ok := c.Stats().Node(srv.Addr())
				if want := map[bool]nodes.Role{true: nodes.RolePrimary, false: nodes.RoleReplica}[i == primary]; !ok || n.Role != want {
					return false
				}
			}
			return true
		})
	}
	switchover(0)
	return nodesOf[0], db, switchover
}

// A connection held across a switchover (a *sql.Conn, the old primary not refusing writes: a
// proxy fleet without read_only, a user with SUPER) runs no write on the demoted node, in
// either mode; nothing is sent, and the error says why: in statement mode the session state set
// on the primary is lost with it (ErrPrimaryChanged), in connection mode the statement may run
// on a new connection (driver.ErrBadConn).
func TestNoWriteOnADemotedNodeThroughAHeldConnection(t *testing.T) {
	for _, tc := range []struct {
		name, params, state string
		want                error
	}{
		{"statement mode pinned by session state", "balance=statement&readWriteSplit=true&roleCheck=mysql", "SET @x = 1", ErrPrimaryChanged},
		{"connection mode", "target=primary&roleCheck=mysql", "", driver.ErrBadConn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, db, switchover := demotablePair(t, tc.params)
			ctx := ctx5s(t)
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range []string{tc.state, "INSERT INTO t VALUES (1)"} {
				if _, err := conn.ExecContext(ctx, q); q != "" && err != nil {
					t.Fatal(err)
				}
			}
			switchover(1)
			_, err = conn.ExecContext(ctx, "INSERT INTO t VALUES (2)")
			if n := a.count("INSERT INTO t VALUES (2)"); n != 0 {
				t.Fatalf("the write ran on the demoted node (error %v)", err)
			}
			if !errors.Is(err, tc.want) || errors.Is(err, ErrPinnedToReplica) {
				t.Fatalf("error %v; want %v", err, tc.want)
			}
		})
	}
}

// A write keeps its physical connection aside for a next statement that reads its result
// (LAST_INSERT_ID()); when the role check finds that node a replica meanwhile, a write reading
// the result must not run there.
func TestWriteReadingTheLastResultNeverRunsOnADemotedNode(t *testing.T) {
	a, db, switchover := demotablePair(t, "balance=statement&readWriteSplit=true&roleCheck=mysql")
	ctx := ctx5s(t)
	db.SetMaxOpenConns(1) // the write's logical connection serves the next statement
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	switchover(1)
	_, err := db.ExecContext(ctx, "INSERT INTO u VALUES (LAST_INSERT_ID())")
	if n := a.count("INSERT INTO u"); n != 0 {
		t.Fatalf("the write ran on the demoted node (error %v)", err)
	}
}

// Connection mode with target=primary: inside a transaction the connection cannot move either,
// and the caller is told to start the transaction again; the write is not sent.
func TestConnectionModeTransactionOnADemotedNode(t *testing.T) {
	a, db, switchover := demotablePair(t, "target=primary&roleCheck=mysql")
	ctx := ctx5s(t)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	switchover(1)
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (4)"); !errors.Is(err, ErrPrimaryChanged) || a.count("INSERT INTO t VALUES (4)") != 0 {
		t.Fatalf("a write in a transaction on the demoted node: %v (ran %d times); want ErrPrimaryChanged, not run", err, a.count("INSERT INTO t VALUES (4)"))
	}
}

// A primary whose position after a write is longer than a wait may carry (4096 bytes: here 700
// replication domains in one answer): no replica can be asked to reach it, so the read after
// the write runs on the primary, as for a merged position that overflowed. It must not run on
// a replica without waiting, where it may miss the write.
func TestCausalPositionTooLongToWaitForReadsOnThePrimary(t *testing.T) {
	long := make([]string, 700)
	for i := range long {
		long[i] = fmt.Sprintf("%d-1-%d", i, i+1)
	}
	primary, replica, db, _ := causalPair(t, func() string { return strings.Join(long, ",") })
	ctx := ctx5s(t)
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if replica.count("SELECT 1") != 0 || primary.count("SELECT 1") != 1 {
		t.Fatalf("the read after the write ran on the replica without a wait (replica %q)", replica.all())
	}
}

// A write whose position cannot be read (the primary answers no GTID it can parse) leaves no
// wait that would cover it: the read right after it runs on the primary, as readConsistency=time
// would send it; before it, with a position captured, the read ran on the replica.
func TestCausalReadAfterAFailedCaptureRunsOnThePrimary(t *testing.T) {
	var broken atomic.Bool
	primary, replica, db, c := causalPair(t, func() string {
		if broken.Load() {
			return "not a position"
		}
		return "0-1-5"
	})
	ctx := ctx5s(t)
	writeRead := func() {
		t.Helper()
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		var v int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
			t.Fatal(err)
		}
	}
	writeRead()
	if replica.count("SELECT 1") != 1 || primary.count("SELECT 1") != 0 {
		t.Fatalf("the read after a captured write did not run on the replica (replica %q)", replica.all())
	}
	broken.Store(true)
	writeRead()
	if replica.count("SELECT 1") != 1 || primary.count("SELECT 1") != 1 {
		t.Fatalf("the read after a write whose position was lost did not run on the primary (replica %q, primary %q)", replica.all(), primary.all())
	}
	if cs := c.Stats().Causal; cs.Captures != 1 {
		t.Fatalf("causal stats %+v; want the one capture of the first write", cs)
	}
}
