package payload

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// big is a value over the tests' inline limit of 8 bytes.
func big(s string) json.RawMessage { return json.RawMessage(`"` + strings.Repeat(s, 20) + `"`) }

func isRef(raw json.RawMessage) bool { _, ok := cairn.AsPayloadRef(raw); return ok }

func TestExternalizeStartThenResolveRecord(t *testing.T) {
	ctx := context.Background()
	s := New(mem.New(), keys.Layout{Prefix: "p/"}, 8, 1<<20)
	input := big("i")
	out, pending := big("o"), big("p")
	ops := []cairn.Operation{{Result: big("r")}}
	v := Values{Run: "r", Input: &input, State: map[string]json.RawMessage{"k": big("s"), "small": json.RawMessage(`1`)},
		Steps: []StepValues{{ID: "a", Output: &out, Ops: ops, Completed: true}, {ID: "b", Output: &pending}}}
	if err := s.ExternalizeStart(ctx, v, 1<<20); err != nil {
		t.Fatal(err)
	}
	if !isRef(input) || !isRef(v.State["k"]) || string(v.State["small"]) != `1` || !isRef(out) || !isRef(pending) || !isRef(ops[0].Result) {
		t.Fatalf("after ExternalizeStart: input %s, state %v, outputs %s %s, op %s; want the large ones by reference",
			input, v.State, out, pending, ops[0].Result)
	}
	if err := s.ResolveRecord(ctx, v, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	if string(input) != string(big("i")) || string(v.State["k"]) != string(big("s")) || string(out) != string(big("o")) || string(ops[0].Result) != string(big("r")) {
		t.Fatalf("after ResolveRecord: input %s, state %v, output %s, op %s; want the values", input, v.State, out, ops[0].Result)
	}
	if !isRef(pending) {
		t.Fatalf("a step that did not complete: output %s; want it left a reference", pending)
	}
}

func TestExternalizeStartRefusesState(t *testing.T) {
	s := New(mem.New(), keys.Layout{}, 8, 0)
	in := json.RawMessage(`null`)
	for state, field := range map[string]string{`not json`: "state.k", `"` + strings.Repeat("x", 40) + `"`: "state.k"} {
		v := Values{Run: "r", Input: &in, State: map[string]json.RawMessage{"k": json.RawMessage(state)}}
		var ve cairn.ValidationError
		if err := s.ExternalizeStart(context.Background(), v, 32); !errors.As(err, &ve) || ve[0].Field != field {
			t.Errorf("state %.10s: %v; want a validation error naming %s", state, err, field)
		}
	}
}

func TestResolverErrors(t *testing.T) {
	ctx := context.Background()
	b, f := faults.Wrap(mem.New(), faults.Profile{})
	s := New(b, keys.Layout{}, 8, 0)
	ref, err := s.Put(ctx, "r", big("x"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Resolver(nil, "r", 1<<10)(ref); err != nil || string(got) != string(big("x")) {
		t.Fatalf("resolve: %s, %v", got, err)
	}
	var tooBig *TooLargeError
	if _, err := s.Resolver(ctx, "r", 10)(ref); !errors.As(err, &tooBig) || IsReadError(err) {
		t.Fatalf("over the budget: %v; want TooLargeError, not a read error", err)
	}
	f.Inject(faults.Rule{Ops: []faults.Op{faults.OpGet}, Err: errors.New("store down")})
	if _, err := s.Resolver(ctx, "r", 1<<10)(ref); !IsReadError(err) {
		t.Fatalf("store failing: %v; want a read error", err)
	}
}

// A large record spills first; a too-large refusal spills and applies
// once more, unless there was nothing to spill.
func TestSpilling(t *testing.T) {
	ctx := context.Background()
	s := New(mem.New(), keys.Layout{}, -1, 0)
	tooLarge := errors.New("too large")
	isTooLarge := func(err error) bool { return errors.Is(err, tooLarge) }
	value := json.RawMessage(`"` + strings.Repeat("v", SpillMin) + `"`)
	for _, tc := range []struct {
		name      string
		large     bool
		refusals  int
		value     json.RawMessage
		wantCalls int
		wantErr   error
		wantRef   bool
	}{
		{"small record", false, 0, value, 1, nil, false},
		{"large record", true, 0, value, 1, nil, true},
		{"refused, spilled", false, 1, value, 2, nil, true},
		{"refused, nothing to spill", false, 1, json.RawMessage(`1`), 1, tooLarge, false},
	} {
		out := append(json.RawMessage(nil), tc.value...)
		calls := 0
		got, err := Spilling(ctx, s, "r", &out, map[string]json.RawMessage{}, tc.large, func() (int, error) {
			calls++
			if calls <= tc.refusals {
				return 0, tooLarge
			}
			return calls, nil
		}, isTooLarge)
		if calls != tc.wantCalls || !errors.Is(err, tc.wantErr) || (err == nil && got != calls) || isRef(out) != tc.wantRef {
			t.Errorf("%s: %d calls, %v, %v, output a reference: %v; want %d calls, %v, a reference: %v",
				tc.name, calls, got, err, isRef(out), tc.wantCalls, tc.wantErr, tc.wantRef)
		}
	}
}
