package timer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/scan"
)

// slowPuts makes every write take delay and counts them.
type slowPuts struct {
	blob.Driver
	delay  time.Duration
	writes atomic.Int64
}

func (s *slowPuts) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	<-time.After(s.delay) // the store's latency
	s.writes.Add(1)
	return s.Driver.Put(ctx, key, data, opts)
}

func runID(i int) string { return fmt.Sprintf("7%025d", i) }

// holder reads which runs the timer object at key names.
func holder(t *testing.T, x Index, key string) []string {
	t.Helper()
	_, name, ok := x.Keys.ParseTimer(key)
	if !ok {
		t.Fatalf("key %s", key)
	}
	if _, ok := GroupID(name); !ok {
		o, err := x.Bucket.Get(context.Background(), key)
		if err != nil || string(o.Data) != `{"run":"`+name+`"}` {
			t.Fatalf("run timer %s: %q %v", key, o.Data, err)
		}
		return []string{name}
	}
	runs, err := x.Members(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// Concurrent first timers of one due time share objects, each listing
// the run whose Put returned its key; on both layouts. Other timers, and
// a lone first timer, are the run's own.
func TestStartsShare(t *testing.T) {
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprint("sharded=", sharded), func(t *testing.T) {
			ctx := context.Background()
			d := &slowPuts{Driver: mem.New().Driver(), delay: 5 * time.Millisecond}
			x := Index{Bucket: blob.NewBucket(d), Keys: keys.Layout{Prefix: "p/", Sharded: sharded}}
			s := NewStarts(x)
			due := time.UnixMilli(1_800_000_000_000)
			const n = 200
			got := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					key, err := s.Put(ctx, runID(i), due, true)
					if err != nil {
						t.Error(err)
					}
					got[i] = key
				})
			}
			wg.Wait()
			for i, key := range got {
				if !slices.Contains(holder(t, x, key), runID(i)) {
					t.Fatalf("run %d's timer %s does not list it", i, key)
				}
			}
			if w := d.writes.Load(); w*4 > n {
				t.Fatalf("%d concurrent first timers took %d writes", n, w)
			}
			t.Logf("%d first timers in %d writes", n, d.writes.Load())
			for _, first := range []bool{true, false} {
				key, err := s.Put(ctx, "7ALONE", due, first)
				if err != nil || key != x.Keys.Timer(due, "7ALONE") || !slices.Equal(holder(t, x, key), []string{"7ALONE"}) {
					t.Fatalf("lone timer (first %v): %s %v", first, key, err)
				}
			}
		})
	}
}

// A batch whose leader's group name is taken (a run started again under
// its idempotency key) takes the next member's; when every name is taken,
// each run gets its own timer. No group object is replaced.
func TestStartsGroupNameTaken(t *testing.T) {
	ctx := context.Background()
	x := Index{Bucket: mem.New(), Keys: keys.Layout{}}
	s := NewStarts(x)
	due := time.UnixMilli(1_800_000_000_000)
	a, b := runID(1), runID(2)
	taken := x.Keys.Timer(due, GroupPrefix+a)
	if _, err := x.Bucket.Put(ctx, taken, []byte(`{"runs":["`+a+`","`+runID(3)+`"]}`), blob.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	batch := []*start{{run: a, due: due}, {run: b, due: due}}
	if err := s.write(ctx, "", batch); err != nil {
		t.Fatal(err)
	}
	if batch[0].key != x.Keys.Timer(due, GroupPrefix+b) || batch[1].key != batch[0].key {
		t.Fatalf("keys %s %s, want the group named for %s", batch[0].key, batch[1].key, b)
	}
	if runs := holder(t, x, taken); !slices.Equal(runs, []string{a, runID(3)}) {
		t.Fatalf("the taken group was replaced: %v", runs)
	}
	batch = []*start{{run: a, due: due}, {run: b, due: due}}
	if err := s.write(ctx, "", batch); err != nil {
		t.Fatal(err)
	}
	for _, st := range batch {
		if st.key != x.Keys.Timer(due, st.run) {
			t.Fatalf("every group name taken: %s got %s, want its own timer", st.run, st.key)
		}
	}
}

// Visits expands group timers into their runs (a run also due itself is
// visited once, with both); Visited deletes a group once every run it
// lists was visited: not after a failed visit, nor for a missing run
// before OrphanGrace. An unreadable group is a visit with its error; one
// deleted meanwhile is none; Expand gives the fallback scan the runs.
func TestVisits(t *testing.T) {
	ctx := context.Background()
	x := Index{Bucket: mem.New(), Keys: keys.Layout{Prefix: "p/"}, OrphanGrace: time.Minute}
	due := time.UnixMilli(1_800_000_000_000)
	put := func(name, body string) string {
		key := x.Keys.Timer(due, name)
		if _, err := x.Bucket.Put(ctx, key, []byte(body), blob.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		return key
	}
	a, b, c := runID(1), runID(2), runID(3)
	g1 := put(GroupPrefix+a, `{"runs":["`+a+`","`+b+`","bad/id"]}`)
	g2 := put(GroupPrefix+c, `{"runs":["`+c+`"]}`)
	bad := put(GroupPrefix+"x", `not json`)
	put(b, `{"run":"`+b+`"}`)
	l := scan.Lister{Bucket: x.Bucket, Keys: x.Keys}
	due1, _, err := l.DueTimers(ctx, due)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Bucket.Delete(ctx, g2); err != nil { // between the listing and the pass
		t.Fatal(err)
	}
	vs := x.Visits(ctx, due1, "r-")
	byName := map[string]Visit{}
	for _, v := range vs {
		byName[v.Name] = v
	}
	if len(vs) != 3 || len(byName[a].Groups) != 1 || len(byName[b].Groups) != 1 || len(byName[b].Keys) != 1 ||
		byName[GroupPrefix+"x"].Err == nil || !errors.Is(byName[GroupPrefix+"x"].Err, errs.ErrCorrupt) {
		t.Fatalf("visits %+v", vs)
	}
	now := due.Add(time.Second)
	exists := func(key string) bool {
		_, err := x.Bucket.Stat(ctx, key)
		return err == nil
	}
	// b's visit fails, a is missing and young: kept.
	_ = x.Visited(ctx, byName[a].Groups, nil, true, now)
	_ = x.Visited(ctx, byName[b].Groups, errors.New("boom"), false, now)
	if !exists(g1) {
		t.Fatal("group deleted though a visit failed and a run was missing too early")
	}
	// Next pass: a missing past OrphanGrace, b visited.
	vs = x.Visits(ctx, due1, "r-")
	now = due.Add(x.OrphanGrace)
	for _, v := range vs {
		if v.Name == a || v.Name == b {
			if err := x.Visited(ctx, v.Groups, nil, v.Name == a, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	if exists(g1) || !exists(bad) {
		t.Fatalf("after every run was visited: group kept %v; unreadable group dropped %v", exists(g1), !exists(bad))
	}

	g3 := put(GroupPrefix+c, `{"runs":["`+c+`","`+a+`"]}`)
	ts, err := x.Expand(ctx, []scan.Timer{{Key: x.Keys.Timer(due, b), At: due, Name: b}, {Key: g3, At: due, Name: GroupPrefix + c}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	if !slices.Equal(names, []string{a, b, c}) || ts[0].Key != g3 {
		t.Fatalf("expanded %v", ts)
	}
	if !strings.HasPrefix(ts[1].Key, "p/timers/") {
		t.Fatalf("expanded %v", ts)
	}
}
