package lbd

import (
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/nodes"
)

// Zones: every node may carry a zone (nodes.Node.AZ) from its source: the static list spells it
// "host:port~zone" (after "*weight" and "#role"), the config-server and etcd documents give the
// zone of each proxy their az.proxy sets name, and DNS carries none (see docs/reference.md,
// localZone). With a local zone set (localZone, or LBD_LOCAL_ZONE), picks stay among the local
// zone's up proxies while at least zoneMinUpPercent of its listed proxies take connections,
// and at least one does; below that they spread over the up proxies of every zone, from the
// pick after the state change that took the zone below (so within one probe interval of the
// zone going down), and come back at the pick after it recovers. A target whose roles the
// local zone has no proxy of is picked from every zone. Panic mode ignores zones.

// EnvLocalZone is the environment variable that replaces the localZone DSN parameter when it
// is set (set but empty, it turns zones off), so that machines in different zones share one
// DSN.
const EnvLocalZone = "LBD_LOCAL_ZONE"

// DefaultZoneMinUpPercent is zoneMinUpPercent's default: the local zone keeps the traffic while
// at least half of its listed proxies take connections.
const DefaultZoneMinUpPercent = nodetable.DefaultZoneMinUpPercent

// parseLocalZone reads localZone: a zone name as nodes.CheckZone accepts, or "" for none.
func parseLocalZone(c *Config, v string) error {
	if v != "" {
		if err := nodes.CheckZone(v); err != nil {
			return err
		}
	}
	c.LocalZone = v
	return nil
}
