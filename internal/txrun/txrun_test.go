package txrun

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

var (
	errPrimaryChanged = errors.New("primary changed")
	errCommitUnknown  = errors.New("commit unknown")
	errProtocol       = errors.New("protocol violation")
)

// A pause is drawn between half and all of its value.
func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 20 * time.Millisecond} {
		for range 100 {
			if j := jitter(d); j < d/2 || j > d {
				t.Fatalf("jitter(%v) = %v; want between half and all of it", d, j)
			}
		}
	}
}

// What a COMMIT's error says about its outcome: committed, not committed (and whether the
// transaction may run again), or unknown.
func TestCommitOutcome(t *testing.T) {
	cfg := &Config{PrimaryChanged: errPrimaryChanged, CommitUnknown: errCommitUnknown}
	deadlockErr := &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'}, Message: "Deadlock found"}
	for _, tc := range []struct {
		name           string
		err            error
		rerun, unknown bool
	}{
		{"committed", nil, false, false},
		{"nothing sent", driver.ErrBadConn, true, false},
		{"nothing sent, wrapped", fmt.Errorf("lbd: x: %w", driver.ErrBadConn), true, false},
		{"the server's deadlock answer", deadlockErr, true, false},
		{"the server refused as not the primary", fmt.Errorf("%w (x refused: %w)", errPrimaryChanged, &mysql.MySQLError{Number: 1290}), true, false},
		{"the server is shutting down", &mysql.MySQLError{Number: 1053, SQLState: [5]byte{'0', '8', 'S', '0', '1'}, Message: "Server shutdown in progress"}, true, false},
		{"another server answer", &mysql.MySQLError{Number: 1180, Message: "Got error 1 during COMMIT"}, false, false},
		{"database/sql saw the context end first", context.Canceled, false, false},
		{"the transaction had ended", sql.ErrTxDone, false, false},
		{"the connection broke", mysql.ErrInvalidConn, false, true},
		{"end of stream", io.EOF, false, true},
		{"the context ended while the answer was awaited", fmt.Errorf("lbd: %w while waiting for the proxy to end the transaction: %w", context.Canceled, mysql.ErrInvalidConn), false, true},
		{"a protocol violation", fmt.Errorf("x: %w", errProtocol), false, true},
	} {
		rerun, err := cfg.commitOutcome(tc.err)
		if rerun != tc.rerun || errors.Is(err, errCommitUnknown) != tc.unknown || (tc.err != nil && !errors.Is(err, tc.err)) {
			t.Errorf("%s: commitOutcome(%v) = %v, %v; want rerun %v, unknown %v, the cause kept", tc.name, tc.err, rerun, err, tc.rerun, tc.unknown)
		}
	}
}

// A context that has ended stops the pause at once, with its cause; a live one sleeps.
func TestSleepCtx(t *testing.T) {
	cause := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	if err := sleepCtx(ctx, time.Millisecond); err != nil {
		t.Fatalf("sleepCtx on a live context = %v; want nil", err)
	}
	cancel(cause)
	if err := sleepCtx(ctx, 0); err != cause {
		t.Fatalf("sleepCtx(0) on an ended context = %v; want its cause", err)
	}
	began := time.Now()
	if err := sleepCtx(ctx, time.Hour); err != cause || time.Since(began) > time.Second {
		t.Fatalf("sleepCtx(1h) on an ended context = %v after %v; want its cause at once", err, time.Since(began))
	}
}
