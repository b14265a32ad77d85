package flow

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// TestTakeReleaseStale: a full key refuses until a holder is stale; the
// stale holder is dropped in the write that adds the new one; a release
// removes exactly its holder; a full key is searched for stale holders at
// most once per staleCheckEvery.
func TestTakeReleaseStale(t *testing.T) {
	ctx := context.Background()
	var dead atomic.Value
	dead.Store("")
	var looks atomic.Int64
	tbl := NewTable(mem.New(), keys.Layout{Prefix: "t/"}, time.Now, func(_ context.Context, h Holder) (bool, error) {
		looks.Add(1)
		return h.Tag == dead.Load().(string), nil
	})
	key := tbl.Key("scope", "k")
	h := func(run, nonce string) Holder { return Holder{Run: run, Step: "s", Attempt: 1, Tag: Tag(nonce)} }
	for _, x := range []Holder{h("r1", "n1"), h("r2", "n2")} {
		if ok, err := tbl.Take(ctx, key, "scope", "k", 2, x); !ok || err != nil {
			t.Fatalf("take %s: %v, %v", x.Run, ok, err)
		}
	}
	if ok, err := tbl.Take(ctx, key, "scope", "k", 2, h("r3", "n3")); ok || err != nil {
		t.Fatalf("a third holder of a key limited to 2: %v, %v", ok, err)
	}
	if ok, _ := tbl.Take(ctx, key, "scope", "k", 2, h("r3", "n3")); ok || looks.Load() != 2 {
		t.Fatalf("a second look within %v: granted %v, %d stale checks; want refused without checking", staleCheckEvery, ok, looks.Load())
	}
	dead.Store(Tag("n1"))
	time.Sleep(staleCheckEvery) // the search's own spacing, in wall time
	if ok, err := tbl.Take(ctx, key, "scope", "k", 2, h("r3", "n3")); !ok || err != nil {
		t.Fatalf("with r1 stale: %v, %v", ok, err)
	}
	if err := tbl.Release(ctx, key, func(x Holder) bool { return x.Is("r2", "s", 1, "n2") }); err != nil {
		t.Fatal(err)
	}
	obj, _, err := tbl.Read(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(obj.Holders) != 1 || obj.Holders[0].Run != "r3" || obj.Holders[0].At.IsZero() {
		t.Fatalf("holders %+v; want r3 alone, with the time of its take", obj.Holders)
	}
}
