package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/blob/sim"
)

// writeRates counts a store's writes per object and per prefix (the key
// up to its last slash) in each simulated second.
type writeRates struct {
	blob.Driver
	clk      *clock
	mu       sync.Mutex
	byObject map[string]int // "<second> <key>"
	byPrefix map[string]int // "<second> <prefix>"
	requests int
}

// count counts a request; a write (put) counts for its object and its
// prefix, a delete for its prefix only (stores limit deletes per key
// range, not per object).
func (w *writeRates) count(key string, put, del bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests++
	sec := w.clk.Now().Unix()
	if put {
		w.byObject[fmt.Sprint(sec, " ", key)]++
	}
	if put || del {
		w.byPrefix[fmt.Sprint(sec, " ", key[:strings.LastIndexByte(key, '/')+1])]++
	}
}

func (w *writeRates) Get(ctx context.Context, key string) (*blob.Object, error) {
	w.count(key, false, false)
	return w.Driver.Get(ctx, key)
}

func (w *writeRates) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	w.count(key, true, false)
	return w.Driver.Put(ctx, key, data, opts)
}

func (w *writeRates) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	w.count(opts.Prefix, false, false)
	return w.Driver.List(ctx, opts)
}

func (w *writeRates) Delete(ctx context.Context, key string) error {
	w.count(key, false, true)
	return w.Driver.Delete(ctx, key)
}

// peak is the largest count of m and its key.
func peak(m map[string]int) (int, string) {
	n, at := 0, ""
	for k, c := range m {
		if c > n {
			n, at = c, k
		}
	}
	return n, at
}

// A hot key — 1,000 events/s on one key for 5 simulated seconds — on the
// simulated GCS (one write per second per object; bucket capacity raised
// so only the per-object limit applies): no write is refused, no object
// takes more than one write in any second, and each event costs a few
// requests. Reports the peaks and the requests per event.
func TestHotKeyWindowsOnSimulatedGCS(t *testing.T) {
	for _, wf := range []cairn.Workflow{
		windowed(&cairn.Debounce{Key: "event.payload.k", Period: cairn.Duration(time.Second), Timeout: cairn.Duration(2 * time.Second)}, nil),
		windowed(nil, &cairn.EventBatch{Key: "event.payload.k", MaxSize: 100, Timeout: cairn.Duration(2 * time.Second)}),
	} {
		kind := map[bool]string{true: "debounce", false: "batch"}[wf.Debounce != nil]
		t.Run(kind, func(t *testing.T) {
			clk := newClock()
			model := sim.GCS.NoLatency()
			model.ReadsPerSecond, model.WritesPerSecond = 1e6, 1e6
			simStore, st := sim.New(mem.New(), model, clk, 1)
			rates := &writeRates{Driver: simStore.Driver(), clk: clk, byObject: map[string]int{}, byPrefix: map[string]int{}}
			h := newHarness(t, onStore(blob.NewBucket(rates)), withClock(func() *clock { return clk }))
			register(t, h.e, "w", wf)
			rates.mu.Lock()
			rates.requests, rates.byObject, rates.byPrefix = 0, map[string]int{}, map[string]int{}
			rates.mu.Unlock()
			const seconds, perSecond = 5, 1000
			for i := range seconds * perSecond {
				clk.Advance(time.Second / perSecond)
				ping(t, h.e, fmt.Sprint("h", i), "hot", i)
				if i%100 == 99 {
					h.reap()
				}
			}
			reapAll(t, h, []*Engine{h.e}, 6, time.Second)
			h.e.Settle()
			obj, objKey := peak(rates.byObject)
			pre, preKey := peak(rates.byPrefix)
			perEvent := float64(rates.requests) / (seconds * perSecond)
			t.Logf("%s: max %d writes/s to one object (%s), max %d writes and deletes/s to one prefix (%s), %.2f requests per event (runs' own included), %d refused",
				kind, obj, objKey, pre, preKey, perEvent, st.Stats().Total.Throttled())
			if obj > 1 || st.Stats().Total.Throttled() > 0 {
				t.Fatalf("an object took %d writes in a second (%s); %d requests refused", obj, objKey, st.Stats().Total.Throttled())
			}
			if runs := windowRuns(t, h.e); len(runs) == 0 {
				t.Fatal("no runs")
			}
		})
	}
}
