package routing

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/lbd-go/lbd/internal/causal"
)

// On a real MariaDB primary and replica: the position a write reports on its own session is the
// one the replica waits for, after which the replica shows the write; a position the replica
// has not reached times the wait out.
func TestGTIDCaptureAndWaitOnMariaDB(t *testing.T) {
	primary, replica := mariaDBPair(t)
	ctx := context.Background()
	table := fmt.Sprintf("lbd_gtid_%d", os.Getpid())
	if _, err := primary.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primary.Exec("DROP TABLE IF EXISTS " + table) })

	session, err := primary.Conn(ctx) // @@last_gtid belongs to the session that wrote
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if _, err := session.ExecContext(ctx, "INSERT INTO "+table+" VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var answer string
	if err := session.QueryRowContext(ctx, causal.MariaDB.CaptureQuery()).Scan(&answer); err != nil {
		t.Fatal(err)
	}
	pos, err := causal.MariaDB.Parse(answer)
	if err != nil {
		t.Fatalf("the primary's @@last_gtid %q: %v", answer, err)
	}

	wait := func(p causal.Position, seconds float64) bool {
		t.Helper()
		var got string
		if err := replica.QueryRow(causal.MariaDB.WaitQuery(), p.String(), seconds).Scan(&got); err != nil {
			t.Fatal(err)
		}
		reached, err := causal.MariaDB.Reached(got)
		if err != nil {
			t.Fatal(err)
		}
		return reached
	}
	if !wait(pos, 10) {
		t.Fatalf("the replica did not reach %s within 10 s", pos)
	}
	var n int
	if err := replica.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after the wait the replica shows %d rows (%v), want the write", n, err)
	}
	ahead, err := causal.MariaDB.Parse("0-1-999999999")
	if err != nil {
		t.Fatal(err)
	}
	if wait(causal.Merge(pos, ahead), 0.2) {
		t.Fatal("the replica reports reaching a position no primary wrote")
	}
}
