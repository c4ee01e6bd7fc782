package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// Short intervals, so that a 20-second run shows lbd at work: a stopped proxy is noticed
// within half a second, connections are evened out every second, and a proxy that comes up
// warms up over 3 s. The defaults (5 s, 3 s, 10 s and 30 s) suit production.
const (
	healthInterval  = 500 * time.Millisecond
	healthTimeout   = 500 * time.Millisecond
	balanceInterval = time.Second
	warmup          = 3 * time.Second
)

// run runs the demo: it sets up the cluster (or uses the proxies of cfg.DSN), runs the
// workload for cfg.Duration or until ctx is done, prints the per-second tables and the
// summary to out, and cleans up. It fails when the table does not hold exactly the rows the
// workload wrote.
func run(ctx context.Context, cfg config, out io.Writer) (sum summary, err error) {
	if cfg.Workers < 1 {
		return sum, fmt.Errorf("need at least 1 worker, got %d", cfg.Workers)
	}
	if cfg.Duration <= 0 {
		return sum, fmt.Errorf("duration must be positive, got %v", cfg.Duration)
	}
	start := time.Now()
	// Cleanup must run even after Ctrl-C.
	cleanupCtx := context.WithoutCancel(ctx)

	// The cluster: three in-process proxies in front of one in-memory database, or the real
	// proxies named by -dsn.
	var cluster *lbdtest.Cluster
	dsn := cfg.DSN
	if dsn == "" {
		if cluster, err = lbdtest.Start(3); err != nil { // the proxies log nothing by default
			return sum, fmt.Errorf("start the in-memory cluster: %w", err)
		}
		defer func() { err = errors.Join(err, cluster.Close()) }()
		// interpolateParams sends each statement as one query rather than prepare + execute,
		// so the proxies count statements as the application issues them.
		dsn = cluster.DSN("parseTime=true&interpolateParams=true")
	}

	// The lbd connector, and GORM on top of it through database/sql.
	connector, err := lbd.NewConnector(dsn,
		lbd.WithLogger(newLogger(cfg.Log, start)),
		lbd.WithCheckHealthInterval(healthInterval),
		lbd.WithCheckHealthTimeout(healthTimeout),
		lbd.WithCheckBalanceInterval(balanceInterval),
		lbd.WithWarmup(warmup),
		lbd.WithBalance(cfg.Balance),
	)
	if err != nil {
		return sum, err
	}
	sqlDB := sql.OpenDB(connector)
	defer func() { err = errors.Join(err, sqlDB.Close()) }() // also closes the connector
	var page *statusServer
	if cfg.Status != "" {
		if page, err = serveStatus(connector, cfg.Status); err != nil {
			return sum, err
		}
		defer func() { err = errors.Join(err, page.Close()) }()
	}
	// Keep one pooled connection per worker, as a long-running service would; database/sql
	// keeps only 2 idle connections by default and would redial all the time.
	sqlDB.SetMaxOpenConns(cfg.Workers)
	sqlDB.SetMaxIdleConns(cfg.Workers)
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{
		Logger: logger.Default.LogMode(logger.Silent),
		// A one-row insert needs no transaction around it. (Also, the in-memory engine does
		// not isolate concurrent transactions from each other: rows would get lost.)
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return sum, fmt.Errorf("open GORM: %w", err)
	}

	// A table of its own for every run, so runs against a real database never collide.
	table := "quickstart_orders_" + strings.ReplaceAll(start.Format("20060102_150405.000"), ".", "_")
	work := newWorkload(db, table, cfg.Workers)
	if err := work.createTable(ctx); err != nil {
		return sum, fmt.Errorf("create table %s: %w", table, err)
	}
	defer func() {
		if derr := work.dropTable(cleanupCtx); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop table %s: %w", table, derr))
		}
	}()

	m := &monitor{out: out, start: start, connector: connector, cluster: cluster, work: work}
	m.intro(cfg, table)
	if page != nil {
		fmt.Fprintf(out, "Status page: %s (as JSON: %s?format=json)\n", page.URL(), page.URL())
	}

	// The workload, with the fault schedule running alongside.
	workCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	work.start(workCtx)
	var schedule []fault
	if cluster != nil {
		schedule = faults(out, cluster, connector)
	}
	m.drive(workCtx, cfg.Duration, schedule)
	if ctx.Err() != nil {
		fmt.Fprintln(out, "\n-- interrupted: stopping the workload early")
	}
	work.wait()

	// Every row the workload wrote must be in the table, and nothing else.
	landed, err := work.settle(cleanupCtx)
	if err != nil {
		return sum, err
	}
	counted, err := work.count(cleanupCtx)
	if err != nil {
		return sum, fmt.Errorf("count rows: %w", err)
	}
	sum = m.summarize(landed, counted)
	m.printSummary(sum)
	if sum.Counted != sum.Written {
		return sum, fmt.Errorf("the table holds %d rows, but the workload wrote %d", sum.Counted, sum.Written)
	}
	return sum, nil
}

// The fault schedule for the in-memory cluster, as fractions of the run.
const (
	stopAt    = 0.30 // the second proxy stops
	restartAt = 0.55 // it starts again
	addAt     = 0.70 // a fourth proxy joins
)

// fault is one step of the fault schedule: at the given fraction of the run, do happens.
type fault struct {
	at float64
	do func() error
}

// faults returns the fault schedule for the in-memory cluster. Each step prints a banner to
// out.
func faults(out io.Writer, cluster *lbdtest.Cluster, connector *lbd.Connector) []fault {
	victim := cluster.Proxy(1)
	return []fault{
		{at: stopAt, do: func() error {
			fmt.Fprintf(out, "\n-- stopping proxy %s: its connections break; lbd takes it out\n", victim.Addr())
			return victim.Stop()
		}},
		{at: restartAt, do: func() error {
			fmt.Fprintf(out, "\n-- starting proxy %s again: back after 2 good probes, then connections move back\n", victim.Addr())
			return victim.Start()
		}},
		{at: addAt, do: func() error {
			p, err := cluster.AddProxy()
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "\n-- adding proxy %s (Connector.SetNodes): it joins after one good probe\n", p.Addr())
			return connector.SetNodes(cluster.Addrs())
		}},
	}
}

// drive prints the per-second table and runs the fault schedule until ctx is done.
func (m *monitor) drive(ctx context.Context, d time.Duration, schedule []fault) {
	begin := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	next := time.NewTimer(d)
	defer next.Stop()
	for {
		var due <-chan time.Time
		if len(schedule) > 0 {
			next.Reset(time.Until(begin.Add(time.Duration(schedule[0].at * float64(d)))))
			due = next.C
		}
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			m.report(now)
		case <-due:
			if err := schedule[0].do(); err != nil {
				fmt.Fprintf(m.out, "-- that failed: %v\n", err)
			}
			schedule = schedule[1:]
		}
	}
}

// newLogger returns the logger for lbd's own log lines (node state changes, rebalancing): one
// compact line each, stamped with the seconds since start instead of the wall clock. A nil w
// drops them.
func newLogger(w io.Writer, start time.Time) *slog.Logger {
	if w == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.String("t", fmt.Sprintf("%.1fs", a.Value.Time().Sub(start).Seconds()))
			}
			return a
		},
	}))
}
