// Command compare measures lbd against the setups it replaces. One mixed SQL workload (point
// selects, small inserts, SELECT 1) runs three ways over the same in-process lbdtest proxy
// cluster: straight to one proxy (the floor: no balancing at all), through HAProxy in TCP mode
// with leastconn and MySQL health checks (when haproxy is installed), and through lbd over every
// proxy. Each load phase is cut into turns that the setups take in rotation, each on a new pool,
// so that a machine whose speed drifts moves them alike. A fault phase then hangs one proxy
// under load and measures how each balancer copes. The results land in a README with PNG
// charts.
//
//	go run ./bench/compare                                # in-memory backend
//	go run ./bench/compare -mysql-dsn 'root:@tcp(127.0.0.1:3306)/test'
//	go run ./bench/compare -duration 2s -runs 1 -workers 1,4   # a quick smoke run
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// config holds the command-line settings.
type config struct {
	duration     time.Duration
	turns        int // the measured time of a load phase is cut into this many turns
	workers      []int
	proxies      int
	runs         int
	out          string
	mysqlDSN     string
	checkUser    string
	stmtTimeout  time.Duration
	faultWorkers int
	fault        bool
	control      bool // -control: a second direct setup, to show the noise floor
	verbose      bool
	profile      string // -profile: directory for per-phase CPU and block profiles
	only         string // "scaleout": run the scale-out phase alone (its own report; README.md untouched)
}

// parseWorkers reads a comma-separated list of positive worker counts.
func parseWorkers(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad worker count %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no worker count given")
	}
	return out, nil
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var cfg config
	var workers string
	fs.DurationVar(&cfg.duration, "duration", 20*time.Second, "measured time of each load phase (the fault phase scales with it)")
	fs.IntVar(&cfg.turns, "turns", 5, "turns each load phase is cut into: the setups take turns, so that a machine whose speed drifts over seconds slows them alike")
	fs.StringVar(&workers, "workers", "1,4,16,64", "comma-separated worker counts")
	fs.IntVar(&cfg.proxies, "proxies", 3, "number of proxies in the cluster")
	fs.IntVar(&cfg.runs, "runs", 3, "repetitions; the report shows medians")
	fs.StringVar(&cfg.out, "out", "bench/results", "directory for README.md, results.json and the charts")
	fs.StringVar(&cfg.mysqlDSN, "mysql-dsn", "", "go-sql-driver DSN of a real MySQL/MariaDB for the proxies to relay to (default: $"+lbdtest.EnvBackendDSN+", else an in-memory backend)")
	fs.StringVar(&cfg.checkUser, "haproxy-check-user", "", "MySQL user for HAProxy's mysql-check, must log in without password (default: the cluster's user when its password is empty, else \"haproxy\")")
	fs.DurationVar(&cfg.stmtTimeout, "stmt-timeout", time.Second, "context deadline of every statement")
	fs.IntVar(&cfg.faultWorkers, "fault-workers", 16, "workers during the fault phase")
	fs.BoolVar(&cfg.fault, "fault", true, "run the fault phase")
	fs.BoolVar(&cfg.control, "control", false, "add a second direct setup, identical to the first: its ratio to direct, run by run, is the noise floor of every other ratio")
	fs.StringVar(&cfg.only, "only", "", `"scaleout": run only the scale-out phase, which writes `+scaleOutFile+` and leaves README.md alone`)
	fs.StringVar(&cfg.profile, "profile", "", "directory for a CPU profile and block profiles of each steady phase's measured window (<setup>-w<workers>-r<run>.cpu.pprof; .block-start/.block-end.pprof, compare with pprof -diff_base)")
	fs.BoolVar(&cfg.verbose, "v", false, "print the balancer's view of the hung proxy whenever it changes during the fault phase")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	if cfg.workers, err = parseWorkers(workers); err != nil {
		return cfg, err
	}
	switch {
	case cfg.duration <= 0:
		return cfg, errors.New("-duration must be positive")
	case cfg.proxies < 2:
		return cfg, errors.New("-proxies must be at least 2")
	case cfg.runs < 1:
		return cfg, errors.New("-runs must be at least 1")
	case cfg.turns < 1:
		return cfg, errors.New("-turns must be at least 1")
	case cfg.duration/time.Duration(cfg.turns) < 100*time.Millisecond:
		return cfg, fmt.Errorf("-duration %s in %d turns leaves %s a turn; a turn must measure at least 100ms", cfg.duration, cfg.turns, cfg.duration/time.Duration(cfg.turns))
	case cfg.stmtTimeout <= 0:
		return cfg, errors.New("-stmt-timeout must be positive")
	case cfg.faultWorkers < 1:
		return cfg, errors.New("-fault-workers must be at least 1")
	case cfg.only != "" && cfg.only != "scaleout":
		return cfg, fmt.Errorf("-only %q: the one phase that runs alone is scaleout", cfg.only)
	}
	return cfg, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	// go-sql-driver logs every connection cut under it (HAProxy shutting sessions of a downed
	// server does that on purpose); the workload counts those as errors instead.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// bench is the shared state of one invocation.
type bench struct {
	cfg     config
	cluster *lbdtest.Cluster
	proxies []*lbdtest.Proxy
	stmts   statements
	haproxy *haproxyProc
	turn    time.Duration // the measured time of one turn of a load phase
	warmup  time.Duration // the unmeasured start of every turn, with a pool of its own
	seed    uint64
}

// backendInfo describes the database behind the proxies.
type backendInfo struct {
	External bool   // a real server in its own process, not the in-memory one
	Desc     string // for the report
}

func run(ctx context.Context, cfg config) error {
	began := time.Now()
	if cfg.mysqlDSN == "" {
		cfg.mysqlDSN = os.Getenv(lbdtest.EnvBackendDSN)
	}
	if cfg.mysqlDSN != "" {
		if _, err := mysql.ParseDSN(cfg.mysqlDSN); err != nil {
			return fmt.Errorf("-mysql-dsn: %w", err)
		}
		os.Setenv(lbdtest.EnvBackendDSN, cfg.mysqlDSN)
	} else {
		os.Unsetenv(lbdtest.EnvBackendDSN)
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	if cfg.profile != "" {
		if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
			return err
		}
		// Sample blocking events of 10 µs and more: statements on loopback take about 100 µs.
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
	}
	if cfg.only == "scaleout" {
		rs, err := runScaleOut(ctx, cfg)
		if err != nil {
			return fmt.Errorf("scale-out phase: %w", err)
		}
		return writeScaleOut(cfg.out, cfg, rs)
	}

	cluster, err := lbdtest.Start(cfg.proxies)
	if err != nil {
		return fmt.Errorf("start proxies: %w", err)
	}
	defer func() {
		if err := cluster.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "compare: closing the proxies:", err)
		}
	}()
	b := &bench{
		cfg:     cfg,
		cluster: cluster,
		proxies: cluster.Proxies(),
		turn:    cfg.duration / time.Duration(cfg.turns),
		seed:    rand.Uint64(),
	}
	b.warmup = min(time.Second, max(b.turn/4, 200*time.Millisecond))

	// The table is created and dropped on the backend itself, so setup statements do not show
	// in the proxies' counters.
	admin, err := openPlain(adminDSN(cluster))
	if err != nil {
		return err
	}
	defer admin.Close()
	backend, err := describeBackend(ctx, admin, cfg.mysqlDSN != "")
	if err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	table := fmt.Sprintf("lbd_compare_%d_%04x", time.Now().Unix(), rand.IntN(1<<16))
	if err := createTable(ctx, admin, table); err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(dctx, "DROP TABLE IF EXISTS "+table); err != nil {
			fmt.Fprintln(os.Stderr, "compare: dropping", table+":", err)
		}
	}()
	b.stmts = newStatements(table)
	fmt.Printf("backend: %s; %d proxies; table %s\n", backend.Desc, cfg.proxies, table)

	ha := b.startHAProxy(ctx)
	if ha.proc != nil {
		b.haproxy = ha.proc
		defer ha.proc.Stop()
	}

	user, pass, db := cluster.User(), cluster.Password(), cluster.Database()
	lbdDSN := cluster.DSN(clientParams)
	direct := plainTarget("direct", "direct to one proxy", user, pass, b.proxies[0].Addr(), db)
	lbdDefaults := lbdTarget("lbd", "lbd (defaults)", lbdDSN)
	targets := []target{direct}
	if cfg.control {
		targets = append(targets, plainTarget(controlKey, "direct again (the noise floor)", user, pass, b.proxies[0].Addr(), db))
	}
	faultTargets := []target{}
	if b.haproxy != nil {
		t := plainTarget("haproxy", "HAProxy leastconn", user, pass, b.haproxy.Addr(), db)
		t.haproxy = b.haproxy
		targets = append(targets, t)
		faultTargets = append(faultTargets, t)
	}
	targets = append(targets, lbdDefaults)

	faultTargets = append(faultTargets,
		lbdTarget("lbd", "lbd (defaults: probe every 5 s, 3 s timeout, passive detection)", lbdDSN),
		lbdTarget("lbd-tuned", "lbd (probe every 1 s, 500 ms timeout, passive detection)", lbdDSN,
			lbd.WithCheckHealthInterval(time.Second), lbd.WithCheckHealthTimeout(500*time.Millisecond)),
	)

	res := &results{
		Began:       began,
		Config:      cfg,
		Backend:     backend,
		HAProxy:     ha,
		Targets:     targets,
		FaultTarget: faultTargets,
		FaultTiming: faultTimingFor(cfg.duration),
		Warmup:      b.warmup,
	}
	for run := 1; run <= cfg.runs; run++ {
		for _, w := range cfg.workers {
			prs, err := b.runTurns(ctx, targets, w, run, w == cdfWorkers(cfg.workers))
			if err != nil {
				return fmt.Errorf("run %d, %d workers: %w", run, w, err)
			}
			for i, pr := range prs {
				t := targets[i]
				fmt.Printf("run %d/%d %3d workers %-22s %9.0f stmt/s  p50 %s  p99 %s  p99.9 %s ms  cpu %.1fs (%.1f µs/stmt)  allocs/stmt %.0f  cv %s  errors %d\n",
					run, cfg.runs, w, t.Label, pr.Throughput, fmtMs(pr.P50), fmtMs(pr.P99), fmtMs(pr.P999),
					pr.ClientCPU, pr.cpuPerStmt(), pr.mallocsPerStmt(), fmtPct(pr.ShareCV), pr.Errors)
				res.Phases = append(res.Phases, pr)
			}
		}
		if !cfg.fault {
			continue
		}
		for _, t := range faultTargets {
			fr, err := b.runFault(ctx, t, run, res.FaultTiming)
			if err != nil {
				return fmt.Errorf("run %d, fault phase, %s: %w", run, t.Label, err)
			}
			fmt.Printf("run %d/%d fault %-45s errors %d (timeouts %d)  counter quiet after %s  last failed stmt %s  down after %s  back up %s  recovered %s\n",
				run, cfg.runs, t.Label, fr.Errors, fr.Timeouts, fmtSec(fr.CounterStop), fmtSec(fr.LastFailed),
				fmtSec(fr.MarkedDown), fmtSec(fr.BackUp), fmtRecovered(fr.Recovered, fr.Watch))
			res.Faults = append(res.Faults, fr)
		}
	}
	res.Took = time.Since(began)
	if err := writeReport(cfg.out, res); err != nil {
		return err
	}
	if err := writeCharts(cfg.out, res); err != nil {
		return err
	}
	fmt.Printf("wrote %s/README.md in %s\n", cfg.out, res.Took.Round(time.Second))
	return nil
}

// controlKey is the key of -control's second direct setup.
const controlKey = "direct-again"

// adminDSN reaches the backend directly, bypassing every proxy.
func adminDSN(c *lbdtest.Cluster) string {
	addr := c.BackendAddr()
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	return fmt.Sprintf("%s:%s@%s(%s)/%s?timeout=5s", c.User(), c.Password(), network, addr, c.Database())
}

// describeBackend names the server behind the proxies.
func describeBackend(ctx context.Context, admin *sql.DB, external bool) (backendInfo, error) {
	var version string
	if err := admin.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return backendInfo{}, err
	}
	if !external {
		return backendInfo{Desc: "in-memory go-mysql-server inside the measuring process (serialises statements; reports version " + version + ")"}, nil
	}
	kind := "MySQL"
	if strings.Contains(strings.ToLower(version), "mariadb") {
		kind = "MariaDB"
	}
	return backendInfo{External: true, Desc: fmt.Sprintf("%s %s, a separate process on this machine", kind, version)}, nil
}

// haproxyInfo records how HAProxy was set up, or why it was not.
type haproxyInfo struct {
	proc      *haproxyProc
	Version   string // first line of `haproxy -v`
	Check     string // description of the health check in use
	Missing   string // why HAProxy is not part of this run; "" when it is
	CheckNote string // why the check is weaker than asked for; "" when it is not
	Config    string // the configuration it ran with
}

// startHAProxy starts HAProxy in front of the proxies when it is installed.
func (b *bench) startHAProxy(ctx context.Context) haproxyInfo {
	path, err := exec.LookPath("haproxy")
	if err != nil {
		msg := "haproxy is not installed; the HAProxy setup is skipped. Install it with: apt-get install haproxy"
		fmt.Println(msg)
		return haproxyInfo{Missing: msg}
	}
	user := b.cfg.checkUser
	if user == "" {
		user = "haproxy"
		if b.cluster.Password() == "" {
			user = b.cluster.User()
		}
	}
	info := haproxyInfo{}
	if err := checkUserWorks(ctx, b.proxies[0].Addr(), user); err != nil {
		info.CheckNote = fmt.Sprintf("user %q cannot log in without a password (%v), so HAProxy falls back to a plain TCP connect check, which cannot see a hung proxy. "+
			"To get the MySQL check on MariaDB/MySQL: CREATE USER '%s'@'127.0.0.1'; (no password, no privileges needed) and pass -haproxy-check-user %s.", user, err, user, user)
		fmt.Println("haproxy:", info.CheckNote)
		user = ""
	}
	addrs := make([]string, len(b.proxies))
	for i, p := range b.proxies {
		addrs[i] = p.Addr()
	}
	proc, err := startHAProxy(path, addrs, user)
	if err != nil {
		msg := "haproxy is installed but could not be started, so the HAProxy setup is skipped: " + err.Error()
		fmt.Println(msg)
		return haproxyInfo{Missing: msg}
	}
	info.proc = proc
	info.Version, _, _ = strings.Cut(proc.version, " - ")
	info.Config = renderHAProxyConfig(reportSpec(proc.spec))
	s := proc.spec
	if user != "" {
		info.Check = fmt.Sprintf("option mysql-check user %s post-41 (a MySQL login, then QUIT), inter %s, fall %d, rise %d, timeout check %s",
			user, ms(s.Inter), s.Fall, s.Rise, ms(s.CheckTimeout))
	} else {
		info.Check = fmt.Sprintf("plain TCP connect check, inter %s, fall %d, rise %d", ms(s.Inter), s.Fall, s.Rise)
	}
	fmt.Printf("haproxy: %s on %s, %s\n", info.Version, proc.Addr(), info.Check)
	return info
}

// cdfWorkers is the worker count whose latencies are kept for the CDF chart: 16 when measured,
// else the largest count below it, else the smallest.
func cdfWorkers(ws []int) int {
	best := -1
	for _, w := range ws {
		if w == 16 {
			return 16
		}
		if w < 16 && w > best {
			best = w
		}
	}
	if best > 0 {
		return best
	}
	m := ws[0]
	for _, w := range ws {
		m = min(m, w)
	}
	return m
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// selfCPU returns the user+system CPU seconds this process has used.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// mallocs is the number of heap objects this process has allocated so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// startProfile starts a CPU profile of this process into the -profile directory, named after
// the phase, and writes the block profile so far; the returned func stops the CPU profile and
// writes the block profile again. With no -profile it does nothing.
func (b *bench) startProfile(name string) (stop func() error, err error) {
	if b.cfg.profile == "" {
		return func() error { return nil }, nil
	}
	base := filepath.Join(b.cfg.profile, name)
	if err := writeProfile("block", base+".block-start.pprof"); err != nil {
		return nil, err
	}
	f, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return err
		}
		return writeProfile("block", base+".block-end.pprof")
	}, nil
}

// writeProfile writes the named runtime profile to path.
func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// statementCounts snapshots every proxy's statement counter.
func (b *bench) statementCounts() []int64 {
	out := make([]int64, len(b.proxies))
	for i, p := range b.proxies {
		out[i] = p.Statements()
	}
	return out
}

// connCounts returns the application connections per proxy: from lbd's Stats when c is set
// (the probe connection is not counted there), else from the proxies' own counters.
func (b *bench) connCounts(c *lbd.Connector) []int {
	out := make([]int, len(b.proxies))
	if c != nil {
		st := c.Stats()
		for i, p := range b.proxies {
			if n, ok := st.Node(p.Addr()); ok {
				out[i] = n.Open
			}
		}
		return out
	}
	for i, p := range b.proxies {
		out[i] = p.OpenConns()
	}
	return out
}

// settle waits, at most 3 s, until no client connection is open through any proxy, so that one
// phase's connections do not leak into the next one's figures.
func (b *bench) settle() {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		open := 0
		for _, p := range b.proxies {
			open += p.OpenConns()
		}
		if open == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runTurns measures every target at workers workers in cfg.turns turns of b.turn each: in
// each turn every target runs once, the first of them rotating from turn to turn, so that no
// setup always follows the same one and a machine that speeds up or slows down over seconds
// (this one's neighbours do) moves every setup alike. Each turn opens a pool of its own and
// closes it, so a setup's background work (lbd's loops, HAProxy's checks of its own) runs only
// in its own turns and is charged to them. The results are in the order of targets, each the
// sum of its turns.
func (b *bench) runTurns(ctx context.Context, targets []target, workers, run int, keepLat bool) ([]phaseResult, error) {
	out := make([]phaseResult, len(targets))
	for turn := range b.cfg.turns {
		for i := range targets {
			k := (i + turn) % len(targets)
			pr, err := b.runTurn(ctx, targets[k], workers, run, turn)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", targets[k].Label, err)
			}
			out[k].add(pr)
		}
	}
	for i := range out {
		out[i].finish(keepLat)
	}
	return out, nil
}

// runTurn runs the workload on t with workers workers on a new pool: a warm-up, then a
// measured window of b.turn. The result holds sums and raw latencies; phaseResult.finish
// derives the rest once the turns are added up.
func (b *bench) runTurn(ctx context.Context, t target, workers, run, turn int) (phaseResult, error) {
	db, conn, err := t.open(workers)
	if err != nil {
		return phaseResult{}, err
	}
	defer func() {
		db.Close()
		b.settle()
	}()
	now := time.Now()
	l := &load{
		db:          db,
		stmts:       b.stmts,
		workers:     workers,
		stmtTimeout: b.cfg.stmtTimeout,
		from:        now.Add(b.warmup),
		to:          now.Add(b.warmup + b.turn),
		// Every setup runs the same statements in the same turn.
		seed: b.seed + uint64(run)<<16 + uint64(turn),
	}
	l.until = l.to
	l.start()
	defer l.finish()
	if err := sleepUntil(ctx, l.from); err != nil {
		return phaseResult{}, err
	}
	stopProfile, err := b.startProfile(fmt.Sprintf("%s-w%d-r%d-t%d", t.Key, workers, run, turn+1))
	if err != nil {
		return phaseResult{}, err
	}
	cpu0, ha0, st0, mallocs0 := selfCPU(), b.haproxyCPU(t), b.statementCounts(), mallocs()
	if err := sleepUntil(ctx, l.to); err != nil {
		stopProfile()
		return phaseResult{}, err
	}
	cpu1, ha1, st1, mallocs1 := selfCPU(), b.haproxyCPU(t), b.statementCounts(), mallocs()
	if err := stopProfile(); err != nil {
		return phaseResult{}, err
	}
	conns := b.connCounts(conn)
	l.finish()

	ok, errs, _, samples := l.totals()
	per := make([]int64, len(st0))
	for i := range st0 {
		per[i] = st1[i] - st0[i]
	}
	var markdowns []string
	if conn != nil {
		for _, x := range conn.Stats().Recent {
			if x.To == lbd.StateDown {
				markdowns = append(markdowns, x.Cause.String()+": "+x.Reason)
			}
		}
	}
	return phaseResult{
		Markdowns:    markdowns,
		Target:       t.Key,
		Workers:      workers,
		Run:          run,
		Seconds:      l.to.Sub(l.from).Seconds(),
		Statements:   ok,
		Errors:       errs,
		ClientCPU:    cpu1 - cpu0,
		Mallocs:      mallocs1 - mallocs0,
		HAProxyCPU:   ha1 - ha0,
		PerProxy:     per,
		Conns:        conns,
		ErrorSamples: samples,
		lat:          l.latencies(),
	}, nil
}

// haproxyCPU is HAProxy's CPU time when t goes through it, else 0.
func (b *bench) haproxyCPU(t target) float64 {
	if t.haproxy == nil {
		return 0
	}
	return t.haproxy.CPUSeconds()
}
