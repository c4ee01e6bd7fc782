package logical

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lbd-go/lbd/internal/physical"
)

// Replayed session settings. With session tracking, a statement that only changes settings
// lbd tracks (settingsText names them) does not pin its logical connection: the values the
// server reports are kept per logical connection (settings) and set again, before a
// statement, on the physical connection it borrows when that one's differ (restore). The
// settings are those physical.SessionVar lists (autocommit, character_set_client,
// character_set_connection, character_set_results, collation_connection, sql_mode, time_zone,
// the transaction isolation level and read-only flag) and the default schema (USE).

// settings are what a logical connection changed of its session's tracked settings, with the
// values the server reported.
type settings struct {
	vars      physical.VarSet
	vals      [physical.NumVars]string
	schema    string
	schemaSet bool
}

// empty reports whether the logical connection changed nothing.
func (s *settings) empty() bool { return s.vars == 0 && !s.schemaSet }

// want returns the value v must have on p for the logical connection: its own, or p's base.
func (s *settings) want(p *physical.SessionState, v physical.SessionVar) (string, bool) {
	if s.vars.Has(v) {
		return s.vals[v], true
	}
	return p.Base(v)
}

// settingsText reports whether query is one statement that changes only settings lbd tracks,
// and which it names: USE name; or SET, with each assignment one of [SESSION | LOCAL | @@ |
// @@SESSION. | @@LOCAL.]name = value for a tracked name (value one literal, word or number, no
// backslash), NAMES cs [COLLATE c], CHARACTER SET cs (CHARSET cs), or SESSION TRANSACTION with
// isolation level and access mode characteristics. Anything else (GLOBAL, user variables,
// expressions, SET TRANSACTION for the next transaction only, several statements, an
// executable comment) is not: its statement pins the logical connection as before.
func settingsText(q string) (named physical.VarSet, schema, ok bool) {
	lx := settingsLexer{s: q}
	first := lx.word()
	switch {
	case strings.EqualFold(first, "USE"):
		if lx.value() == "" {
			return 0, false, false
		}
		return 0, true, lx.end()
	case !strings.EqualFold(first, "SET"):
		return 0, false, false
	}
	for {
		var n physical.VarSet
		if n, ok = lx.assignment(); !ok {
			return 0, false, false
		}
		named |= n
		if !lx.punct(',') {
			return named, false, lx.end()
		}
	}
}

// settingsLexer reads the few tokens settingsText accepts; s is what is left.
type settingsLexer struct{ s string }

// skip skips white space and plain comments; an executable comment (/*! or /*+) or a line
// comment stops it and is left for the next token to refuse.
func (lx *settingsLexer) skip() {
	for {
		lx.s = strings.TrimLeft(lx.s, " \t\r\n")
		if !strings.HasPrefix(lx.s, "/*") || strings.HasPrefix(lx.s, "/*!") || strings.HasPrefix(lx.s, "/*+") {
			return
		}
		end := strings.Index(lx.s[2:], "*/")
		if end < 0 {
			return
		}
		lx.s = lx.s[2+end+2:]
	}
}

// word reads a run of letters, digits, _ and $; "" when none.
func (lx *settingsLexer) word() string {
	lx.skip()
	i := 0
	for i < len(lx.s) && isWordByte(lx.s[i]) {
		i++
	}
	w := lx.s[:i]
	lx.s = lx.s[i:]
	return w
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}

// keyword reads the word kw (any case) when it comes next.
func (lx *settingsLexer) keyword(kw string) bool {
	save := lx.s
	if strings.EqualFold(lx.word(), kw) {
		return true
	}
	lx.s = save
	return false
}

// punct reads the byte c when it comes next.
func (lx *settingsLexer) punct(c byte) bool {
	lx.skip()
	if len(lx.s) > 0 && lx.s[0] == c {
		lx.s = lx.s[1:]
		return true
	}
	return false
}

// value reads one value: a quoted string or identifier without backslashes (quotes doubled
// inside), or a run of word bytes, signs, dots and colons ("+05:00", utf8mb4, 1, ON); "" when
// none.
func (lx *settingsLexer) value() string {
	lx.skip()
	if len(lx.s) == 0 {
		return ""
	}
	if q := lx.s[0]; q == '\'' || q == '"' || q == '`' {
		for i := 1; i < len(lx.s); i++ {
			switch lx.s[i] {
			case '\\':
				return ""
			case q:
				if i+1 < len(lx.s) && lx.s[i+1] == q {
					i++
					continue
				}
				v := lx.s[:i+1]
				lx.s = lx.s[i+1:]
				return v
			}
		}
		return ""
	}
	i := 0
	for i < len(lx.s) && (isWordByte(lx.s[i]) || strings.IndexByte("+-.:", lx.s[i]) >= 0) {
		i++
	}
	v := lx.s[:i]
	lx.s = lx.s[i:]
	return v
}

// end reports whether nothing but white space, plain comments and one ; is left.
func (lx *settingsLexer) end() bool {
	lx.punct(';')
	lx.skip()
	return lx.s == ""
}

// The settings SET NAMES and SET CHARACTER SET change.
const (
	namesVars   = 1<<physical.VarCharacterSetClient | 1<<physical.VarCharacterSetConnection | 1<<physical.VarCharacterSetResults
	charsetVars = 1<<physical.VarCharacterSetClient | 1<<physical.VarCharacterSetResults
)

// assignment reads one assignment of a SET and returns the settings it names.
func (lx *settingsLexer) assignment() (physical.VarSet, bool) {
	scoped := lx.keyword("SESSION") || lx.keyword("LOCAL")
	lx.skip()
	if !scoped && strings.HasPrefix(lx.s, "@@") {
		lx.s = lx.s[2:]
		save := lx.s
		if w := lx.word(); (strings.EqualFold(w, "SESSION") || strings.EqualFold(w, "LOCAL")) && strings.HasPrefix(lx.s, ".") {
			lx.s = lx.s[1:]
		} else {
			lx.s = save
		}
		scoped = true
	}
	name := lx.word()
	switch {
	case strings.EqualFold(name, "NAMES") && !lx.peek('='):
		if lx.value() == "" {
			return 0, false
		}
		if lx.keyword("COLLATE") {
			return namesVars | 1<<physical.VarCollationConnection, lx.value() != ""
		}
		return namesVars, true
	case strings.EqualFold(name, "CHARSET") && !lx.peek('='):
		return charsetVars, lx.value() != ""
	case strings.EqualFold(name, "CHARACTER") && lx.keyword("SET"):
		return charsetVars, lx.value() != ""
	case strings.EqualFold(name, "TRANSACTION") && scoped:
		return lx.characteristics()
	}
	v, ok := physical.VarNamed(name)
	if !ok {
		return 0, false
	}
	if !lx.punct('=') {
		if !lx.punct(':') || !lx.punct('=') {
			return 0, false
		}
	}
	if lx.value() == "" {
		return 0, false
	}
	return 1 << v, true
}

// peek reports whether c comes next, without reading it.
func (lx *settingsLexer) peek(c byte) bool {
	lx.skip()
	return len(lx.s) > 0 && lx.s[0] == c
}

// characteristics reads the characteristics of SET SESSION TRANSACTION.
func (lx *settingsLexer) characteristics() (physical.VarSet, bool) {
	var named physical.VarSet
	for {
		switch {
		case lx.keyword("ISOLATION"):
			if !lx.keyword("LEVEL") {
				return 0, false
			}
			switch {
			case lx.keyword("READ"):
				if !lx.keyword("COMMITTED") && !lx.keyword("UNCOMMITTED") {
					return 0, false
				}
			case lx.keyword("REPEATABLE"):
				if !lx.keyword("READ") {
					return 0, false
				}
			case lx.keyword("SERIALIZABLE"):
			default:
				return 0, false
			}
			named |= 1 << physical.VarTransactionIsolation
		case lx.keyword("READ"):
			if !lx.keyword("ONLY") && !lx.keyword("WRITE") {
				return 0, false
			}
			named |= 1 << physical.VarTransactionReadOnly
		default:
			return 0, false
		}
		save := lx.s
		if !lx.punct(',') {
			return named, true
		}
		if lx.peekCharacteristic() {
			continue
		}
		lx.s = save // the comma separates the next assignment
		return named, true
	}
}

// peekCharacteristic reports whether a transaction characteristic comes next.
func (lx *settingsLexer) peekCharacteristic() bool {
	save := lx.s
	w := lx.word()
	lx.s = save
	return strings.EqualFold(w, "ISOLATION") || strings.EqualFold(w, "READ")
}

// record keeps, after a statement with text query that changed session state on p (the
// classifier says so), the tracked settings it changed, and reports whether that is all it
// changed, so that the logical connection need not pin p: the server tracks p's session
// (physical.SessionState.Replayable), the whole answer was read, the text only sets tracked
// settings (settingsText), the server reported each setting the text names, and none of them
// is left Implied by the server where the text named it. A statement that failed changed
// nothing when the server reported nothing (SET and USE change all or nothing). Autocommit
// set off pins: every statement then opens a transaction that only its connection can end.
func (l *logicalConn) record(p *physical.Conn, query string, failed bool) bool {
	st := p.Session()
	if !st.Replayable() || !p.AnswerRead() {
		return false
	}
	ch := st.Since(l.mark)
	if failed {
		return ch.Vars == 0 && !ch.Schema && !ch.State
	}
	named, schema, ok := settingsText(query)
	if !ok || named&^ch.Vars != 0 || schema && !ch.Schema {
		return false
	}
	next := l.settings
	for v := range physical.SessionVar(physical.NumVars) {
		if !ch.Vars.Has(v) {
			continue
		}
		val, _ := st.Var(v)
		if val == physical.Implied && named.Has(v) {
			return false // named, yet its value was not reported (MariaDB's NAMES ... COLLATE)
		}
		next.vars |= 1 << v
		next.vals[v] = val
	}
	if ch.Schema {
		next.schema, _ = st.Schema()
		next.schemaSet = true
	}
	if v := next.vals[physical.VarAutocommit]; next.vars.Has(physical.VarAutocommit) && (v == "OFF" || v == "0") {
		return false
	}
	if c, k := next.vals[physical.VarCharacterSetConnection], next.vals[physical.VarCollationConnection]; c == physical.Implied && k == physical.Implied {
		return false
	}
	l.settings = next
	l.mark = st.Mark()
	return true
}

// errRestore wraps the failure to set a logical connection's settings on the physical
// connection a statement borrowed: the statement was not sent.
type errRestore struct {
	addr string
	err  error
}

func (e *errRestore) Error() string {
	return "lbd: the session's settings could not be set on proxy " + e.addr + ", so the statement was not sent: " + e.err.Error()
}

func (e *errRestore) Unwrap() error { return e.err }

// restore sets, on p, which the logical connection just borrowed, the settings the logical
// connection changed and brings back to p's base those p carries from another logical
// connection: nothing when they are equal (one comparison when neither changed any), else one
// SET, and a USE for the schema, sent ahead of a ping (physical.Conn.Restore), one round trip.
// The server's report is then checked against what was asked; a setting it refused or did not
// report is an error, and the caller's statement is not sent.
func (l *logicalConn) restore(ctx context.Context, p *physical.Conn) error {
	st := p.Session()
	dirty, schemaDirty := st.Dirty()
	if dirty == 0 && !schemaDirty && l.settings.empty() {
		return nil
	}
	stmts, check, err := l.settings.diff(st)
	if err == nil && len(stmts) > 0 {
		if !st.Tracking() {
			err = errNotTracked
		} else if err = p.Restore(ctx, stmts...); err == nil {
			err = l.settings.verify(st, check)
		}
	}
	if err != nil {
		return &errRestore{addr: p.Node().Addr(), err: err}
	}
	return nil
}

var (
	errNotTracked = errors.New("the proxy does not report session state (no session tracking)")
	errNoBase     = errors.New("the connection's own value of a changed setting is unknown")
)

// diff returns the statements that make p's settings (st) those of the logical connection,
// and the settings they set, to check afterwards.
func (s *settings) diff(st *physical.SessionState) (stmts []string, check physical.VarSet, err error) {
	dirty, schemaDirty := st.Dirty()
	var b strings.Builder
	add := func(v physical.SessionVar, val string) {
		if b.Len() == 0 {
			b.WriteString("/* lbd session settings */ SET SESSION ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(st.VarName(v))
		b.WriteString(" = ")
		if v == physical.VarCharacterSetResults && val == "" {
			b.WriteString("NULL") // character_set_results = NULL is reported as ""
		} else {
			b.WriteString("'") // values hold no quote, backslash nor control character (physical checks them)
			b.WriteString(val)
			b.WriteString("'")
		}
		check |= 1 << v
	}
	for v := range physical.SessionVar(physical.NumVars) {
		if v == physical.VarCharacterSetConnection || v == physical.VarCollationConnection || !(s.vars | dirty).Has(v) {
			continue
		}
		want, ok := s.want(st, v)
		have, known := st.Var(v)
		if !ok {
			return nil, 0, errNoBase
		}
		if !known || have != want {
			add(v, want)
		}
	}
	// character_set_connection and collation_connection go together: setting either sets the
	// other (to the character set's default collation, or to the collation's character set).
	const pair = 1<<physical.VarCharacterSetConnection | 1<<physical.VarCollationConnection
	if (s.vars|dirty)&pair != 0 {
		wc, okc := s.want(st, physical.VarCharacterSetConnection)
		wl, okl := s.want(st, physical.VarCollationConnection)
		hc, _ := st.Var(physical.VarCharacterSetConnection)
		hl, _ := st.Var(physical.VarCollationConnection)
		if !okc || !okl || wc == physical.Implied && wl == physical.Implied {
			return nil, 0, errNoBase
		}
		if wc != hc || wl != hl {
			if wc != physical.Implied {
				add(physical.VarCharacterSetConnection, wc)
			}
			if wl != physical.Implied {
				add(physical.VarCollationConnection, wl)
			}
		}
	}
	if b.Len() > 0 {
		stmts = append(stmts, b.String())
	}
	if s.schemaSet || schemaDirty {
		want, ok := s.schema, true
		if !s.schemaSet {
			want, ok = st.BaseSchema()
		}
		if !ok {
			return nil, 0, errNoBase
		}
		if have, _ := st.Schema(); have != want {
			stmts = append(stmts, "USE "+physical.QuoteName(want))
		}
	}
	return stmts, check, nil
}

// verify checks that p's settings (st) are, after the restore, those the logical connection
// wants, for the settings restore set (check) and the schema.
func (s *settings) verify(st *physical.SessionState, check physical.VarSet) error {
	for v := range physical.SessionVar(physical.NumVars) {
		if !check.Has(v) {
			continue
		}
		want, _ := s.want(st, v)
		if have, _ := st.Var(v); have != want {
			return fmt.Errorf("the server reported %s = %.64q, not %.64q", st.VarName(v), have, want)
		}
	}
	if s.schemaSet {
		if have, _ := st.Schema(); have != s.schema {
			return fmt.Errorf("the server reported schema %.64q, not %.64q", have, s.schema)
		}
	}
	return nil
}
