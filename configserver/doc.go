// Package configserver is a config-server for lbd and for NetEase's Java lb-driver: an
// http.Handler that tells applications which SQL proxies serve their schema.
//
// It speaks the Java config-server's protocol, so Java services using lb-driver and Go services
// using lbd can share one deployment. Server.Handler serves the clients:
//
//	GET /fetch_sql_proxy_list?schema=<s>[&md5=<m>][&az=<a>][&ip=<ip>][&clientFeatureLevel=<n>][&clientVersion=<v>][&policy=default]
//	    {"code":200,"md5":"<32 hex>","data":["h1:p1","h2:p2"]}   the list changed (or first fetch)
//	    {"code":304}                                            the client's md5 is current
//	    {"code":404}                                            unknown schema (HTTP 200, as Java)
//	    HTTP 403 {"code":403,"msg":"missing api key","data":null}  auth.enable without a key
//	GET /health/status     200 while online, 500 after /health/offline
//	GET /health/check      always 200
//
// Server.AdminHandler serves the operators, on an address of their own (see AdminHandler for
// its guards: no web pages, the admin token or, without one, an IP or localhost Host):
//
//	GET  /monitor          schemas, their proxies and the proxies' last TCP probe; protected
//	                       schemas (auth.enable or api.keys) only with the admin token
//	POST /reload           re-read the backend now: {"code":200} or {"code":500}; coalesced
//	POST /health/offline   go offline; 500 while traffic was seen in the drain window, then 200
//	POST /health/online    back online
//	GET  /health/status, /health/check   as above
//
// Documents are nodes.Document values (one per schema, validated by nodes.ParseDocument). They
// come from a Backend: etcd (NewEtcd: every key under a prefix, followed with a watch), a JSON
// or YAML file (NewFile: polled for changes) or memory (NewMemory, for tests and embedding).
//
// The md5 of a list is nodes.ListMD5, byte-compatible with the Java server, and every answer is
// computed when documents change, so a 304 never hides a change.
//
// # AZ-aware lists
//
// A document with "proxy.policy":"az" gives clients of an availability zone that zone's proxies
// (az.proxy) when the client says it understands it (clientFeatureLevel 2 or more) and does not
// ask for the default list (policy=default). The client's zone is the az parameter when az.proxy
// has it, else the zone whose az.list CIDR blocks hold the ip parameter, else the one holding the
// request's source address. Everyone else gets the full proxy list.
//
// # Differences from the Java server
//
//   - The listing and state-changing endpoints are not on the clients' handler, the state
//     changes need POST (a GET is HTTP 405), and requests from web pages are refused, so a
//     page of another origin cannot take the server offline. Java answers them all, on any
//     method, to anyone.
//   - /monitor shows a schema with auth.enable or api.keys only to a request carrying the
//     admin token.
//   - Concurrent /reload calls share one read of the store, spaced by Config.ReloadInterval.
//   - /health/online really brings the server back online.
//   - The Authorization header must be "Bearer <key>"; anything else is a 403, never a 500, and
//     keys are compared in constant time.
//   - Keys deleted from etcd stop being served.
//   - /monitor reports the result of a background TCP probe instead of probing every proxy
//     while the caller waits.
//   - No 304 for a stale md5 after a change.
//   - The file backend follows the file without /reload.
//
// Unknown schemas are answered {"code":404} before authentication, as the Java server does and
// as Java clients expect; that lets anyone who can reach the server learn which schema names
// exist. Config.HideUnknownSchemas answers them like a schema with authentication instead.
package configserver
