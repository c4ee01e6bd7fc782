package gormplugin

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/exception"
)

func TestInterimLocator(t *testing.T) {
	opErr := func(addr string) error {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return &net.OpError{Op: "write", Net: "tcp", Addr: a, Err: syscall.EPIPE}
	}
	one := &lbd.NodeError{Addr: "10.0.0.1:2883", Err: syscall.ECONNREFUSED}
	cases := []struct {
		name string
		err  error
		addr string
		ok   bool
	}{
		{"server error", &mysql.MySQLError{Number: 8001}, "", false},
		{"broken connection", mysql.ErrInvalidConn, "", false},
		{"one node", fmt.Errorf("query: %w", one), "10.0.0.1:2883", true},
		{"one connect error", &lbd.ConnectError{Nodes: []*lbd.NodeError{one}}, "10.0.0.1:2883", true},
		{"two nodes", &lbd.ConnectError{Nodes: []*lbd.NodeError{one, {Addr: "10.0.0.2:2883", Err: syscall.ECONNREFUSED}}}, "", false},
		{"socket", fmt.Errorf("exec: %w", opErr("127.0.0.1:3306")), "127.0.0.1:3306", true},
		{"two sockets", errors.Join(opErr("127.0.0.1:3306"), opErr("127.0.0.1:3307")), "", false},
		{"node wins over socket", errors.Join(opErr("127.0.0.1:3306"), one), "10.0.0.1:2883", true},
		{"same node twice", errors.Join(one, one), "10.0.0.1:2883", true},
	}
	var l nodeLocator = interimLocator{}
	for _, c := range cases {
		addr, ok := l.NodeOfError(c.err)
		if addr != c.addr && c.ok || ok != c.ok {
			t.Errorf("%s: NodeOfError = %q, %v; want %q, %v", c.name, addr, ok, c.addr, c.ok)
		}
	}
}

// classifyOnly is a sorter that cannot explain itself.
type plainSorter struct{}

func (plainSorter) IsFatal(err error) bool { return errors.Is(err, errCustom) }

var errCustom = errors.New("custom fatal")

func TestClassifyReasons(t *testing.T) {
	def := &hooks{sorter: exception.Default, classifier: exception.Default.(exception.Classifier)}
	if fatal, reason := def.classify(&mysql.MySQLError{Number: 8001, SQLState: [5]byte{'0', '8', '0', '0', '4'}}); !fatal || reason != exception.ReasonOceanBase {
		t.Errorf("default sorter: %v %q", fatal, reason)
	}
	if fatal, _ := def.classify(&mysql.MySQLError{Number: 1062}); fatal {
		t.Error("default sorter: duplicate key is fatal")
	}
	plain := &hooks{sorter: plainSorter{}}
	if fatal, reason := plain.classify(errCustom); !fatal || reason != "sorter" {
		t.Errorf("custom sorter: %v %q", fatal, reason)
	}
	if fatal, reason := plain.classify(fmt.Errorf("%w and %w", errCustom, mysql.ErrInvalidConn)); !fatal || reason != exception.ReasonInvalidConn {
		t.Errorf("custom sorter with a known cause: %v %q", fatal, reason)
	}
	if fatal, _ := plain.classify(mysql.ErrInvalidConn); fatal {
		t.Error("custom sorter overruled")
	}
}

func TestPluginSorter(t *testing.T) {
	if s := (&Plugin{}).sorter(); s != exception.Default {
		t.Errorf("no connector: sorter %T, want exception.Default", s)
	}
	if s := (&Plugin{Sorter: plainSorter{}}).sorter(); s != (plainSorter{}) {
		t.Errorf("explicit sorter ignored: %T", s)
	}
}
