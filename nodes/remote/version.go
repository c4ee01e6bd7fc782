package remote

import "github.com/lbd-go/lbd/nodes"

// ClientFeatureLevel is what the source sends as clientFeatureLevel. Level 2 tells a
// config-server that the client can be given its AZ's set alone, because it asks for the
// default set by itself (policy=default) when every node of that set is unreachable. Clients
// without the parameter always get the default set.
const ClientFeatureLevel = 2

// clientVersion is what the source sends as clientVersion (config-servers only log it):
// "lbd-go/" and the lbd module version the program was built with (nodes.ModuleVersion).
func clientVersion() string { return "lbd-go/" + nodes.ModuleVersion() }
