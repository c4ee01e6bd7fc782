package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// haproxyBackend is the name of the listen section, and so of the backend in HAProxy's stats.
const haproxyBackend = "mysql"

// haproxySpec is everything the HAProxy configuration is rendered from.
type haproxySpec struct {
	Bind        string   // "127.0.0.1:port" the clients connect to
	Servers     []string // the proxies' "host:port" addresses, in cluster order
	CheckUser   string   // MySQL user for option mysql-check; "" means a plain TCP connect check
	StatsSocket string   // absolute path of the admin socket used to read server states

	Inter time.Duration // time between two checks of one server
	Fall  int           // consecutive failed checks that mark a server down
	Rise  int           // consecutive good checks that mark it up again

	CheckTimeout   time.Duration // bound on one check (connect and reply)
	ConnectTimeout time.Duration // bound on connecting to a server
	IdleTimeout    time.Duration // client and server inactivity timeout
	MaxConn        int
}

// defaultHAProxySpec is the setup this harness measures: least-connections balancing, a MySQL
// login check every 200 ms that takes a server out after two failures and back after two
// successes, and sessions of a server that goes down shut at once, which is what an operator
// who cares about failover configures.
func defaultHAProxySpec(bind string, servers []string, checkUser, socket string) haproxySpec {
	return haproxySpec{
		Bind:           bind,
		Servers:        servers,
		CheckUser:      checkUser,
		StatsSocket:    socket,
		Inter:          200 * time.Millisecond,
		Fall:           2,
		Rise:           2,
		CheckTimeout:   200 * time.Millisecond,
		ConnectTimeout: time.Second,
		IdleTimeout:    time.Minute,
		MaxConn:        4096,
	}
}

// reportSpec is s with the addresses and the socket path, which change every run, replaced by
// placeholders, for showing the configuration in the report.
func reportSpec(s haproxySpec) haproxySpec {
	s.Bind = "127.0.0.1:<port>"
	s.Servers = append([]string(nil), s.Servers...)
	for i := range s.Servers {
		s.Servers[i] = fmt.Sprintf("127.0.0.1:<port of proxy %d>", i)
	}
	if s.StatsSocket != "" {
		s.StatsSocket = "<temporary directory>/admin.sock"
	}
	return s
}

// serverName is the name HAProxy knows the i-th proxy by.
func serverName(i int) string { return "p" + strconv.Itoa(i) }

// ms renders a duration the way HAProxy's configuration reads it.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

// renderHAProxyConfig renders s as an HAProxy configuration file in TCP mode.
func renderHAProxyConfig(s haproxySpec) string {
	var b strings.Builder
	b.WriteString("# TCP balancing over MySQL-protocol proxies, for the lbd comparison harness.\n")
	b.WriteString("global\n")
	fmt.Fprintf(&b, "    maxconn %d\n", s.MaxConn)
	if s.StatsSocket != "" {
		fmt.Fprintf(&b, "    stats socket %s mode 600 level user\n", s.StatsSocket)
	}
	b.WriteString("\ndefaults\n")
	b.WriteString("    mode tcp\n")
	fmt.Fprintf(&b, "    timeout connect %s\n", ms(s.ConnectTimeout))
	fmt.Fprintf(&b, "    timeout client %s\n", ms(s.IdleTimeout))
	fmt.Fprintf(&b, "    timeout server %s\n", ms(s.IdleTimeout))
	fmt.Fprintf(&b, "    timeout check %s\n", ms(s.CheckTimeout))
	fmt.Fprintf(&b, "\nlisten %s\n", haproxyBackend)
	fmt.Fprintf(&b, "    bind %s\n", s.Bind)
	b.WriteString("    balance leastconn\n")
	if s.CheckUser != "" {
		fmt.Fprintf(&b, "    option mysql-check user %s post-41\n", s.CheckUser)
	} else {
		b.WriteString("    # plain TCP connect check: no MySQL user can log in without a password\n")
	}
	fmt.Fprintf(&b, "    default-server inter %s fall %d rise %d on-marked-down shutdown-sessions\n",
		ms(s.Inter), s.Fall, s.Rise)
	for i, addr := range s.Servers {
		fmt.Fprintf(&b, "    server %s %s check\n", serverName(i), addr)
	}
	return b.String()
}

// haproxyProc is a running HAProxy in the foreground.
type haproxyProc struct {
	cmd     *exec.Cmd
	dir     string
	spec    haproxySpec
	version string
	stderr  *lockedBuffer
	exited  chan struct{}
	waitErr error
}

// lockedBuffer collects what HAProxy prints, for error messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.buf.String())
}

// freeLoopbackAddr asks the kernel for a free loopback port. Another process could take it
// before HAProxy binds it; startHAProxy then fails with HAProxy's bind error.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// haproxyVersion returns the first line of `haproxy -v`.
func haproxyVersion(path string) string {
	out, err := exec.Command(path, "-v").Output()
	if err != nil {
		return "unknown version"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}

// startHAProxy writes the configuration for servers into a fresh temporary directory, checks it
// with `haproxy -c`, runs `haproxy -db -f cfg` and waits until its port accepts connections.
func startHAProxy(path string, servers []string, checkUser string) (*haproxyProc, error) {
	dir, err := os.MkdirTemp("", "lbd-compare-haproxy-")
	if err != nil {
		return nil, err
	}
	bind, err := freeLoopbackAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	spec := defaultHAProxySpec(bind, servers, checkUser, filepath.Join(dir, "admin.sock"))
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(renderHAProxyConfig(spec)), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if out, err := exec.Command(path, "-c", "-q", "-f", cfgPath).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("haproxy rejected its configuration: %v: %s", err, strings.TrimSpace(string(out)))
	}
	h := &haproxyProc{
		cmd:     exec.Command(path, "-db", "-f", cfgPath),
		dir:     dir,
		spec:    spec,
		version: haproxyVersion(path),
		stderr:  &lockedBuffer{},
		exited:  make(chan struct{}),
	}
	h.cmd.Stdout = h.stderr
	h.cmd.Stderr = h.stderr
	if err := h.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() {
		h.waitErr = h.cmd.Wait()
		close(h.exited)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", bind, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-h.exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("haproxy exited at start (%v): %s", h.waitErr, h.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			h.Stop()
			return nil, fmt.Errorf("haproxy did not listen on %s within 5s: %s", bind, h.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.waitAllUp(5 * time.Second); err != nil {
		h.Stop()
		return nil, err
	}
	return h, nil
}

// Addr is where clients connect.
func (h *haproxyProc) Addr() string { return h.spec.Bind }

// waitAllUp waits until HAProxy's checks report every server up.
func (h *haproxyProc) waitAllUp(d time.Duration) error {
	deadline := time.Now().Add(d)
	var last map[string]string
	for {
		st, err := h.ServerStates()
		if err == nil {
			last = st
			up := 0
			for i := range h.spec.Servers {
				if st[serverName(i)] == "UP" {
					up++
				}
			}
			if up == len(h.spec.Servers) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy: not every server came up within %v (states %v, err %v): %s", d, last, err, h.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends HAProxy (SIGTERM, then SIGKILL after 3 s) and removes its directory.
func (h *haproxyProc) Stop() {
	select {
	case <-h.exited:
	default:
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(3 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
		}
	}
	os.RemoveAll(h.dir)
}

// ServerStates reads `show stat` from the admin socket and returns each server's status as
// HAProxy reports it ("UP", "DOWN", "UP 1/2" while going down, "DOWN 1/2" while coming back...).
func (h *haproxyProc) ServerStates() (map[string]string, error) {
	c, err := net.DialTimeout("unix", h.spec.StatsSocket, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "show stat\n"); err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(bufio.NewReader(c))
	if err != nil {
		return nil, err
	}
	return parseShowStat(raw, haproxyBackend)
}

// parseShowStat extracts the status of every server of backend from `show stat` CSV output.
func parseShowStat(raw []byte, backend string) (map[string]string, error) {
	text := strings.TrimPrefix(strings.TrimSpace(string(raw)), "# ")
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("haproxy show stat: %w", err)
	}
	if len(rows) < 1 {
		return nil, errors.New("haproxy show stat: empty answer")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	px, okPx := col["pxname"]
	sv, okSv := col["svname"]
	stc, okSt := col["status"]
	if !okPx || !okSv || !okSt {
		return nil, fmt.Errorf("haproxy show stat: unexpected header %q", rows[0])
	}
	out := map[string]string{}
	for _, row := range rows[1:] {
		if len(row) <= max(px, sv, stc) || row[px] != backend {
			continue
		}
		if row[sv] == "FRONTEND" || row[sv] == "BACKEND" {
			continue
		}
		out[row[sv]] = row[stc]
	}
	return out, nil
}

// CPUSeconds returns the user+system CPU time HAProxy has used, from /proc. It assumes the
// kernel's usual 100 clock ticks per second.
func (h *haproxyProc) CPUSeconds() float64 {
	return procCPUSeconds(h.cmd.Process.Pid)
}

// procCPUSeconds reads utime+stime of pid from /proc/pid/stat; 0 when unavailable.
func procCPUSeconds(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return parseProcStatCPU(string(raw))
}

// parseProcStatCPU returns utime+stime in seconds from the text of /proc/pid/stat.
func parseProcStatCPU(stat string) float64 {
	// The command name (field 2) is in parentheses and may hold spaces; fields are counted
	// from the last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	// After ')': state is field 3, so utime (14) and stime (15) are at 11 and 12.
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const ticksPerSecond = 100
	return (ut + st) / ticksPerSecond
}

// checkUserWorks reports whether user can log in with an empty password through the proxy at
// addr, which is what option mysql-check needs.
func checkUserWorks(ctx context.Context, addr, user string) error {
	db, err := openPlain(fmt.Sprintf("%s:@tcp(%s)/?timeout=2s", user, addr))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}
