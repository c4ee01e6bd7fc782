package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
)

// clientParams are the go-sql-driver parameters every setup uses: parameters interpolated on
// the client so that a statement with arguments is one COM_QUERY round trip, and a one-second
// bound on dialing (for lbd: on dialing and the handshake, per proxy).
const clientParams = "interpolateParams=true&timeout=1s"

// Mix of the workload, in percent; the rest are inserts.
const (
	pctPointSelect = 60
	pctSelectOne   = 20
)

// The table holds readRows rows that the point selects read (ids 1..readRows) and writeRows
// rows that the inserts write (the ids after those). An insert whose id exists updates the row
// instead, so the table never grows: the in-memory backend answers a primary-key lookup in
// time proportional to the table's size, and a growing table would make every later phase
// slower than the one before, whatever the setup.
const (
	readRows    = 100
	writeRows   = 100
	prefillRows = readRows + writeRows
)

// target is one way of reaching the proxies.
type target struct {
	Key   string // short identifier used in file names and JSON
	Label string // human-readable name used in the report
	// open returns a pool of at most workers connections and, for lbd, its connector.
	open func(workers int) (*sql.DB, *lbd.Connector, error)
	// haproxy is set for the setup that goes through HAProxy.
	haproxy *haproxyProc
}

// openPlain opens go-sql-driver on dsn without lbd.
func openPlain(dsn string) (*sql.DB, error) {
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// sizePool applies the pool settings every setup shares.
func sizePool(db *sql.DB, workers int) {
	db.SetMaxOpenConns(workers)
	db.SetMaxIdleConns(workers)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
}

// plainTarget reaches one address (a proxy or HAProxy) with go-sql-driver alone.
func plainTarget(key, label, user, password, addr, database string) target {
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s?%s", user, password, addr, database, clientParams)
	return target{
		Key:   key,
		Label: label,
		open: func(workers int) (*sql.DB, *lbd.Connector, error) {
			db, err := openPlain(dsn)
			if err != nil {
				return nil, nil, err
			}
			sizePool(db, workers)
			return db, nil, nil
		},
	}
}

// lbdTarget reaches every proxy through an lbd connector built with opts. Its turns among
// equally loaded proxies start at the first, the proxy the direct setup uses: with one worker,
// lbd's one connection then runs through the same in-process relay as the direct one. Left to
// chance, it landed on another relay, often one an earlier phase had just used (HAProxy's, or
// the one the fault phase hung), and ran 5-20 % slower than direct in those runs while it ran
// as fast as direct whenever it landed on the first relay: the comparison measured the relay,
// not lbd. With more workers lbd spreads over every proxy whatever the start.
func lbdTarget(key, label, dsn string, opts ...lbd.Option) target {
	opts = append([]lbd.Option{lbd.WithLogger(slog.New(slog.DiscardHandler)), lbd.WithRand(func(int) int { return 0 })}, opts...)
	return target{
		Key:   key,
		Label: label,
		open: func(workers int) (*sql.DB, *lbd.Connector, error) {
			c, err := lbd.NewConnector(dsn, opts...)
			if err != nil {
				return nil, nil, err
			}
			db := sql.OpenDB(c)
			sizePool(db, workers)
			return db, c, nil
		},
	}
}

// statements holds the workload's SQL text for one table.
type statements struct {
	pointSelect, insert, selectOne string
}

func newStatements(table string) statements {
	return statements{
		pointSelect: "SELECT v FROM " + table + " WHERE id = ?",
		insert:      "INSERT INTO " + table + " (id, k, v) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE k = VALUES(k), v = VALUES(v)",
		selectOne:   "SELECT 1",
	}
}

// createTable creates table on db and fills it with rows whose ids are 1..prefillRows.
func createTable(ctx context.Context, db *sql.DB, table string) error {
	ddl := "CREATE TABLE " + table + " (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, v VARCHAR(64) NOT NULL)"
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("create %s: %w", table, err)
	}
	const batch = 250
	for start := 1; start <= prefillRows; start += batch {
		var sb strings.Builder
		sb.WriteString("INSERT INTO " + table + " (id, k, v) VALUES ")
		for id := start; id < start+batch && id <= prefillRows; id++ {
			if id > start {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(%d, %d, 'row-%d')", id, id%97, id)
		}
		if _, err := db.ExecContext(ctx, sb.String()); err != nil {
			return fmt.Errorf("fill %s: %w", table, err)
		}
	}
	return nil
}

// errKind sorts workload errors.
type errKind int

const (
	errTimeout errKind = iota // the per-statement deadline passed
	errOther
)

// errEvent is one failed statement.
type errEvent struct {
	Start, End time.Time // when the statement was issued and when it returned
	Kind       errKind   // timeout or other
}

// recorder is what one worker saw. Only its own worker writes it until the load has stopped.
type recorder struct {
	ok      int64     // statements that succeeded and ended inside the window
	lat     []float64 // their latencies, in milliseconds
	errs    []errEvent
	samples map[string]int // a few error texts, for the report
}

// load runs the workload with a fixed number of workers on one pool.
type load struct {
	db          *sql.DB
	stmts       statements
	workers     int
	stmtTimeout time.Duration
	from, to    time.Time // measurement window; statements ending in [from, to) are recorded
	until       time.Time // workers stop after this (zero: only when stop is set)
	seed        uint64

	stop atomic.Bool
	wg   sync.WaitGroup
	recs []*recorder
}

// start launches the workers.
func (l *load) start() {
	l.recs = make([]*recorder, l.workers)
	for i := range l.workers {
		r := &recorder{samples: map[string]int{}, lat: make([]float64, 0, 1<<14)}
		l.recs[i] = r
		l.wg.Add(1)
		go l.work(i, r)
	}
}

// finish stops the workers and waits for them; statements in flight complete first.
func (l *load) finish() {
	l.stop.Store(true)
	l.wg.Wait()
}

func (l *load) work(id int, r *recorder) {
	defer l.wg.Done()
	rng := rand.New(rand.NewPCG(l.seed, uint64(id)+1))
	for !l.stop.Load() {
		if !l.until.IsZero() && !time.Now().Before(l.until) {
			return
		}
		op := rng.IntN(100)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), l.stmtTimeout)
		var err error
		switch {
		case op < pctPointSelect:
			var v string
			err = l.db.QueryRowContext(ctx, l.stmts.pointSelect, 1+rng.IntN(readRows)).Scan(&v)
		case op < pctPointSelect+pctSelectOne:
			var one int
			err = l.db.QueryRowContext(ctx, l.stmts.selectOne).Scan(&one)
		default:
			k := rng.IntN(1 << 20)
			_, err = l.db.ExecContext(ctx, l.stmts.insert, readRows+1+rng.IntN(writeRows), k, "w"+strconv.Itoa(k))
		}
		cancel()
		end := time.Now()
		if err != nil {
			kind := errOther
			if errors.Is(err, context.DeadlineExceeded) {
				kind = errTimeout
			}
			r.errs = append(r.errs, errEvent{Start: start, End: end, Kind: kind})
			if len(r.samples) < 8 {
				r.samples[err.Error()]++
			}
			continue
		}
		if !end.Before(l.from) && end.Before(l.to) {
			r.ok++
			r.lat = append(r.lat, float64(end.Sub(start))/float64(time.Millisecond))
		}
	}
}

// totals sums what the workers saw: successes in the window, errors in the window, and every
// error event.
func (l *load) totals() (ok, windowErrs int64, events []errEvent, samples map[string]int) {
	samples = map[string]int{}
	for _, r := range l.recs {
		ok += r.ok
		for _, e := range r.errs {
			if !e.End.Before(l.from) && e.End.Before(l.to) {
				windowErrs++
			}
		}
		events = append(events, r.errs...)
		for k, v := range r.samples {
			samples[k] += v
		}
	}
	return ok, windowErrs, events, samples
}

// latencies returns every recorded latency, unsorted.
func (l *load) latencies() []float64 {
	n := 0
	for _, r := range l.recs {
		n += len(r.lat)
	}
	out := make([]float64, 0, n)
	for _, r := range l.recs {
		out = append(out, r.lat...)
	}
	return out
}
