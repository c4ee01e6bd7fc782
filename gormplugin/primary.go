package gormplugin

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lbd-go/lbd"
)

// Primary sends one GORM operation to the primary with the Connector's read/write split
// (readWriteSplit=true), reads included, as gorm.io/plugin/dbresolver's clause.Write does:
//
//	db.Clauses(gormplugin.Primary).First(&order, id)
//
// Without it, GORM's reads (First, Find, Take, Count, Pluck, Scan, Raw SELECTs) go wherever
// the split sends reads, and its writes and transactions to the primary; the Connector decides
// statement by statement (see lbd.OnPrimary), so nothing else is needed.
var Primary primaryClause

type primaryClause struct{}

// ModifyStatement implements gorm.StatementModifier: the statement's context goes to the
// primary.
func (primaryClause) ModifyStatement(stmt *gorm.Statement) {
	stmt.Context = lbd.OnPrimary(stmt.Context)
}

// Build implements clause.Expression: the clause adds no SQL.
func (primaryClause) Build(clause.Builder) {}
