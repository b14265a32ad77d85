package timer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/group"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/par"
	"github.com/cairn-dev/cairn/engine/internal/scan"
)

// GroupPrefix marks a group timer, timers/<due>/m-<run>: the first timer
// of several runs whose starts overlapped (Starts), named for the first
// of them, its body listing them all ({"runs":[…]}). Run ids are ULIDs,
// never "m-…".
const GroupPrefix = "m-"

// MaxGroup is the most runs one group timer lists.
const MaxGroup = 1000

// GroupID reports whether a timer name is a group timer's, and its id.
func GroupID(name string) (string, bool) { return strings.CutPrefix(name, GroupPrefix) }

// IsGroup reports whether key is a group timer's.
func (x Index) IsGroup(key string) bool {
	_, name, ok := x.Keys.ParseTimer(key)
	_, g := GroupID(name)
	return ok && g
}

type groupBody struct {
	Runs []string `json:"runs"`
}

// Starts writes the first timers of new runs. The starts of one due time
// that overlap share one object (group commit, engine/internal/group): a
// start whose write finds none in flight writes its run's own timer, as
// Put does, at once; the starts that come while it is in flight share the
// next write, one group timer listing them. A start returns once the
// object holding its run landed, so a run never exists without a timer.
// Under N concurrent starts a due time costs about one timer write per
// store round trip instead of N; alone a start costs what it did before.
// The reaper visits each listed run (Visits) and deletes the group timer
// once every one was visited.
type Starts struct {
	x Index
	w group.Writer[*start]
}

type start struct {
	run string
	due time.Time
	key string // set by the write that held it
}

// NewStarts returns the grouped start-timer writer of x.
func NewStarts(x Index) *Starts {
	s := &Starts{x: x}
	s.w.Write, s.w.Max = s.write, MaxGroup
	return s
}

// Put writes the timer named name at due (a bucket start, see Due) and
// returns the key of the object that holds it. Only a new run's first
// timer (first; name its run id) is shared: it is the run's own timer, or
// a group timer. Others are Index.Put's.
func (s *Starts) Put(ctx context.Context, name string, due time.Time, first bool) (string, error) {
	if !first {
		return s.x.Put(ctx, name, due)
	}
	st := &start{run: name, due: due}
	if err := s.w.Add(ctx, strconv.FormatInt(due.UnixMilli(), 10), st); err != nil {
		return "", err // st.key may still be written: not read
	}
	return st.key, nil
}

// write writes one batch: one run, its own timer; more, a group timer,
// create-only — a run started again under its idempotency key after a
// refused create may lead another batch of the same due time, which must
// not replace the group that holds runs already created — under the
// first of its runs' names that is free (else one timer per run).
func (s *Starts) write(ctx context.Context, _ string, batch []*start) error {
	due := batch[0].due
	if len(batch) == 1 {
		key, err := s.x.Put(ctx, batch[0].run, due)
		batch[0].key = key
		return err
	}
	b := groupBody{Runs: make([]string, len(batch))}
	for i, st := range batch {
		b.Runs[i] = st.run
	}
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	for _, lead := range batch {
		key := s.x.Keys.Timer(due, GroupPrefix+lead.run)
		_, err := s.x.Bucket.Create(ctx, key, body)
		if errors.Is(err, blob.ErrPreconditionFailed) {
			continue
		}
		for _, st := range batch {
			st.key = key
		}
		return err
	}
	for _, st := range batch {
		if st.key, err = s.x.Put(ctx, st.run, due); err != nil {
			return err
		}
	}
	return nil
}

// Members reads the runs a group timer lists (blob.ErrNotFound: it was
// deleted). Names that are not run ids are left out.
func (x Index) Members(ctx context.Context, key string) ([]string, error) {
	var b groupBody
	err := scan.RetryRead(ctx, func() error {
		o, err := x.Bucket.Get(ctx, key)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(o.Data, &b); err != nil {
			return fmt.Errorf("group timer %s: %w: %v", key, errs.ErrCorrupt, err)
		}
		return nil
	})
	runs := b.Runs[:0]
	for _, r := range b.Runs {
		if keys.RunID.Valid(r) {
			runs = append(runs, r)
		}
	}
	return runs, err
}

// groupReads is how many group timers one pass or scan reads at once.
const groupReads = 16

// readGroups reads the members of the group timers keys, concurrently.
func (x Index) readGroups(ctx context.Context, keys []string) (runs [][]string, errs []error) {
	runs, errs = make([][]string, len(keys)), make([]error, len(keys))
	par.Each(groupReads, len(keys), func(i int) { runs[i], errs[i] = x.Members(ctx, keys[i]) })
	return runs, errs
}

// Expand replaces each group timer among ts (the fallback scan's) by the
// runs it lists, each a Timer of the group's key and due time named by
// the run, in the order of a listing (due time, then name). A group
// deleted meanwhile lists none; one that cannot be read is left out and
// its error returned.
func (x Index) Expand(ctx context.Context, ts []scan.Timer) ([]scan.Timer, error) {
	var groups []string
	for _, t := range ts {
		if _, ok := GroupID(t.Name); ok {
			groups = append(groups, t.Key)
		}
	}
	if len(groups) == 0 {
		return ts, nil
	}
	runs, rerrs := x.readGroups(ctx, groups)
	var first error
	out := make([]scan.Timer, 0, len(ts))
	g := 0
	for _, t := range ts {
		if _, ok := GroupID(t.Name); !ok {
			out = append(out, t)
			continue
		}
		if err := rerrs[g]; err != nil && !errors.Is(err, blob.ErrNotFound) && first == nil {
			first = err
		}
		for _, run := range runs[g] {
			out = append(out, scan.Timer{Key: t.Key, At: t.At, Name: run})
		}
		g++
	}
	scan.SortTimers(out)
	return out, first
}

// Visit is one visit of a reaper pass: a due name (a run, schedule,
// batch or event window) with its due timer keys, or a run listed by due
// group timers (Groups; Keys then holds the run's own due timers, if
// any). A visit never deletes a group timer: Visited does, once every run
// it lists was visited.
type Visit struct {
	Name   string
	Keys   []string
	Groups []*Pending
	Err    error // a group timer that could not be read (Name, Keys: its)
}

// Pending is a due group timer while a pass visits the runs it lists.
type Pending struct {
	Key  string
	At   time.Time
	left atomic.Int64 // runs not visited yet
	kept atomic.Bool  // a visit failed, or found no run too early
}

// Visits is a pass's visits of the due timers, by name (Group's, with
// trimPrefix): each name as it is, but group timers, read (one GET each,
// concurrently) and replaced by the runs they list; a run due itself and
// listed is visited once. A group timer that cannot be read stays for the
// next pass (a Visit of its name with its error); one deleted meanwhile
// is done.
func (x Index) Visits(ctx context.Context, timers []scan.Timer, trimPrefix string) (visits []Visit) {
	order, due := Group(timers, trimPrefix)
	var groups []string
	at := map[string]int{}
	for _, name := range order {
		if _, ok := GroupID(name); ok {
			groups = append(groups, due[name]...)
			continue
		}
		at[name] = len(visits)
		visits = append(visits, Visit{Name: name, Keys: due[name]})
	}
	runs, rerrs := x.readGroups(ctx, groups)
	for i, key := range groups {
		if err := rerrs[i]; err != nil {
			if !errors.Is(err, blob.ErrNotFound) {
				_, name, _ := x.Keys.ParseTimer(key)
				visits = append(visits, Visit{Name: name, Keys: []string{key}, Err: err})
			}
			continue
		}
		t, _, _ := x.Keys.ParseTimer(key)
		p := &Pending{Key: key, At: t}
		for _, run := range runs[i] {
			j, seen := at[run]
			if !seen {
				j, at[run] = len(visits), len(visits)
				visits = append(visits, Visit{Name: run})
			}
			if v := &visits[j]; !slices.Contains(v.Groups, p) {
				v.Groups = append(v.Groups, p)
				p.left.Add(1)
			}
		}
		if p.left.Load() == 0 {
			_ = x.Drop(ctx, []string{key}, "") // lists no run
		}
	}
	return visits
}

// Visited records the visit of a run listed by groups: err is the
// visit's, missing whether it found no run. A run not found counts as
// visited only once its group is OrphanGrace past due (its start may
// still be writing the record, see OrphanGrace); a failed visit keeps the
// group for the next pass. The last visit of a group all of whose runs
// were visited deletes it. It returns err, or the delete's error.
func (x Index) Visited(ctx context.Context, groups []*Pending, err error, missing bool, now time.Time) error {
	var drop []string
	for _, p := range groups {
		if err != nil || missing && now.Sub(p.At) < x.OrphanGrace {
			p.kept.Store(true)
		}
		if p.left.Add(-1) == 0 && !p.kept.Load() {
			drop = append(drop, p.Key)
		}
	}
	if err != nil || len(drop) == 0 {
		return err
	}
	return x.Drop(ctx, drop, "")
}
