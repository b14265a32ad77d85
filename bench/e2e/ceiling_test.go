package main

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob/counting"
)

// TestCeilingBoundsLinear swaps on a real file store and checks the
// line's bound is the measured rate over the linear line's PUT-class
// requests a step, and its share linear's steps/s over that bound.
func TestCeilingBoundsLinear(t *testing.T) {
	dir := t.TempDir()
	tg := target{name: "file", store: "file://" + dir}
	lin := &result{workload: "linear", steps: 1000, elapsed: 2 * time.Second, ops: counting.Snapshot{Put: 1400}}
	line, err := ceiling(context.Background(), tg, options{slots: 4, ceilingFor: 300 * time.Millisecond}, lin)
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) float64 {
		t.Helper()
		m := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `=([0-9.]+)`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no %s in %q", name, line)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	rate := field("swaps/s")
	if rate <= 0 || field("writers") != 4 {
		t.Fatalf("no swaps measured: %q", line)
	}
	if got := field("linear_put/step"); got != 1.4 {
		t.Fatalf("linear_put/step = %v, want 1.4: %q", got, line)
	}
	bound := field("linear_bound_steps/s")
	if want := rate / 1.4; bound < want-1 || bound > want+1 {
		t.Fatalf("bound %v, want %v (swaps/s ÷ 1.4): %q", bound, want, line)
	}
	if share, want := field("linear_share"), 500/bound; share < want-0.01 || share > want+0.01 {
		t.Fatalf("share %v, want %v (500 steps/s ÷ bound): %q", share, want, line)
	}
}

// TestCeilingNeedsAStoreOfItsOwn: a store in the server's process cannot
// be measured from the bench's.
func TestCeilingNeedsAStoreOfItsOwn(t *testing.T) {
	line, err := ceiling(context.Background(), target{name: "mem+s3×1"}, options{slots: 2, ceilingFor: time.Millisecond}, nil)
	if err != nil || !regexp.MustCompile(`^# mem\+s3×1 ceiling: not measured`).MatchString(line) {
		t.Fatalf("line %q, err %v", line, err)
	}
}
