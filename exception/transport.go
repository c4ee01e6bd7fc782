package exception

import (
	"context"
	"database/sql/driver"
	"io"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/errtree"
)

// transportRule pairs a sentinel error with the reason reported when it is
// found anywhere in an error tree (matched as errors.Is does, within errtree's bounds).
type transportRule struct {
	target error
	reason string
}

// transportRules are checked in order; the first match gives the reason.
// Every one of them means the byte stream to the proxy is gone or at an
// unknown position, so nothing more can be read from or written to it.
var transportRules = []transportRule{
	{mysql.ErrInvalidConn, ReasonInvalidConn}, // go-sql-driver: the connection broke during a command and was closed.
	{driver.ErrBadConn, ReasonBadConn},        // database/sql contract: the driver asks for this connection to be discarded.
	{mysql.ErrMalformPkt, ReasonProtocol},     // go-sql-driver could not parse a packet: framing is lost.
	{mysql.ErrPktSync, ReasonProtocol},        // go-sql-driver saw an unexpected sequence number and closed the connection.
	{mysql.ErrPktSyncMul, ReasonProtocol},     // same, in the middle of a multi-packet payload.
	{io.ErrShortWrite, ReasonProtocol},        // a packet was only partly written; go-sql-driver closes the connection.
	{io.EOF, ReasonEOF},                       // the peer closed the stream.
	{io.ErrUnexpectedEOF, ReasonEOF},          // the peer closed the stream in the middle of a packet.
	{net.ErrClosed, ReasonConnClosed},         // the socket was already closed on our side.
	{syscall.ECONNRESET, ReasonConnReset},     // the peer (or a middlebox) reset the TCP connection.
	{syscall.ECONNREFUSED, ReasonConnRefused}, // nothing accepts connections at the address.
	{syscall.EPIPE, ReasonBrokenPipe},         // we wrote to a connection the peer had closed.
	{syscall.ECONNABORTED, ReasonConnAborted}, // the local stack aborted the connection.
}

// transportReason returns the reason of the first transport rule matching
// err, or "" if none does.
func transportReason(err error) string {
	for _, r := range transportRules {
		if errtree.Is(err, r.target) {
			return r.reason
		}
	}
	if errtree.Walk(err, isTransportTimeout) {
		return ReasonNetTimeout
	}
	return ""
}

// isTransportTimeout reports whether err itself (not what it wraps) is a
// net.Error timing out for a reason other than the caller's context.
//
// context.DeadlineExceeded satisfies net.Error with Timeout() == true, and
// the net package reports a dial cut short by the caller's context deadline
// as a timeout that matches context.DeadlineExceeded under errors.Is. Both
// mean "the caller ran out of time", not "the stream stalled", so they are
// excluded here. A read or write deadline set on the socket (what
// SetDeadline and the driver's readTimeout/writeTimeout produce) is not
// context.DeadlineExceeded and counts.
func isTransportTimeout(err error) bool {
	// Only the node itself is judged (a type assertion, not errors.As);
	// the walk visits the errors it wraps.
	ne, ok := err.(net.Error)
	return ok && ne.Timeout() && !errtree.Is(err, context.DeadlineExceeded)
}
