package physical

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// OneValue runs query on pc and returns its one value as text: the answer must be exactly one
// row of one column, and must end. The probe's role check and statement mode's causal reads
// use it.
func OneValue(ctx context.Context, pc driver.Conn, query string) (string, error) {
	q, ok := pc.(driver.QueryerContext)
	if !ok {
		return "", fmt.Errorf("lbd: connection %T cannot run queries", pc)
	}
	rows, err := q.QueryContext(ctx, query, nil)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	if cols := rows.Columns(); len(cols) != 1 {
		return "", fmt.Errorf("answered %d columns, want 1", len(cols))
	}
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err != nil {
		if err == io.EOF {
			// A valid, empty answer: nothing is wrong with the connection. io.EOF must not
			// reach the caller, which would take it for a lost connection.
			return "", errors.New("answered no row")
		}
		return "", fmt.Errorf("answer broke off before its row: %w", err)
	}
	value, err := text(dest[0])
	if err != nil {
		return "", err
	}
	if err := rows.Next(dest); err != io.EOF {
		if err == nil {
			return "", errors.New("answered more than one row, want 1")
		}
		return "", fmt.Errorf("answer did not end: %w", err)
	}
	return value, rows.Close()
}

// text is one value of an answer as text; NULL and other types are errors.
func text(v driver.Value) (string, error) {
	switch v := v.(type) {
	case []byte:
		return string(v), nil
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case nil:
		return "", errors.New("answered NULL")
	}
	return "", fmt.Errorf("answered a %T", v)
}

// NameValues runs query on pc, a SHOW STATUS or SHOW VARIABLES, and returns its rows of two
// columns, name and value, by name in lower case: at most max rows (more are an error, so a
// peer cannot make it allocate more), and the answer must end. The probe's status role check
// (roleCheck=galera) uses it.
func NameValues(ctx context.Context, pc driver.Conn, query string, max int) (map[string]string, error) {
	q, ok := pc.(driver.QueryerContext)
	if !ok {
		return nil, fmt.Errorf("lbd: connection %T cannot run queries", pc)
	}
	rows, err := q.QueryContext(ctx, query, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if cols := rows.Columns(); len(cols) != 2 {
		return nil, fmt.Errorf("answered %d columns, want 2 (name, value)", len(cols))
	}
	out := make(map[string]string, max)
	dest := make([]driver.Value, 2)
	for n := 0; ; n++ {
		err := rows.Next(dest)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("answer broke off: %w", err)
		}
		if n == max {
			return nil, fmt.Errorf("answered more than %d rows", max)
		}
		name, err := text(dest[0])
		if err != nil {
			return nil, fmt.Errorf("a name: %w", err)
		}
		value, err := text(dest[1])
		if err != nil {
			return nil, fmt.Errorf("the value of %.32q: %w", name, err)
		}
		out[strings.ToLower(name)] = value
	}
	return out, rows.Close()
}
