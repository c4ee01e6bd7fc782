package mysqlfake

import (
	"github.com/lbd-go/lbd/internal/testkit"

	"context"
	"database/sql"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

func open(t *testing.T, s *Server, userPass string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", userPass+"@tcp("+s.Addr()+")/db?timeout=2s&readTimeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestHealthyServerServesGoSQLDriver(t *testing.T) {
	for _, deprecateEOF := range []bool{false, true} {
		t.Run(map[bool]string{false: "eof", true: "deprecate_eof"}[deprecateEOF], func(t *testing.T) {
			s := Start(t, Config{User: "app", Password: "secret", DeprecateEOF: deprecateEOF})
			db := open(t, s, "app:secret")
			if err := db.PingContext(ctx(t)); err != nil {
				t.Fatalf("ping: %v", err)
			}
			var one int
			if err := db.QueryRowContext(ctx(t), "/* ping */ SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("SELECT 1 = %d, %v", one, err)
			}
			if _, err := db.ExecContext(ctx(t), "UPDATE t SET x = 1"); err != nil {
				t.Fatalf("exec: %v", err)
			}
			st, err := db.PrepareContext(ctx(t), "SELECT ?")
			if err != nil {
				t.Fatalf("prepare: %v", err)
			}
			defer st.Close()
			for _, arg := range []any{int64(7), "word", -3} {
				var got string
				if err := st.QueryRowContext(ctx(t), arg).Scan(&got); err != nil {
					t.Fatalf("execute SELECT ? with %v: %v", arg, err)
				}
				if want := map[any]string{int64(7): "7", "word": "word", -3: "-3"}[arg]; got != want {
					t.Fatalf("SELECT ? with %v = %q, want %q", arg, got, want)
				}
			}
			if _, err := db.ExecContext(ctx(t), "UPDATE t SET x = ?", 3); err != nil {
				t.Fatalf("exec with argument: %v", err)
			}
			if s.Commands() == 0 || s.Accepted() == 0 {
				t.Fatalf("counters: %d commands, %d accepted", s.Commands(), s.Accepted())
			}
			db.Close()
			testkit.WaitFor(t, waitWithin, "every connection to close", func() bool { return s.Open() == 0 })
		})
	}
}

func TestWrongPasswordIsDenied(t *testing.T) {
	s := Start(t, Config{User: "app", Password: "secret"})
	err := open(t, s, "app:wrong").PingContext(ctx(t))
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("ping with a wrong password: %v, want error 1045", err)
	}
}

func TestFaultTargetsOneConnectionAndSpends(t *testing.T) {
	s := Start(t, Config{})
	s.AddFault(Fault{Phase: PhaseAccept, After: Close, Conn: 1})
	s.AddFault(Fault{Phase: PhaseRows, Bytes: Payload([]byte{1, '2'}), Match: QueryContains("SELECT 1"), Times: 1})
	db := open(t, s, "u:p")
	var got int
	for i := range 3 { // the first connection is closed before its greeting; the driver redials
		if err := db.QueryRowContext(ctx(t), "SELECT 1").Scan(&got); err == nil {
			break
		} else if i == 2 {
			t.Fatal(err)
		}
	}
	if got != 2 {
		t.Fatalf("first SELECT 1 = %d, want the fault's 2", got)
	}
	if err := db.QueryRowContext(ctx(t), "SELECT 1").Scan(&got); err != nil || got != 1 {
		t.Fatalf("second SELECT 1 = %d, %v, want 1 once the fault is spent", got, err)
	}
}

func TestCloseEndsStalledConnections(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.AddFault(Fault{Phase: PhaseGreeting, Bytes: Half, After: Stall})
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	testkit.WaitFor(t, waitWithin, "the connection to be accepted", func() bool { return s.Open() == 1 })
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a stalled connection")
	}
	if s.Open() != 0 {
		t.Fatalf("%d connections open after Close", s.Open())
	}
}

func TestClientLeavingAStallIsCounted(t *testing.T) {
	s := Start(t, Config{})
	s.AddFault(Fault{Phase: PhaseAccept, After: Stall})
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, waitWithin, "the connection to be accepted", func() bool { return s.Open() == 1 })
	nc.Close()
	testkit.WaitFor(t, waitWithin, "the server to see the client leave", func() bool { return s.Open() == 0 })
}

func TestCatalogueNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Catalogue() {
		if f.Name == "" || seen[f.Name] {
			t.Errorf("catalogue name %q is empty or repeated", f.Name)
		}
		seen[f.Name] = true
	}
	if _, ok := Lookup("header/cols_2e32"); !ok {
		t.Error("Lookup does not find header/cols_2e32")
	}
}

func TestReseqMovesEveryPacket(t *testing.T) {
	in := Packets(1, []byte{1}, []byte{2, 3})
	out := Reseq(5)(in)
	if out[3] != 6 || out[4+1+3] != 7 {
		t.Fatalf("Reseq(5)(%x) = %x", in, out)
	}
}

// waitWithin bounds every wait of these tests for the server to react.
const waitWithin = 5 * time.Second

// Scripted answers: an ERR in place of a result, and a multi-statement text whose first
// statement succeeds and whose second fails, as go-sql-driver reads them.
func TestErrorsAndMultiStatementAnswers(t *testing.T) {
	for _, deprecateEOF := range []bool{false, true} {
		t.Run(map[bool]string{false: "eof", true: "deprecate_eof"}[deprecateEOF], func(t *testing.T) {
			refused := &Error{Number: 1290, State: "HY000", Message: "read-only"}
			s := Start(t, Config{DeprecateEOF: deprecateEOF, Answer: func(q string) *Result {
				switch q {
				case "INSERT 1":
					return &Result{Err: refused}
				case "INSERT 1; INSERT 2":
					return &Result{Next: &Result{Err: refused}}
				case "SELECT a; SELECT b":
					return &Result{Columns: []string{"a"}, Rows: [][]string{{"1"}}, Next: &Result{Columns: []string{"b"}, Rows: [][]string{{"2"}}}}
				}
				return DefaultAnswer(q)
			}})
			db, err := sql.Open("mysql", "u@tcp("+s.Addr()+")/db?timeout=2s&readTimeout=2s&multiStatements=true")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			var me *mysql.MySQLError
			if _, err := db.ExecContext(ctx(t), "INSERT 1"); !errors.As(err, &me) || me.Number != 1290 {
				t.Fatalf("single refused statement: %v", err)
			}
			if _, err := db.ExecContext(ctx(t), "INSERT 1; INSERT 2"); !errors.As(err, &me) || me.Number != 1290 {
				t.Fatalf("second statement refused: %v", err)
			}
			rows, err := db.QueryContext(ctx(t), "SELECT a; SELECT b")
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for {
				for rows.Next() {
					var v int
					if err := rows.Scan(&v); err != nil {
						t.Fatal(err)
					}
					got = append(got, v)
				}
				if !rows.NextResultSet() {
					break
				}
			}
			if err := rows.Close(); err != nil || len(got) != 2 || got[0] != 1 || got[1] != 2 {
				t.Fatalf("two result sets read %v, %v; want [1 2]", got, err)
			}
			if err := db.PingContext(ctx(t)); err != nil {
				t.Fatalf("connection unusable after the answers: %v", err)
			}
		})
	}
}
