package exception

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestNotPrimary(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"1290 read-only server", myErr(1290, "HY000", "The MySQL server is running with the --read-only option"), true},
		{"1836 read-only mode", myErr(1836, "HY000", "Running in read-only mode"), true},
		{"4782 OceanBase standby tenant", myErr(4782, "HY000", "The tenant is not primary"), true},
		{"wrapped", fmt.Errorf("lbd: %w", myErr(4782, "HY000", "x")), true},
		{"1062 duplicate key is the statement's", myErr(erDupEntry, "23000", "x"), false},
		{"1045 wrong password", myErr(1045, "28000", "x"), false},
		{"ob 8001 is a fatal error, not a role", myErr(8001, "08004", "x"), false},
		{"transport error", io.EOF, false},
		{"first server error decides", errors.Join(myErr(1040, "08004", "x"), myErr(1290, "HY000", "x")), false},
	} {
		if got := NotPrimary(tt.err); got != tt.want {
			t.Errorf("%s: NotPrimary(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestNotPrimaryNumberSet pins the exact set, so that adding or dropping a number is a
// deliberate, visible change.
func TestNotPrimaryNumberSet(t *testing.T) {
	want := []uint16{1290, 1836, 4782}
	if len(notPrimaryNumbers) != len(want) {
		t.Errorf("notPrimaryNumbers has %d entries, want %d", len(notPrimaryNumbers), len(want))
	}
	for _, n := range want {
		if !notPrimaryNumbers[n] {
			t.Errorf("%d is missing from notPrimaryNumbers", n)
		}
	}
}

// 1792 is a role signal only where the caller did not make its transaction read-only, which
// NotPrimary cannot know: ReadOnlyTransaction names it, NotPrimary leaves it to the caller.
func TestReadOnlyTransaction(t *testing.T) {
	ro := myErr(1792, "25006", "Cannot execute statement in a READ ONLY transaction")
	if !ReadOnlyTransaction(ro) || !ReadOnlyTransaction(fmt.Errorf("insert: %w", ro)) {
		t.Error("ReadOnlyTransaction misses 1792")
	}
	if NotPrimary(ro) {
		t.Error("NotPrimary took 1792, which the caller's own read-only transaction gets too")
	}
	for _, err := range []error{nil, io.EOF, myErr(1290, "HY000", "x"), errors.Join(myErr(1040, "08004", "x"), ro)} {
		if ReadOnlyTransaction(err) {
			t.Errorf("ReadOnlyTransaction(%v) = true", err)
		}
	}
}

func TestStandbyTenant(t *testing.T) {
	if !StandbyTenant(fmt.Errorf("x: %w", myErr(4782, "HY000", "x"))) || StandbyTenant(myErr(1290, "HY000", "x")) || StandbyTenant(nil) {
		t.Fatal("StandbyTenant misjudges 4782, 1290 or nil")
	}
}
