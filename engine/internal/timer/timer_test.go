package timer

import (
	"slices"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine/internal/scan"
)

func TestCovered(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 300e6, time.UTC)
	soon := Due(now.Add(5*time.Second), now)
	for _, c := range []struct {
		name  string
		armed *time.Time
		due   time.Time
		want  bool
	}{
		{"none armed", nil, now.Add(5 * time.Second), false},
		{"armed timer spent", &now, now.Add(5 * time.Second), false},
		{"armed earlier", &soon, now.Add(time.Minute), true},
		{"armed at the same key", &soon, now.Add(5 * time.Second), true},
		{"due before the armed timer", &soon, now.Add(time.Second), false},
	} {
		if got := Covered(c.armed, c.due, now); got != c.want {
			t.Errorf("%s: Covered = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestGroup(t *testing.T) {
	timers := []scan.Timer{{Key: "k1", Name: "a"}, {Key: "k2", Name: "r:b"}, {Key: "k3", Name: "b"}, {Key: "k4", Name: "a"}}
	order, due := Group(timers, "r:")
	if !slices.Equal(order, []string{"a", "b"}) || !slices.Equal(due["a"], []string{"k1", "k4"}) || !slices.Equal(due["b"], []string{"k2", "k3"}) {
		t.Fatalf("Group = %v, %v", order, due)
	}
}
