package gormplugin

import (
	"net"

	"github.com/lbd-go/lbd"
)

// nodeLocator names the proxy whose connection returned a fatal error. The plugin only asks
// it about errors its sorter judged fatal.
type nodeLocator interface {
	NodeOfError(err error) (addr string, ok bool)
}

// connectorLocator asks the Connector, falling back to the error itself.
type connectorLocator struct{ c *lbd.Connector }

// NodeOfError implements nodeLocator.
func (l connectorLocator) NodeOfError(err error) (string, bool) {
	if addr, ok := l.c.NodeOfError(err); ok {
		return addr, true
	}
	return interimLocator{}.NodeOfError(err)
}

// interimLocator finds the proxy from the error alone, which works for some errors only: a
// failed connect names its proxies (*lbd.NodeError) and a failed socket write carries the
// peer's address (*net.OpError). A server error (*mysql.MySQLError) or the driver's
// mysql.ErrInvalidConn carries no address, so for those it answers false. It also answers
// false when the error names more than one proxy.
type interimLocator struct{}

// NodeOfError implements nodeLocator.
func (interimLocator) NodeOfError(err error) (string, bool) {
	var nodes, sockets addrSet
	walk(err, func(e error) {
		switch x := e.(type) {
		case *lbd.NodeError:
			if x != nil {
				nodes.add(x.Addr)
			}
		case *net.OpError:
			if x != nil && x.Addr != nil {
				sockets.add(x.Addr.String())
			}
		}
	})
	if nodes.addr != "" {
		return nodes.only()
	}
	return sockets.only()
}

// addrSet remembers an address and whether a different one was seen too.
type addrSet struct {
	addr string
	many bool
}

func (s *addrSet) add(a string) {
	if s.addr != "" && s.addr != a {
		s.many = true
	}
	s.addr = a
}

func (s *addrSet) only() (string, bool) { return s.addr, s.addr != "" && !s.many }

// walk calls visit on err and every error wrapped in it, through Unwrap() error and
// Unwrap() []error, like errors.As does.
func walk(err error, visit func(error)) {
	for err != nil {
		visit(err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e, visit)
			}
			return
		default:
			return
		}
	}
}
