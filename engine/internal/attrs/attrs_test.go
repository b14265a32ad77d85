package attrs

import (
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Encoded numbers and times sort as the values do, and every encoding
// sorts between "/" and "~" (the key's separators).
func TestEncodingOrder(t *testing.T) {
	nums := []float64{-1e300, -12.5, -1, -0.001, 0, 1e-9, 0.5, 1, 2, 10, 99.5, 100, 1e300}
	for range 200 {
		nums = append(nums, (rand.Float64()-0.5)*1e6)
	}
	sort.Float64s(nums)
	var prev string
	for i, f := range nums {
		enc, err := Encode(json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64)))
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && nums[i-1] < f && enc <= prev {
			t.Fatalf("%v encodes to %s, not after %v's %s", f, enc, nums[i-1], prev)
		}
		prev = enc
	}
	times := []string{`"1999-12-31T23:59:59Z"`, `"2026-01-02T03:04:05+01:00"`, `"2026-01-02T03:04:05.5Z"`, `"2026-01-02T03:04:06Z"`}
	prev = ""
	for _, v := range times {
		enc, err := Encode(json.RawMessage(v))
		if err != nil || enc[0] != 't' || enc <= prev {
			t.Fatalf("%s encodes to %s (%v), not after %s", v, enc, err, prev)
		}
		prev = enc
	}
	for _, v := range []string{`"a/b"`, `"~"`, `""`, `true`, `-0`, `"ü"`} {
		enc, err := Encode(json.RawMessage(v))
		if err != nil || enc <= "/" || enc >= "~" {
			t.Fatalf("%s encodes to %q (%v)", v, enc, err)
		}
	}
	if a, _ := Encode(json.RawMessage(`-0`)); a != mustEnc(t, `0`) {
		t.Fatal("-0 and 0 differ")
	}
}

func mustEnc(t *testing.T, v string) string {
	enc, err := Encode(json.RawMessage(v))
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// Conditions parse to the typed value and operator; a filter matches a
// set only with a value of its type.
func TestParseAndMatch(t *testing.T) {
	s := Set{"amount": {V: json.RawMessage(`120`)}, "code": {V: json.RawMessage(`"42"`)}, "vip": {V: json.RawMessage(`true`)}}
	for cond, want := range map[string]bool{
		"amount:120": true, "amount>100": true, "amount>=120": true, "amount<120": false, "amount<=120.0": true,
		"code:42": false, `code:"42"`: true, "code>4": false, `code>"4"`: true, "vip:true": true, "vip:false": false, "missing:1": false,
	} {
		f, err := Parse(cond)
		if err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		if got := f.Match(s); got != want {
			t.Errorf("%s matches %v, want %v", cond, got, want)
		}
	}
}

// Apply writes entries for new and changed values only, deletes those of
// changed and removed ones, and leaves the current set unchanged.
func TestApply(t *testing.T) {
	k := keys.Layout{}
	cur, puts, dels, err := Apply(k, "R", nil, map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`"x"`)}, 1, "attributes")
	if err != nil || len(puts) != 2 || len(dels) != 0 {
		t.Fatalf("start: %v %v %v", puts, dels, err)
	}
	next, puts, dels, err := Apply(k, "R", cur, map[string]json.RawMessage{"a": json.RawMessage(`1.0`), "b": json.RawMessage(`null`), "c": json.RawMessage(`2`)}, 2, "attributes")
	if err != nil || len(puts) != 1 || len(dels) != 1 || dels[0] != Key(k, "b", cur["b"], "R") || len(cur) != 2 {
		t.Fatalf("change: %v %v %v (cur %v)", puts, dels, err, cur)
	}
	e, ok := ParseKey(k, puts[0])
	if !ok || e.Name != "c" || e.Run != "R" || e.Rev != 2 || !e.Current(next) || e.Current(cur) {
		t.Fatalf("entry %+v of %s", e, puts[0])
	}
}
