package nodes

import (
	"runtime/debug"
	"sync"

	"github.com/lbd-go/lbd/internal/version"
)

// ModuleVersion returns the version of lbd's root module (github.com/lbd-go/lbd) that the
// running program was built with, as its build information records it, or lbd.Version when the
// build carries none (a checkout, a replace directive). Sources that tell a server who is asking
// (nodes/remote sends it as clientVersion) use it.
//
// It is a function rather than a sync.OnceValue held in a variable: a variable's initialiser
// runs in every program that imports this package, and would link runtime/debug's build
// information parser into programs that never ask.
func ModuleVersion() string {
	moduleVersion.once.Do(func() { moduleVersion.text = readModuleVersion() })
	return moduleVersion.text
}

var moduleVersion struct {
	once sync.Once
	text string
}

func readModuleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
			if m != nil && m.Path == version.ModulePath && m.Version != "" && m.Version != "(devel)" {
				return m.Version
			}
		}
	}
	return version.Version
}
