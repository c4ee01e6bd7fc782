package budget

import (
	"testing"
	"time"
)

// take asks for n retries at now and returns how many were allowed.
func take(b *Budget, now time.Time, n int) int {
	got := 0
	for range n {
		if b.Allow(now) {
			got++
		}
	}
	return got
}

func TestReserveWithoutStatements(t *testing.T) {
	b := New(20, 10)
	now := time.Unix(1000, 0)
	if got := take(b, now, 500); got != 100 {
		t.Fatalf("with no statement answered, %d retries allowed in one window, want the reserve of 10/s × 10 s = 100", got)
	}
	allowed, refused := b.Counts()
	if allowed != 100 || refused != 400 {
		t.Fatalf("counts %d allowed, %d refused; want 100 and 400", allowed, refused)
	}
	// The window slides: a second after the retries' own second has left it, they are back.
	if got := take(b, now.Add(9*time.Second), 1); got != 0 {
		t.Fatalf("9 s later %d retries allowed, want none (still within the window)", got)
	}
	if got := take(b, now.Add(10*time.Second), 500); got != 100 {
		t.Fatalf("10 s later %d retries allowed, want 100 again", got)
	}
}

func TestShareOfStatements(t *testing.T) {
	b := New(20, 10)
	now := time.Unix(2000, 0)
	for s := range 10 {
		b.Deposit(now.Add(time.Duration(s)*time.Second), 1000) // 1000 statements a second
	}
	end := now.Add(9 * time.Second)
	// 10 000 statements in the window: 2 000 retries, plus the reserve of 100.
	if got := take(b, end, 5000); got != 2100 {
		t.Fatalf("%d retries allowed, want 20%% of 10 000 statements + 100 = 2100", got)
	}
	// Once the deposits age out, only the reserve is left, and the retries taken at end still
	// count until they age out too.
	if got := take(b, end.Add(9*time.Second), 10); got != 0 {
		t.Fatalf("%d retries allowed while the window still holds 2100, want 0", got)
	}
}

func TestZeroAndNegative(t *testing.T) {
	var zero Budget
	if zero.Allow(time.Unix(0, 0)) {
		t.Fatal("the zero Budget allowed a retry")
	}
	b := New(-5, -1)
	b.Deposit(time.Unix(5, 0), 1_000_000)
	if b.Allow(time.Unix(5, 0)) {
		t.Fatal("a budget of negative shares allowed a retry")
	}
	b.Deposit(time.Unix(5, 0), -10) // ignored
}

func BenchmarkAllow(b *testing.B) {
	bud := New(20, 10)
	now := time.Unix(3000, 0)
	bud.Deposit(now, 1<<40)
	b.ReportAllocs()
	for b.Loop() {
		bud.Allow(now)
	}
}
