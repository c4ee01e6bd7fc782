package lbd

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// Replica lag (maxReplicationLagSeconds): with it set, the probe of a node whose role is replica
// also reads how far the replica is behind its primary, from the server where it tells: MySQL's
// and MariaDB's SHOW REPLICA STATUS (SHOW SLAVE STATUS before MySQL 8.0.22 and MariaDB 10.5),
// column Seconds_Behind_Source (Seconds_Behind_Master). A replica further behind than allowed,
// or whose replication is stopped (NULL), takes no new connection and no read until it catches
// up; with every replica out, reads go to the primary, so they never fail because replicas are
// out. The check needs the REPLICATION CLIENT (MySQL) or SLAVE MONITOR (MariaDB) privilege; when
// it fails, the replica keeps serving and RoleError says why.

// replicaLag reads the replica's lag on pc: known is false when the server says its replication
// is not running (NULL), and err says when the statement failed or no replication is configured.
func replicaLag(ctx context.Context, pc driver.Conn) (lag time.Duration, known bool, err error) {
	q, ok := pc.(driver.QueryerContext)
	if !ok {
		return 0, false, fmt.Errorf("lbd: connection %T cannot run queries", pc)
	}
	rows, err := q.QueryContext(ctx, "SHOW REPLICA STATUS", nil)
	if err != nil {
		rows, err = q.QueryContext(ctx, "SHOW SLAVE STATUS", nil) // before MySQL 8.0.22 and MariaDB 10.5
	}
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	col := -1
	for i, name := range rows.Columns() {
		if name == "Seconds_Behind_Source" || name == "Seconds_Behind_Master" {
			col = i
		}
	}
	if col < 0 {
		return 0, false, errors.New("the replica status has no Seconds_Behind_Source column")
	}
	dest := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(dest); err != nil {
		if err == io.EOF {
			return 0, false, errors.New("the server reports no replication: not a replica")
		}
		return 0, false, err
	}
	var text string
	switch v := dest[col].(type) {
	case nil:
		return 0, false, nil
	case []byte:
		text = string(v)
	case string:
		text = v
	case int64:
		text = strconv.FormatInt(v, 10)
	case uint64: // go-sql-driver reads the unsigned column as such
		text = strconv.FormatUint(v, 10)
	default:
		return 0, false, fmt.Errorf("Seconds_Behind_Source is a %T", v)
	}
	secs, perr := strconv.ParseUint(text, 10, 32)
	if perr != nil {
		return 0, false, fmt.Errorf("Seconds_Behind_Source is %q", clipValue(text))
	}
	return time.Duration(secs) * time.Second, true, nil
}

func clipValue(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// checkLag runs on the probe connection after the role check: a replica's lag decides whether
// it takes reads. A failed lag check does not fail the probe.
func (p *probeTarget) checkLag(ctx context.Context) error {
	c := p.owner
	max := c.cfg.MaxReplicationLag
	if max <= 0 {
		return nil
	}
	tn := p.n.tn
	if c.table.Role(tn) != nodes.RoleReplica {
		if c.table.SetLagging(tn, false) {
			c.cfg.Logger.Info("lbd: replica lag no longer checked", "node", p.n.addr, "reason", "not a replica now")
		}
		return nil
	}
	lag, known, err := replicaLag(ctx, p.conn)
	if err != nil {
		if connectionLost(err) || errors.Is(err, ErrProtocol) || ctx.Err() != nil {
			return err
		}
		err = fmt.Errorf("lbd: replica lag check: %w", err)
		p.n.roleErr.Store(&err)
		return nil
	}
	p.n.lag.Store(int64(lag))
	lagging := !known || lag > max
	if c.table.SetLagging(tn, lagging) {
		if lagging {
			c.cfg.Logger.Warn("lbd: replica lagging; it takes no reads until it catches up", "node", p.n.addr,
				"lag", lagDesc(lag, known), "max", max)
		} else {
			c.cfg.Logger.Info("lbd: replica caught up; it takes reads again", "node", p.n.addr, "lag", lag)
		}
	}
	return nil
}

func lagDesc(lag time.Duration, known bool) string {
	if !known {
		return "replication stopped"
	}
	return lag.String()
}
