package commit

import (
	"testing"
	"time"
)

type revRec struct {
	Rev int64 `json:"rev"`
}

// TestCacheHeardAndRecent: a notice of a newer revision drops the copy
// (whether its revision was given or must be decoded), one of the same or
// an older revision keeps it; a copy stands for a read only while recent.
func TestCacheHeardAndRecent(t *testing.T) {
	c := NewCache(8, func(r *revRec) int64 { return r.Rev })
	c.Put("known", []byte(`{"rev":5}`), "v5", 5)
	c.Put("decoded", []byte(`{"rev":5}`), "v5", 0)
	for _, id := range []string{"known", "decoded"} {
		c.Heard(id, 4)
		c.Heard(id, 5)
		if _, ok := c.Recent(id, time.Minute); !ok {
			t.Fatalf("%s: a notice of the cached revision or an older one dropped the copy", id)
		}
		c.Heard(id, 6)
		if _, ok := c.Recent(id, time.Minute); ok {
			t.Fatalf("%s: a notice of a newer revision left the copy", id)
		}
	}
	c.Put("old", []byte(`{"rev":1}`), "v1", 1)
	if _, ok := c.Recent("old", time.Nanosecond); ok {
		t.Fatal("a copy older than the window stood for a read")
	}
	if _, _, ok := c.Get("old"); !ok {
		t.Fatal("an old copy is still the committer's to swap against")
	}
}
