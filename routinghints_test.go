package lbd

import (
	"context"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// hintPair opens a split over a replica and a primary, both answering every SELECT with one row
// and recording what they run, with params added to the split's.
func hintPair(t *testing.T, params string) (primary, replica *scripted, run func(ctx context.Context, q string) error) {
	t.Helper()
	row := map[string]func(string) *mysqlfake.Result{"/*": func(q string) *mysqlfake.Result {
		if strings.Contains(q, "SELECT") {
			return oneRow("7")(q)
		}
		return nil
	}}
	primary, replica = &scripted{answers: row}, &scripted{answers: row}
	srvs := startScripted(t, replica, primary)
	db, _ := openRoles(t, srvs, []string{"replica", "primary"},
		"balance=statement&readWriteSplit=true&readAfterWriteMillis=0"+params, quiet()...)
	return primary, replica, func(ctx context.Context, q string) error {
		if strings.Contains(q, "SELECT") {
			var v string
			return db.QueryRowContext(ctx, q).Scan(&v)
		}
		_, err := db.ExecContext(ctx, q)
		return err
	}
}

// With routingHints=true a leading hint routes its statement, but a replica hint never sends a
// statement the split cannot prove replica-safe to the replica, and OnPrimary wins over it.
func TestRoutingHintsRoute(t *testing.T) {
	primary, replica, run := hintPair(t, "&routingHints=true")
	ctx := ctx5s(t)
	for _, tc := range []struct {
		query, want string
		onPrimary   bool
	}{
		{query: "/* lbd:replica */ SELECT v FROM t", want: "replica"},
		{query: "/* lbd:primary */ SELECT v FROM t", want: "primary"},
		{query: "/*lbd:replica*/ SELECT v FROM t WHERE id = 2", want: "replica"},
		{query: "/* lbd:replica */ SELECT v FROM t", want: "primary", onPrimary: true},
		// Never a write, a lock or per-server state on the replica, hint or not.
		{query: "/* lbd:replica */ INSERT INTO t VALUES (1)", want: "primary"},
		{query: "/* lbd:replica */ UPDATE t SET v = 1", want: "primary"},
		{query: "/* lbd:replica */ DELETE FROM t", want: "primary"},
		{query: "/* lbd:replica */ SELECT v FROM t FOR UPDATE", want: "primary"},
		{query: "/* lbd:replica */ SELECT GET_LOCK('k', 0)", want: "primary"},
		{query: "/* lbd:replica */ SELECT @@hostname", want: "primary"},
		{query: "/* lbd:replica */ SELECT 1; DELETE FROM t", want: "primary"},
		{query: "/* lbd:replica */ CALL p()", want: "primary"},
	} {
		for range 6 { // least-busy picks take turns: one run could land on the replica by chance
			c := ctx
			if tc.onPrimary {
				c = OnPrimary(ctx)
			}
			p0, r0 := primary.count(tc.query), replica.count(tc.query)
			if err := run(c, tc.query); err != nil {
				t.Fatalf("%s: %v", tc.query, err)
			}
			p1, r1 := primary.count(tc.query), replica.count(tc.query)
			if got := map[bool]string{true: "primary", false: "replica"}[p1 > p0]; got != tc.want || p1+r1 != p0+r0+1 {
				t.Errorf("%q (OnPrimary %v) ran on the %s (%d on the primary, %d on the replica); want the %s",
					tc.query, tc.onPrimary, got, p1-p0, r1-r0, tc.want)
				break
			}
		}
	}
	for _, q := range replica.all() {
		for _, w := range []string{"INSERT", "UPDATE", "DELETE", "CALL", "FOR UPDATE", "GET_LOCK", "@@"} {
			if strings.Contains(q, w) {
				t.Errorf("the replica ran %q", q)
			}
		}
	}
}

// Off by default: a hint is an ordinary comment, and a hinted read goes where any read goes.
func TestRoutingHintsOffByDefault(t *testing.T) {
	cfg, err := ParseDSN("u:p@lb(a:1)/db")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RoutingHints {
		t.Fatal("routingHints is on without the DSN asking for it")
	}
	primary, replica, run := hintPair(t, "")
	ctx := ctx5s(t)
	const q = "/* lbd:primary */ SELECT v FROM t"
	for range 20 {
		if err := run(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// The split's reads go to the replica while it serves: a hint that acted would have sent
	// them to the primary.
	if primary.count(q) != 0 || replica.count(q) != 20 {
		t.Errorf("without routingHints, %d hinted reads ran on the primary and %d on the replica; want all 20 on the replica (the hint ignored)", primary.count(q), replica.count(q))
	}
}

// routingHints needs the split, and takes true or false only.
func TestRoutingHintsRefused(t *testing.T) {
	for dsn, want := range map[string]string{
		"u:p@lb(a:1)/db?routingHints=true":                              "needs readWriteSplit=true",
		"u:p@lb(a:1)/db?routingHints=yes&balance=statement":             "routingHints",
		"u:p@lb(a:1#primary)/db?balance=statement&routingHints=maybe":   "must be true or false",
		"u:p@lb(a:1)/db?routinghints=true&balance=statement":            `did you mean "routingHints"`,
		"u:p@lb(a:1)/db?balance=statement&routingHint=true&x=1&y=2&z=3": `did you mean "routingHints"`,
	} {
		c, err := NewConnector(dsn, WithLogger(discardLogger()))
		if c != nil {
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error saying %q", dsn, err, want)
		}
	}
	c, err := NewConnector("u:p@lb(a:1#primary,b:1#replica)/db?balance=statement&readWriteSplit=true",
		WithLogger(discardLogger()), WithRoutingHints(true))
	if err != nil {
		t.Fatalf("WithRoutingHints(true) with the split: %v", err)
	}
	defer c.Close()
	if !c.Config().RoutingHints || !strings.Contains(c.Config().String(), "routingHints=true") {
		t.Errorf("the Connector's Config: RoutingHints %v, DSN %s; want it on and written", c.Config().RoutingHints, c.Config())
	}
}
