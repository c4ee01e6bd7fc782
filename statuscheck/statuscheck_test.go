package statuscheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/statushook"
	"github.com/lbd-go/lbd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// timeout is the probe timeout the checks below are built with: lbd's default
// checkHealthTimeoutMillis.
const timeout = 3 * time.Second

// TestRegistered: importing the package registers the check the root asks for.
func TestRegistered(t *testing.T) {
	if statushook.Registered() == nil {
		t.Fatal("no status check registered by the package's init")
	}
}

// TestAnswers: the check returns the status code of the answer as it came, a redirect
// included (never followed), and keeps no connection open after it.
func TestAnswers(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(strings.Repeat("x", 1<<20))) })
	mux.HandleFunc("/down", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok-elsewhere", http.StatusFound) })
	mux.HandleFunc("/ok-elsewhere", func(w http.ResponseWriter, _ *http.Request) { followed.Add(1) })
	var open atomic.Int32
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()

	get := newGet(timeout)
	for _, tc := range []struct {
		path string
		want int
	}{{"/ok", 200}, {"/down", 500}, {"/moved", 302}, {"/missing", 404}} {
		code, err := get(context.Background(), srv.URL+tc.path)
		if err != nil || code != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.path, code, err, tc.want)
		}
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
	for deadline := time.Now().Add(5 * time.Second); open.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open 5s after the checks", open.Load())
		}
	}
}

// TestBounded: a server that accepts the request and never answers fails the check within its
// timeout, and the error names no query (it may carry a token).
func TestBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)

	const short = 300 * time.Millisecond
	start := time.Now()
	_, err := newGet(short)(context.Background(), srv.URL+"/status?token=secret")
	took := time.Since(start)
	if err == nil {
		t.Fatal("a server that never answered passed the check")
	}
	if took > short+2*time.Second {
		t.Fatalf("the check took %v with a timeout of %v", took, short)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("the error prints the URL's query: %v", err)
	}
}

// TestContext: the caller's context ends the check (the probe's deadline).
func TestContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := newGet(timeout)(ctx, srv.URL+"/status"); err == nil {
		t.Fatal("the check passed after its context ended")
	}
	if took := time.Since(start); took > timeout {
		t.Fatalf("the check took %v: it did not stop at its context's deadline", took)
	}
}
