// Package attrs is runs' search attributes: typed values a run is
// started with or a step's complete sets, kept in the run record (the
// truth) and indexed in the bucket, so a listing filtered by one reads
// the index instead of every run record (docs/DECISIONS.md, "Search
// attributes").
//
// An index entry is an empty object whose key is
//
//	<prefix>attrs/<shard>/<name>/<type><value>/<run>.<rev>
//
// with the run's shard letter (keys.ShardOf: a hot value spreads over
// the 16 shard prefixes), the value in an encoding that sorts as the
// values do (so an equality is one prefix and a range one span of keys),
// and the record revision that indexed it. The entry is written before
// the record that holds the value (commit.go's pre-writes), and the
// record remembers that revision: an entry whose run's record does not
// hold its value at its revision is a leftover (a commit that lost or
// died, a value since changed), which queries skip and delete once the
// record has passed its revision (no write in flight can still need
// it). Since a revision is written once, the entry a changed value
// leaves is deleted without racing a later change back to the value.
package attrs

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// Limits of a run's attributes.
const (
	// MaxPerRun is how many attributes one run holds.
	MaxPerRun = 16
	// MaxNameLength bounds a name; MaxStringBytes a string value.
	MaxNameLength  = 64
	MaxStringBytes = 256
)

// NamePattern is what an attribute name is.
const NamePattern = `^[A-Za-z][A-Za-z0-9_.-]*$`

var nameRE = regexp.MustCompile(NamePattern)

// timeKey is the sortable form of a time value: fixed width, UTC.
const timeKey = "20060102T150405.000000000Z"

// Value is an attribute in a run record: its JSON value, and the
// record revision that wrote its index entry.
type Value struct {
	V   json.RawMessage `json:"v"`
	Rev int64           `json:"rev"`
}

// Set is a run record's attributes by name.
type Set map[string]Value

// View is the set as the API shows it: name to value.
func (s Set) View() map[string]json.RawMessage {
	if len(s) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(s))
	for n, v := range s {
		out[n] = v.V
	}
	return out
}

// Encode is the sortable key form of a value: a type letter (b bool, n
// number, s string, t time) and the value, in characters that sort
// after "/" and before "~". A string in RFC 3339 is a time.
func Encode(raw json.RawMessage) (string, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("not JSON")
	}
	switch v := v.(type) {
	case bool:
		if v {
			return "b1", nil
		}
		return "b0", nil
	case json.Number:
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", fmt.Errorf("not a finite number")
		}
		return encodeNumber(f), nil
	case string:
		if len(v) > MaxStringBytes {
			return "", fmt.Errorf("%d bytes, over the %d-byte limit", len(v), MaxStringBytes)
		}
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return "t" + t.UTC().Format(timeKey), nil
		}
		return "s" + hex.EncodeToString([]byte(v)), nil
	}
	return "", fmt.Errorf("a string, number, boolean or RFC 3339 time, not %s", kind(v))
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	}
	return "an object"
}

// encodeNumber: the float's bits, the sign bit flipped for positives and
// every bit for negatives, sort as the numbers do.
func encodeNumber(f float64) string {
	if f == 0 {
		f = 0 // -0 is 0
	}
	b := math.Float64bits(f)
	if b>>63 == 0 {
		b |= 1 << 63
	} else {
		b = ^b
	}
	return fmt.Sprintf("n%016x", b)
}

// checkName refuses a name that is not one.
func checkName(field, name string) error {
	if len(name) > MaxNameLength || !nameRE.MatchString(name) {
		return cairn.ValidationError{{Field: field, Message: fmt.Sprintf("attribute name %q: a letter, then letters, digits, _ . or -, at most %d", name, MaxNameLength)}}
	}
	return nil
}

// Apply merges patch into cur (a null removes an attribute) for the
// record revision rev that will hold it, checking names, values and the
// count. It returns the new set (a copy: cur is not changed), the index
// keys to write before the record (values new or changed) and those to
// delete once it landed (the entries of values changed or removed).
func Apply(k keys.Layout, run string, cur Set, patch map[string]json.RawMessage, rev int64, field string) (Set, []string, []string, error) {
	next := make(Set, len(cur)+len(patch))
	for n, v := range cur {
		next[n] = v
	}
	var puts, dels []string
	for _, n := range sortedNames(patch) {
		raw := patch[n]
		if err := checkName(field, n); err != nil {
			return nil, nil, nil, err
		}
		old, had := cur[n]
		if string(bytes.TrimSpace(raw)) == "null" {
			if had {
				dels = append(dels, Key(k, n, old, run))
				delete(next, n)
			}
			continue
		}
		enc, err := Encode(raw)
		if err != nil {
			return nil, nil, nil, cairn.ValidationError{{Field: field + "." + n, Message: err.Error()}}
		}
		if had {
			if oenc, _ := Encode(old.V); oenc == enc {
				continue // the same value: its entry stays
			}
			dels = append(dels, Key(k, n, old, run))
		}
		next[n] = Value{V: compact(raw), Rev: rev}
		puts = append(puts, entryKey(k, n, enc, run, rev))
	}
	if len(next) > MaxPerRun {
		return nil, nil, nil, cairn.ValidationError{{Field: field, Message: fmt.Sprintf("%d attributes, over the %d a run holds", len(next), MaxPerRun)}}
	}
	return next, puts, dels, nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func sortedNames[V any](m map[string]V) []string {
	ns := make([]string, 0, len(m))
	for n := range m {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Check refuses a patch Apply would refuse for its names and values.
func Check(patch map[string]json.RawMessage, field string) error {
	_, _, _, err := Apply(keys.Layout{}, "", nil, patch, 1, field)
	return err
}

// Prefix is where the index lives.
func Prefix(k keys.Layout) string { return k.AttrsPrefix() }

// namePrefix is one shard's entries of a name.
func namePrefix(k keys.Layout, shard byte, name string) string {
	return Prefix(k) + string(shard) + "/" + name + "/"
}

func entryKey(k keys.Layout, name, enc, run string, rev int64) string {
	return namePrefix(k, keys.ShardOf(run), name) + enc + "/" + run + "." + strconv.FormatInt(rev, 10)
}

// Key is the index entry of the attribute name of run holding v.
func Key(k keys.Layout, name string, v Value, run string) string {
	enc, _ := Encode(v.V)
	return entryKey(k, name, enc, run, v.Rev)
}

// Keys are the index entries of a run's attributes (what a deletion of
// the run deletes).
func Keys(k keys.Layout, run string, s Set) []string {
	var out []string
	for _, n := range sortedNames(s) {
		out = append(out, Key(k, n, s[n], run))
	}
	return out
}

// Entry is a parsed index key.
type Entry struct {
	Key, Name, Enc, Run string
	Rev                 int64
	// Suffix is the key after the name: the order of a query's results.
	Suffix string
	// ModTime is when the entry was written (from its listing).
	ModTime time.Time
}

// ParseKey splits an index entry key.
func ParseKey(k keys.Layout, key string) (Entry, bool) {
	rest, ok := strings.CutPrefix(key, Prefix(k))
	if !ok || len(rest) < 3 || rest[1] != '/' {
		return Entry{}, false
	}
	name, suffix, ok := strings.Cut(rest[2:], "/")
	enc, tail, ok2 := strings.Cut(suffix, "/")
	run, rev, ok3 := strings.Cut(tail, ".")
	n, err := strconv.ParseInt(rev, 10, 64)
	if !ok || !ok2 || !ok3 || err != nil {
		return Entry{}, false
	}
	return Entry{Key: key, Name: name, Enc: enc, Run: run, Rev: n, Suffix: suffix}, true
}

// Current tells whether the entry is the index of what s holds.
func (e Entry) Current(s Set) bool {
	v, ok := s[e.Name]
	if !ok || v.Rev != e.Rev {
		return false
	}
	enc, _ := Encode(v.V)
	return enc == e.Enc
}

// Delete deletes index entries, a few at a time, and returns the
// failures (an entry already gone is not one).
func Delete(ctx context.Context, b *blob.Bucket, ks []string) error {
	return object.DeleteAll(ctx, b, ks)
}
