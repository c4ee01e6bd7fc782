package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// diskCache keeps the last list of each set on disk, so that an application can start while
// every config-server is down (lb-driver cannot). One file per (config-server list, schema,
// set variant); the name is a hash of those, and neither the name nor the content holds the
// API key.
type diskCache struct {
	dir     string
	schema  string
	servers []string // base URLs, sorted: the same servers in another order share the cache
}

func newDiskCache(dir, schema string, servers []server) *diskCache {
	bases := make([]string, len(servers))
	for i, s := range servers {
		bases[i] = s.base
	}
	slices.Sort(bases)
	return &diskCache{dir: dir, schema: schema, servers: bases}
}

// cacheFile is the content of one cache file.
type cacheFile struct {
	Schema  string   `json:"schema"`
	Variant string   `json:"variant"`
	Servers []string `json:"servers"`
	MD5     string   `json:"md5"`
	Nodes   []string `json:"nodes"`
	// Weights are the weights the config-server gave (canonical address → weight); absent in
	// files of older releases and for lists without weights.
	Weights map[string]int `json:"weights,omitempty"`
	// Roles are the roles the config-server gave (canonical address → "primary", "replica" or
	// "standby"), kept so that a Connector started while every config-server is down still
	// sends writes to the last known primary; absent in files of older releases and for lists
	// without roles.
	Roles   map[string]string `json:"roles,omitempty"`
	SavedAt time.Time         `json:"savedAt"`
	// Zones are the zones the config-server gave (canonical address → zone); absent in files
	// of older releases and for lists without zones.
	Zones map[string]string `json:"zones,omitempty"`
	// Groups are the groups the config-server gave (canonical address → nodes.Node.Groups);
	// absent in files of older releases and for lists without groups.
	Groups map[string]string `json:"groups,omitempty"`

	roles map[string]nodes.Role // Roles, read by load
}

// maxCacheFile bounds what is read from a cache file: one list, as large as an answer may be,
// written out indented.
const maxCacheFile = 2 * maxAnswer

// path returns the file of a set variant.
func (c *diskCache) path(variant string) string {
	h := sha256.New()
	for _, part := range append([]string{"lbd remote cache v1", c.schema, variant}, c.servers...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return filepath.Join(c.dir, "remote-"+hex.EncodeToString(h.Sum(nil))[:32]+".json")
}

// save writes a variant's list atomically: a temporary file in the same directory (mode 0600),
// synced, then renamed over the old one (a symbolic link planted there is replaced, not
// followed). The directory is created with mode 0700; one that others can write is refused
// (errUnsafeCache). The list and md5 are checked as load checks them.
func (c *diskCache) save(variant, md5 string, list []string, weights map[string]int, roles map[string]nodes.Role, zones, groups map[string]string, now time.Time) error {
	if err := checkCached(md5, list); err != nil {
		return fmt.Errorf("refusing to cache an unusable list: %v", err)
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	if err := checkCacheDir(c.dir); err != nil {
		return err
	}
	data, err := json.MarshalIndent(cacheFile{
		Schema:  c.schema,
		Variant: variant,
		Servers: c.servers,
		MD5:     md5,
		Nodes:   list,
		Weights: weights,
		Roles:   roleNames(roles),
		SavedAt: now.UTC(),
		Zones:   zones,
		Groups:  groups,
	}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.dir, ".remote-*.tmp")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), c.path(variant)); err != nil {
		return err
	}
	ok = true
	return nil
}

// errNoCache means no file exists for the variant.
var errNoCache = errors.New("no cached list")

// checkCached applies to a cached list the checks an answer passes: an md5 fit to send back,
// a valid list without duplicates.
func checkCached(md5 string, list []string) error {
	if err := checkMD5(md5); err != nil {
		return err
	}
	if err := (nodes.Set{Nodes: nodes.StaticAddrs(list...)}).Validate(); err != nil {
		return fmt.Errorf("an unusable list: %v", strings.TrimPrefix(err.Error(), "nodes: "))
	}
	return nil
}

// load reads a variant's file, its list in canonical form. It returns errNoCache when there is none; an error wrapping
// errUnsafeCache when the directory or file could have been written by someone else (see
// checkCacheDir, checkCacheFile); and another error when the file is unreadable, corrupt or
// written for another set: not JSON, another schema, variant or config-server list, a bad
// md5, an invalid or empty list.
func (c *diskCache) load(variant string) (cacheFile, string, error) {
	path := c.path(variant)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cacheFile{}, path, errNoCache
	}
	if err != nil {
		return cacheFile{}, path, err
	}
	if err := checkCacheDir(c.dir); err != nil {
		return cacheFile{}, path, err
	}
	if err := checkCacheFile(path, fi); err != nil {
		return cacheFile{}, path, err
	}
	f, err := os.OpenFile(path, openNoFollow, 0)
	if err != nil {
		return cacheFile{}, path, err
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(fi, opened) {
		return cacheFile{}, path, unsafeCache("the cache file %s changed while it was opened", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCacheFile+1))
	if err != nil {
		return cacheFile{}, path, err
	}
	if len(data) > maxCacheFile {
		return cacheFile{}, path, fmt.Errorf("larger than %d bytes", maxCacheFile)
	}
	var cf cacheFile
	if err := json.Unmarshal(data, &cf); err != nil {
		return cacheFile{}, path, fmt.Errorf("not valid JSON: %v", err)
	}
	switch {
	case cf.Schema != c.schema:
		return cacheFile{}, path, fmt.Errorf("holds schema %q, want %q", clip(cf.Schema), c.schema)
	case cf.Variant != variant:
		return cacheFile{}, path, fmt.Errorf("holds set %q, want %q", clip(cf.Variant), variant)
	case !slices.Equal(cf.Servers, c.servers):
		return cacheFile{}, path, fmt.Errorf("was written for the config-servers %s, want %s",
			clip(strings.Join(cf.Servers, ",")), strings.Join(c.servers, ","))
	}
	if err := checkCached(cf.MD5, cf.Nodes); err != nil {
		return cacheFile{}, path, fmt.Errorf("holds %v", err)
	}
	for a, w := range cf.Weights {
		if err := nodes.CheckWeight(w); err != nil || !slices.Contains(cf.Nodes, a) {
			return cacheFile{}, path, fmt.Errorf("holds a weight %d for %q, not a listed node's weight from 0 to %d", w, clip(a), nodes.MaxWeight)
		}
	}
	for a, name := range cf.Roles {
		r, err := nodes.ParseRole(name)
		if err != nil || r == nodes.RoleUnknown || !slices.Contains(cf.Nodes, a) {
			return cacheFile{}, path, fmt.Errorf("holds a role %q for %q, not a listed node's primary, replica or standby", clip(name), clip(a))
		}
		if cf.roles == nil {
			cf.roles = make(map[string]nodes.Role, len(cf.Roles))
		}
		cf.roles[a] = r
	}
	for a, z := range cf.Zones {
		if err := nodes.CheckZone(z); err != nil || !slices.Contains(cf.Nodes, a) {
			return cacheFile{}, path, fmt.Errorf("holds a zone %q for %q, not a listed node's zone name", clip(z), clip(a))
		}
	}
	for a, g := range cf.Groups {
		if err := nodes.CheckGroups(g); err != nil || g == "" || !slices.Contains(cf.Nodes, a) {
			return cacheFile{}, path, fmt.Errorf("holds groups %q for %q, not a listed node's group names", clip(g), clip(a))
		}
	}
	// In the spelling answers are handed on in (a file of an older release may differ).
	cf.Nodes = nodes.Set{Nodes: nodes.StaticAddrs(cf.Nodes...)}.Canonical().Addrs()
	return cf, path, nil
}

// roleNames is roles as the cache file writes them; nil when there are none.
func roleNames(roles map[string]nodes.Role) map[string]string {
	if len(roles) == 0 {
		return nil
	}
	out := make(map[string]string, len(roles))
	for a, r := range roles {
		out[a] = r.String()
	}
	return out
}
