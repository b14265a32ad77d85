package keys

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

// TestTimerWindow: the prefixes that list a window of due times cover it
// with at most MaxTimerWindowLists blocks per layout, the smallest that do.
func TestTimerWindow(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	for _, c := range []struct {
		lo, hi int64
		want   []string
	}{
		{1772452860000, 1772452893000, []string{"timers/177245286", "timers/177245287", "timers/177245288", "timers/177245289"}},
		{1772452860000, 1772452900000, []string{"timers/17724528", "timers/17724529"}},
		{1772452999000, 1772453002000, []string{"timers/1772452999", "timers/1772453000", "timers/1772453001", "timers/1772453002"}},
		{1772452999000, 1772453003000, []string{"timers/177245299", "timers/177245300"}},
		{1772452860000, 1772452860000, []string{"timers/1772452860000"}},
	} {
		got := Layout{}.TimerWindow(at(c.lo), at(c.hi), "x")
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("window %d–%d: %v, want %v", c.lo, c.hi, got, c.want)
		}
		for _, ms := range []int64{c.lo, c.hi} {
			key := Layout{}.Timer(at(ms), "x")
			found := false
			for _, p := range got {
				found = found || strings.HasPrefix(key, p)
			}
			if !found {
				t.Errorf("window %d–%d: %s is under no prefix of %v", c.lo, c.hi, key, got)
			}
		}
	}
	sharded := Layout{Sharded: true}.TimerWindow(at(1772452860000), at(1772452893000), "x")
	if len(sharded) != 8 || sharded[0] != "timers/"+string(ShardOf("x"))+"/177245286" || sharded[1] != "timers/177245286" {
		t.Errorf("sharded window: %v", sharded)
	}
}

// TestParseTimer: a timer key of either layout parses back into its due
// time (to the bucket) and name; other keys do not.
func TestParseTimer(t *testing.T) {
	due := time.UnixMilli(1772452860123)
	for _, k := range []Layout{{Prefix: "p/"}, {Prefix: "p/", Sharded: true}} {
		for _, key := range k.TimerKeys(due, "7YBQ8BJD03WTTD0XEM50YZFHTH") {
			at, name, ok := k.ParseTimer(key)
			if !ok || !at.Equal(due.Truncate(TimerBucket)) || name != "7YBQ8BJD03WTTD0XEM50YZFHTH" {
				t.Errorf("%s: %v %q %v", key, at, name, ok)
			}
		}
	}
	for _, key := range []string{"p/runs/x", "p/timers/", "p/timers/abc/x", "q/timers/0000000000001/x"} {
		if _, _, ok := (Layout{Prefix: "p/"}).ParseTimer(key); ok {
			t.Errorf("%s parsed as a timer", key)
		}
	}
}

// TestLayouts: the keys of a run and its leases in each layout, as a run
// record names its layout.
func TestLayouts(t *testing.T) {
	flat, sharded := Layout{Prefix: "p/"}, Layout{Prefix: "p/", Sharded: true}
	s := string(ShardOf("r1"))
	for _, c := range []struct{ got, want string }{
		{flat.Run("r1"), "p/runs/r1"},
		{sharded.Run("r1"), "p/runs/" + s + "/r1"},
		{flat.RunOf(NameSharded, "r1"), "p/runs/" + s + "/r1"},
		{sharded.RunOf("", "r1"), "p/runs/r1"},
		{sharded.OtherRun("r1"), "p/runs/r1"},
		{flat.LeaseOf("", "r1", "a", 2), "p/leases/r1/a/000002"},
		{flat.LeaseOf(NameSharded, "r1", "a", 2), "p/leases/" + s + "/r1/a/000002"},
		{sharded.LeasesOfRun(NameSharded, "r1"), "p/leases/" + s + "/r1/"},
		{flat.Name() + "|" + sharded.Name(), "|" + NameSharded},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	if ls := sharded.Listings("runs/"); len(ls) != 1+Shards || ls[0].End != "p/runs/a" || ls[1].Prefix != "p/runs/a/" {
		t.Errorf("sharded listings %v", ls)
	}
	for c := byte(0); c < 255; c++ {
		if IsShard(c) != (c >= 'a' && c <= 'p') {
			t.Errorf("IsShard(%q)", c)
		}
	}
}

// TestCursors: a cursor round-trips; what no listing returned is refused
// as a validation error naming the field.
func TestCursors(t *testing.T) {
	for _, tok := range []string{"", "runs/01ZZZ", "a+b=c/d"} {
		c := EncodeCursor(tok)
		if got, err := DecodeCursor("cursor", c); err != nil || got != tok {
			t.Errorf("%q: %q %v", tok, got, err)
		}
	}
	var v cairn.ValidationError
	for _, c := range []string{"not base64!", "AA", strings.Repeat("A", MaxCursorLength+1)} {
		if _, err := DecodeCursor("cursor", c); !errors.As(err, &v) || v[0].Field != "cursor" {
			t.Errorf("%q: %v", c, err)
		}
	}
}

// TestRules: ids that cannot be key segments are refused, naming the
// field.
func TestRules(t *testing.T) {
	for _, id := range []string{"", ".", "..", "a/b", "a\x00", strings.Repeat("a", MaxRunIDLength+1)} {
		if RunID.Valid(id) || RunID.Check("run", id) == nil {
			t.Errorf("run id %q accepted", id)
		}
	}
	if !RunID.Valid("7YBQ8BJD03WTTD0XEM50YZFHTH") || !WorkerID.Valid("host:12@x") || !Version.Valid("1.2+b") || Text.Valid("a\nb") {
		t.Error("a rule refused a good id or took a bad one")
	}
	var v cairn.ValidationError
	if err := WorkflowName.Check("workflow", "a/b"); !errors.As(err, &v) || v[0].Field != "workflow" {
		t.Errorf("check: %v", err)
	}
}
