package physical

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// maxGreeting bounds the server greeting lbd reads before go-sql-driver does; real ones are
// about a hundred bytes.
const maxGreeting = 16 << 10

// errBadGreeting says a proxy answered the TCP connect with something that is not a MySQL
// handshake.
var errBadGreeting = errors.New("lbd: the server's greeting is not a MySQL handshake")

// readGreeting reads the server's first packet and checks that it is long enough to be a MySQL
// handshake (or an error packet). go-sql-driver indexes into the handshake without checking
// its length and panics on a short one, so a proxy answering garbage would otherwise crash the
// application. The read is bounded by ctx (the per-node dial timeout, the caller's context and
// the Connector's Close).
func readGreeting(ctx context.Context, c net.Conn) ([]byte, error) {
	deadline, _ := ctx.Deadline() // zero when none: no deadline
	c.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	defer c.SetReadDeadline(time.Time{})

	var header [4]byte
	if _, err := io.ReadFull(c, header[:]); err != nil {
		return nil, greetingReadError(ctx, err)
	}
	size := int(header[0]) | int(header[1])<<8 | int(header[2])<<16
	if size == 0 || size > maxGreeting {
		return nil, fmt.Errorf("%w (first packet of %d bytes)", errBadGreeting, size)
	}
	packet := make([]byte, 4+size)
	copy(packet, header[:])
	if _, err := io.ReadFull(c, packet[4:]); err != nil {
		return nil, greetingReadError(ctx, err)
	}
	if err := checkGreeting(packet[4:]); err != nil {
		return nil, err
	}
	return packet, nil
}

// greetingReadError says why no greeting came. A proxy that accepts TCP and never greets is
// named as such: a plain "context deadline exceeded" would send the user looking at their own
// timeouts.
func greetingReadError(ctx context.Context, err error) error {
	switch ctx.Err() {
	case nil:
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("%w: %w", errNoGreeting, err)
		}
		return fmt.Errorf("lbd: reading the server's greeting: %w", err)
	case context.DeadlineExceeded:
		return fmt.Errorf("%w: %w", errNoGreeting, context.DeadlineExceeded)
	default:
		return ctx.Err()
	}
}

// errNoGreeting: the proxy accepted the TCP connection but sent no MySQL greeting in time.
var errNoGreeting = errors.New("lbd: the proxy accepted the TCP connection but sent no MySQL greeting within the dial timeout (is the port a MySQL port? is the proxy hung? the DSN's timeout parameter sets the bound)")

// checkGreeting accepts a payload with every fixed field of a protocol-10 handshake that
// go-sql-driver reads, or an error packet with at least its error number.
func checkGreeting(p []byte) error {
	if p[0] == 0xff { // ERR packet: the server refuses us (too many connections, host blocked)
		// Error number, then a byte go-sql-driver looks at, and the SQLSTATE when it is '#'.
		if len(p) < 4 || (p[3] == '#' && len(p) < 9) {
			return fmt.Errorf("%w (truncated error packet)", errBadGreeting)
		}
		return nil
	}
	nul := bytes.IndexByte(p[1:], 0)
	if nul < 0 {
		return fmt.Errorf("%w (no server version)", errBadGreeting)
	}
	pos := 1 + nul + 1 + 4 // version, NUL, connection id
	pos += 8 + 1 + 2       // auth data part 1, filler, lower capability flags
	if len(p) < pos {
		return fmt.Errorf("%w (%d bytes)", errBadGreeting, len(p))
	}
	// Charset, status, upper flags, auth length, reserved, and 13 bytes of auth data part 2.
	if len(p) > pos && len(p) < pos+3+2+7+4+13 {
		return fmt.Errorf("%w (%d bytes)", errBadGreeting, len(p))
	}
	return nil
}
