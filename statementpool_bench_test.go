package lbd

import (
	"context"
	"github.com/lbd-go/lbd/internal/testkit"
	"testing"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/sqlclass"
)

// BenchmarkStatementModeOverhead measures what statement mode adds to each statement, without
// the statement: classifying its text, then claiming an idle physical connection on the least
// busy node and giving it back (two pick-index updates, the free list and go-sql-driver's
// liveness check, which connection mode runs at each checkout too).
func BenchmarkStatementModeOverhead(b *testing.B) {
	srvs := startFakes(b, 3, mysqlfake.Config{})
	db, c := openFakeDB(b, srvs, "balance=statement&checkHealthIntervalSeconds=3600&checkBalanceIntervalSeconds=3600", quiet()...)
	db.SetMaxIdleConns(8)
	conns := testkit.HoldConns(b, db, 8)
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
		p, err := c.stmt.Borrow(ctx, c.roles.target)
		if err != nil {
			b.Fatal(err)
		}
		defer c.stmt.GiveBack(p)
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Driver().ResetSession(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bind+release", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := c.stmt.Borrow(ctx, c.roles.target)
			if err != nil {
				b.Fatal(err)
			}
			c.stmt.GiveBack(p)
		}
	})
}
