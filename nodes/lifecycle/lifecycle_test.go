package lifecycle

import (
	"errors"
	"sync/atomic"
	"testing"
)

var errClosed = errors.New("closed")

func TestStartOnceCloseWaits(t *testing.T) {
	l := New()
	if err := l.Begin("src", errClosed); err != nil {
		t.Fatal(err)
	}
	if err := l.Begin("src", errClosed); err == nil || err.Error() != "src: Start called twice" {
		t.Fatalf("second Begin: %v", err)
	}
	var set, stopped atomic.Bool
	ok := l.Go(func() { set.Store(true) }, func() {
		<-l.Ctx.Done()
		stopped.Store(true)
	})
	if !ok || !set.Load() {
		t.Fatalf("Go = %v, setup ran = %v", ok, set.Load())
	}
	l.Close()
	if !stopped.Load() {
		t.Fatal("Close returned before the goroutine did")
	}
	l.Close() // idempotent
}

func TestCloseFirst(t *testing.T) {
	l := New()
	l.Close()
	if err := l.Begin("src", errClosed); err != errClosed {
		t.Fatalf("Begin after Close: %v", err)
	}
	l2 := New()
	if err := l2.Begin("src", errClosed); err != nil {
		t.Fatal(err)
	}
	l2.Close() // during Start: the goroutine must not run
	if l2.Go(func() { t.Error("setup ran after Close") }, func() { t.Error("loop ran after Close") }) {
		t.Fatal("Go after Close = true")
	}
}
