package exception

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestServerShutdown(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"1053 shutdown in progress", myErr(1053, "08S01", "Server shutdown in progress"), true},
		{"wrapped", fmt.Errorf("lbd: %w", myErr(1053, "08S01", "x")), true},
		{"1290 read-only is a role", myErr(1290, "HY000", "x"), false},
		{"ob 8002 server is stopping is fatal, not announced", myErr(8002, "08004", "x"), false},
		{"transport error", io.EOF, false},
		{"first server error decides", errors.Join(myErr(1040, "08004", "x"), myErr(1053, "08S01", "x")), false},
	} {
		if got := ServerShutdown(tt.err); got != tt.want {
			t.Errorf("%s: ServerShutdown(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
	// 1053 stays fatal to its connection (SQLSTATE class 08): pooled connections to a
	// stopping server are retired whatever else is done about the node.
	if fatal, _ := Classify(myErr(1053, "08S01", "x")); !fatal {
		t.Error("1053 is not fatal to its connection")
	}
}
