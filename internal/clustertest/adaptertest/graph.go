package adaptertest

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// Customer is a row of the relation scenarios' customers table (id, name), with its orders
// when the ORM loaded them.
type Customer struct {
	ID     int64
	Name   string
	Orders []Order
}

// Order is a row of the orders table (id, customer_id, total).
type Order struct {
	ID         int64
	CustomerID int64
	Total      int
}

// Graph is what the relation scenarios do through an ORM that maps relations (ent, bun), on the
// tables Prefix+"customers" and Prefix+"orders" of its GraphAdapter. Every method returns the
// ORM's error unchanged.
type Graph interface {
	// CreateCustomer creates a customer named name and one order per total in one transaction
	// of the ORM's, and returns them with their ids.
	CreateCustomer(ctx context.Context, name string, totals ...int) (Customer, error)
	// Customers returns the customers whose name starts with prefix, by id, each with its
	// orders (by id) loaded by the ORM's eager loading.
	Customers(ctx context.Context, prefix string) ([]Customer, error)
	// AddToTotals adds add to the total of every order of customer id, in one UPDATE, and
	// returns the rows affected.
	AddToTotals(ctx context.Context, customer int64, add int) (int64, error)
	// Rename renames customer id with the ORM's update of one entity and returns the entity as
	// the ORM gives it back.
	Rename(ctx context.Context, id int64, name string) (Customer, error)
	// Insert creates a customer with the ORM's own insert, which chooses how it learns the id
	// (the OK packet's last insert id, or INSERT ... RETURNING), and returns it.
	Insert(ctx context.Context, name string) (Customer, error)
	// QueryWrite sends query, a write, through the ORM's raw query path (database/sql's
	// QueryContext, as a RETURNING clause needs) and returns its rows scanned as (id, name):
	// none for a write without RETURNING.
	QueryWrite(ctx context.Context, query string, args ...any) ([]Customer, error)
	// DeleteReturning deletes customer id, which has no orders, with the ORM's own delete and a
	// RETURNING clause, and returns the deleted row; ok is false, and nothing is deleted, when
	// the ORM has no such call for this server.
	DeleteReturning(ctx context.Context, id int64) (c Customer, ok bool, err error)
}

// GraphAdapter opens an ORM that maps relations over lbd, for the relation scenarios.
type GraphAdapter interface {
	// Prefix starts the names of the ORM's tables ("lbd_ent_"): Prefix+"customers" and
	// Prefix+"orders" (see createGraphTables for their columns).
	Prefix() string
	// OpenGraph opens the ORM's handle over c; closing it, at test end, closes c. It returns
	// what the scenarios do through it and the pool under it.
	OpenGraph(t *testing.T, c *lbd.Connector) (Graph, *sql.DB)
}

// RunGraphScenarios runs every relation path of the ORM (a transaction creating a customer and
// its orders, eager loading, an UPDATE of many rows, the update of one entity, the ORM's own
// insert, writes sent through QueryContext, and INSERT and DELETE ... RETURNING where the server
// has them) over a 3-proxy lbdtest cluster: in each balance mode, where every proxy must serve
// and none see a fatal error; and with the read/write split over one primary and two replicas,
// where every write, those sent through QueryContext included, must reach the primary alone
// while the eager loads are read on the replicas.
func RunGraphScenarios(t *testing.T, a GraphAdapter) {
	EachBalance(t, func(t *testing.T, balance string) {
		cl, c, g, db := openGraph(t, a, "balance="+balance, Quiet())
		db.SetMaxIdleConns(0) // every operation dials, so each one is a fresh pick
		runGraph(context.Background(), t, g, a.Prefix(), returns(t, db))
		EveryProxyServed(t, cl)
		NoFatalErrors(t, c)
	})
	t.Run("split", func(t *testing.T) {
		cl := lbdtest.NewCluster(t, 3)
		for _, p := range cl.Proxies()[1:] {
			p.SetRole(lbdtest.Replica)
		}
		_, c, g, db := openGraphOn(t, a, cl, "balance=statement&readWriteSplit=true&roleCheck=mysql&readAfterWriteMillis=0", Fast())
		clusterkit.WaitRoles(t, c, nodes.RolePrimary, nodes.RoleReplica, nodes.RoleReplica)
		for _, p := range cl.Proxies() {
			p.ResetCounters()
		}
		returning := returns(t, db)
		runGraph(context.Background(), t, g, a.Prefix(), returning)
		writes := statementsOn(cl, func(q string) bool {
			return firstWordIn(q, "INSERT", "UPDATE", "DELETE") && strings.Contains(q, a.Prefix())
		})
		reads := statementsOn(cl, func(q string) bool { return firstWordIn(q, "SELECT") && strings.Contains(q, a.Prefix()) })
		t.Logf("writes per proxy (primary first) %v, reads %v; the ORM's insert: %s", writes, reads, ormInsert(cl.Proxy(0), a.Prefix()))
		if writes[0] == 0 {
			t.Error("the primary saw no write")
		}
		for i, p := range cl.Proxies() {
			ns, _ := c.Stats().Node(p.Addr())
			if p.Refused() != 0 {
				t.Errorf("proxy %d refused %d writes for its role", i, p.Refused())
			}
			if i > 0 && (writes[i] != 0 || ns.Writes != 0) {
				t.Errorf("replica %d saw %d writes; Stats counts %d", i, writes[i], ns.Writes)
			}
		}
		// The writes sent through QueryContext (written by hand, so their table name is not
		// quoted as the ORMs quote it), and the statements with RETURNING.
		customers := a.Prefix() + "customers"
		for _, w := range []string{"INSERT INTO " + customers + " (name)", "UPDATE " + customers + " SET", "DELETE FROM " + customers + " WHERE"} {
			if n := statementsOn(cl, func(q string) bool { return strings.HasPrefix(q, w) }); n[0] == 0 || n[1]+n[2] != 0 {
				t.Errorf("%s... through QueryContext reached the proxies %v times (primary first); want the primary alone", w, n)
			}
		}
		if returning {
			n := statementsOn(cl, func(q string) bool {
				return strings.Contains(q, a.Prefix()) && strings.Contains(strings.ToUpper(q), " RETURNING ")
			})
			t.Logf("statements with RETURNING per proxy (primary first): %v", n)
			if n[0] < 2 || n[1]+n[2] != 0 {
				t.Errorf("statements with RETURNING reached the proxies %v times; want 2 or more on the primary alone", n)
			}
		}
		if reads[1]+reads[2] == 0 {
			t.Error("no read ran on a replica: the split did not split")
		}
	})
}

// RunGraphOnPair runs the relation paths with the read/write split over the real MariaDB pair
// (clusterkit.MariaDBPair; skipped when it is not set), reads consistent by GTID: INSERT and
// DELETE ... RETURNING, the ORM's inserts (bun's use RETURNING on MariaDB) and the writes sent
// through QueryContext all run on the primary (the replica is read-only and the account may not
// write there, so a write sent to it fails the scenario), the rows are on the primary, and the
// eager loads run on the replica.
func RunGraphOnPair(t *testing.T, a GraphAdapter) {
	pair := clusterkit.MariaDBPair(t)
	createGraphTables(t, pair.Primary, a.Prefix())
	for _, table := range []string{"customers", "orders"} {
		WaitForTable(t, pair.Replica, a.Prefix()+table)
	}
	c, err := lbd.NewConnector(pair.SplitDSN("readConsistency=gtid&readAfterWriteMillis=3000"), Fast()...)
	if err != nil {
		t.Fatal(err)
	}
	g, db := a.OpenGraph(t, c)
	clusterkit.WaitRoles(t, c, nodes.RolePrimary, nodes.RoleReplica)
	if !returns(t, db) {
		t.Fatal("the pair's primary does not take RETURNING: want MariaDB 10.5 or newer")
	}
	runGraph(context.Background(), t, g, a.Prefix(), true)
	left := customersNamed(context.Background(), t, g, "cust", -1)
	for _, cu := range left {
		var name string
		if err := pair.Primary.QueryRow("SELECT name FROM "+a.Prefix()+"customers WHERE id = ?", cu.ID).Scan(&name); err != nil || name != cu.Name {
			t.Errorf("customer %d on the primary: %q, %v; want %q", cu.ID, name, err, cu.Name)
		}
	}
	st := c.Stats()
	p, _ := st.Node(pair.PrimaryCfg.Addr)
	r, _ := st.Node(pair.ReplicaCfg.Addr)
	t.Logf("primary: %d writes, %d reads; replica: %d writes, %d reads; %d causal waits", p.Writes, p.Reads, r.Writes, r.Reads, st.Causal.Waits)
	if r.Writes != 0 || p.Writes == 0 {
		t.Errorf("Stats counts %d writes on the replica and %d on the primary; want none and some", r.Writes, p.Writes)
	}
	if r.Reads == 0 {
		t.Error("no read ran on the replica: the split did not split")
	}
}

// openGraph starts a 3-proxy cluster and opens the ORM over it with params (after timeout=5s).
func openGraph(t *testing.T, a GraphAdapter, params string, opts []lbd.Option) (*lbdtest.Cluster, *lbd.Connector, Graph, *sql.DB) {
	t.Helper()
	return openGraphOn(t, a, lbdtest.NewCluster(t, 3), params, opts)
}

// openGraphOn creates the ORM's tables on cl's backend and opens the ORM over cl with params.
func openGraphOn(t *testing.T, a GraphAdapter, cl *lbdtest.Cluster, params string, opts []lbd.Option) (*lbdtest.Cluster, *lbd.Connector, Graph, *sql.DB) {
	t.Helper()
	createGraphTables(t, BackendDB(t, cl), a.Prefix())
	c, err := lbd.NewConnector(cl.DSN("timeout=5s&"+params), opts...)
	if err != nil {
		t.Fatal(err)
	}
	g, db := a.OpenGraph(t, c)
	return cl, c, g, db
}

// createGraphTables creates the customers and orders tables named after prefix through direct,
// a handle straight on the server that keeps them, and drops them at test end. The names are
// the ORM's own, so the test holds a lock named after them (HoldLock) while it runs, and drops
// what a run that was killed left behind.
func createGraphTables(t *testing.T, direct *sql.DB, prefix string) {
	t.Helper()
	HoldLock(t, direct, prefix+"tables")
	drop := func() error {
		_, err := direct.Exec("DROP TABLE IF EXISTS " + prefix + "orders, " + prefix + "customers")
		return err
	}
	if err := drop(); err != nil {
		t.Fatal(err)
	}
	for _, ddl := range []string{
		"CREATE TABLE " + prefix + "customers (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(64) NOT NULL)",
		"CREATE TABLE " + prefix + "orders (id BIGINT PRIMARY KEY AUTO_INCREMENT, customer_id BIGINT NOT NULL, total INT NOT NULL)",
	} {
		if _, err := direct.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("drop %s tables: %v", prefix, err)
		}
	})
}

// runGraph runs every relation path once through g, on customers named cust-..., and checks
// each answer; returning adds INSERT and DELETE ... RETURNING, sent through QueryContext and,
// where the ORM has it, through its own delete.
func runGraph(ctx context.Context, t *testing.T, g Graph, prefix string, returning bool) {
	t.Helper()
	customers := prefix + "customers"
	var made []Customer
	for i := range 4 {
		cu, err := g.CreateCustomer(ctx, fmt.Sprintf("cust-%d", i), 10*i+1, 10*i+2, 10*i+3)
		if err != nil {
			t.Fatalf("create customer %d and its orders: %v", i, err)
		}
		if cu.ID == 0 || len(cu.Orders) != 3 || cu.Orders[0].ID == 0 || cu.Orders[2].CustomerID != cu.ID {
			t.Fatalf("created %+v: want an id, and three orders with ids pointing at it", cu)
		}
		made = append(made, cu)
	}
	sameGraph(t, customersNamed(ctx, t, g, "cust", 4), made)

	if n, err := g.AddToTotals(ctx, made[0].ID, 100); err != nil || n != 3 {
		t.Fatalf("add to the totals of customer %d: %d rows, %v; want 3", made[0].ID, n, err)
	}
	for i := range made[0].Orders {
		made[0].Orders[i].Total += 100
	}
	renamed, err := g.Rename(ctx, made[1].ID, "cust-1-renamed")
	if err != nil || renamed.ID != made[1].ID || renamed.Name != "cust-1-renamed" {
		t.Fatalf("rename customer %d: %+v, %v", made[1].ID, renamed, err)
	}
	made[1].Name = renamed.Name
	sameGraph(t, customersNamed(ctx, t, g, "cust", 4), made)

	ins, err := g.Insert(ctx, "cust-inserted")
	if err != nil || ins.ID <= made[3].ID {
		t.Fatalf("insert: %+v, %v; want an id above %d", ins, err, made[3].ID)
	}
	made = append(made, ins)

	// Writes through QueryContext, as ent's QueryContext and bun's NewRaw send them.
	for _, w := range []struct{ query, arg string }{
		{"INSERT INTO " + customers + " (name) VALUES (?)", "cust-queried"},
		{"UPDATE " + customers + " SET name = CONCAT(name, '-updated') WHERE name = ?", "cust-queried"},
		{"DELETE FROM " + customers + " WHERE name = ?", "cust-queried-updated"},
	} {
		if rows, err := g.QueryWrite(ctx, w.query, w.arg); err != nil || len(rows) != 0 {
			t.Fatalf("%s through QueryContext: %+v, %v", w.query, rows, err)
		}
		if w.query[0] == 'I' {
			if got := customersNamed(ctx, t, g, "cust-queried", 1); got[0].Name != "cust-queried" {
				t.Fatalf("after the INSERT through QueryContext: %+v", got)
			}
		}
	}

	if returning {
		rows, err := g.QueryWrite(ctx, "INSERT INTO "+customers+" (name) VALUES (?), (?) RETURNING id, name", "cust-ret-a", "cust-ret-b")
		if err != nil || len(rows) != 2 || rows[0].ID <= ins.ID || rows[1].ID <= rows[0].ID || rows[1].Name != "cust-ret-b" {
			t.Fatalf("INSERT ... RETURNING: %+v, %v", rows, err)
		}
		gone, err := g.QueryWrite(ctx, "DELETE FROM "+customers+" WHERE id = ? RETURNING id, name", rows[0].ID)
		if err != nil || len(gone) != 1 || gone[0].ID != rows[0].ID || gone[0].Name != "cust-ret-a" {
			t.Fatalf("DELETE ... RETURNING: %+v, %v; want %+v", gone, err, rows[0])
		}
		made = append(made, rows[1])
		if del, ok, err := g.DeleteReturning(ctx, rows[1].ID); err != nil || ok && del.Name != "cust-ret-b" {
			t.Fatalf("the ORM's DELETE ... RETURNING: %+v, %v", del, err)
		} else if ok {
			made = made[:len(made)-1]
		}
	}
	sameGraph(t, customersNamed(ctx, t, g, "cust", len(made)), made)
}

// customersNamed loads the customers whose name starts with prefix, with their orders, and fails
// t unless there are want of them (any number for a negative want).
func customersNamed(ctx context.Context, t *testing.T, g Graph, prefix string, want int) []Customer {
	t.Helper()
	got, err := g.Customers(ctx, prefix)
	if err != nil {
		t.Fatalf("load the customers named %s... with their orders: %v", prefix, err)
	}
	if want >= 0 && len(got) != want {
		t.Fatalf("%d customers named %s...: %+v; want %d", len(got), prefix, got, want)
	}
	return got
}

// sameGraph fails t unless got holds the customers of want, with the same orders.
func sameGraph(t *testing.T, got, want []Customer) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("loaded %+v\nwant    %+v", got, want)
	}
}

// returns reports whether the server behind db takes INSERT and DELETE ... RETURNING (MariaDB
// 10.5 and newer), asking VERSION() through db.
func returns(t *testing.T, db *sql.DB) bool {
	t.Helper()
	var v string
	if err := db.QueryRow("SELECT VERSION()").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v, "MariaDB") {
		t.Logf("server %s: no RETURNING (MariaDB 10.5 and newer has it; run with %s for those paths)", v, lbdtest.EnvBackendDSN)
		return false
	}
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, _ := strconv.Atoi(major)
	mi, _ := strconv.Atoi(minor)
	return ma > 10 || ma == 10 && mi >= 5
}

// statementsOn counts, per proxy of cl, the recorded statements that match.
func statementsOn(cl *lbdtest.Cluster, match func(query string) bool) []int {
	out := make([]int, len(cl.Proxies()))
	for i, p := range cl.Proxies() {
		for _, q := range p.Queries() {
			if match(q) {
				out[i]++
			}
		}
	}
	return out
}

// firstWordIn reports whether q's first word is one of words, in any case.
func firstWordIn(q string, words ...string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(q), " ")
	for _, w := range words {
		if strings.EqualFold(first, w) {
			return true
		}
	}
	return false
}

// ormInsert returns the first insert into the customers table that p recorded from the ORM
// (whose table name is quoted), to show what the ORM sends.
func ormInsert(p *lbdtest.Proxy, prefix string) string {
	for _, q := range p.Queries() {
		if firstWordIn(q, "INSERT") && strings.Contains(q, "`"+prefix+"customers`") {
			return q
		}
	}
	return "none recorded"
}

// BackendDB opens a handle straight on cl's backend, past every proxy, closed at test end.
func BackendDB(t testing.TB, cl *lbdtest.Cluster) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", cl.User(), cl.Password(), cl.BackendAddr(), cl.Database()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// HoldLock takes the named lock name on a connection of db's own (GET_LOCK, waiting up to two
// minutes) and holds it until the test ends: tests that use fixed table names, as ORMs with
// generated code do, wait for each other across processes sharing one server.
func HoldLock(t testing.TB, db *sql.DB, name string) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 120)", name).Scan(&got); err != nil || got.Int64 != 1 {
		conn.Close()
		t.Fatalf("GET_LOCK(%q): %v, %v; another run holds it", name, got, err)
	}
	t.Cleanup(func() {
		conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", name).Scan(new(sql.NullInt64))
		conn.Close()
	})
}

// WaitForTable waits, up to 10 s, until table can be read through db (a replica that has not
// applied its CREATE yet answers 1146).
func WaitForTable(t testing.TB, db *sql.DB, table string) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, table+" readable", func() bool {
		rows, err := db.Query("SELECT 1 FROM " + table + " LIMIT 1")
		if err == nil {
			rows.Close()
		}
		return err == nil
	})
}
