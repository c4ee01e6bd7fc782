package physical

import (
	"context"
	"io"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestFlightCountsAnswersOnly: a server's answer, even an error, is progress; a lost
// connection is not.
func TestFlightCountsAnswersOnly(t *testing.T) {
	var f Flight
	for _, err := range []error{nil, &mysql.MySQLError{Number: 1062}, io.EOF, context.DeadlineExceeded} {
		f.depart()
		if f.InFlight.Load() != 1 {
			t.Fatalf("in flight %d after depart, want 1", f.InFlight.Load())
		}
		f.land(&err)
	}
	if f.InFlight.Load() != 0 || f.Landed.Load() != 2 {
		t.Fatalf("in flight %d, landed %d; want 0 and 2 (the good answer and the server's error)", f.InFlight.Load(), f.Landed.Load())
	}
}

func BenchmarkFlight(b *testing.B) {
	var f Flight
	var err error
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			f.depart()
			f.land(&err)
		}
	})
}
