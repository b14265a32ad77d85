// Package bustest is the conformance suite every notify driver runs, and
// the wake-latency benchmark shared by the drivers.
package bustest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/notify"
)

// Kind is a bus's delivery semantics.
type Kind int

const (
	// FanOut buses deliver every hint to every subscriber.
	FanOut Kind = iota
	// Queue buses deliver each message to one subscriber.
	Queue
)

func (k Kind) String() string {
	if k == Queue {
		return "queue"
	}
	return "fan-out"
}

// Harness describes a driver under test.
type Harness struct {
	Kind Kind
	// Channel makes a fresh channel (a subject, a queue, a topic and its
	// subscription) and returns a function that opens one more bus on it,
	// as another engine instance would. The harness closes every bus it
	// opens.
	Channel func(t *testing.T) (open func(t *testing.T) notify.Bus)
	// Unreachable opens a bus on a server that does not answer (a closed
	// loopback port). An error from it is fine (Open failed fast); a bus
	// must then fail Publish.
	Unreachable func(t *testing.T) (notify.Bus, error)
	// Wait bounds how long a delivery may take [10s].
	Wait time.Duration
	// Quiet is how long to watch for unwanted deliveries [300ms].
	Quiet time.Duration
}

// Run runs the conformance suite.
func Run(t *testing.T, h Harness) {
	if h.Wait == 0 {
		h.Wait = 10 * time.Second
	}
	if h.Quiet == 0 {
		h.Quiet = 300 * time.Millisecond
	}
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, h) })
	t.Run("Delivery", func(t *testing.T) { testDelivery(t, h) })
	t.Run("LargeBatch", func(t *testing.T) { testLargeBatch(t, h) })
	t.Run("Stop", func(t *testing.T) { testStop(t, h) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, h) })
	if h.Unreachable != nil {
		t.Run("Unreachable", func(t *testing.T) { testUnreachable(t, h) })
	}
}

// Hints returns n hints of batch, every field but Progress set on the
// first: NotBefore
// carries nanoseconds and a non-UTC zone on even hints and is zero on odd
// ones; Taken is set on every third hint, Changed (with Rev) on every
// fifth, Registered on every seventh; every eleventh, from the tenth, is
// a progress notice (Progress alone).
func Hints(batch string, n int) []notify.Hint {
	zone := time.FixedZone("X", 5*3600+30*60)
	out := make([]notify.Hint, n)
	for i := range out {
		out[i] = notify.Hint{
			Run:      fmt.Sprintf("run-%s-%d", batch, i),
			Workflow: "wf/ünïcødé \"quoted\" <tag> &",
			Version:  fmt.Sprintf("v%d", i%3),
			Step:     fmt.Sprintf("step-%d", i),
			Attempt:  i + 1,
			Taken:    i%3 == 0,
			Priority: i%201 - 100, // the whole range, negative ones included
		}
		if i%5 == 0 {
			out[i].Changed, out[i].Rev = true, int64(i+7)
		}
		if i%7 == 0 {
			out[i].Registered = "wf-" + batch
		}
		if i%2 == 0 {
			out[i].NotBefore = time.Date(2031, 2, 3, 4, 5, 6, 123456789+i, zone)
		}
		if i%11 == 10 {
			// A progress notice carries nothing else.
			out[i] = notify.Hint{Progress: &notify.Progress{Run: out[i].Run, Step: "s", Attempt: i + 1, Value: json.RawMessage(`{"done":0.5,"n":"ü"}`),
				At: time.Date(2031, 2, 3, 4, 5, 6, 7+i, zone), Origin: "o", Seq: uint64(i + 1)}}
		}
	}
	return out
}

// Equal reports whether two hints are equal field by field (times by
// instant).
func Equal(a, b notify.Hint) bool {
	if !a.NotBefore.Equal(b.NotBefore) {
		return false
	}
	a.NotBefore, b.NotBefore = time.Time{}, time.Time{}
	if (a.Progress == nil) != (b.Progress == nil) || a.Progress != nil && !equalProgress(*a.Progress, *b.Progress) {
		return false
	}
	a.Progress, b.Progress = nil, nil
	return a == b
}

func equalProgress(a, b notify.Progress) bool {
	if !a.At.Equal(b.At) || !bytes.Equal(a.Value, b.Value) {
		return false
	}
	a.At, b.At, a.Value, b.Value = time.Time{}, time.Time{}, nil, nil
	return reflect.DeepEqual(a, b)
}

// Key identifies a hint for counting.
func Key(h notify.Hint) string {
	if p := h.Progress; p != nil {
		return fmt.Sprintf("progress:%s/%s/%d", p.Run, p.Step, p.Attempt)
	}
	return fmt.Sprintf("%s/%s/%d", h.Run, h.Step, h.Attempt)
}

// Collector records what one subscriber receives.
type Collector struct {
	mu    sync.Mutex
	got   []notify.Hint
	count map[string]int
	n     atomic.Int64
	ch    chan struct{}
}

// NewCollector returns an empty collector.
func NewCollector() *Collector {
	return &Collector{count: map[string]int{}, ch: make(chan struct{}, 1)}
}

// Add is the subscriber's fn.
func (c *Collector) Add(h notify.Hint) {
	c.mu.Lock()
	c.got = append(c.got, h)
	c.count[Key(h)]++
	c.mu.Unlock()
	c.n.Add(1)
	select {
	case c.ch <- struct{}{}:
	default:
	}
}

// Len is the number of hints received.
func (c *Collector) Len() int { return int(c.n.Load()) }

// Got returns a copy of the hints received, in arrival order.
func (c *Collector) Got() []notify.Hint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// Count is how many times the hint with key k arrived.
func (c *Collector) Count(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[k]
}

// WaitFor waits until cond holds, checking at every delivery and at least
// every 20ms.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.EventuallyEvery(t, d, 5*time.Millisecond, what, func() (bool, string) { return cond(), "" })
}

// Subscribe subscribes a new Collector to b until the test ends, and
// returns it and the subscription's stop (which may be called again).
func Subscribe(t testing.TB, b notify.Bus) (*Collector, func()) {
	t.Helper()
	c := NewCollector()
	return c, subscribe(t, b, c)
}

func subscribe(t testing.TB, b notify.Bus, c *Collector) func() {
	t.Helper()
	stop, err := b.Subscribe(c.Add)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(stop)
	return stop
}

func publish(t *testing.T, b notify.Bus, hints []notify.Hint) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Publish(ctx, hints); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

func testRoundTrip(t *testing.T, h Harness) {
	open := h.Channel(t)
	b := open(t)
	c := NewCollector()
	subscribe(t, b, c)
	want := Hints("rt", 7)
	publish(t, b, want)
	publish(t, b, nil) // no hints: no message, no error
	WaitFor(t, h.Wait, "7 hints", func() bool { return c.Len() >= len(want) })
	time.Sleep(h.Quiet)
	got := c.Got()
	if len(got) != len(want) {
		t.Fatalf("got %d hints, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !Equal(got[i], want[i]) {
			t.Errorf("hint %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// A hint's NotBefore keeps its zone offset on the wire.
	if _, off := got[0].NotBefore.Zone(); off != 5*3600+30*60 {
		t.Errorf("NotBefore zone offset %d, want 19800", off)
	}
}

// testDelivery publishes batches from several instances to three
// subscribers: on a fan-out bus each receives every hint once; on a queue
// each hint reaches exactly one of them, with all hints of a message at
// the same one.
func testDelivery(t *testing.T, h Harness) {
	open := h.Channel(t)
	const subs, batches, per = 3, 12, 4
	var buses []notify.Bus
	var cols []*Collector
	for range subs {
		b := open(t)
		c := NewCollector()
		subscribe(t, b, c)
		buses = append(buses, b)
		cols = append(cols, c)
	}
	var all []notify.Hint
	for i := range batches {
		hs := Hints(fmt.Sprintf("d%d", i), per)
		all = append(all, hs...)
		publish(t, buses[i%subs], hs)
	}
	total := func() int {
		n := 0
		for _, c := range cols {
			n += c.Len()
		}
		return n
	}
	switch h.Kind {
	case FanOut:
		for i, c := range cols {
			WaitFor(t, h.Wait, fmt.Sprintf("subscriber %d to get %d hints", i, len(all)), func() bool { return c.Len() >= len(all) })
		}
		time.Sleep(h.Quiet)
		for i, c := range cols {
			if c.Len() != len(all) {
				t.Errorf("subscriber %d got %d hints, want %d", i, c.Len(), len(all))
			}
			for _, x := range all {
				if n := c.Count(Key(x)); n != 1 {
					t.Errorf("subscriber %d got %s %d times", i, Key(x), n)
				}
			}
		}
	case Queue:
		WaitFor(t, h.Wait, fmt.Sprintf("%d hints in all", len(all)), func() bool { return total() >= len(all) })
		time.Sleep(h.Quiet)
		if total() != len(all) {
			t.Errorf("subscribers got %d hints in all, want %d (each exactly once)", total(), len(all))
		}
		for _, x := range all {
			n := 0
			for _, c := range cols {
				n += c.Count(Key(x))
			}
			if n != 1 {
				t.Errorf("%s delivered %d times, want once", Key(x), n)
			}
		}
		// A message is delivered whole to one subscriber.
		for i := range batches {
			holders := map[int]bool{}
			for j, c := range cols {
				for _, x := range c.Got() {
					if strings.HasPrefix(x.Run, fmt.Sprintf("run-d%d-", i)) {
						holders[j] = true
					}
				}
			}
			if len(holders) != 1 {
				t.Errorf("batch %d split across subscribers %v", i, holders)
			}
		}
		var spread []int
		for _, c := range cols {
			spread = append(spread, c.Len())
		}
		t.Logf("queue spread over %d subscribers: %v", subs, spread)
	}
}

// testLargeBatch publishes a batch far larger than a message: it is split,
// and every hint arrives.
func testLargeBatch(t *testing.T, h Harness) {
	open := h.Channel(t)
	b := open(t)
	c := NewCollector()
	subscribe(t, b, c)
	want := Hints(strings.Repeat("L", 200), 1500) // about 500 KB of JSON
	publish(t, b, want)
	start := time.Now()
	for c.Len() < len(want) {
		if time.Since(start) > h.Wait {
			t.Fatalf("%d of %d hints received after %v", c.Len(), len(want), h.Wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("%d hints received in %v", c.Len(), time.Since(start).Round(time.Millisecond))
	time.Sleep(h.Quiet)
	if c.Len() != len(want) {
		t.Fatalf("got %d hints, want %d", c.Len(), len(want))
	}
	for _, x := range want {
		if c.Count(Key(x)) != 1 {
			t.Fatalf("%s arrived %d times", Key(x), c.Count(Key(x)))
		}
	}
}

// testStop checks that a stopped subscriber receives nothing more while
// the others go on, and that stop is idempotent.
func testStop(t *testing.T, h Harness) {
	open := h.Channel(t)
	a, b := open(t), open(t)
	ca, cb := NewCollector(), NewCollector()
	stopA := subscribe(t, a, ca)
	subscribe(t, b, cb)

	publish(t, b, Hints("before", 2))
	switch h.Kind {
	case FanOut:
		WaitFor(t, h.Wait, "both subscribers", func() bool { return ca.Len() >= 2 && cb.Len() >= 2 })
	case Queue:
		WaitFor(t, h.Wait, "one subscriber", func() bool { return ca.Len()+cb.Len() >= 2 })
	}
	stopA()
	stopA()
	n := ca.Len()
	after := Hints("after", 3)
	publish(t, a, after) // a stopped subscription leaves the bus usable for publishing
	publish(t, b, after[:1])
	WaitFor(t, h.Wait, "the remaining subscriber", func() bool {
		return cb.Count(Key(after[0])) >= 1 && cb.Count(Key(after[2])) >= 1
	})
	time.Sleep(h.Quiet)
	if ca.Len() != n {
		t.Errorf("stopped subscriber received %d more hints", ca.Len()-n)
	}
}

// testConcurrent runs publishers, subscribers and subscribe/stop churn at
// once (meant for -race) and checks that every hint reached the steady
// subscribers.
func testConcurrent(t *testing.T, h Harness) {
	open := h.Channel(t)
	const pubs, rounds = 4, 25
	steady := []*Collector{NewCollector(), NewCollector()}
	var buses []notify.Bus
	for _, c := range steady {
		b := open(t)
		subscribe(t, b, c)
		buses = append(buses, b)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	// churn: subscribe and stop repeatedly on another instance.
	churnBus := open(t)
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-done:
				return
			default:
			}
			stop, err := churnBus.Subscribe(func(notify.Hint) {})
			if err != nil {
				t.Errorf("churn Subscribe: %v", err)
				return
			}
			time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
			stop()
		}
	})
	var pw sync.WaitGroup
	for p := range pubs {
		pw.Go(func() {
			b := buses[p%len(buses)]
			for i := range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := b.Publish(ctx, Hints(fmt.Sprintf("c%d-%d", p, i), 3))
				cancel()
				if err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
			}
		})
	}
	pw.Wait()
	want := pubs * rounds * 3
	switch h.Kind {
	case FanOut:
		for i, c := range steady {
			WaitFor(t, h.Wait, fmt.Sprintf("steady subscriber %d", i), func() bool { return c.Len() >= want })
		}
	case Queue:
		// The churning subscriber may take messages; only the total of the
		// steady ones is bounded, so check that nothing was duplicated.
		time.Sleep(h.Quiet)
		for _, c := range steady {
			for _, x := range c.Got() {
				if n := c.Count(Key(x)); n != 1 {
					t.Errorf("%s delivered %d times to one subscriber", Key(x), n)
				}
			}
		}
	}
	close(done)
	wg.Wait()
}

func testUnreachable(t *testing.T, h Harness) {
	start := time.Now()
	b, err := h.Unreachable(t)
	if err != nil {
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("Open failed only after %v: %v", d, err)
		}
		t.Logf("Open failed fast (%v): %v", time.Since(start).Round(time.Millisecond), err)
		return
	}
	t.Cleanup(func() { closeBus(b) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start = time.Now()
	err = b.Publish(ctx, Hints("lost", 2))
	d := time.Since(start)
	if err == nil {
		t.Fatalf("Publish to an unreachable server succeeded")
	}
	if d > 5*time.Second {
		t.Fatalf("Publish took %v with a 3s context", d)
	}
	t.Logf("Publish failed after %v: %v", d.Round(time.Millisecond), err)
}

func closeBus(b notify.Bus) {
	if c, ok := b.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// OpenURL opens the bus url names (notify.Open), failing the test on an
// error, and closes it when the test ends.
func OpenURL(t testing.TB, url string) notify.Bus {
	t.Helper()
	b, err := notify.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return Opened(t, b)
}

// RefusesURLs checks that notify.Open refuses each of urls.
func RefusesURLs(t testing.TB, urls ...string) {
	t.Helper()
	for _, u := range urls {
		if b, err := notify.Open(context.Background(), u); err == nil {
			closeBus(b)
			t.Errorf("Open(%q) succeeded", u)
		}
	}
}

// Opened registers b's Close for the end of the test and returns b.
func Opened[B notify.Bus](t testing.TB, b B) B {
	t.Cleanup(func() { closeBus(b) })
	return b
}
