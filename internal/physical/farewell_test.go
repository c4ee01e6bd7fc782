package physical

import "testing"

// TestParseFarewell: an ERR packet without its first header byte (the liveness check read it)
// gives its number, SQLSTATE and message; anything else gives nil.
func TestParseFarewell(t *testing.T) {
	msg := "Server shutdown in progress"
	payload := append([]byte{0xff, 0x1d, 0x04, '#', '0', '8', 'S', '0', '1'}, msg...)
	pkt := append([]byte{byte(len(payload)), 0, 0, 0}, payload...)
	e := parseFarewell(pkt[1:])
	if e == nil || e.Number != 1053 || string(e.SQLState[:]) != "08S01" || e.Message != msg {
		t.Fatalf("parseFarewell = %+v, want 1053 (08S01) %q", e, msg)
	}
	for _, b := range [][]byte{nil, {0, 0}, {0, 0, 0, 0x00, 1, 2}, pkt} {
		if e := parseFarewell(b); e != nil {
			t.Errorf("parseFarewell(%x) = %+v, want nil", b, e)
		}
	}
	if e := parseFarewell(pkt[1:7]); e == nil || e.Number != 1053 || e.Message != "" {
		t.Errorf("a packet cut after its code: %+v, want 1053 and no message", e)
	}
}
