package physical

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/wire"
)

// TestResetMariaDB: on the real server in LBD_TEST_MYSQL_DSN, plain and compressed, with a
// connect-time SET NAMES and a DSN parameter, Reset drops what the session did (a user variable,
// a setting, a temporary table, a prepared statement), brings go-sql-driver's connect-time
// settings back, asks for session tracking again, and the connection's state is its base once
// more.
func TestResetMariaDB(t *testing.T) {
	dsn := os.Getenv("LBD_TEST_MYSQL_DSN")
	if dsn == "" {
		t.Skip("LBD_TEST_MYSQL_DSN is not set")
	}
	my, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			r := newRigWith(t, my.Addr, func(c *mysql.Config) {
				c.User, c.Passwd, c.DBName = my.User, my.Passwd, my.DBName
				c.Apply(mysql.Charset("latin1", "latin1_german1_ci"), mysql.EnableCompression(compress))
				c.Params = map[string]string{"time_zone": "'+03:00'"}
			})
			c := r.dial(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st := c.Session()
			if v, ok := st.Base(VarTimeZone); !ok || v != "+03:00" {
				t.Fatalf("base time_zone %q (%v), want +03:00", v, ok)
			}
			if _, err := c.ExecContext(ctx, "SET @lbd_x = 7, time_zone = '+05:00', NAMES utf8mb4", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ExecContext(ctx, "CREATE TEMPORARY TABLE lbd_reset_tmp (a INT)", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.PrepareContext(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			if d, _ := st.Dirty(); !d.Has(VarTimeZone) || !d.Has(VarCharacterSetClient) {
				t.Fatalf("dirty %b after the SET, want time_zone and character_set_client", d)
			}
			if err := c.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			if !st.Replayable() {
				t.Fatalf("after the reset: replayable %v (refused %d)", st.Replayable(), st.Refused())
			}
			if d, s := st.Dirty(); d != 0 || s {
				t.Fatalf("dirty %b (schema %v) after the reset", d, s)
			}
			for q, want := range map[string]string{
				"SELECT IFNULL(@lbd_x, 'none')": "none",
				"SELECT @@time_zone":            "+03:00",
				"SELECT @@character_set_client": "latin1",
				"SELECT @@collation_connection": "latin1_german1_ci",
				"SELECT DATABASE()":             my.DBName,
			} {
				if got, err := OneValue(ctx, c, q); err != nil || got != want {
					t.Errorf("%s = %q, %v; want %q", q, got, err, want)
				}
			}
			if _, err := c.ExecContext(ctx, "SELECT * FROM lbd_reset_tmp", nil); err == nil {
				t.Error("the temporary table outlived the reset")
			}
			mark := st.Mark()
			if _, err := c.ExecContext(ctx, "SET time_zone = '+01:00'", nil); err != nil {
				t.Fatal(err)
			}
			if ch := st.Since(mark); !ch.Vars.Has(VarTimeZone) || !ch.State {
				t.Fatalf("after the reset a SET reported %+v: tracking was not asked for again", ch)
			}
		})
	}
}

// TestResetRefused: a server that answers COM_RESET_CONNECTION with an error (error 1047, as
// one without the command does) makes Reset fail with a ResetError.
func TestResetRefused(t *testing.T) {
	f := startTrackingFake(t, mysqlfake.Config{}, nil)
	r := newRig(t, f.srv.Addr())
	c := r.dial(t)
	ctx := context.Background()
	if _, err := c.ExecContext(ctx, "SET time_zone = '+01:00'", nil); err != nil {
		t.Fatal(err)
	}
	err := c.Reset(ctx)
	var re *ResetError
	if !errors.As(err, &re) || re.Replay {
		t.Fatalf("Reset = %v, want a ResetError for the reset", err)
	}
}

// TestImpliedCharsetPair: a block that changes character_set_connection without reporting
// collation_connection leaves the collation Implied, and the reverse; a block reporting both
// leaves both as reported. Each such change makes the connection differ from its base.
func TestImpliedCharsetPair(t *testing.T) {
	var st SessionState
	st.negotiated, st.answered = true, true
	block := func(entries ...[2]string) {
		t.Helper()
		for _, e := range entries {
			if err := st.SessionEntry(wire.TrackSystemVariables, []byte(e[0]), []byte(e[1])); err != nil {
				t.Fatal(err)
			}
		}
		st.SessionBlockEnd()
	}
	block([2]string{"character_set_connection", "utf8mb4"}, [2]string{"collation_connection", "utf8mb4_general_ci"})
	st.takeBase()
	block([2]string{"character_set_client", "latin1"}, [2]string{"character_set_connection", "latin1"})
	if v, _ := st.Var(VarCollationConnection); v != Implied {
		t.Fatalf("collation after a charset change alone: %q, want Implied", v)
	}
	if d, _ := st.Dirty(); !d.Has(VarCollationConnection) || !d.Has(VarCharacterSetConnection) {
		t.Fatalf("dirty %b, want both of the pair", d)
	}
	block([2]string{"collation_connection", "latin1_german1_ci"})
	if c, _ := st.Var(VarCharacterSetConnection); c != Implied {
		t.Fatalf("charset after a collation change alone: %q, want Implied", c)
	}
	block([2]string{"collation_connection", "utf8mb4_general_ci"}, [2]string{"character_set_connection", "utf8mb4"})
	c, _ := st.Var(VarCharacterSetConnection)
	l, _ := st.Var(VarCollationConnection)
	if d, _ := st.Dirty(); c != "utf8mb4" || l != "utf8mb4_general_ci" || d.Has(VarCollationConnection) || d.Has(VarCharacterSetConnection) {
		t.Fatalf("both reported: %q %q, dirty %b; want the base again", c, l, d)
	}
}
