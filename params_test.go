package lbd

import (
	"context"
	"github.com/lbd-go/lbd/internal/testkit"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// The DSN keys lbd reads are its own: go-sql-driver sends keys it does not know as SET k=v, so
// none of them may reach a server.
func TestNoLbdParameterReachesTheProxy(t *testing.T) {
	log := &queryLog{}
	srvs := startFakes(t, 2, mysqlfake.Config{Answer: log.answer})
	params := "checkHealthIntervalSeconds=3600&checkBalanceIntervalSeconds=3600&recoverCheckCount=3" +
		"&logStats=false&exceptionSorter=mysql&unsupportedMethodBehavior=ignoreCall&checkHealthTimeoutMillis=100" +
		"&fatalErrorThreshold=4&fatalErrorWindowSeconds=20&balance=connection"
	db, _ := openFakeDB(t, srvs, params)
	conns := testkit.HoldConns(t, db, 4)
	for _, cn := range conns {
		if _, err := cn.ExecContext(context.Background(), "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		cn.Close()
	}
	seen := 0
	for _, q := range log.all() {
		seen++
		lq := strings.ToLower(q)
		for _, prm := range params_() {
			if strings.Contains(lq, strings.ToLower(prm)) {
				t.Fatalf("a server received %q", q)
			}
		}
	}
	if seen == 0 {
		t.Fatal("the servers recorded no statement at all; the check above proved nothing")
	}
}

func params_() []string {
	var names []string
	for _, p := range params {
		names = append(names, p.name)
	}
	return names
}
