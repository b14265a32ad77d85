package wake

import (
	"slices"
	"testing"
	"time"
)

func TestSet(t *testing.T) {
	var s Set
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Add("ignored", t0) // not recording yet
	if _, ok, _ := s.Next(t0); ok {
		t.Fatal("a wake added before recording started was kept")
	}
	_, _, changed := s.Next(t0)
	s.Add("b", t0.Add(2*time.Second))
	select {
	case <-changed:
	default:
		t.Fatal("the first wake did not signal")
	}
	_, _, changed = s.Next(t0)
	s.Add("c", t0.Add(3*time.Second)) // later: no signal
	select {
	case <-changed:
		t.Fatal("a later wake signalled")
	default:
	}
	s.Add("a", t0.Add(time.Second))
	s.Add("a", t0.Add(time.Second)) // the same (run, at) once
	s.Add("b", t0.Add(1500*time.Millisecond))
	if in, ok, _ := s.Next(t0); !ok || in != time.Second {
		t.Fatalf("next in %v, %v; want 1s", in, ok)
	}
	if got := s.Due(t0.Add(2 * time.Second)); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("due at 2s: %v; want [a b], each once", got)
	}
	if got := s.Due(t0.Add(2 * time.Second)); len(got) != 0 {
		t.Fatalf("due again: %v", got)
	}
	if in, ok, _ := s.Next(t0.Add(5 * time.Second)); !ok || in != 0 {
		t.Fatalf("an overdue wake: in %v, %v; want 0", in, ok)
	}
}
