// Package lbd is a client-side load balancer for clusters of MySQL-protocol SQL proxies
// (OceanBase OBProxy/ODP, TiDB servers, ProxySQL, MySQL Router, MaxScale). It replaces the L4
// load balancer in front of the proxies: the application dials the proxies directly through a
// driver.Connector for go-sql-driver/mysql and database/sql (and through them GORM and sqlx).
//
// A DSN names the proxies with the network "lb":
//
//	user:password@lb(10.0.0.1:2883,10.0.0.2:2883,[fd00::3]:2883)/db?parseTime=true
//
// Each new physical connection goes to the up proxy with the fewest open connections for its
// weight (weighted least-connections; a proxy may carry a weight, lb(10.0.0.1:2883*2,...)), and
// a proxy added or recovered at run time warms up over warmupSeconds (slow start). Every
// proxy is probed with real SQL (`/* ping */ SELECT 1`), so a proxy that accepts TCP but hangs is
// taken out; connections that hit fatal errors (OceanBase 8000–8999, SQLSTATE class 08, resets)
// are retired; pooled connections are evened out when proxies come, go or recover. database/sql
// keeps pooling; lbd decides where each physical connection goes.
//
// By default (balancePolicy=least-load) a pick also weighs each proxy's latency estimate, so a
// proxy that slows down gets less new work, within a tolerance band that keeps proxies of one
// speed sharing evenly (see BalancePolicy). With localZone (or LBD_LOCAL_ZONE) and zones on the
// proxies (lb(10.0.0.1:2883~az1,...), or from the node source), picks stay in the client's zone
// while it has capacity and spill to every zone when it has not (see Config.LocalZone).
//
// When no proxy is up, lbd does not fail closed (panic mode): Connect still dials the down proxy
// that failed least recently, and one more when that fails, with at most one such dial of a
// proxy in flight per Connector and one per spacing (a twentieth of CheckHealthInterval, within
// 10 ms–1 s), so that callers of a dead fleet do not each dial it. A dial that succeeds while no
// proxy is up brings its proxy up at once (CausePanic). Draining and standby proxies are never
// dialled so; a Connect that finds no proxy to try fails with AllDown. This follows Envoy's
// panic threshold and gRPC's pick-first fallback.
//
// With balance=statement (or WithBalance(BalanceStatement)) lbd balances every checkout instead:
// database/sql pools logical connections, and each is bound, at its first statement after a
// checkout, to a physical connection on the proxy with the fewest physical connections in use.
// Transactions, *sql.Conn, session state (SET, USE, user variables, temporary tables, locks)
// and statements reading the previous one's result keep a logical connection on one physical
// connection; see BalanceMode and the README.
//
// Inside, the root package is the facade and the wiring (Connector, Config, options, errors,
// Stats, the node source and the loops); internal/physical owns each connection to a proxy from
// dial to close, internal/logical owns statement mode, and internal/nodetable the node table.
// Imports run one way, in that order.
//
// lbd's own DSN parameters keep the names and defaults of NetEase's Java lb-driver and are
// removed before go-sql-driver sees the DSN. See ParseDSN and the README.
package lbd

import "github.com/lbd-go/lbd/internal/version"

// Version is lbd's version, sent to config-servers as clientVersion.
const Version = version.Version
