// Package schema is the example's ent schema: a customer has many orders.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
)

// Customer has many orders.
type Customer struct{ ent.Schema }

// Fields of a Customer.
func (Customer) Fields() []ent.Field {
	return []ent.Field{field.String("name")}
}

// Edges of a Customer.
func (Customer) Edges() []ent.Edge {
	return []ent.Edge{edge.To("orders", Order.Type)}
}

// Order belongs to one customer.
type Order struct{ ent.Schema }

// Fields of an Order.
func (Order) Fields() []ent.Field {
	return []ent.Field{field.Int("total")}
}

// Edges of an Order.
func (Order) Edges() []ent.Edge {
	return []ent.Edge{edge.From("customer", Customer.Type).Ref("orders").Unique().Required()}
}
