package api

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// storeLogEvery is how often an instance logs that its store is
// unreachable while the outage lasts.
const storeLogEvery = 10 * time.Second

// storeLog summarises an unreachable store in the log: the first failing
// request of an outage is logged, then at most one line every
// storeLogEvery with how many requests failed meanwhile — an outage under
// load costs a few lines per instance, not one per request (a chaos round
// with MinIO killed for 25 s logged 1,260 lines before; issue #15). Its
// zero value is ready.
type storeLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
	now        func() time.Time // nil: time.Now
}

func (s *storeLog) unreachable(ctx context.Context, log *slog.Logger, op string, err error) {
	s.mu.Lock()
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	t := now()
	if !s.last.IsZero() && t.Sub(s.last) < storeLogEvery {
		s.suppressed++
		s.mu.Unlock()
		return
	}
	n := s.suppressed
	s.last, s.suppressed = t, 0
	s.mu.Unlock()
	log.WarnContext(ctx, "store unreachable", "op", op, "err", err, "failed_requests_not_logged", n)
}
