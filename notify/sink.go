package notify

import (
	"log/slog"
	"sync"
)

// Sink hands received hints to a subscriber's fn until it is closed. It is
// what drivers use to keep Subscribe's promise: after stop returns, fn is
// never called again. Deliver may be called from several goroutines.
type Sink struct {
	mu     sync.RWMutex
	fn     func(Hint)
	closed bool
}

// NewSink returns a sink delivering to fn.
func NewSink(fn func(Hint)) *Sink { return &Sink{fn: fn} }

// Deliver hands hints to fn in order, and reports false when the sink is
// closed (nothing was delivered).
func (s *Sink) Deliver(hints []Hint) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false
	}
	for _, h := range hints {
		s.fn(h)
	}
	return true
}

// DeliverMessage decodes msg and delivers its hints. A message that does
// not decode is logged and reported as delivered (there is nothing to
// retry). It reports false when the sink is closed.
func (s *Sink) DeliverMessage(msg []byte, log *slog.Logger) bool {
	hints, err := Decode(msg)
	if err != nil {
		if log != nil {
			log.Warn("dropping an undecodable notification", "err", err, "bytes", len(msg))
		}
		return !s.Closed()
	}
	return s.Deliver(hints)
}

// Closed reports whether Close was called.
func (s *Sink) Closed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// Close stops deliveries, waiting for one in progress. It is idempotent
// and must not be called from fn.
func (s *Sink) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
