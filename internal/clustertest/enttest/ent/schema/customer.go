package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
)

// Customer has many orders.
type Customer struct{ ent.Schema }

// Annotations names the table.
func (Customer) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "lbd_ent_customers"}}
}

// Fields of a Customer.
func (Customer) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("id"),
		field.String("name"),
	}
}

// Edges of a Customer: its orders.
func (Customer) Edges() []ent.Edge {
	return []ent.Edge{edge.To("orders", Order.Type)}
}

// Order belongs to one customer, through its customer_id column.
type Order struct{ ent.Schema }

// Annotations names the table.
func (Order) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "lbd_ent_orders"}}
}

// Fields of an Order.
func (Order) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("id"),
		field.Int64("customer_id"),
		field.Int("total"),
	}
}

// Edges of an Order: its customer.
func (Order) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("customer", Customer.Type).Ref("orders").Field("customer_id").Unique().Required(),
	}
}
