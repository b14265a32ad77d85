package cairn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// Reducer is how a run state key folds what a step writes to it into its
// value: what makes concurrent writers of one key (parallel steps, map
// items) deterministic instead of last-writer-wins. The committer applies
// every attempt's patch in commit order, so the fold is a single history.
type Reducer string

// Reducers. A key without one is replace.
const (
	// ReduceReplace: the patch's value replaces the key's.
	ReduceReplace Reducer = "replace"
	// ReduceAppend: the key is an array; a patch array's elements (any
	// other value: the value) are added at its end.
	ReduceAppend Reducer = "append"
	// ReduceSum: the key is a number; the patch's number is added.
	ReduceSum Reducer = "sum"
	// ReduceMax and ReduceMin keep the larger or smaller number.
	ReduceMax Reducer = "max"
	ReduceMin Reducer = "min"
	// ReduceMerge: the key is an object; the patch object's members
	// replace its members of the same name (a shallow merge).
	ReduceMerge Reducer = "merge"
)

// MaxReducers bounds the keys one workflow declares reducers for.
const MaxReducers = 64

var reducers = map[Reducer]bool{ReduceReplace: true, ReduceAppend: true, ReduceSum: true, ReduceMax: true, ReduceMin: true, ReduceMerge: true}

// checkReducers validates a workflow's reducers; add reports a field
// error relative to the workflow.
func (w *Workflow) checkReducers(add func(field, format string, args ...any)) {
	if len(w.Reducers) > MaxReducers {
		add(".reducers", "at most %d keys", MaxReducers)
	}
	for _, k := range slices.Sorted(maps.Keys(w.Reducers)) {
		switch {
		case k == "" || len(k) > 128:
			add(".reducers", "a state key is 1 to 128 bytes")
		case !reducers[w.Reducers[k]]:
			add(".reducers."+k, "unknown reducer %q (replace, append, sum, max, min, merge)", w.Reducers[k])
		}
	}
}

// CheckPatch reports the first key of a state patch whose value the key's
// reducer cannot fold (sum, max and min take numbers, merge objects), or
// that is over inline bytes (when positive) for a reducer other than
// replace: a folded value stays in the run record, never by reference.
func (w *Workflow) CheckPatch(patch map[string]json.RawMessage, inline int) error {
	for k, v := range patch {
		r := w.Reducers[k]
		if r != "" && r != ReduceReplace && inline > 0 && len(v) > inline {
			return ValidationError{{Field: "state_patch." + k, Message: fmt.Sprintf("%d bytes: a value for a key with reducer %s is kept in the run record, at most %d bytes", len(v), r, inline)}}
		}
		var ok bool
		switch r {
		case ReduceSum, ReduceMax, ReduceMin:
			_, ok = number(v)
		case ReduceMerge:
			ok = isObject(v)
		default:
			continue
		}
		if !ok {
			return ValidationError{{Field: "state_patch." + k, Message: fmt.Sprintf("state key %s has reducer %s, which cannot fold %.40s", k, r, v)}}
		}
	}
	return nil
}

// Fold is the value of state key k once patch is folded into old (nil:
// the key is unset) by k's reducer. A current value its reducer cannot
// fold into (not a number for sum, not an array for append, not an object
// for merge) counts as unset. CheckPatch has checked the patch.
func (w *Workflow) Fold(k string, old, patch json.RawMessage) json.RawMessage {
	switch r := w.Reducers[k]; r {
	case ReduceAppend:
		return appendJSON(old, patch)
	case ReduceSum, ReduceMax, ReduceMin:
		b, _ := number(patch)
		a, ok := number(old)
		if !ok {
			return patch
		}
		switch {
		case r == ReduceSum:
			return formatNumber(a + b)
		case r == ReduceMax && b > a, r == ReduceMin && b < a:
			return patch
		}
		return old
	case ReduceMerge:
		var m map[string]json.RawMessage
		if json.Unmarshal(old, &m) != nil || m == nil {
			return patch
		}
		var add map[string]json.RawMessage
		_ = json.Unmarshal(patch, &add)
		for name, v := range add {
			m[name] = v
		}
		out, _ := json.Marshal(m)
		return out
	}
	return patch
}

func appendJSON(old, patch json.RawMessage) json.RawMessage {
	var list []json.RawMessage
	if json.Unmarshal(old, &list) != nil {
		list = nil
	}
	var more []json.RawMessage
	if json.Unmarshal(patch, &more) != nil {
		more = []json.RawMessage{patch}
	}
	out, _ := json.Marshal(append(list, more...))
	return out
}

func number(v json.RawMessage) (float64, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil && !math.IsInf(f, 0)
}

// formatNumber writes f as JSON: an integer without a fraction when it is
// one (sums of integer counters stay integers).
func formatNumber(f float64) json.RawMessage {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return json.RawMessage(strconv.FormatInt(int64(f), 10))
	}
	return json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64))
}

func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}
