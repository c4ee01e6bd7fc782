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
	Schema  string    `json:"schema"`
	Variant string    `json:"variant"`
	Servers []string  `json:"servers"`
	MD5     string    `json:"md5"`
	Nodes   []string  `json:"nodes"`
	SavedAt time.Time `json:"savedAt"`
}

// maxCacheFile bounds what is read from a cache file.
const maxCacheFile = 8 << 20

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
// synced, then renamed over the old one. The directory is created with mode 0700.
func (c *diskCache) save(variant, md5 string, list []string, now time.Time) error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(cacheFile{
		Schema:  c.schema,
		Variant: variant,
		Servers: c.servers,
		MD5:     md5,
		Nodes:   list,
		SavedAt: now.UTC(),
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

// load reads a variant's file. It returns errNoCache when there is none, and another error
// when the file is unreadable or corrupt (not JSON, another schema or variant, an invalid or
// empty list, no md5).
func (c *diskCache) load(variant string) (cacheFile, string, error) {
	path := c.path(variant)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cacheFile{}, path, errNoCache
	}
	if err != nil {
		return cacheFile{}, path, err
	}
	defer f.Close()
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
		return cacheFile{}, path, fmt.Errorf("holds schema %q, want %q", cf.Schema, c.schema)
	case cf.Variant != variant:
		return cacheFile{}, path, fmt.Errorf("holds set %q, want %q", cf.Variant, variant)
	case strings.TrimSpace(cf.MD5) == "":
		return cacheFile{}, path, errors.New("has no md5")
	}
	if err := (nodes.Set{Nodes: nodes.StaticAddrs(cf.Nodes...)}).Validate(); err != nil {
		return cacheFile{}, path, fmt.Errorf("holds an unusable list: %v", strings.TrimPrefix(err.Error(), "nodes: "))
	}
	return cf, path, nil
}
