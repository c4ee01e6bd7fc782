package configserver

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// MinAZFeatureLevel is the lowest clientFeatureLevel that can be given an AZ's list. Clients
// that send no level (lb-driver without AZ support, old lbd) always get the full list, so they
// never lose the other AZs as a fallback without knowing it.
const MinAZFeatureLevel = 2

// choose picks the list variant for a request: the client's AZ list when the document's policy
// is "az", the client declares MinAZFeatureLevel or more, does not ask for policy=default, and
// its AZ is known and has proxies in az.proxy; the full list otherwise. It also returns the AZ
// whose list was chosen, "" for the full list.
func (ss *schemaState) choose(q url.Values, remoteAddr string) (answer, string) {
	if ss.doc.ProxyPolicy != nodes.PolicyAZ || len(ss.byAZ) == 0 {
		return ss.full, ""
	}
	level, err := strconv.Atoi(strings.TrimSpace(q.Get("clientFeatureLevel")))
	if err != nil || level < MinAZFeatureLevel {
		return ss.full, ""
	}
	if strings.EqualFold(strings.TrimSpace(q.Get("policy")), nodes.PolicyDefault) {
		return ss.full, ""
	}
	az := ss.clientAZ(q, remoteAddr)
	if a, ok := ss.byAZ[az]; ok && az != "" {
		return a, az
	}
	return ss.full, ""
}

// clientAZ is the client's AZ: the az parameter when az.proxy names it, else the AZ of the ip
// parameter when it is an IP address, else the AZ of the request's source address ("" when none
// matches).
func (ss *schemaState) clientAZ(q url.Values, remoteAddr string) string {
	if az := strings.TrimSpace(q.Get("az")); az != "" {
		if _, ok := ss.byAZ[az]; ok {
			return az
		}
	}
	if ip, err := netip.ParseAddr(strings.TrimSpace(q.Get("ip"))); err == nil {
		// The client said where it is: a source address seen through NAT or a reverse proxy
		// would be a worse guess.
		return ss.doc.AZOf(ip.String())
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	return ss.doc.AZOf(host)
}
