// Package etcd is a node source that reads a schema's proxy list from etcd, where lb-driver's
// config-server keeps one JSON document per schema (see nodes.Document):
//
//	{"schema":"im_user","proxy":["10.0.0.1:2883","10.0.0.2:2883"]}
//
// Importing the package for its side effect registers the DSN network "lbetcd":
//
//	import _ "github.com/lbd-go/lbd/nodes/etcd"
//
//	user:pass@lbetcd(etcd1:2379,etcd2:2379)/im_user?etcdKey=%2Flbd%2Fschemas%2Fim_user
//
// The parentheses hold etcd endpoints, "host:port" or "http://host:port" / "https://host:port".
// The key's slashes must be written as %2F: go-sql-driver, which parses the DSN, takes a '/'
// in a parameter value for the start of the database name.
//
// # DSN parameters
//
//	etcdKey                     required  the key holding the document, e.g. /lbd/schemas/im_user
//	etcdUser, etcdPassword      none      etcd's own authentication; both or neither
//	etcdTLS                     false     true: TLS verified against the system roots;
//	                                      skip-verify: TLS without verifying the certificate
//	etcdDialTimeoutMillis       5000      bounds connecting and each read of the key
//	etcdRefreshIntervalSeconds  60        how often the key is read in full besides the watch
//
// An https:// endpoint turns TLS on with the system roots even without etcdTLS; etcdTLS does not
// go with http:// endpoints. The source never puts the password in an error or a log line. New
// builds the same source from a Config, for programs that do not configure lbd through a DSN.
//
// # Which schema
//
// The document must name the schema its key ends with: the document under
// /lbd/schemas/im_user must say "schema":"im_user", as lb-driver's config-server requires
// (Config.Schema can name another).
//
// # Following changes
//
// Start reads the key; a missing key, an invalid document or an unreachable etcd is an error,
// and the Connector does not start. Afterwards the source watches the key from the revision it
// read, and reads it again in full every refresh interval, which catches anything a watch
// could miss and notices an etcd outage. A valid document whose proxy list differs from the
// current one replaces the Connector's list; the set's Version is the key's mod revision.
//
// A deleted key, an invalid document or an unreachable etcd never empties the list: the
// Connector keeps its current nodes and the source logs one line when such a condition starts
// ("etcd key deleted", "etcd key holds an invalid document", "etcd unreachable", each with the
// key, the revision and the reason) and one when it ends ("etcd reachable again", "etcd key
// holds a valid document again"), not one per poll. A watch that etcd cancels (compaction,
// lost leader) is replaced after a full read.
package etcd
