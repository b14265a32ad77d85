package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
)

// peakGets is a driver that counts the lease reads in flight at once,
// holding each until release is closed or leaseReads are in flight.
type peakGets struct {
	blob.Driver
	mu            sync.Mutex
	inflight, max int
	armed, opened bool
	full          chan struct{}
}

func (p *peakGets) Get(ctx context.Context, key string) (*blob.Object, error) {
	p.mu.Lock()
	counted := p.armed && strings.Contains(key, "leases/")
	if counted {
		p.inflight++
		p.max = max(p.max, p.inflight)
		if p.inflight == leaseReads && !p.opened {
			close(p.full) // once: later reads (the journal's) pass at once
			p.opened = true
		}
	}
	full := p.full
	p.mu.Unlock()
	if counted {
		defer func() { p.mu.Lock(); p.inflight--; p.mu.Unlock() }()
		select { // every read waits until leaseReads are in flight together
		case <-full:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.Driver.Get(ctx, key)
}

// A run's view and journal read the leases of its ready steps
// concurrently (a 10,000-wide fan-out's view was 10,000 reads in a row),
// and still name every holder. The driver holds each lease read until
// leaseReads are in flight at once, so a view reading them one at a time
// would never finish.
func TestRunViewReadsLeasesConcurrently(t *testing.T) {
	d := &peakGets{Driver: mem.New().Driver(), full: make(chan struct{})}
	e := newTestEngine(t, blob.NewBucket(d), Config{})
	const width = 100
	register(t, e, "w", fanOut("fan", width))
	id := mustStart(t, e, "fan", `{}`)
	held := map[string]string{}
	for len(held) < width {
		ls, err := e.Claim(context.Background(), ClaimRequest{WorkerID: "w", Max: 10, WaitMs: 3000})
		if err != nil || len(ls) == 0 {
			t.Fatalf("claim: %v %v after %d", ls, err, len(held))
		}
		for _, l := range ls {
			held[l.Step] = l.ID
		}
	}
	d.mu.Lock()
	d.armed = true
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := e.GetRun(ctx, id)
	if err != nil {
		t.Fatalf("view (reads one at a time never fill the driver's gate): %v", err)
	}
	n := 0
	for _, s := range v.Steps {
		if _, ok := held[s.ID]; ok {
			if s.Holder == nil || s.Holder.Worker != "w" {
				t.Fatalf("step %s: holder %+v, want worker w", s.ID, s.Holder)
			}
			n++
		}
	}
	if n != width {
		t.Fatalf("%d holders named, want %d", n, width)
	}
	j, err := e.Journal(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for _, en := range j {
		if en.Type == cairn.JournalStepClaimed {
			claimed++
		}
	}
	if claimed != width {
		t.Fatalf("journal: %d claimed entries, want %d", claimed, width)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.max != leaseReads {
		t.Fatalf("peak lease reads in flight %d, want %d", d.max, leaseReads)
	}
}
