package sqlclass

import (
	"strings"
	"testing"
)

// pointSelect is a typical read of one row by key.
const pointSelect = "SELECT id, name, qty, updated_at FROM items WHERE id = 42"

// longSelect is a read of about 1 KB with joins, functions, strings and a subquery.
var longSelect = func() string {
	var b strings.Builder
	b.WriteString("SELECT o.id, o.created_at, DATE_FORMAT(o.created_at, '%Y-%m-%d') AS day, " +
		"COALESCE(c.name, 'unknown') AS customer, ROUND(SUM(l.qty * l.price), 2) AS total, " +
		"COUNT(DISTINCT l.sku) AS skus, JSON_EXTRACT(o.meta, '$.channel') AS channel " +
		"FROM orders o JOIN customers c ON c.id = o.customer_id " +
		"LEFT JOIN order_lines l ON l.order_id = o.id " +
		"WHERE o.created_at >= NOW() - INTERVAL 7 DAY AND o.status IN ('paid', 'shipped') " +
		"AND c.id IN (SELECT customer_id FROM vip WHERE since < CURDATE()) ")
	for b.Len() < 1000 {
		b.WriteString("AND (o.note IS NULL OR LOWER(o.note) NOT LIKE '%test%') ")
	}
	b.WriteString("GROUP BY o.id, o.created_at, c.name ORDER BY total DESC LIMIT 50")
	return b.String()
}()

func BenchmarkReplicaRead(b *testing.B) {
	for _, bc := range []struct{ name, q string }{{"point", pointSelect}, {"1KB", longSelect}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.q)))
			b.ReportAllocs()
			for b.Loop() {
				if !ReplicaRead(bc.q) {
					b.Fatal("not a replica read")
				}
			}
		})
	}
}
