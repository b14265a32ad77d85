// Package mem is an in-process fan-out notification bus, registered as
// "mem" with notify.Open:
//
//	mem://NAME
//
// Every Open of the same NAME in one process returns the same bus, so
// several engine instances in one test process share hints the way they
// would over NATS. Every subscriber receives every hint, delivered from a
// goroutine of its own in publish order; a subscriber that falls more than
// MaxPending hints behind loses the newest (hints are only hints).
package mem

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cairn-dev/cairn/notify"
)

// Scheme is the URL scheme this package registers.
const Scheme = "mem"

// MaxPending bounds the hints queued for one subscriber.
const MaxPending = 1 << 16

func init() {
	notify.Register(Scheme, func(_ context.Context, u *url.URL) (notify.Bus, error) {
		if len(u.Query()) > 0 {
			return nil, fmt.Errorf("mem: unknown query parameters %q", u.RawQuery)
		}
		return Get(strings.TrimPrefix(u.Host+u.Path, "/")), nil
	})
}

var (
	namedMu sync.Mutex
	named   = map[string]*Bus{}
)

// Get returns the process-wide bus called name, creating it.
func Get(name string) *Bus {
	namedMu.Lock()
	defer namedMu.Unlock()
	b, ok := named[name]
	if !ok {
		b = New()
		named[name] = b
	}
	return b
}

// Bus is an in-process fan-out bus. The zero value is not usable; use New
// or Get.
type Bus struct {
	mu   sync.RWMutex
	subs map[*subscriber]struct{}

	dropped atomic.Int64
}

// New returns a private bus (not reachable through Open).
func New() *Bus { return &Bus{subs: map[*subscriber]struct{}{}} }

// Dropped counts hints lost because a subscriber fell MaxPending behind.
func (b *Bus) Dropped() int64 { return b.dropped.Load() }

// Subscribers is the number of active subscriptions.
func (b *Bus) Subscribers() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs)
}

// Publish queues hints for every current subscriber and returns without
// waiting for deliveries.
func (b *Bus) Publish(ctx context.Context, hints []notify.Hint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(hints) == 0 {
		return nil
	}
	hs := append([]notify.Hint(nil), hints...) // subscribers only read it
	b.mu.RLock()
	defer b.mu.RUnlock()
	for s := range b.subs {
		if n := s.push(hs); n > 0 {
			b.dropped.Add(int64(n))
		}
	}
	return nil
}

// Subscribe delivers every hint published from now on to fn, until stop.
func (b *Bus) Subscribe(fn func(notify.Hint)) (stop func(), err error) {
	s := &subscriber{sink: notify.NewSink(fn), wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	go s.run()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, s)
			b.mu.Unlock()
			close(s.done)
			s.sink.Close()
			<-s.exited
		})
	}, nil
}

// Close does nothing: a mem bus holds no resources.
func (b *Bus) Close() error { return nil }

type subscriber struct {
	sink   *notify.Sink
	wake   chan struct{}
	done   chan struct{}
	exited chan struct{}

	mu      sync.Mutex
	pending [][]notify.Hint
	n       int
}

// push queues a batch and returns how many of its hints were dropped.
func (s *subscriber) push(hs []notify.Hint) int {
	s.mu.Lock()
	room := MaxPending - s.n
	dropped := 0
	if room < len(hs) {
		dropped = len(hs) - max(room, 0)
		hs = hs[:max(room, 0)]
	}
	if len(hs) > 0 {
		s.pending = append(s.pending, hs)
		s.n += len(hs)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return dropped
}

func (s *subscriber) run() {
	defer close(s.exited)
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		batches := s.pending
		s.pending, s.n = nil, 0
		s.mu.Unlock()
		for _, hs := range batches {
			if !s.sink.Deliver(hs) {
				return
			}
		}
	}
}
