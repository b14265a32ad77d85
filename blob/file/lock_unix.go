//go:build unix

package file

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// stripe is one of the lock stripes. Its lock file stays open for the
// bucket's life: taking the lock is one flock(2), not an open, a flock and
// a close.
type stripe struct {
	mu sync.Mutex // held by the goroutine that holds the flock
	f  *os.File
}

func (s *stripe) lock(path string) error {
	if s.f == nil {
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		s.f = f
	}
	for {
		err := unix.Flock(int(s.f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func (s *stripe) unlock() { unix.Flock(int(s.f.Fd()), unix.LOCK_UN) }

func (s *stripe) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}
