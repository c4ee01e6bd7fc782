// Package ent is the example's ent client, generated from ./schema by ent v0.14.5, the version
// the module requires. Regenerate with go generate after changing the schema.
package ent

//go:generate go run entgo.io/ent/cmd/ent@v0.14.5 generate ./schema
