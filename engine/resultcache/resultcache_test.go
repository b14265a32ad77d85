package resultcache

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
)

// Equal key values share an entry whatever their spacing and key order;
// different ones do not; a key over the cap is refused.
func TestDigestIsCanonical(t *testing.T) {
	a, err := Digest(json.RawMessage(`{"b": 1, "a": [1, 2.50]}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Digest(json.RawMessage(`{"a":[1,2.50],"b":1}`)); a != b {
		t.Errorf("reordered object: %s, want %s", b, a)
	}
	if c, _ := Digest(json.RawMessage(`{"a":[1,2.5],"b":2}`)); a == c {
		t.Error("another value has the same digest")
	}
	if _, err := Digest(json.RawMessage(`"` + strings.Repeat("k", cairn.MaxCacheKeyBytes) + `"`)); err == nil {
		t.Error("a key over the cap was accepted")
	}
}

// An entry is found while fresh, not once its ttl has passed; an output
// over the cap, or a reference to a run's payload, is not written; a
// corrupt entry is a miss.
func TestPutAndFind(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := mem.New()
	c := New(b, "", 100, func() time.Time { return now })
	find := func(digest string) *Entry {
		ls := []Lookup{{Step: "s", Digest: digest, TTL: time.Hour}}
		c.Find(ctx, "wf", ls)
		return ls[0].Entry
	}
	if err := c.Put(ctx, "wf", "s", "d1", Entry{Output: json.RawMessage(`"x"`), WrittenAt: now, Run: "R", Attempt: 2}); err != nil {
		t.Fatal(err)
	}
	if e := find("d1"); e == nil || e.Run != "R" || e.Hit().Attempt != 2 {
		t.Fatalf("fresh entry: %+v", e)
	}
	now = now.Add(time.Hour)
	if e := find("d1"); e != nil {
		t.Fatalf("stale entry found: %+v", e)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 100) + `"`)
	ref := json.RawMessage(`{"$cairn_payload":{"sha256":"` + strings.Repeat("a", 64) + `","bytes":5}}`)
	for _, out := range []json.RawMessage{big, ref} {
		if err := c.Put(ctx, "wf", "s", "d2", Entry{Output: out, WrittenAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Put(ctx, "cache/wf/s/d3", []byte(`{"output":`), blob.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if e, e3 := find("d2"), find("d3"); e != nil || e3 != nil {
		t.Fatalf("uncached or corrupt entries found: %+v %+v", e, e3)
	}
	if err := c.Put(ctx, "w/f", "s", "d", Entry{Output: json.RawMessage(`1`)}); err == nil {
		t.Fatal("a workflow name that is not one was accepted")
	}
}
