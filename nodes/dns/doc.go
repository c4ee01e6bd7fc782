// Package dns is a node source that finds the proxies in DNS, as a Kubernetes headless
// service or a service registry with a DNS interface publishes them, and resolves the names
// again on a timer.
//
// Importing the package for its side effect registers the DSN network "lbdns":
//
//	import _ "github.com/lbd-go/lbd/nodes/dns"
//
//	user:pass@lbdns(proxies.db.svc.cluster.local:2883)/db?dnsRefreshIntervalSeconds=10
//	user:pass@lbdns(_mysql._tcp.proxies.example)/db
//
// # Names
//
// Each entry between the parentheses is one of:
//
//   - "host:port": the host's A and AAAA records; every address is a node on that port, an
//     IPv6 one written "[addr]:port". An IP literal stands for itself.
//   - "_service._proto.name", without a port: the name's SRV records; every record is a node
//     "target:port" with the record's port, and its weight becomes Node.Weight (weighted
//     least-connections; a weight of 0 is the default weight, 1, not "almost never"). Targets stay
//     host names (the trailing dot dropped): the Connector resolves them with the system
//     resolver when it dials, not with dnsServer. Priorities are not used: every target is a
//     node. A target of "." (service not offered) is skipped.
//
// Either may end in "~zone" (nodes.ZoneSep): every node the name gives is in that zone
// (nodes.Node.AZ), for lbd's localZone: "proxies-a.example:2883~az1,proxies-b.example:2883~az2",
// one name per zone. DNS itself carries no zone: an A, AAAA or SRV record has no field for one,
// and reading it from a target's name or a TXT record would be a naming convention of one
// deployment, not of DNS; so the zone is the name's, written next to it.
//
// Either may also carry groups, "+group" once per group, before any "~zone" (nodes.GroupSep):
// every node the name gives belongs to them (nodes.Node.Groups), for lbd's group,
// isolatedGroups and InGroup: "_mysql._tcp.oltp.example,_mysql._tcp.bi.example+analytics", one
// name per group. DNS records carry no group either, for the same reason as zones; a node that
// two names give belongs to the groups of both. Merging at most nodes.MaxGroupSets sets of
// groups over the names is checked with the rest of each answer.
//
// All entries are resolved and their nodes merged, without duplicates, sorted by address. The
// set's Version is a hash of that sorted answer, so the same answer always has the same
// version.
//
// # DSN parameters
//
//	dnsRefreshIntervalSeconds  10      how often the names are resolved again
//	dnsTimeoutMillis           2000    bounds each lookup
//	dnsServer                  system  "host:port" of the DNS server to ask instead of the
//	                                   system resolver (port 53 when omitted); useful to ask a
//	                                   service registry's DNS interface, and in tests
//
// # Failures
//
// Start resolves every entry; a failure of any of them is an error and the Connector does not
// start. Afterwards a round in which any lookup fails (no answer in time, NXDOMAIN, SERVFAIL or
// REFUSED, a truncated, cut or malformed answer, or records that do not make a valid node
// list) keeps the current list, so that a resolver's hiccup never drains proxies: a source
// would rather serve a stale list than half of one. The source logs one line when names start
// failing or the set of failing names changes ("DNS lookup failed", with each failing name and
// the reason) and one when answers come back ("DNS answers again"), not one per round, even
// when the reason changes from round to round. Status (nodes.StatusReporter; lbd's
// Stats.Source) says when the last good answer came, how many rounds in a row failed since
// and the latest reason.
//
// No dial waits on the source: lookups run on the source's own goroutine, each bounded by
// dnsTimeoutMillis, so a DNS server that stalls delays only the next list, by at most that
// timeout plus the refresh interval once it answers again. A server that keeps answering an
// old list (stale records, an expired TTL) cannot be told from an unchanged one: its list
// stays, Status shows good rounds and the LastChange of that list, and the Connector's probes
// take out the proxies that no longer answer. SRV targets are host names, resolved when the
// Connector dials them (see Names): that lookup is the system resolver's, bounded by the dial
// timeout, not this source's.
//
// The DNS server is untrusted: answers are parsed by Go's resolver (a compression loop, a
// record count the message does not hold, a name that is no host name are errors) within the
// 64 KiB a DNS message can hold; a Resolver given in Config has its answers counted against
// nodes.MaxNodes before anything is sized by them and every address checked as any node
// address is (nodes.CheckAddr).
package dns
