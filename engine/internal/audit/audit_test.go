package audit

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// An object of one entry is byte for byte what the audit log wrote before
// objects held entries: the JSON of {at, who, operation, run}; several
// entries are JSON lines; each object is under its first entry's date.
func TestObjectsAreJSONLines(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	l := New(store, keys.Layout{}, 0)
	at := time.Date(2026, 3, 2, 23, 59, 59, 5, time.UTC)
	if err := l.Read(ctx, at, "alice", "getRun", "r1"); err != nil {
		t.Fatal(err)
	}
	objs, _ := store.ListAll(ctx, "audit/2026-03-02/")
	if len(objs) != 1 {
		t.Fatalf("%d objects", len(objs))
	}
	o, _ := store.Get(ctx, objs[0].Key)
	if want := object.JSON(map[string]any{"at": at, "who": "alice", "operation": "getRun", "run": "r1"}); !bytes.Equal(o.Data, want) {
		t.Fatalf("one entry: %s, want %s", o.Data, want)
	}
	next := at.Add(2 * time.Second) // the next day
	if err := l.Record(ctx, Entry{At: at, Who: "a", Operation: "x", Run: "r"}, Entry{At: next, Who: "b", Operation: "x", Run: "r"}, Entry{At: at, Who: "c", Operation: "x", Run: "r"}); err != nil {
		t.Fatal(err)
	}
	day1, _ := store.ListAll(ctx, "audit/2026-03-02/")
	day2, _ := store.ListAll(ctx, "audit/2026-03-03/")
	if len(day1) != 2 || len(day2) != 1 {
		t.Fatalf("objects by day: %d, %d; want 2, 1", len(day1), len(day2))
	}
	for _, o := range day1 {
		got, _ := store.Get(ctx, o.Key)
		if o.Key == objs[0].Key {
			continue
		}
		if n := bytes.Count(got.Data, []byte("\n")); n != 1 || bytes.HasSuffix(got.Data, []byte("\n")) {
			t.Fatalf("two entries: %q", got.Data)
		}
	}
}

// Held reads under concurrency: each Copy takes the reads held and not
// recorded, at most MaxCopied; a copy whose write did not land (no
// Landed) marks nothing, so the next copy takes them again; Landed marks
// exactly the reads its record took; a released read is never taken.
func TestHeldReadsRace(t *testing.T) {
	l := New(mem.New(), keys.Layout{}, 0)
	now := time.Now()
	const runs, readers = 4, 40
	var wg sync.WaitGroup
	for r := range runs {
		run := fmt.Sprint("run", r)
		held := make([]*Reader, readers)
		for i := range held {
			held[i] = l.Hold(run, fmt.Sprint("u", i), "getRun")
		}
		wg.Go(func() { // the run's committer: writes one at a time
			var rev int64
			for range 10 {
				rev++
				lost := l.Copy(run, nil, now, true)
				if len(lost) > MaxCopied {
					t.Errorf("%d copied, max %d", len(lost), MaxCopied)
				}
				rev++
				landed := l.Copy(run, []Entry{{Who: "stored"}}, now, true) // the retry copies again
				if len(landed) != len(lost)+1 {
					t.Errorf("the retry copied %d, the lost write %d", len(landed)-1, len(lost))
				}
				l.Landed(run, landed, rev)
			}
			if got := l.Copy(run, nil, now, false); got != nil {
				t.Errorf("a running run's record took %d reads", len(got))
			}
		})
		wg.Go(func() { // the readers: answered at different times
			for i, rd := range held {
				if i%2 == 0 {
					l.Release(rd)
				}
			}
		})
	}
	wg.Wait()
	for r := range runs {
		run := fmt.Sprint("run", r)
		if left := l.Copy(run, nil, now, true); len(left) != 0 {
			t.Fatalf("%s: %d held reads never recorded", run, len(left))
		}
	}
	var left []*Reader
	l.mu.Lock()
	for _, rs := range l.held {
		for _, rd := range rs {
			left = append(left, rd)
		}
	}
	l.mu.Unlock()
	if len(left) != runs*readers/2 {
		t.Fatalf("%d reads held, want the %d not released", len(left), runs*readers/2)
	}
	for _, rd := range left {
		if rev := rd.rev; rev == 0 || !l.Recorded(rd, rev) || !l.Recorded(rd, rev+1) || l.Recorded(rd, rev-1) {
			t.Fatalf("read %+v: recorded at %d, but not reported so for a record of that revision or later only", rd, rev)
		}
	}
}
