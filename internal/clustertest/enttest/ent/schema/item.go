// Package schema holds the ent schema of the ent tests: Item, the row of the shared scenarios,
// and Customer with its Orders, for relations and eager loading. Each table name starts with
// lbd_ent_, so that the tests' tables never meet another's on a shared server.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
)

// Item is the row of the shared scenarios (adaptertest.Item): id, name, qty.
type Item struct{ ent.Schema }

// Annotations names the table.
func (Item) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "lbd_ent_items"}}
}

// Fields of an Item; the id is the caller's or AUTO_INCREMENT's.
func (Item) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("id"),
		field.String("name"),
		field.Int("qty"),
	}
}
