// Package ent is the ent client of the ent tests, generated from ./schema by ent v0.14.5 (the
// version the module requires) with the sql/execquery feature, which adds the client's
// ExecContext and QueryContext. Regenerate with go generate after changing the schema.
package ent

//go:generate go run entgo.io/ent/cmd/ent@v0.14.5 generate --feature sql/execquery ./schema
