package gormplugin

import (
	"net"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/exception"
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
	exception.Walk(err, func(e error) bool {
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
		return false
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
