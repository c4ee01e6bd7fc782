package main

import (
	"bytes"
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"go.uber.org/goleak"

	"github.com/lbd-go/lbd/examples/internal/rolepair"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The example's program over an in-process primary and replica: the tables and the
// transaction on the primary, the eager load on the replica, which refuses every write.
func TestRun(t *testing.T) {
	connector, primary, replica := rolepair.Start(t)
	db := bun.NewDB(sql.OpenDB(connector), mysqldialect.New())
	defer db.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, model := range []any{(*Customer)(nil), (*Order)(nil)} {
		if _, err := db.NewCreateTable().Model(model).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := run(ctx, db, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "alice: 2 orders, 42 in all\n" {
		t.Fatalf("printed %q", out.String())
	}
	rolepair.Check(t, primary, replica, "INSERT INTO `orders`", "SELECT `order`")
}
