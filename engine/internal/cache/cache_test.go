package cache

import (
	"fmt"
	"sync"
	"testing"
)

// keysOf lists c's keys, the most recently used first.
func keysOf[K comparable, V any](c *Cache[K, V]) []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []K
	for e := c.root.next; e != &c.root; e = e.next {
		out = append(out, e.key)
	}
	return out
}

func same(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestEvictsLeastRecentlyUsed: beyond max entries the one used least
// recently goes; Get and Put mark an entry used, Peek does not.
func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[string, int](3)
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("c", 3)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("get a = %v %v", v, ok)
	}
	if _, ok := c.Peek("b"); !ok {
		t.Fatal("peek b missed")
	}
	c.Put("d", 4) // b is the least recently used: Peek did not mark it
	if _, ok := c.Peek("b"); ok || c.Len() != 3 {
		t.Fatalf("b kept, len %d: %v", c.Len(), keysOf(c))
	}
	c.Put("c", 30) // a replaced value is marked used
	c.Put("e", 5)
	if got := keysOf(c); !same(got, []string{"e", "c", "d"}) {
		t.Fatalf("order %v", got)
	}
	if v, _ := c.Get("c"); v != 30 {
		t.Fatalf("c = %d", v)
	}
	c.Delete("c")
	c.Delete("nothing")
	if _, ok := c.Get("c"); ok || c.Len() != 2 {
		t.Fatalf("delete: len %d", c.Len())
	}
}

// TestAddEvictsInInsertionOrder: a cache used through Peek and Add only
// is first in, first out, and Add leaves a present entry alone.
func TestAddEvictsInInsertionOrder(t *testing.T) {
	c := New[string, string](2)
	if !c.Add("a", "1") || !c.Add("b", "2") {
		t.Fatal("add refused")
	}
	if c.Add("a", "other") {
		t.Fatal("add replaced a present entry")
	}
	if v, _ := c.Peek("a"); v != "1" {
		t.Fatalf("a = %q", v)
	}
	c.Add("c", "3") // a was added first
	if got := keysOf(c); !same(got, []string{"c", "b"}) {
		t.Fatalf("order %v", got)
	}
}

// TestWeighted: a weighted cache holds at most max in weight, evicting the
// oldest entries as a heavy one arrives; replacing a value reweighs it.
func TestWeighted(t *testing.T) {
	c := NewWeighted[string](10, func(s string) int { return len(s) })
	c.Add("a", "xxxx")
	c.Add("b", "xxxx")
	c.Add("c", "xx")
	if c.Len() != 3 {
		t.Fatalf("len %d", c.Len())
	}
	c.Add("d", "xxxxx") // 15: a and b go
	if got := keysOf(c); !same(got, []string{"d", "c"}) {
		t.Fatalf("order %v", got)
	}
	c.Put("c", "x") // 6
	c.Add("e", "xxxx")
	if got := keysOf(c); !same(got, []string{"e", "c", "d"}) || c.total != 10 {
		t.Fatalf("order %v, weight %d", got, c.total)
	}
	c.Add("big", "xxxxxxxxxxx") // heavier than the bound: nothing is left
	if c.Len() != 0 || c.total != 0 {
		t.Fatalf("len %d weight %d", c.Len(), c.total)
	}
}

// TestOffer: an offered value replaces the present one unless keep says
// it stays.
func TestOffer(t *testing.T) {
	c := New[string, int](4)
	newer := func(v int) func(int) bool { return func(cur int) bool { return cur >= v } }
	if !c.Offer("a", 2, newer(2)) {
		t.Fatal("absent key not put")
	}
	if c.Offer("a", 1, newer(1)) {
		t.Fatal("an older value replaced a newer one")
	}
	if !c.Offer("a", 3, newer(3)) {
		t.Fatal("a newer value was not put")
	}
	if v, _ := c.Get("a"); v != 3 {
		t.Fatalf("a = %d", v)
	}
}

// TestDeleteFunc removes what its function picks and keeps the order of
// the rest.
func TestDeleteFunc(t *testing.T) {
	c := NewWeighted[string](100, func(s string) int { return len(s) })
	for _, k := range []string{"r1/a", "r2/a", "r1/b", "r3/a"} {
		c.Add(k, k)
	}
	c.DeleteFunc(func(k, _ string) bool { return k[:3] == "r1/" })
	if got := keysOf(c); !same(got, []string{"r3/a", "r2/a"}) || c.total != 8 {
		t.Fatalf("left %v, weight %d", got, c.total)
	}
}

// TestConcurrent: many goroutines using one cache never see it beyond its
// bound or with a value another key was given (run with -race).
func TestConcurrent(t *testing.T) {
	c := New[int, int](64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5000 {
				k := (g*7919 + i) % 200
				switch i % 6 {
				case 0:
					c.Put(k, k)
				case 1:
					c.Add(k, k)
				case 2:
					c.Offer(k, k, func(cur int) bool { return cur == k })
				case 3:
					if v, ok := c.Get(k); ok && v != k {
						t.Errorf("key %d holds %d", k, v)
					}
				case 4:
					if v, ok := c.Peek(k); ok && v != k {
						t.Errorf("key %d holds %d", k, v)
					}
				default:
					if i%60 == 5 {
						c.DeleteFunc(func(k, _ int) bool { return k%10 == g })
					} else {
						c.Delete(k)
					}
				}
				if n := c.Len(); n > 64 {
					t.Errorf("%d entries, bound 64", n)
				}
			}
		})
	}
	wg.Wait()
	if n := len(keysOf(c)); n != c.Len() {
		t.Fatalf("list holds %d, map %d", n, c.Len())
	}
}
