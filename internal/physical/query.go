package physical

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
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
	var value string
	switch v := dest[0].(type) {
	case []byte:
		value = string(v)
	case string:
		value = v
	case int64:
		value = strconv.FormatInt(v, 10)
	case nil:
		return "", errors.New("answered NULL")
	default:
		return "", fmt.Errorf("answered a %T", v)
	}
	if err := rows.Next(dest); err != io.EOF {
		if err == nil {
			return "", errors.New("answered more than one row, want 1")
		}
		return "", fmt.Errorf("answer did not end: %w", err)
	}
	return value, rows.Close()
}
