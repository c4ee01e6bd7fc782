package remote

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// errUnsafeCache means a cache directory or file that someone else could have written: it is
// neither read nor written, as ssh refuses a key file that others can change.
var errUnsafeCache = errors.New("unsafe cache")

// unsafeCache wraps errUnsafeCache with what is wrong and what to do.
func unsafeCache(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUnsafeCache, fmt.Sprintf(format, args...))
}

// checkCacheDir refuses a cache directory that is not a directory, is writable by its group or
// by others, or belongs to another user (on systems with file owners). A symbolic link to the
// directory is followed: the check applies to the directory it names.
func checkCacheDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	switch {
	case !fi.IsDir():
		return unsafeCache("the cache directory %s is not a directory", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return unsafeCache("the cache directory %s is writable by group or others (mode %04o): run chmod go-w %s (lbd creates it with mode 0700)",
			dir, fi.Mode().Perm(), dir)
	}
	if err := checkOwner(fi); err != nil {
		return unsafeCache("the cache directory %s %v", dir, err)
	}
	return nil
}

// checkCacheFile refuses a cache file that is a symbolic link or not a regular file, is
// writable by its group or by others, or belongs to another user. fi is from os.Lstat.
func checkCacheFile(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return unsafeCache("the cache file %s is a symbolic link: remove it, lbd writes a regular file there", path)
	case !fi.Mode().IsRegular():
		return unsafeCache("the cache file %s is not a regular file: remove it", path)
	case fi.Mode().Perm()&0o022 != 0:
		return unsafeCache("the cache file %s is writable by group or others (mode %04o): run chmod 600 %s or remove it",
			path, fi.Mode().Perm(), path)
	}
	if err := checkOwner(fi); err != nil {
		return unsafeCache("the cache file %s %v", path, err)
	}
	return nil
}
