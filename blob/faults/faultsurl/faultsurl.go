// Package faultsurl registers the faults:// bucket URL: a real store
// wrapped in blob/faults with seeded fault rates, so a separate process
// (a `cairn serve` built for the chaos suite) can be given a failing
// store by URL alone. Import it for its side effect; production builds
// do not (internal/config/drivers links it only with -tags cairn_chaos).
//
//	faults://?store=<url-escaped inner URL>&seed=7&error=0.01&conflict=0.01&throttle=0.01&lost=0.01&latency=1ms&latency99=20ms
//
// Rates are probabilities per operation: error fails any operation before
// it runs (a 5xx answer), conflict fails a conditional write with
// blob.ErrConflict (S3's 409 ConditionalRequestConflict), throttle fails a
// write with blob.ErrThrottled (429/503 SlowDown), lost applies a write
// and then reports failure (the answer was lost). latency and latency99
// are the median and 99th percentile of an added delay. seed makes the
// sequence of faults reproducible for a given sequence of operations.
package faultsurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
)

// Scheme is the URL scheme this package registers.
const Scheme = "faults"

func init() { blob.Register(Scheme, Open) }

// ErrInjected5xx is what an injected server error looks like to the engine:
// an error with no sentinel cause, as a store's 500 is.
var ErrInjected5xx = errors.New("faults: injected 500 InternalError")

// ErrInjectedLost is the error reported for a write whose answer was lost.
var ErrInjectedLost = errors.New("faults: injected lost response (the write was applied)")

// Open opens a faults:// URL.
func Open(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	q := u.Query()
	inner := q.Get("store")
	if inner == "" {
		return nil, errors.New("faults: the store parameter (the wrapped bucket's URL) is required")
	}
	b, err := blob.OpenBucket(ctx, inner)
	if err != nil {
		return nil, err
	}
	p, err := parseParams(q)
	if err != nil {
		b.Close()
		return nil, err
	}
	fb, st := faults.Wrap(b, faults.Profile{Name: "chaos", Read: p.latency, Write: p.latency, List: p.latency, Delete: p.latency})
	st.Seed(p.seed)
	st.Inject(p.rules()...)
	if path := q.Get("stats"); path != "" {
		c := &counter{Driver: fb.Driver(), path: path + "." + strconv.Itoa(os.Getpid()), done: make(chan struct{}), finished: make(chan struct{})}
		go c.loop()
		return blob.NewBucket(c), nil
	}
	return fb, nil
}

// params are the faults a faults:// URL asks for.
type params struct {
	// rates are the probabilities of error, conflict, throttle and lost.
	rates   [4]float64
	latency faults.Latency
	seed    uint64
}

// parseParams reads the fault rates, the latency and the seed of a
// faults:// URL's query.
func parseParams(q url.Values) (params, error) {
	var p params
	var err error
	for i, n := range []string{"error", "conflict", "throttle", "lost"} {
		if p.rates[i], err = rateParam(q, n); err != nil {
			return p, err
		}
	}
	if p.latency.P50, err = durationParam(q, "latency"); err != nil {
		return p, err
	}
	if p.latency.P99, err = durationParam(q, "latency99"); err != nil {
		return p, err
	}
	if s := q.Get("seed"); s != "" {
		if p.seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			return p, fmt.Errorf("faults: seed=%q: want an unsigned integer", s)
		}
	}
	return p, nil
}

// rateParam is the probability parameter name, 0 when absent.
func rateParam(q url.Values, name string) (float64, error) {
	s := q.Get(name)
	if s == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1 {
		return 0, fmt.Errorf("faults: %s=%q: want a probability in [0,1]", name, s)
	}
	return f, nil
}

// durationParam is the duration parameter name, 0 when absent.
func durationParam(q url.Values, name string) (time.Duration, error) {
	s := q.Get(name)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("faults: %s=%q: want a duration", name, s)
	}
	return d, nil
}

// rules are the fault rules of the rates that are not zero: an error on
// any operation, a conflict on a conditional write, a throttle on any
// write, a lost answer after any write.
func (p params) rules() []faults.Rule {
	writes := []faults.Op{faults.OpCreate, faults.OpSwap, faults.OpPut}
	var rules []faults.Rule
	if p.rates[0] > 0 {
		rules = append(rules, faults.Rule{Err: ErrInjected5xx, Probability: p.rates[0]})
	}
	if p.rates[1] > 0 {
		rules = append(rules, faults.Rule{Ops: []faults.Op{faults.OpCreate, faults.OpSwap}, Err: fmt.Errorf("faults: injected 409 ConditionalRequestConflict: %w", blob.ErrConflict), Probability: p.rates[1]})
	}
	if p.rates[2] > 0 {
		rules = append(rules, faults.Rule{Ops: writes, Err: fmt.Errorf("faults: injected 503 SlowDown: %w", blob.ErrThrottled), Probability: p.rates[2]})
	}
	if p.rates[3] > 0 {
		rules = append(rules, faults.Rule{Ops: writes, After: true, Err: ErrInjectedLost, Probability: p.rates[3]})
	}
	return rules
}

// Counts are the faults one process injected, by kind; with stats=<path>
// they are written to <path>.<pid> as JSON twice a second (a process
// killed with -9 loses at most the last half second of counts).
type Counts struct {
	Error, Conflict, Throttle, Lost int64
}

// counter counts the injected faults the wrapped driver reports.
type counter struct {
	blob.Driver
	path                             string
	errs, conflicts, throttles, lost atomic.Int64
	done, finished                   chan struct{}
}

func (c *counter) note(err error) error {
	switch {
	case err == nil:
	case errors.Is(err, ErrInjected5xx):
		c.errs.Add(1)
	case errors.Is(err, ErrInjectedLost):
		c.lost.Add(1)
	case errors.Is(err, blob.ErrConflict):
		c.conflicts.Add(1)
	case errors.Is(err, blob.ErrThrottled):
		c.throttles.Add(1)
	}
	return err
}

func (c *counter) counts() Counts {
	return Counts{Error: c.errs.Load(), Conflict: c.conflicts.Load(), Throttle: c.throttles.Load(), Lost: c.lost.Load()}
}

func (c *counter) loop() {
	defer close(c.finished)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.done:
			c.write()
			return
		}
		c.write()
	}
}

func (c *counter) write() {
	n := c.counts()
	b := fmt.Appendf(nil, `{"error":%d,"conflict":%d,"throttle":%d,"lost":%d}`, n.Error, n.Conflict, n.Throttle, n.Lost)
	tmp := c.path + ".tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		os.Rename(tmp, c.path)
	}
}

func (c *counter) Get(ctx context.Context, key string) (*blob.Object, error) {
	o, err := c.Driver.Get(ctx, key)
	return o, c.note(err)
}

func (c *counter) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	a, err := c.Driver.Stat(ctx, key)
	return a, c.note(err)
}

func (c *counter) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	v, err := c.Driver.Put(ctx, key, data, opts)
	return v, c.note(err)
}

func (c *counter) Delete(ctx context.Context, key string) error {
	return c.note(c.Driver.Delete(ctx, key))
}

func (c *counter) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	p, err := c.Driver.List(ctx, opts)
	return p, c.note(err)
}

func (c *counter) Close() error {
	close(c.done)
	<-c.finished
	return c.Driver.Close()
}
