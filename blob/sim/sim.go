// Package sim is a simulated cloud object store: a blob.Driver that
// enforces the request-rate limits S3 and GCS publish, per key range, on a
// clock the caller controls, so a design's behaviour at internet scale can
// be tried on one machine.
//
// Both clouds serve a bucket from key-range partitions. A partition has a
// request capacity per second (S3: at least 3,500 PUT/COPY/POST/DELETE and
// 5,500 GET/HEAD; GCS: about 1,000 writes and 5,000 reads to start with).
// A partition that stays hot splits in two at a key inside its traffic,
// doubling the capacity for that range: S3 does this after sustained load
// over tens of minutes, GCS ramps a bucket by about doubling every 20
// minutes. Requests beyond a partition's capacity are refused: S3 answers
// 503 SlowDown, GCS 429; both arrive here as blob.ErrThrottled. GCS also
// refuses more than about one write per second to one object name.
//
// Splitting is why key layout matters: a split only helps when later
// traffic lands on both sides of it. Keys that grow (or shrink)
// monotonically — time-ordered ids, timestamps — keep hitting the edge
// partition however often it splits; keys with a hash before the ordered
// part spread over every partition a split creates.
//
// The model (Model) is a set of numbers; S3 and GCS are the published
// figures. Model.Scaled divides every aggregate capacity by a factor so a
// load scaled by the same factor meets the same limits at the same ratio
// (per-object limits are not scaled: one object's write rate does not
// depend on how many objects there are). Latency is drawn from log-normal
// distributions and waited on the Clock.
package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
)

// Model is what a simulated store enforces.
type Model struct {
	// Name names the model in reports ("s3", "gcs").
	Name string
	// ReadsPerSecond and WritesPerSecond are one partition's capacity.
	// Reads are GET, HEAD and LIST; writes are PUT (of every kind) and
	// DELETE.
	ReadsPerSecond, WritesPerSecond float64
	// Burst is how many seconds of capacity a partition may take at once
	// after an idle spell [1].
	Burst float64
	// HotFraction: a minute in which a partition's demand (served and
	// refused) reaches this fraction of its capacity is a hot minute
	// [0.5].
	HotFraction float64
	// SplitAfter is how long a partition must stay hot, minute after
	// minute, before it splits; 0 never splits.
	SplitAfter time.Duration
	// MaxPartitions caps the partitions of the bucket; 0 is no cap.
	MaxPartitions int
	// WritesPerObjectPerSecond limits writes to one key; 0 is no limit.
	WritesPerObjectPerSecond float64
	// Refusal is the answer to a throttled request ("503 SlowDown").
	Refusal string
	// Read, Write, List, Delete are the latency distributions.
	Read, Write, List, Delete faults.Latency
}

// The published figures. S3: "at least 3,500 PUT/COPY/POST/DELETE or 5,500
// GET/HEAD requests per second per partitioned prefix", partitions split
// "gradually" under sustained load (modelled: after 10 minutes hot). GCS:
// "initially about 1,000 object writes per second and 5,000 object reads
// per second" per bucket, "doubling the request rate no faster than every
// 20 minutes", one write per second per object name.
var (
	S3 = Model{
		Name: "s3", ReadsPerSecond: 5500, WritesPerSecond: 3500,
		SplitAfter: 10 * time.Minute, Refusal: "503 SlowDown",
		Read: faults.S3.Read, Write: faults.S3.Write, List: faults.S3.List, Delete: faults.S3.Delete,
	}
	GCS = Model{
		Name: "gcs", ReadsPerSecond: 5000, WritesPerSecond: 1000,
		SplitAfter: 20 * time.Minute, WritesPerObjectPerSecond: 1, Refusal: "429 Too Many Requests",
		Read: faults.GCS.Read, Write: faults.GCS.Write, List: faults.GCS.List, Delete: faults.GCS.Delete,
	}
)

// Scaled returns m with every partition's capacity divided by f: a load
// divided by f meets the limits at the same ratio. Per-object limits and
// latencies are unchanged.
//
// The burst (seconds of capacity a partition may take at once) grows by
// √f: a load divided by f fluctuates √f times more relative to its mean
// (a Poisson count over a second has a standard deviation of √n), so with
// a 1-second bucket a scaled store refused the ordinary unevenness of a
// load that the full-size store would absorb. With √f seconds the bucket
// holds as many standard deviations of a second's load as at full size.
// Measured (docs/SCALE.md, "Scaling and burstiness"): 1,000 steps/s on
// the S3 model was 4–30 % throttled at 1/50 with a 1-second bucket and
// 0–7 % at 1/10, and 0 % at both with √f.
func (m Model) Scaled(f float64) Model {
	if f > 0 {
		m.ReadsPerSecond /= f
		m.WritesPerSecond /= f
		if m.Burst <= 0 {
			m.Burst = 1
		}
		if f > 1 {
			m.Burst *= math.Sqrt(f)
		}
	}
	return m
}

// NoLatency returns m without latency (for tests of the limits).
func (m Model) NoLatency() Model {
	m.Read, m.Write, m.List, m.Delete = faults.Latency{}, faults.Latency{}, faults.Latency{}, faults.Latency{}
	return m
}

// Clock is the simulated time: Now for the limits, Sleep for latency.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// Class is a request's capacity class.
type Class int

// The classes.
const (
	Read Class = iota
	Write
)

// Counts are requests of one key prefix or of the whole store.
type Counts struct {
	Reads, Writes, Lists, Deletes int64
	// ThrottledReads and ThrottledWrites were refused for the
	// partition's rate; ThrottledObject for the per-object limit.
	ThrottledReads, ThrottledWrites, ThrottledObject int64
}

// Requests is every request, served or refused.
func (c Counts) Requests() int64 { return c.Reads + c.Writes + c.Lists + c.Deletes }

// Throttled is every refused request.
func (c Counts) Throttled() int64 { return c.ThrottledReads + c.ThrottledWrites + c.ThrottledObject }

func (c *Counts) add(o Counts) {
	c.Reads += o.Reads
	c.Writes += o.Writes
	c.Lists += o.Lists
	c.Deletes += o.Deletes
	c.ThrottledReads += o.ThrottledReads
	c.ThrottledWrites += o.ThrottledWrites
	c.ThrottledObject += o.ThrottledObject
}

// Sub returns c − o.
func (c Counts) Sub(o Counts) Counts {
	return Counts{c.Reads - o.Reads, c.Writes - o.Writes, c.Lists - o.Lists, c.Deletes - o.Deletes,
		c.ThrottledReads - o.ThrottledReads, c.ThrottledWrites - o.ThrottledWrites, c.ThrottledObject - o.ThrottledObject}
}

// Split records one partition split.
type Split struct {
	At  time.Time
	Key string // the first key of the new upper partition
}

// Stats is a snapshot of what the store did.
type Stats struct {
	Total Counts
	// ByPrefix counts by the key's first segment ("runs", "leases", …).
	ByPrefix map[string]Counts
	// Partitions is the number of partitions now.
	Partitions int
	// Splits in the order they happened.
	Splits []Split
	// HottestWrites is the most writes one partition served in one
	// simulated second, and HottestKey a key of that partition.
	HottestWrites int64
	HottestKey    string
}

type partition struct {
	lo string // first key (inclusive); "" for the first partition

	readTokens, writeTokens float64
	refilled                time.Time

	minute           time.Time // start of the minute being counted
	demandR, demandW float64   // this minute's demand
	hotSince         time.Time // zero: not hot
	sample           []string  // reservoir of this hot spell's keys
	seen             int
	second           time.Time // start of the second being counted
	writesThisSecond int64
	peakWrites       int64
	served, refused  int64 // requests since the partition was made
}

// Store is the simulated store. Use it through the Bucket New returns.
type Store struct {
	next  blob.Driver
	clock Clock

	mu        sync.Mutex
	model     Model
	parts     []*partition // sorted by lo; parts[0].lo == ""
	rng       *rand.Rand
	lastWrite map[string]time.Time
	sweepAt   time.Time
	total     Counts
	byPrefix  map[string]*Counts
	splits    []Split
}

// New returns a bucket that behaves like model over next (an empty
// mem.New() bucket is the usual choice), on clock, and the Store that
// reports on it.
func New(next *blob.Bucket, model Model, clock Clock, seed uint64) (*blob.Bucket, *Store) {
	if model.Burst <= 0 {
		model.Burst = 1
	}
	if model.HotFraction <= 0 {
		model.HotFraction = 0.5
	}
	s := &Store{
		next: next.Driver(), clock: clock, model: model,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		lastWrite: map[string]time.Time{}, byPrefix: map[string]*Counts{},
	}
	now := clock.Now()
	s.parts = []*partition{s.newPartition("", now)}
	return blob.NewBucket(s), s
}

func (s *Store) newPartition(lo string, now time.Time) *partition {
	return &partition{
		lo: lo, readTokens: s.model.ReadsPerSecond * s.model.Burst, writeTokens: s.model.WritesPerSecond * s.model.Burst,
		refilled: now, minute: now.Truncate(time.Minute), second: now.Truncate(time.Second),
	}
}

// Model returns the store's model.
func (s *Store) Model() Model {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

// Stats returns what the store has done so far.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Total: s.total, ByPrefix: map[string]Counts{}, Partitions: len(s.parts), Splits: append([]Split(nil), s.splits...)}
	for k, c := range s.byPrefix {
		st.ByPrefix[k] = *c
	}
	for _, p := range s.parts {
		if p.peakWrites > st.HottestWrites {
			st.HottestWrites, st.HottestKey = p.peakWrites, p.lo
		}
	}
	return st
}

// PartitionBounds returns the first key of every partition, in order.
func (s *Store) PartitionBounds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.parts))
	for i, p := range s.parts {
		out[i] = p.lo
	}
	return out
}

// PartitionStat is one partition's traffic since it was made (a split
// makes two new counts: the upper half starts from zero).
type PartitionStat struct {
	Lo              string // its first key
	Served, Refused int64
}

// Partitions returns every partition's traffic, in key order.
func (s *Store) Partitions() []PartitionStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PartitionStat, len(s.parts))
	for i, p := range s.parts {
		out[i] = PartitionStat{Lo: p.lo, Served: p.served, Refused: p.refused}
	}
	return out
}

// find returns the partition holding key.
func (s *Store) find(key string) *partition {
	i := sort.Search(len(s.parts), func(i int) bool { return s.parts[i].lo > key })
	return s.parts[i-1]
}

func prefixOf(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return key
}

type listWeightKey struct{}

// WithListWeight returns a context whose LIST requests are charged to the
// store with probability w (0 < w < 1): a LIST that is not charged is served
// with its latency but takes no capacity and is not counted. A scaled
// simulation (Model.Scaled) divides the load and the capacity by a factor,
// but a deployment's fixed requests — a reaper pass lists every shard of
// the timer index whatever the load — do not shrink with the load; made
// with w = 1/factor, they cost the scaled store what they cost the full one.
func WithListWeight(ctx context.Context, w float64) context.Context {
	return context.WithValue(ctx, listWeightKey{}, w)
}

func listWeight(ctx context.Context) float64 {
	if w, ok := ctx.Value(listWeightKey{}).(float64); ok && w > 0 && w < 1 {
		return w
	}
	return 1
}

// admit decides one request: nil, or the throttling error. It also
// samples the request's latency. A LIST is charged with probability
// listW (WithListWeight): one not charged is only delayed.
func (s *Store) admit(op faults.Op, key string, listW float64) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	m := s.model
	if op == faults.OpList && listW < 1 && s.rng.Float64() >= listW {
		return sample(m.List, s.rng), nil
	}
	c := s.byPrefix[prefixOf(key)]
	if c == nil {
		c = &Counts{}
		s.byPrefix[prefixOf(key)] = c
	}
	var d Counts
	class := Read
	var lat faults.Latency
	switch op {
	case faults.OpGet, faults.OpStat:
		d.Reads, lat = 1, m.Read
	case faults.OpList:
		d.Lists, lat = 1, m.List
	case faults.OpDelete:
		d.Deletes, lat, class = 1, m.Delete, Write
	default:
		d.Writes, lat, class = 1, m.Write, Write
	}
	delay := sample(lat, s.rng)

	p := s.find(key)
	s.account(p, now, class, key)
	var err error
	switch {
	case class == Read && p.readTokens < 1:
		d.ThrottledReads = 1
	case class == Write && p.writeTokens < 1:
		d.ThrottledWrites = 1
	case class == Write && op != faults.OpDelete && m.WritesPerObjectPerSecond > 0 && s.objectBusy(key, now):
		d.ThrottledObject = 1
	default:
		if class == Read {
			p.readTokens--
		} else {
			p.writeTokens--
			p.writesThisSecond++
			if p.writesThisSecond > p.peakWrites {
				p.peakWrites = p.writesThisSecond
			}
			if m.WritesPerObjectPerSecond > 0 && op != faults.OpDelete {
				s.lastWrite[key] = now
			}
		}
	}
	if d.Throttled() > 0 {
		err = fmt.Errorf("%w: %s (simulated %s)", blob.ErrThrottled, m.Refusal, m.Name)
		p.refused++
	} else {
		p.served++
	}
	s.total.add(d)
	c.add(d)
	return delay, err
}

// objectBusy reports whether key was written less than a per-object
// period ago.
func (s *Store) objectBusy(key string, now time.Time) bool {
	if now.Sub(s.sweepAt) > 10*time.Second {
		for k, t := range s.lastWrite {
			if now.Sub(t) > 2*time.Second {
				delete(s.lastWrite, k)
			}
		}
		s.sweepAt = now
	}
	t, ok := s.lastWrite[key]
	period := time.Duration(float64(time.Second) / s.model.WritesPerObjectPerSecond)
	return ok && now.Sub(t) < period
}

// account refills p's tokens, counts the request's demand, and splits p
// when it has been hot for long enough.
func (s *Store) account(p *partition, now time.Time, class Class, key string) {
	m := s.model
	if dt := now.Sub(p.refilled).Seconds(); dt > 0 {
		p.readTokens = math.Min(m.ReadsPerSecond*m.Burst, p.readTokens+dt*m.ReadsPerSecond)
		p.writeTokens = math.Min(m.WritesPerSecond*m.Burst, p.writeTokens+dt*m.WritesPerSecond)
		p.refilled = now
	}
	if sec := now.Truncate(time.Second); sec.After(p.second) {
		p.second, p.writesThisSecond = sec, 0
	}
	if min := now.Truncate(time.Minute); min.After(p.minute) {
		hot := p.demandR >= m.HotFraction*m.ReadsPerSecond*60 || p.demandW >= m.HotFraction*m.WritesPerSecond*60
		gap := min.Sub(p.minute) > time.Minute // a whole minute without a request: not hot
		switch {
		case hot && !gap && p.hotSince.IsZero():
			p.hotSince = p.minute
		case !hot || gap:
			p.hotSince, p.sample, p.seen = time.Time{}, p.sample[:0], 0
		}
		p.minute, p.demandR, p.demandW = min, 0, 0
		if !p.hotSince.IsZero() && m.SplitAfter > 0 && now.Sub(p.hotSince) >= m.SplitAfter {
			s.split(p, now)
		}
	}
	if class == Read {
		p.demandR++
	} else {
		p.demandW++
	}
	// Reservoir sample of the keys of this hot spell (or of this minute,
	// before it is known to be hot), where a split will be placed.
	p.seen++
	const n = 256
	if len(p.sample) < n {
		p.sample = append(p.sample, key)
	} else if j := s.rng.IntN(p.seen); j < n {
		p.sample[j] = key
	}
}

// split divides p at the median of its sampled traffic, on a prefix
// boundary where the sample allows (as S3 splits on prefixes).
func (s *Store) split(p *partition, now time.Time) {
	if s.model.MaxPartitions > 0 && len(s.parts) >= s.model.MaxPartitions {
		return
	}
	keys := append([]string(nil), p.sample...)
	if len(keys) < 2 {
		return
	}
	sort.Strings(keys)
	lo, hi, mid := keys[0], keys[len(keys)-1], keys[len(keys)/2]
	at := mid
	if cp := commonPrefix(lo, hi); len(cp) < len(mid) {
		if c := mid[:len(cp)+1]; c > lo {
			at = c
		}
	}
	i := sort.Search(len(s.parts), func(i int) bool { return s.parts[i].lo > p.lo })
	upperBound := ""
	if i < len(s.parts) {
		upperBound = s.parts[i].lo
	}
	if at <= p.lo || (upperBound != "" && at >= upperBound) || at <= lo {
		return
	}
	q := s.newPartition(at, now)
	// Both halves start a new spell: the split takes effect for the
	// next SplitAfter on each side.
	p.hotSince, p.sample, p.seen = time.Time{}, p.sample[:0], 0
	p.readTokens, p.writeTokens = s.model.ReadsPerSecond*s.model.Burst, s.model.WritesPerSecond*s.model.Burst
	s.parts = append(s.parts, nil)
	copy(s.parts[i+1:], s.parts[i:])
	s.parts[i] = q
	s.splits = append(s.splits, Split{At: now, Key: at})
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

func sample(l faults.Latency, r *rand.Rand) time.Duration {
	if l.P50 <= 0 {
		return 0
	}
	if l.P99 <= l.P50 {
		return l.P50
	}
	sigma := math.Log(float64(l.P99)/float64(l.P50)) / 2.326
	return time.Duration(float64(l.P50) * math.Exp(sigma*r.NormFloat64()))
}

func do[T any](s *Store, ctx context.Context, op faults.Op, key string, f func() (T, error)) (T, error) {
	var zero T
	delay, err := s.admit(op, key, listWeight(ctx))
	if delay > 0 {
		if err := s.clock.Sleep(ctx, delay); err != nil {
			return zero, err
		}
	}
	if err != nil {
		return zero, err
	}
	return f()
}

func (s *Store) Get(ctx context.Context, key string) (*blob.Object, error) {
	return do(s, ctx, faults.OpGet, key, func() (*blob.Object, error) { return s.next.Get(ctx, key) })
}

func (s *Store) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	return do(s, ctx, faults.OpStat, key, func() (blob.Attributes, error) { return s.next.Stat(ctx, key) })
}

func (s *Store) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	op := faults.OpPut
	switch {
	case opts.IfNotExist:
		op = faults.OpCreate
	case opts.IfMatch != "":
		op = faults.OpSwap
	}
	return do(s, ctx, op, key, func() (blob.Version, error) { return s.next.Put(ctx, key, data, opts) })
}

func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := do(s, ctx, faults.OpDelete, key, func() (struct{}, error) { return struct{}{}, s.next.Delete(ctx, key) })
	return err
}

func (s *Store) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	return do(s, ctx, faults.OpList, opts.Prefix, func() (blob.ListPage, error) { return s.next.List(ctx, opts) })
}

// As supports **Store and otherwise asks the wrapped driver.
func (s *Store) As(target any) bool {
	if p, ok := target.(**Store); ok {
		*p = s
		return true
	}
	return s.next.As(target)
}

// Close closes the wrapped driver.
func (s *Store) Close() error { return s.next.Close() }
