//go:build unix

package remote

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow is os.O_RDONLY with O_NOFOLLOW: opening a symbolic link fails.
const openNoFollow = os.O_RDONLY | syscall.O_NOFOLLOW

// checkOwner refuses a file or directory that belongs neither to the process's user nor to
// root.
func checkOwner(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Errorf("belongs to user id %d, not to this process's user (%d) or root: remove it, or choose another directory", st.Uid, uid)
	}
	return nil
}
