// Quickstart shows lbd spreading a GORM application's connections over a cluster of SQL
// proxies, and following the cluster as proxies fail, recover and join.
//
//	go run ./examples/quickstart
//
// With no flags it starts three in-process MySQL-protocol proxies in front of one in-memory
// database (package lbdtest), opens GORM through an lbd Connector and runs 32 workers that
// insert rows and read them back for 20 seconds. Once a second it prints, for every proxy, its
// state as lbd sees it, the connections lbd holds open to it and the statements it relayed.
// Along the way the demo stops the second proxy (30% into the run), starts it again (55%) and
// adds a fourth one (70%); watch the connections and the statements move, and lbd's own log
// lines on stderr ("node state changed ... to=down", "... to=up", "rebalanced").
//
// It ends with a summary: the rows written must equal a final SELECT COUNT(*), or the demo
// exits with status 1.
//
// While it runs, lbd's status page (package github.com/lbd-go/lbd/status) is served on a free
// loopback port, whose address the demo prints: every proxy's state and connections, the recent
// transitions with their reasons, and a chart of connections per proxy (-status sets the
// address; an empty -status= serves none).
//
// The header names the balance mode. To see the difference between the modes, run one worker:
//
//	go run ./examples/quickstart -workers 1
//	go run ./examples/quickstart -workers 1 -balance statement
//
// With one worker, connection mode sends every statement to one proxy (database/sql reuses the
// connection returned last), while statement mode spreads them over all proxies.
//
// With -dsn it runs the same workload against real proxies instead:
//
//	go run ./examples/quickstart -dsn 'user:pass@lb(10.0.0.1:2883,10.0.0.2:2883)/db'
//
// It then injects no faults, and shows the connections per proxy only: the statements each
// proxy relayed cannot be seen from the client. The rows go to a table of their own, dropped at
// the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	_ "github.com/lbd-go/lbd/statuscheck" // so that a -dsn may carry statusURL
)

// config is what one run of the demo needs.
type config struct {
	DSN      string          // lbd DSN of real proxies; "" starts an in-memory cluster of 3
	Duration time.Duration   // how long the workload runs
	Workers  int             // concurrent goroutines, each writing and reading its own rows
	Balance  lbd.BalanceMode // what lbd balances: connections (default) or statements
	Log      io.Writer       // where lbd's log lines go; nil drops them
	Status   string          // where to serve lbd's status page ("127.0.0.1:0": a free loopback port); "" serves none
}

// flags returns the demo's flags, on a FlagSet of its own: the proxies' SQL engine registers
// flags of its own on the global set, and -h would list them as the demo's.
func flags(cfg *config) (fs *flag.FlagSet, balance *string) {
	fs = flag.NewFlagSet("quickstart", flag.ExitOnError)
	fs.StringVar(&cfg.DSN, "dsn", "", "run against real proxies: `user:pass@lb(host1:port1,host2:port2)/db`")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "how long the workload runs")
	fs.IntVar(&cfg.Workers, "workers", 32, "number of concurrent workers")
	balance = fs.String("balance", "connection", "what lbd balances: `connection` or statement")
	fs.StringVar(&cfg.Status, "status", "127.0.0.1:0", "`address` to serve lbd's status page on (port 0: a free one; empty: none)")
	return fs, balance
}

func main() {
	cfg := config{Log: os.Stderr}
	fs, balance := flags(&cfg)
	_ = fs.Parse(os.Args[1:]) // ExitOnError: a bad flag exits with status 2 after the usage
	switch *balance {
	case "connection":
	case "statement":
		cfg.Balance = lbd.BalanceStatement
	default:
		fmt.Fprintf(os.Stderr, "quickstart: -balance must be connection or statement, got %q\n", *balance)
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "quickstart: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		os.Exit(2)
	}

	quietDriver()

	// Ctrl-C ends the workload early; the summary is still printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err := run(ctx, cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// quietDriver stops go-sql-driver from printing a line for every connection that breaks under
// it: breaking connections is the point of this demo, and the workload counts the errors.
func quietDriver() {
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
}
