package wire

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"strings"
	"testing"
)

// zpacket frames z as one compressed packet declaring ulen plain bytes.
func zpacket(seq byte, ulen int, z []byte) []byte {
	n := len(z)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq, byte(ulen), byte(ulen >> 8), byte(ulen >> 16)}, z...)
}

func deflate(plain []byte) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	w.Write(plain)
	w.Close()
	return b.Bytes()
}

// rw reads from r and writes to w.
type rw struct {
	io.Reader
	io.Writer
}

func TestCompressionRoundTrip(t *testing.T) {
	var wire bytes.Buffer
	w := NewCompression(rw{nil, &wire})
	small := []byte("\x05\x00\x00\x00\x03SELECT")
	large := bytes.Repeat([]byte("0123456789"), 20000)
	for _, p := range [][]byte{small, large, small} {
		if n, err := w.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if wire.Len() >= len(large) {
		t.Errorf("%d bytes on the wire for %d plain: nothing compressed", wire.Len(), 2*len(small)+len(large))
	}
	if seq := wire.Bytes()[3]; seq != 0 {
		t.Errorf("first packet numbered %d, want 0", seq)
	}
	r := NewCompression(rw{&wire, nil})
	got, err := io.ReadAll(io.LimitReader(r, int64(2*len(small)+len(large))))
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), small...), large...), small...)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes back, want the %d written", len(got), len(want))
	}
	if r.seq != 3 {
		t.Errorf("after three packets the next number is %d, want 3", r.seq)
	}
}

// TestCompressionRefusals: every packet that does not inflate to exactly what its header
// declares fails the read with ErrViolation, and inflating stops at the declared length.
func TestCompressionRefusals(t *testing.T) {
	zeros := make([]byte, 8<<20)
	bomb := deflate(zeros)
	good := deflate([]byte("hello, world"))
	badSum := append([]byte(nil), good...)
	badSum[len(badSum)-1] ^= 0xff
	for _, tc := range []struct {
		name   string
		packet []byte
		want   string
	}{
		{"bomb", zpacket(0, 100, bomb), "inflates to more than the 100 bytes"},
		{"short", zpacket(0, 20, good), "inflates to 12 bytes, fewer than the 20"},
		{"trailing", zpacket(0, 12, append(append([]byte(nil), good...), 1, 2, 3)), "3 bytes follow the zlib stream"},
		{"checksum", zpacket(0, 12, badSum), "zlib"},
		{"not_zlib", zpacket(0, 12, []byte("definitely not zlib")), "zlib"},
		{"empty", zpacket(0, 0, nil), "empty compressed packet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewCompression(rw{bytes.NewReader(tc.packet), nil})
			buf := make([]byte, 64<<10)
			total := 0
			var err error
			for err == nil && total < 1<<20 {
				var n int
				n, err = r.Read(buf)
				total += n
			}
			if !errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read %d bytes, then %v; want a violation saying %q", total, err, tc.want)
			}
			if total > 20 {
				t.Errorf("%d bytes handed on before the violation", total)
			}
			if _, again := r.Read(buf); again != err {
				t.Errorf("the next read: %v, want the same error", again)
			}
		})
	}
}

// TestCompressionTransportErrors: a connection that ends inside a packet is a transport error,
// not the peer's violation.
func TestCompressionTransportErrors(t *testing.T) {
	whole := zpacket(0, 12, deflate([]byte("hello, world")))
	for _, cut := range []int{3, 7, 10, len(whole) - 1} {
		r := NewCompression(rw{bytes.NewReader(whole[:cut]), nil})
		_, err := io.ReadAll(r)
		if err == nil || errors.Is(err, ErrViolation) {
			t.Errorf("cut at %d: %v, want a transport error", cut, err)
		}
	}
}
