//go:build !linux

package file

import (
	"errors"
	"os"
)

// useSyncfs: there is no syncfs(2) here; a batch is made durable with an
// fsync per file and per directory, in parallel.
var useSyncfs = false

func syncfs(*os.File) error { return errors.ErrUnsupported }
