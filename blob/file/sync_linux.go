package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// useSyncfs: a batch is made durable with syncfs(2) on the bucket's file
// system, one call for all its files (then one for all its renames),
// instead of an fsync per file and per directory.
var useSyncfs = true

func syncfs(f *os.File) error {
	for {
		err := unix.Syncfs(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
