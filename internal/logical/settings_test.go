package logical

import (
	"testing"

	"github.com/lbd-go/lbd/internal/physical"
)

// TestSettingsText: which texts only set tracked settings, and which settings they name;
// everything else pins as before.
func TestSettingsText(t *testing.T) {
	const (
		tz    = 1 << physical.VarTimeZone
		mode  = 1 << physical.VarSQLMode
		names = 1<<physical.VarCharacterSetClient | 1<<physical.VarCharacterSetConnection | 1<<physical.VarCharacterSetResults
		coll  = 1 << physical.VarCollationConnection
		iso   = 1 << physical.VarTransactionIsolation
		ro    = 1 << physical.VarTransactionReadOnly
		ac    = 1 << physical.VarAutocommit
	)
	for _, tc := range []struct {
		q      string
		named  physical.VarSet
		schema bool
		ok     bool
	}{
		{"SET time_zone = '+05:00'", tz, false, true},
		{"set TIME_ZONE='Europe/Paris';", tz, false, true},
		{"/* c */ SET SESSION time_zone = \"+00:00\" /* d */", tz, false, true},
		{"SET @@time_zone = 'SYSTEM'", tz, false, true},
		{"SET @@SESSION.sql_mode = 'ANSI_QUOTES,STRICT_TRANS_TABLES'", mode, false, true},
		{"SET LOCAL sql_mode = '', time_zone = '+01:00'", mode | tz, false, true},
		{"SET time_zone := DEFAULT", tz, false, true},
		{"SET autocommit = 1", ac, false, true},
		{"SET NAMES utf8mb4", names, false, true},
		{"SET NAMES 'latin1' COLLATE 'latin1_german1_ci'", names | coll, false, true},
		{"SET CHARACTER SET latin1", 1<<physical.VarCharacterSetClient | 1<<physical.VarCharacterSetResults, false, true},
		{"SET collation_connection = utf8mb4_bin", coll, false, true},
		{"SET tx_isolation = 'READ-COMMITTED'", iso, false, true},
		{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", iso, false, true},
		{"SET SESSION TRANSACTION READ ONLY, ISOLATION LEVEL SERIALIZABLE", iso | ro, false, true},
		{"SET SESSION TRANSACTION READ WRITE, time_zone = '+00:00'", ro | tz, false, true},
		{"USE shop", 0, true, true},
		{"use `my db`;", 0, true, true},
		// Not replayable: they pin.
		{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", 0, false, false}, // the next transaction only
		{"SET GLOBAL time_zone = '+00:00'", 0, false, false},
		{"SET @@GLOBAL.time_zone = '+00:00'", 0, false, false},
		{"SET @x = 1", 0, false, false},
		{"SET time_zone = '+05:00', @x = 1", 0, false, false},
		{"SET time_zone = @tz", 0, false, false},
		{"SET time_zone = CONCAT('+0', '5:00')", 0, false, false},
		{"SET sql_mode = 'a' 'b'", 0, false, false},
		{"SET time_zone = '+05:00'; SET @x = 1", 0, false, false},
		{"SET time_zone = 'a\\'b'", 0, false, false},
		{"SET max_execution_time = 10", 0, false, false},
		{"SET /*!40101 time_zone = '+05:00' */", 0, false, false},
		{"SET time_zone = '+05:00' -- x", 0, false, false},
		{"SET NAMES", 0, false, false},
		{"SET time_zone", 0, false, false},
		{"SET time_zone = ", 0, false, false},
		{"USE", 0, false, false},
		{"USE a b", 0, false, false},
		{"SELECT 1", 0, false, false},
		{"SET 'unterminated", 0, false, false},
	} {
		named, schema, ok := settingsText(tc.q)
		if ok != tc.ok || ok && (named != tc.named || schema != tc.schema) {
			t.Errorf("settingsText(%q) = %b, %v, %v; want %b, %v, %v", tc.q, named, schema, ok, tc.named, tc.schema, tc.ok)
		}
	}
}

// FuzzSettingsText: any text is read without a panic, and a text accepted names only tracked
// settings or the schema.
func FuzzSettingsText(f *testing.F) {
	for _, q := range []string{"SET time_zone = '+05:00'", "USE x", "SET NAMES a COLLATE b", "SET SESSION TRANSACTION READ ONLY", "SET @@x.y=1"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		named, schema, ok := settingsText(q)
		if ok && named == 0 && !schema {
			t.Fatalf("settingsText(%q) accepted a text that names nothing", q)
		}
		if named>>physical.NumVars != 0 {
			t.Fatalf("settingsText(%q) named %b", q, named)
		}
	})
}
