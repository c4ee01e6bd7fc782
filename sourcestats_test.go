package lbd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// reporting is a source that reports a fixed Status.
type reporting struct {
	staticSource
	status nodes.Status
}

func (r reporting) Status() nodes.Status { return r.status }

// failing is a source whose Start fails.
type failing struct{ staticSource }

func (failing) Start(context.Context, func(nodes.Set)) (nodes.Set, error) {
	return nodes.Set{}, errors.New("no list today")
}

// Stats.Source is nil for a static list; for a source it names it, says whether it gave its
// first list or why it did not, and carries the Status the source reports, if any.
func TestStatsSource(t *testing.T) {
	c, err := NewConnector("u:p@lb(10.0.0.1:1)/db", WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s := c.Stats().Source; s != nil {
		t.Fatalf("static list: Stats.Source = %+v, want nil", s)
	}

	want := nodes.Status{LastGood: time.Unix(100, 0), Failures: 3, FailingSince: time.Unix(101, 0), LastError: "p.test: timeout", Version: "v1"}
	for _, src := range []nodes.Source{staticSource{}, reporting{status: want}} {
		c, err := NewConnector("u:p@lb()/db", WithSource(src), WithLogger(discardLogger()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		s := c.Stats().Source
		if s == nil || !s.Ready || s.StartError != "" || !strings.Contains(s.Name, "WithSource") {
			t.Fatalf("%T: Stats.Source = %+v", src, s)
		}
		if _, ok := src.(reporting); ok && s.Status != want || !ok && s.Status != (nodes.Status{}) {
			t.Fatalf("%T: Stats.Source.Status = %+v", src, s.Status)
		}
	}

	c, err = NewConnector("u:p@lb()/db", WithSource(failing{}), WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err == nil {
		t.Fatal("Ready with a failing source = nil")
	}
	if s := c.Stats().Source; s == nil || s.Ready || !strings.Contains(s.StartError, "no list today") {
		t.Fatalf("failing source: Stats.Source = %+v", s)
	}
}
