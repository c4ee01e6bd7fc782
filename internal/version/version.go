// Package version holds lbd's version, so that the root package and the node sources (the
// config-server client sends it as clientVersion) share one number without the sources
// importing the root package.
package version

// Version is lbd's version: what a build reports when its build information carries no module
// version (a checkout, a replace directive). lbd.Version is this constant.
const Version = "0.3.0"

// ModulePath is the path of lbd's root module, whose version the build information may carry.
const ModulePath = "github.com/lbd-go/lbd"
