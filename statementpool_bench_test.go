package lbd

import (
	"context"
	"database/sql"
	"testing"

	"github.com/lbd-go/lbd/internal/sqlclass"
	"github.com/lbd-go/lbd/lbdtest"
)

// BenchmarkStatementModeOverhead measures what statement mode adds to each statement, without
// the statement: classifying its text, then claiming an idle physical connection on the least
// busy node and giving it back (two pick-index updates, the free list and go-sql-driver's
// liveness check, which connection mode runs at each checkout too).
func BenchmarkStatementModeOverhead(b *testing.B) {
	cl := lbdtest.NewCluster(b, 3)
	c, err := NewConnector(cl.DSN("balance=statement&checkHealthIntervalSeconds=3600&checkBalanceIntervalSeconds=3600"), quiet()...)
	if err != nil {
		b.Fatal(err)
	}
	db := sql.OpenDB(c)
	b.Cleanup(func() { db.Close() })
	db.SetMaxIdleConns(8)
	conns := holdConns(b, db, 8)
	for _, cn := range conns {
		cn.Close()
	}
	ctx := context.Background()
	b.Run("classify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sqlclass.Classify("SELECT name, qty FROM items WHERE id = ?")
		}
	})
	b.Run("liveness-check", func(b *testing.B) { // go-sql-driver's, part of bind+release
		p, err := c.borrow(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer c.giveBack(p)
		b.ReportAllocs()
		for b.Loop() {
			if err := p.dc.ResetSession(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bind+release", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := c.borrow(ctx)
			if err != nil {
				b.Fatal(err)
			}
			c.giveBack(p)
		}
	})
}
