package main

import (
	"math"
	"strings"
	"testing"
)

func TestRenderHAProxyConfig(t *testing.T) {
	spec := defaultHAProxySpec("127.0.0.1:4000", []string{"127.0.0.1:5001", "127.0.0.1:5002", "127.0.0.1:5003"}, "haproxy", "/run/x/admin.sock")
	cfg := renderHAProxyConfig(spec)
	for _, want := range []string{
		"\nglobal\n",
		"    stats socket /run/x/admin.sock mode 600 level user\n",
		"    mode tcp\n",
		"    timeout connect 1000ms\n",
		"    timeout check 200ms\n",
		"\nlisten mysql\n",
		"    bind 127.0.0.1:4000\n",
		"    balance leastconn\n",
		"    option mysql-check user haproxy post-41\n",
		"    default-server inter 200ms fall 2 rise 2 on-marked-down shutdown-sessions\n",
		"    server p0 127.0.0.1:5001 check\n",
		"    server p1 127.0.0.1:5002 check\n",
		"    server p2 127.0.0.1:5003 check\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "daemon") {
		t.Error("config must keep HAProxy in the foreground")
	}

	spec.CheckUser = ""
	spec.StatsSocket = ""
	plain := renderHAProxyConfig(spec)
	if strings.Contains(plain, "mysql-check") || strings.Contains(plain, "stats socket") {
		t.Errorf("plain TCP config still has a MySQL check or a socket:\n%s", plain)
	}
	if !strings.Contains(plain, "server p2 127.0.0.1:5003 check\n") {
		t.Errorf("plain TCP config lost its checks:\n%s", plain)
	}
}

func TestParseShowStat(t *testing.T) {
	raw := "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight\n" +
		"mysql,FRONTEND,,,0,1,4096,3,0,0,0,0,0,,,,,OPEN,\n" +
		"mysql,p0,0,0,0,1,,1,0,0,,0,,0,0,0,0,UP,1\n" +
		"mysql,p1,0,0,0,1,,1,0,0,,0,,0,0,0,0,DOWN 1/2,1\n" +
		"mysql,p2,0,0,0,1,,1,0,0,,0,,0,0,0,0,UP 1/2,1\n" +
		"mysql,BACKEND,0,0,0,1,410,3,0,0,0,0,,0,0,0,0,UP,3\n" +
		"other,p0,0,0,0,1,,1,0,0,,0,,0,0,0,0,MAINT,1\n\n"
	got, err := parseShowStat([]byte(raw), "mysql")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"p0": "UP", "p1": "DOWN 1/2", "p2": "UP 1/2"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	if _, err := parseShowStat([]byte("# a,b\n1,2\n"), "mysql"); err == nil {
		t.Error("a header without pxname/svname/status should be an error")
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// utime 250 and stime 50 ticks; the name holds a space and a ')'.
	stat := "4242 (ha proxy)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 2 0 12345 100000 500 18446744073709551615"
	if got := parseProcStatCPU(stat); math.Abs(got-3.0) > 1e-9 {
		t.Errorf("parseProcStatCPU = %v, want 3", got)
	}
	if got := parseProcStatCPU("garbage"); got != 0 {
		t.Errorf("parseProcStatCPU(garbage) = %v, want 0", got)
	}
}

func TestReportSpecHidesRunDetails(t *testing.T) {
	spec := defaultHAProxySpec("127.0.0.1:4000", []string{"127.0.0.1:5001", "127.0.0.1:5002"}, "root", "/some/dir/admin.sock")
	cfg := renderHAProxyConfig(reportSpec(spec))
	for _, gone := range []string{"4000", "5001", "5002", "/some/dir"} {
		if strings.Contains(cfg, gone) {
			t.Errorf("report config still shows %q:\n%s", gone, cfg)
		}
	}
	if !strings.Contains(cfg, "server p1 127.0.0.1:<port of proxy 1> check") {
		t.Errorf("report config lost its servers:\n%s", cfg)
	}
	if spec.Servers[0] != "127.0.0.1:5001" {
		t.Error("reportSpec changed the spec it was given")
	}
}
