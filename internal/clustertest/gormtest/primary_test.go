package gormtest

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/gormplugin"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// Over a split Connector, GORM's reads go to the replicas unless Primary says otherwise, and
// its writes always go to the primary.
func TestPrimaryClauseAndSplitReads(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	for _, p := range cl.Proxies()[1:] {
		p.SetRole(lbdtest.Replica)
	}
	c, err := lbd.NewConnector(cl.DSN("timeout=5s&balance=statement&readWriteSplit=true&readAfterWriteMillis=0&roleCheck=mysql&interpolateParams=true"),
		lbd.WithCheckHealthInterval(250*time.Millisecond), lbd.WithCheckBalanceInterval(time.Hour),
		lbd.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	db, err := gorm.Open(gormplugin.Dialector(c), &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		ns, _ := c.Stats().Node(cl.Proxy(1).Addr())
		if ns.Role == nodes.RoleReplica {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the role checks did not answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	type item struct {
		ID   int64
		Name string
	}
	table := fmt.Sprintf("lbd_gorm_split_%d", time.Now().UnixNano()%1_000_000)
	if err := db.Exec("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(32))").Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS " + table) })
	for i := range 10 {
		if err := db.Table(table).Create(&item{Name: fmt.Sprint("n", i)}).Error; err != nil {
			t.Fatalf("a write: %v", err)
		}
	}
	for range 10 {
		var got []item
		if err := db.Table(table).Where("name LIKE ?", "n%").Find(&got).Error; err != nil || len(got) != 10 {
			t.Fatalf("Find: %d rows, %v", len(got), err)
		}
		var one item
		if err := db.Clauses(gormplugin.Primary).Table(table).Where("name = ?", "n3").First(&one).Error; err != nil {
			t.Fatalf("First on the primary: %v", err)
		}
	}
	count := func(p *lbdtest.Proxy, part string) int {
		n := 0
		for _, q := range p.Queries() {
			if strings.Contains(q, table) && strings.Contains(q, part) {
				n++
			}
		}
		return n
	}
	primary := cl.Proxy(0)
	if got := count(primary, "INSERT"); got != 10 {
		t.Errorf("the primary ran %d inserts, want 10", got)
	}
	if got := count(primary, "name = 'n3'"); got != 10 {
		t.Errorf("the primary ran %d of the 10 First calls with the Primary clause", got)
	}
	onReplicas := 0
	for _, p := range cl.Proxies()[1:] {
		onReplicas += count(p, "LIKE")
		if count(p, "INSERT") != 0 || count(p, "name = 'n3'") != 0 || p.Refused() != 0 {
			t.Errorf("replica %s ran a write or a Primary read", p.Addr())
		}
	}
	if onReplicas == 0 {
		t.Error("no Find ran on a replica")
	}
}
