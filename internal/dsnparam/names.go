package dsnparam

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Unknown explains a DSN key that neither lbd nor the DSN's own node source reads, or returns
// nil for a key that may be a session variable (go-sql-driver sends it as a SET). names are the
// parameters of the DSN's network (lbd's and its node source's), others every registered node
// source's. The order matters: a key that differs only in letter case from one of names is a
// typo of it, even when another network has a name in the same letters (configServerApikey in
// an lbremote DSN means configServerApiKey); a key that is exactly another network's parameter
// is reported as such, even when it is also a near miss of one of names; then come near misses
// of names; then a key that spells another network's parameter with other letter case; last, a
// camelCase key, which no server variable is.
func Unknown(key, network string, names, others []string) error {
	if right, ok := caseVariant(key, names); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean %q?", key, right)
	}
	// go-sql-driver has taken the keys it reads, so a case variant or near miss of one of its
	// names is a typo too: it would go to every proxy as a SET and fail with 1193.
	if right, ok := caseVariant(key, driverParams); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean go-sql-driver's %q?", key, right)
	}
	if right, ok := nearMiss(key, driverParams); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean go-sql-driver's %q?", key, right)
	}
	if slices.Contains(others, key) {
		return fmt.Errorf("lbd: DSN parameter %q is read by the node source of another network, not by %s(...)", key, network)
	}
	if right, ok := nearMiss(key, names); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean %q?", key, right)
	}
	if other, ok := caseVariant(key, others); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean %q? That one is read by the node source of another network, not by %s(...)", key, other, network)
	}
	if isCamelCase(key) {
		return fmt.Errorf("lbd: unknown DSN parameter %q: neither lbd nor go-sql-driver reads it, and server variables are snake_case (a node source's parameter needs its network in the DSN and its package imported)", key)
	}
	return nil
}

// isCamelCase reports a name with a lower-case letter followed by an upper-case one
// (etcdKey). MySQL and MariaDB name their variables in snake_case, so such a key left over
// after lbd and go-sql-driver took theirs is a parameter nobody reads, and go-sql-driver would
// send it as a SET that fails every connection with 1193.
func isCamelCase(name string) bool {
	for i := 1; i < len(name); i++ {
		if name[i-1] >= 'a' && name[i-1] <= 'z' && name[i] >= 'A' && name[i] <= 'Z' {
			return true
		}
	}
	return false
}

// driverParams are go-sql-driver's own DSN parameters (v1.10.1, its parseDSNParams).
var driverParams = []string{
	"allowAllFiles", "allowCleartextPasswords", "allowFallbackToPlaintext", "allowNativePasswords",
	"allowOldPasswords", "checkConnLiveness", "clientFoundRows", "charset", "collation",
	"columnsWithAlias", "compress", "connectionAttributes", "interpolateParams", "loc",
	"maxAllowedPacket", "multiStatements", "parseTime", "readTimeout", "rejectReadOnly",
	"serverPubKey", "strict", "timeTruncate", "timeout", "tls", "writeTimeout",
}

// caseVariant returns the name among names that key spells with other letter case, so that a
// typo such as `checkhealthintervalseconds` is an error instead of a `SET` sent to every proxy.
func caseVariant(key string, names []string) (string, bool) {
	for _, p := range names {
		if p != key && strings.EqualFold(p, key) {
			return p, true
		}
	}
	return "", false
}

// nearMiss returns the name among names that key misses by one or two letters
// (checkHealthIntervalSecond). Such a key would go to every proxy as a SET and fail each
// connection with 1193; saying so at parse time is better. Keys shorter than 8 bytes are left
// alone: session variables are snake_case and far from lbd's long camelCase names, but short
// ones can be close by chance.
func nearMiss(key string, names []string) (string, bool) {
	if len(key) < 8 {
		return "", false
	}
	for _, p := range names {
		if editDistance(strings.ToLower(p), strings.ToLower(key)) <= 2 {
			return p, true
		}
	}
	return "", false
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// DriverError finds the go-sql-driver parameter of dsn whose value go-sql-driver refuses and
// returns an error naming it and saying what to write, or nil; lbd reports whether a key is
// one of lbd's own parameters, which are skipped. go-sql-driver's own errors name only the
// value (`time: missing unit in duration "5"` for timeout=5). Each parameter is parsed alone,
// after the last '?', where no password is.
func DriverError(dsn string, lbd func(key string) bool) error {
	q := strings.LastIndexByte(dsn, '?')
	if q < 0 || q < strings.LastIndexByte(dsn, '/') {
		return nil // no parameters, or the '?' is in the password
	}
	for kv := range strings.SplitSeq(dsn[q+1:], "&") {
		key, raw, _ := strings.Cut(kv, "=")
		if key == "" || lbd(key) || strings.ContainsAny(key, "@:()/") {
			continue
		}
		if _, err := mysql.ParseDSN("/?" + kv); err != nil {
			value, uerr := url.QueryUnescape(raw)
			if uerr != nil {
				value = raw
			}
			return fmt.Errorf("lbd: invalid DSN parameter %s=%q (go-sql-driver's): %v%s", key, value, err, driverHint(key))
		}
	}
	return nil
}

// driverHint says how to write a value of go-sql-driver's parameter key.
func driverHint(key string) string {
	switch key {
	case "timeout", "readTimeout", "writeTimeout":
		return "; write a duration with its unit, e.g. " + key + "=5s or " + key + "=500ms"
	case "allowAllFiles", "allowCleartextPasswords", "allowFallbackToPlaintext", "allowNativePasswords",
		"allowOldPasswords", "checkConnLiveness", "clientFoundRows", "columnsWithAlias", "compress",
		"interpolateParams", "multiStatements", "parseTime", "rejectReadOnly":
		return "; write " + key + "=true or " + key + "=false"
	case "maxAllowedPacket":
		return "; write a whole number of bytes (0: ask the server)"
	case "loc":
		return "; write a time zone name such as UTC, Local or Asia%2FShanghai (a '/' as %2F)"
	}
	return "; see go-sql-driver's documentation of " + key
}
