package remote

import (
	"runtime/debug"
	"sync"

	"github.com/lbd-go/lbd/internal/version"
)

// ClientFeatureLevel is what the source sends as clientFeatureLevel. Level 2 tells a
// config-server that the client can be given its AZ's set alone, because it asks for the
// default set by itself (policy=default) when every node of that set is unreachable. Clients
// without the parameter always get the default set.
const ClientFeatureLevel = 2

// clientVersion is what the source sends as clientVersion (config-servers only log it):
// "lbd-go/" and the lbd module version the program was built with, or lbd.Version when the
// build carries none.
var clientVersion = sync.OnceValue(func() string {
	v := version.Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
		for _, m := range mods {
			if m != nil && m.Path == version.ModulePath && m.Version != "" && m.Version != "(devel)" {
				v = m.Version
				break
			}
		}
	}
	return "lbd-go/" + v
})
