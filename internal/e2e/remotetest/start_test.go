package remotetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/lbd-go/lbd/internal/remotefake"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// startDSN is an lbremote DSN for cl's database over the config-server at csAddr, with the
// disk cache off and a distinctive API key that no error may show.
func startDSN(cl *lbdtest.Cluster, csAddr, timeoutMillis string) string {
	return fmt.Sprintf("%s:%s@lbremote(%s)/%s?configServerSchema=im_user&configServerApiKey=start-key-Q7&configServerCacheDir=&configServerTimeout=%s&timeout=2s",
		cl.User(), cl.Password(), csAddr, cl.Database(), timeoutMillis)
}

// NewConnector does no I/O: with a config-server that holds every request, it returns at once;
// a PingContext with a short deadline fails naming the source, and once the config-server
// answers, the same *sql.DB works.
func TestNewConnectorDoesNotWaitForTheConfigServer(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	cs := remotefake.New(t)
	cs.SetKey("start-key-Q7")
	cs.SetList("im_user", cl.Addrs()...)
	answer := make(chan struct{})
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-answer:
			cs.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}))
	defer held.Close()
	released := false
	release := func() {
		if !released {
			released = true
			close(answer)
		}
	}
	defer release()
	addr := strings.TrimPrefix(held.URL, "http://")

	type result struct {
		c   *lbd.Connector
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := lbd.NewConnector(startDSN(cl, addr, "60000"), fastOptions(&logRecorder{})...)
		done <- result{c, err}
	}()
	var c *lbd.Connector
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("NewConnector: %v", r.err)
		}
		c = r.c
	case <-time.After(5 * time.Second):
		release()
		t.Fatal("NewConnector waited for the config-server")
	}
	db := sql.OpenDB(c)
	defer db.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := db.PingContext(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "lbremote("+addr+")") ||
		!strings.Contains(err.Error(), "has not answered") || strings.Contains(err.Error(), "start-key-Q7") {
		t.Fatalf("PingContext while the config-server holds the request = %v, want the deadline, naming the source", err)
	}
	t.Logf("PingContext: %v", err)

	release()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("PingContext once the config-server answered: %v", err)
	}
	if n := len(c.Stats().Nodes); n != 1 {
		t.Fatalf("%d nodes, want the config-server's 1", n)
	}
}

// A config-server that fails is reported by Connect at once, with what to do; lbd builds the
// source again and starts once the config-server is back.
func TestConnectReportsAFailedStartAndRetries(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	cs := remotefake.New(t)
	cs.SetKey("start-key-Q7")
	cs.SetList("im_user", cl.Addrs()...)
	cs.SetFault("status500")
	logs := &logRecorder{}
	c, err := lbd.NewConnector(startDSN(cl, cs.Addr(), "1000"), fastOptions(logs)...)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(c)
	defer db.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = db.PingContext(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "start-key-Q7") {
		t.Fatalf("PingContext with every config-server failing = %v, want the source's error at once", err)
	}
	t.Logf("PingContext: %v", err)
	for _, want := range []string{"lbremote(" + cs.Addr() + ")", "no config-server gave a usable node list", "tries again"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("PingContext error %q does not say %q", err, want)
		}
	}

	cs.SetFault("")
	waitFor(t, 10*time.Second, "a Ping to succeed after the config-server recovered", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return db.PingContext(ctx) == nil
	})
	if logs.count("WARN", "node source did not start") == 0 {
		logs.dump(t)
		t.Fatal("the failed start was not logged")
	}
	if strings.Contains(strings.Join(logs.all(), "\n"), "start-key-Q7") {
		t.Fatal("a log line shows the API key")
	}
}
