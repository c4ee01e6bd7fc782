package sqlxtest

import (
	"strings"
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
	"github.com/lbd-go/lbd/sqlxadapter"
)

// item is the row type of the test tables.
type item = adaptertest.Item

var quiet = adaptertest.Quiet

// sqlxAdapter opens sqlx for the shared scenarios: a 3-proxy cluster, sqlx over its connector
// through NewDb in the given balance mode, and a fresh table. Everything is released at test
// end. sqlx has no retry of its own, so cfg.RetryReads changes nothing.
type sqlxAdapter struct{}

func (sqlxAdapter) Open(t *testing.T, balance string, cfg adaptertest.Config) (*adaptertest.Env, adaptertest.Lib) {
	t.Helper()
	e := adaptertest.NewEnv(t, balance, "sqlxadapter", cfg.Options...)
	db := sqlxadapter.NewDb(e.Connector)
	t.Cleanup(func() { db.Close() })
	e.DB = db.DB
	e.CreateTable(t, func(query string) error {
		_, err := db.Exec(query)
		return err
	})
	return e, sqlxLib{db: db, table: e.Table}
}

// q puts table in for "{t}".
func q(table, query string) string { return strings.ReplaceAll(query, "{t}", table) }
