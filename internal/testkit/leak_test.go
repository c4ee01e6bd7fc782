package testkit

import (
	"testing"
	"time"
)

// recorder is a testing.TB that keeps whether it was failed.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }

func TestVerifyNoneSeesALeftoverGoroutine(t *testing.T) {
	before := IgnoreCurrent()
	stop := make(chan struct{})
	go func() { <-stop }()
	r := &recorder{TB: t}
	start := time.Now()
	VerifyNone(r, before)
	if !r.failed {
		t.Fatal("VerifyNone passed with a goroutine still blocked")
	}
	if time.Since(start) < leakWait {
		t.Fatal("VerifyNone gave up before its deadline")
	}
	close(stop)
	r = &recorder{TB: t}
	VerifyNone(r, before)
	if r.failed {
		t.Fatal("VerifyNone failed after the goroutine ended")
	}
}
