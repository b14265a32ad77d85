package attrs

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/scan"
)

// Filter is one attribute condition of a listing: name, an operator
// (":" equal, ">", ">=", "<", "<=") and the value's encoding.
type Filter struct {
	Name, Op, Enc string
}

// MaxFilters bounds the attribute conditions of one listing.
const MaxFilters = 8

// Parse reads a condition "name:value", "name>value", "name>=value",
// "name<value" or "name<=value". The value is typed as a stored one is:
// true or false a boolean, a number a number, an RFC 3339 time a time,
// anything else a string; a JSON string in quotes is always a string
// (or a time), so `code:"42"` finds the string "42".
func Parse(s string) (Filter, error) {
	i := strings.IndexAny(s, ":<>")
	if i <= 0 {
		return Filter{}, badFilter(s, "not name:value, name>value, name>=value, name<value or name<=value")
	}
	f := Filter{Name: s[:i], Op: s[i : i+1]}
	if err := checkName("attr", f.Name); err != nil {
		return Filter{}, err
	}
	rest := s[i+1:]
	if f.Op != ":" && strings.HasPrefix(rest, "=") {
		f.Op, rest = f.Op+"=", rest[1:]
	}
	enc, err := Encode(queryValue(rest))
	if err != nil {
		return Filter{}, badFilter(s, "value: "+err.Error())
	}
	f.Enc = enc
	return f, nil
}

func badFilter(s, msg string) error {
	return cairn.ValidationError{{Field: "attr", Message: fmt.Sprintf("%q: %s", s, msg)}}
}

// queryValue is the JSON of a condition's value.
func queryValue(v string) json.RawMessage {
	if v == "true" || v == "false" {
		return json.RawMessage(v)
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil && json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	if strings.HasPrefix(v, `"`) && json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

// Match tells whether s satisfies f: a value of the same type in the
// relation f names.
func (f Filter) Match(s Set) bool {
	v, ok := s[f.Name]
	if !ok {
		return false
	}
	enc, err := Encode(v.V)
	if err != nil || enc[0] != f.Enc[0] {
		return false
	}
	c := strings.Compare(enc, f.Enc)
	switch f.Op {
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	}
	return c == 0
}

// MatchAll tells whether s satisfies every filter.
func MatchAll(fs []Filter, s Set) bool {
	for _, f := range fs {
		if !f.Match(s) {
			return false
		}
	}
	return true
}

// span is the entries of one name a query reads: suffixes in [lo, hi).
type span struct{ name, lo, hi string }

// spanOf is the span of the filters on fs[0]'s name (the others are
// checked on the records).
func spanOf(fs []Filter) span {
	name, tag := fs[0].Name, fs[0].Enc[:1]
	s := span{name, tag, tag + "~"}
	for _, f := range fs {
		if f.Name != name {
			continue
		}
		if f.Enc[:1] != tag {
			return span{name, tag, tag} // two types: nothing matches
		}
		lo, hi := s.lo, s.hi
		switch f.Op {
		case ":":
			lo, hi = f.Enc+"/", f.Enc+"/~"
		case ">":
			lo = f.Enc + "/~"
		case ">=":
			lo = f.Enc + "/"
		case "<":
			hi = f.Enc + "/"
		case "<=":
			hi = f.Enc + "/~"
		}
		s.lo, s.hi = max(s.lo, lo), min(s.hi, hi)
	}
	return s
}

// common is the longest common prefix of a and b: every string between
// them starts with it.
func common(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// Candidates returns up to need index entries of the first filter's
// name in the span its filters make, after the suffix after ("" from the
// start), merged across the 16 shards in suffix order (by value, then
// newest first), and whether more may follow. Each shard is one LIST
// (more when a page holds fewer than need entries) from its position.
func Candidates(ctx context.Context, l scan.Lister, fs []Filter, after string, need int) ([]Entry, bool, error) {
	sp := spanOf(fs)
	start := max(sp.lo, after)
	if start >= sp.hi {
		return nil, false, nil
	}
	per := make([][]Entry, keys.Shards)
	more := make([]bool, keys.Shards)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for i := range keys.Shards {
		wg.Go(func() {
			es, m, err := shardEntries(ctx, l, byte('a'+i), sp, start, need)
			per[i], more[i] = es, m
			if err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, false, first
	}
	var all []Entry
	anyMore := false
	for i := range per {
		all, anyMore = append(all, per[i]...), anyMore || more[i]
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Suffix < all[j].Suffix })
	if len(all) > need {
		all, anyMore = all[:need], true
	}
	return all, anyMore, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// shardEntries lists one shard's entries of the span from start: up to
// need, and whether more follow.
func shardEntries(ctx context.Context, l scan.Lister, shard byte, sp span, start string, need int) ([]Entry, bool, error) {
	base := namePrefix(l.Keys, shard, sp.name)
	opts := blob.ListOptions{Prefix: base + common(start, sp.hi), StartAfter: base + start, PageSize: need + 1}
	var out []Entry
	for {
		p, err := l.List(ctx, opts)
		if err != nil {
			return nil, false, err
		}
		for _, o := range p.Objects {
			e, ok := ParseKey(l.Keys, o.Key)
			if !ok || e.Suffix >= sp.hi {
				return out, false, nil
			}
			if len(out) == need {
				return out, true, nil
			}
			e.ModTime = o.ModTime
			out = append(out, e)
		}
		if p.NextPageToken == "" {
			return out, false, nil
		}
		opts.PageToken = p.NextPageToken
	}
}

// Stale tells whether an entry that does not index its run's record may
// be deleted: the record has passed the entry's revision (no commit in
// flight can still write it), or the run is gone (rev 0) and the entry
// is older than grace (a start writes its entries just before the
// record).
func (e Entry) Stale(recordRev int64, now time.Time, grace time.Duration) bool {
	if recordRev > 0 {
		return recordRev >= e.Rev
	}
	return !e.ModTime.IsZero() && now.Sub(e.ModTime) > grace
}
