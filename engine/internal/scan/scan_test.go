package scan

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// TestMergedOrder: over the sharded layout (a flat listing and 16 shards,
// listed in parallel) due timers, the fallback scan's first page and the
// run listing come in the order one flat listing would give.
func TestMergedOrder(t *testing.T) {
	ctx := context.Background()
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprint("sharded=", sharded), func(t *testing.T) {
			b := mem.New()
			k := keys.Layout{Prefix: "p/", Sharded: sharded}
			l := Lister{Bucket: b, Keys: k}
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var runs []string
			wantDue := 0
			for i := range 40 {
				if i%7 <= 3 {
					wantDue++
				}
				run := fmt.Sprintf("7%025d", 1000-i) // sorted descending as they are made
				runs = append(runs, run)
				for _, key := range []string{k.Run(run), k.Timer(base.Add(time.Duration(i%7)*time.Second), run)} {
					if _, err := b.Put(ctx, key, []byte(`{}`), blob.WriteOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			due, _, err := l.DueTimers(ctx, base.Add(3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if len(due) != wantDue || !slices.IsSortedFunc(due, func(a, b Timer) int {
				if b.After(a) {
					return -1
				}
				return 1
			}) {
				t.Fatalf("%d due timers, in order %v", len(due), due)
			}
			first, err := l.FirstTimers(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range first {
				if key != due[i].Key {
					t.Fatalf("first page %d: %s, want %s", i, key, due[i].Key)
				}
			}
			got, more, err := l.RunKeys(ctx, "", 15)
			if err != nil || !more || len(got) != 15 {
				t.Fatalf("run keys: %d, more %v, %v", len(got), more, err)
			}
			slices.Sort(runs)
			for i, key := range got {
				if key != k.Run(runs[i]) {
					t.Fatalf("run key %d: %s, want %s", i, key, k.Run(runs[i]))
				}
			}
			order := Order(Parse(k, first, base.Add(time.Hour)), due[4])
			if len(order) != len(first) || order[0].Key != due[5].Key || order[len(order)-1].Key != due[4].Key {
				t.Fatalf("scan order after %v: %v", due[4], order)
			}
		})
	}
}
