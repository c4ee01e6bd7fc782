package exception

import (
	"errors"
	"io"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func TestSorterFunc(t *testing.T) {
	var calls int
	var got error
	want := errors.New("x")
	s := SorterFunc(func(err error) bool {
		calls++
		got = err
		return true
	})

	var _ Sorter = s // SorterFunc satisfies Sorter.

	if !s.IsFatal(want) {
		t.Error("IsFatal returned false, want the function's true")
	}
	if calls != 1 || got != want {
		t.Errorf("function called %d times with %v, want once with %v", calls, got, want)
	}

	if s.IsFatal(nil) {
		t.Error("IsFatal(nil) = true, want false")
	}
	if calls != 1 {
		t.Errorf("function was called for a nil error")
	}

	never := SorterFunc(func(error) bool { return false })
	if never.IsFatal(io.EOF) {
		t.Error("IsFatal returned true, want the function's false")
	}

	var nilFunc SorterFunc
	if nilFunc.IsFatal(io.EOF) {
		t.Error("nil SorterFunc reported an error as fatal")
	}
}

func TestSorterFuncWrapsDefault(t *testing.T) {
	extra := errors.New("custom fatal")
	s := SorterFunc(func(err error) bool {
		return errors.Is(err, extra) || Default.IsFatal(err)
	})
	if !s.IsFatal(extra) {
		t.Error("added rule not applied")
	}
	if !s.IsFatal(io.EOF) {
		t.Error("default rule lost")
	}
	if s.IsFatal(errors.New("other")) {
		t.Error("unrelated error reported fatal")
	}
}

func TestTiDBSorterLeavesTheOceanBaseRangeAlone(t *testing.T) {
	writeConflict := &mysql.MySQLError{Number: 8005, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Write conflict"}
	if !Default.IsFatal(writeConflict) {
		t.Fatal("the default sorter should call 8005 fatal (OceanBase's rule)")
	}
	if TiDB.IsFatal(writeConflict) {
		t.Fatal("the TiDB sorter called a write conflict fatal")
	}
	initializing := &mysql.MySQLError{Number: 8001, SQLState: [5]byte{'0', '8', '0', '0', '4'}}
	if fatal, reason := TiDB.(Classifier).Classify(initializing); !fatal || reason != ReasonSQLState08 {
		t.Fatalf("8001 with SQLSTATE 08004 = %v %q, want fatal by SQLSTATE", fatal, reason)
	}
	if !TiDB.IsFatal(io.EOF) || !TiDB.IsFatal(&mysql.MySQLError{Number: 1040}) {
		t.Fatal("the TiDB sorter lost a default rule")
	}
	if s, ok := Lookup(TiDBName); !ok || s != TiDB {
		t.Fatal("the TiDB sorter is not registered")
	}
}
