package lbd

import (
	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/physical"
)

func init() {
	// One process-wide registration serves every Connector: the node to dial and the counters
	// to charge travel in the dial context (internal/physical's ticket), so nothing is
	// registered per Connector.
	mysql.RegisterDialContext(Network, physical.Dial)
}
