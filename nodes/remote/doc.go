// Package remote is a node source that polls config-servers for a schema's proxy list, with
// the protocol of lb-driver's config-server ("remote mode"): operators add and remove proxies
// on the config-server and every application follows within a poll, without a restart.
//
// Importing the package for its side effect registers the DSN network "lbremote":
//
//	import _ "github.com/lbd-go/lbd/nodes/remote"
//
//	user:pass@lbremote(cs1.example:8080,cs2.example:8080)/db?configServerSchema=im_user&configServerApiKey=secret
//
// The parentheses hold config-servers, "host:port" or "host" (port 80); port 443 is spoken to
// over https, any other port over http. Unlike lb-driver, which takes one address, every poll
// tries them in turn, starting with the one that answered last. New builds the same source
// from a Config, for programs that do not configure lbd through a DSN (and for intervals
// shorter than a second); pass it to lbd.WithSource with the DSN user:pass@lb()/db.
//
// # DSN parameters
//
//	configServerSchema               required  the schema whose proxy list to fetch
//	configServerApiKey               none      sent as "Authorization: Bearer <key>"
//	configServerTimeout              5000      ms; bounds each request (connect and answer)
//	configServerPollIntervalSeconds  5         time between polls
//	configServerCacheDir             see text  directory of the disk cache; empty: no cache
//	az                               none      the client's availability zone
//	ip                               see text  the client address reported to the config-server
//	azRefreshIntervalSeconds         30        AZ set poll interval while degraded
//
// A '/' in a value (configServerCacheDir) must be written %2F: go-sql-driver, which parses
// the DSN, takes a '/' for the start of the database name. The environment variables LBD_AZ
// and LBD_IP replace az and ip on one machine, so that many machines share one DSN; set but
// empty, they clear the DSN's value. The Connector's own recoverCheckCount does not reach the
// source: the number of good probes that ends an AZ fallback is Config.RecoverCheckCount
// (default 2).
//
// # The request
//
// Each poll is one GET /fetch_sql_proxy_list with the query parameters schema, md5 (the
// version of the list the client has; every request but the very first carries it, where
// lb-driver forgets it after its first fetch), az when set, ip, clientFeatureLevel=2,
// clientVersion and, for the default set, policy=default; and the headers
// "Accept: application/json" and, with an API key, "Authorization: Bearer <key>".
//
// The answer {"code":200,"md5":"...","data":["10.0.0.1:2883",...]} replaces the list (the
// set's Version is the md5); {"code":304} leaves it. Every entry must pass nodes.CheckAddr
// and appear once in canonical form (nodes.Canonical: "LOCALHOST:1" and "localhost:1" are one
// node), and the md5 must be 32 hex digits, or the whole answer is refused. {"code":404}
// (unknown schema), HTTP 403 (API key refused), a redirect (never followed: a config-server
// answer never sends lbd, or its API key, elsewhere), any other status or code, a body that is
// not JSON or larger than 1 MiB, headers over 64 KiB, an empty list, a malformed entry or no
// answer within configServerTimeout keep the current list. An API key must be visible ASCII:
// one with spaces (even surrounding ones, which are not trimmed) or control characters is
// refused by New. Such a condition is
// logged once when it starts and once when it ends ("config-server answers again"), not at
// every poll. The API key never appears in errors, log lines or the disk cache.
//
// # Start-up and the disk cache
//
// Start asks every config-server in turn for the first list. The first usable answer is
// written to the disk cache and becomes the Connector's list. When none gives one, Start takes
// the list cached by an earlier run and logs a warning, so an application restarts while
// every config-server is down (lb-driver's scenario 13, where it cannot); with no cache it
// fails with an error naming each config-server's failure. An API key refused (HTTP 403) or an
// unknown schema (code 404) is not covered by the cache: that is a configuration mistake.
//
// The cache has one file per config-server list, schema and set (the az set, and the
// default set of the AZ fallback), named after a hash of those, in configServerCacheDir:
// by default "lbd" in the user's cache directory (os.UserCacheDir, e.g. ~/.cache/lbd), and off
// when the parameter is present but empty. A file holds JSON with the schema, the list, its
// md5 and the time; it is written, mode 0600 in a directory of mode 0700, to a temporary file
// renamed over the old one, each time the list changes. A file records the schema and the
// config-server list it came from; a corrupt file, or one written for another schema or
// config-server list, is ignored with a warning. As ssh does with key files, a cache
// directory or file that its group or others can write, or that belongs to another user, is
// neither read nor written (the warning names the path and the chmod to run), and a symbolic
// link in place of the file is refused.
//
// # AZ affinity
//
// The config-server decides which proxies a client gets. The client reports its IP in every
// request: ip, LBD_IP, or else the local address of its connection to a config-server, found
// once and remembered; when that gives no usable address the request goes without ip (the
// config-server then uses the request's source address) and the source tries again after
// azRefreshIntervalSeconds. It also sends az when set, and always clientFeatureLevel=2 and
// clientVersion. A config-server with an AZ policy answers a plain request with the client's
// AZ set, otherwise with the whole list; the source calls whatever a plain request returns the
// az set.
//
// When every node of the az set is unreachable by the Connector's probes (looked at every
// 500 ms from the source's own goroutine), the source asks for the default set with
// policy=default right away and pushes the degraded set: the default set's other nodes,
// taking connections, followed by the az set's nodes marked standby, which the Connector
// keeps probing but gives no new connection. A node listed in both sets counts as an az
// node: standby while degraded. The fallback is logged as a warning. While degraded the
// default set is polled every configServerPollIntervalSeconds and the az set every
// azRefreshIntervalSeconds, each with its own md5. As soon as one node of the az set has had
// Config.RecoverCheckCount consecutive good probes (2 by default; at most 2 while the default
// set has not arrived), the source pushes the az set alone again, the default set's other
// nodes drain away, and it logs that at info level.
//
// When the default set offers no node beyond the az set, as with a config-server without AZ
// policy, there is nothing to fall back to and the list stays as it is. A node that has never
// been up since it joined the az set counts as unreachable only after a poll interval, so
// that a new node is not taken for a dead one before its first probe. When no config-server
// gives the default set, the one cached by an earlier fallback is used; without it the source
// keeps asking every poll.
package remote
