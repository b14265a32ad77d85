package testclock

import (
	"sync"
	"testing"
	"time"
)

func TestAdvance(t *testing.T) {
	var c Clock
	if c.Offset() != 0 {
		t.Fatal("a zero clock is moved")
	}
	before := time.Now()
	got := c.Advance(time.Hour)
	if got.Before(before.Add(time.Hour)) || got.After(time.Now().Add(time.Hour+time.Second)) {
		t.Fatalf("an hour on: %v (real %v)", got, before)
	}
	c.Advance(-time.Minute)
	if c.Offset() != time.Hour {
		t.Fatalf("a clock went back: offset %v", c.Offset())
	}
	c.Advance(1 << 62)
	if c.Offset() != MaxOffset {
		t.Fatalf("offset %v, want the cap %v", c.Offset(), MaxOffset)
	}
}

// TestAdvanceRaces: advances from many goroutines all count.
func TestAdvanceRaces(t *testing.T) {
	var c Clock
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Second)
			}
		})
	}
	wg.Wait()
	if c.Offset() != 1600*time.Second {
		t.Fatalf("offset %v, want 1600s", c.Offset())
	}
}
