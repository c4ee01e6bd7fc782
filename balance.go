package lbd

import (
	"fmt"
	"strings"
)

// BalanceMode says what lbd balances over the proxies: each new physical connection
// (BalanceConnection, the default) or each checkout of a pooled connection
// (BalanceStatement). DSN parameter balance=connection|statement; option WithBalance.
//
// Connection mode spreads connections evenly, but database/sql hands out the most recently
// returned idle connection first, so until the pool is busy most statements go to the few
// proxies holding those connections: with 30 pooled connections over 3 proxies, one worker
// sends every statement to one proxy and four workers give a CV of about 40% between proxies.
// Statement mode binds a pooled (logical) connection to a physical connection on the proxy with
// the fewest physical connections in use at every checkout, as lb-driver does, at the cost of
// classifying each statement's text (see the README for the measured cost and the pins that
// keep a logical connection on one physical connection).
type BalanceMode uint8

const (
	// BalanceConnection balances new physical connections by open count; database/sql pools
	// the physical connections themselves.
	BalanceConnection BalanceMode = iota
	// BalanceStatement balances every checkout: database/sql pools logical connections and lbd
	// binds each to a physical connection on the least busy proxy.
	BalanceStatement
)

// String returns the DSN spelling: "connection" or "statement".
func (m BalanceMode) String() string {
	switch m {
	case BalanceConnection:
		return "connection"
	case BalanceStatement:
		return "statement"
	}
	return fmt.Sprintf("BalanceMode(%d)", uint8(m))
}

// parseBalanceMode reads the balance DSN parameter. Only the exact spellings are accepted, so
// a typo is an error rather than the default.
func parseBalanceMode(v string) (BalanceMode, error) {
	switch v {
	case "connection":
		return BalanceConnection, nil
	case "statement":
		return BalanceStatement, nil
	}
	return 0, fmt.Errorf("must be connection or statement")
}

// WithBalance sets the balance mode, overriding the balance DSN parameter.
func WithBalance(m BalanceMode) Option {
	return func(c *Config) error {
		if m != BalanceConnection && m != BalanceStatement {
			return fmt.Errorf("lbd: WithBalance: unknown mode %v", m)
		}
		c.Balance = m
		return nil
	}
}

// autocommitOff reports a DSN that makes go-sql-driver run SET autocommit=0 on every
// connection.
func autocommitOff(params map[string]string) bool {
	for k, v := range params {
		if strings.EqualFold(k, "autocommit") {
			v = strings.Trim(v, "'\"` ")
			return v == "0" || strings.EqualFold(v, "false") || strings.EqualFold(v, "off")
		}
	}
	return false
}
