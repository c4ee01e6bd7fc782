// Package dsnparam reads and writes the values of lbd's DSN parameters and the address list of
// an lb(...) DSN, and explains a key nobody reads: the value parsers and formatters (with the
// bounds they enforce), the typo hints for unknown keys, and go-sql-driver's parameters. The
// root package keeps the parameter table and the public Config; this package knows neither and
// imports no other package of this module but nodes.
package dsnparam
