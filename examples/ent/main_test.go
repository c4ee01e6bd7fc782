package main

import (
	"bytes"
	"context"
	"database/sql"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"go.uber.org/goleak"

	"github.com/lbd-go/lbd/examples/ent/ent"
	"github.com/lbd-go/lbd/examples/internal/rolepair"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The example's program over an in-process primary and replica: ent's migration and the
// transaction run on the primary, the eager load on the replica, which refuses every write.
func TestRun(t *testing.T) {
	connector, primary, replica := rolepair.Start(t)
	client := ent.NewClient(ent.Driver(entsql.OpenDB(dialect.MySQL, sql.OpenDB(connector))))
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Schema.Create(ctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, client, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "alice: 2 orders, 42 in all\n" {
		t.Fatalf("printed %q", out.String())
	}
	rolepair.Check(t, primary, replica, "INSERT INTO `orders`", "SELECT `orders`")
}
