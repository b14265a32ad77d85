//go:build !unix

package file

import (
	"sync"

	"github.com/gofrs/flock"
)

// stripe is one of the lock stripes: an in-process mutex and the stripe's
// lock file, locked per write.
type stripe struct {
	mu sync.Mutex
	fl *flock.Flock
}

func (s *stripe) lock(path string) error {
	fl := flock.New(path)
	if err := fl.Lock(); err != nil {
		return err
	}
	s.fl = fl
	return nil
}

func (s *stripe) unlock() {
	s.fl.Unlock()
	s.fl = nil
}

func (s *stripe) close() {}
