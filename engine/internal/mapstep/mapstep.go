// Package mapstep is the bookkeeping of a map step that decides nothing
// about its run: the progress a run record keeps (State), the shards its
// items' outputs are written in, the window items are dispatched from,
// the reads that collect the shards and the items objects, and the
// objects a commit writes before its swap. When an item starts, ends or
// fails the map, and what the step's end does to the run, stay in the
// engine (engine/mapstep.go).
package mapstep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/cache"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
	"github.com/cairn-dev/cairn/engine/internal/par"
)

const (
	// ShardSize is how many consecutive items' outputs one shard holds.
	ShardSize = 100
	// CacheEntries bounds the items objects an instance keeps decoded.
	CacheEntries = 64
	// ErrorsKept is how many item errors a map step keeps (and
	// journals); the rest are counted.
	ErrorsKept = 10
)

// State is a map step's progress in the run record.
type State struct {
	Total     int    `json:"total"`
	ItemsKey  string `json:"items_key"`
	Next      int    `json:"next"`
	Running   int    `json:"running"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	// Held are the outputs (null for a failed item) of finished items
	// whose shard is not written yet, by index.
	Held map[string]json.RawMessage `json:"held,omitempty"`
	// ShardDone counts the finished items of each shard.
	ShardDone []int `json:"shard_done"`
	// Shards is the content hash of each written output shard.
	Shards []string `json:"shards"`
	// Errors are the first item errors (Step names the item).
	Errors []cairn.ErrorInfo `json:"errors,omitempty"`
	// Collect: every item is done; the outputs are being collected.
	Collect bool `json:"collect,omitempty"`
}

// New is the state of a map of total items stored at itemsKey.
func New(total int, itemsKey string) *State {
	shards := (total + ShardSize - 1) / ShardSize
	return &State{Total: total, ItemsKey: itemsKey, ShardDone: make([]int, shards), Shards: make([]string, shards)}
}

// Limit is the index below which items may be dispatched: the end of the
// window of shards past the lowest unwritten one, so held outputs stay
// bounded whatever order items finish in.
func (m *State) Limit(maxConcurrency int) int {
	low := 0
	for low < len(m.Shards) && m.Shards[low] != "" {
		low++
	}
	window := maxConcurrency/ShardSize + 2
	return min((low+window)*ShardSize, m.Total)
}

// Hold records the output of item idx (null for a failed one). When that
// finishes its shard, it returns the shard's number and content, records
// its hash and drops its held outputs: the caller writes it before the
// commit's swap (Key names it).
func (m *State) Hold(idx int, out json.RawMessage) (shard int, data []byte, finished bool) {
	if m.Held == nil {
		m.Held = map[string]json.RawMessage{}
	}
	m.Held[strconv.Itoa(idx)] = out
	k := idx / ShardSize
	m.ShardDone[k]++
	if lo, hi := k*ShardSize, min((k+1)*ShardSize, m.Total); m.ShardDone[k] == hi-lo {
		var buf bytes.Buffer
		buf.WriteByte('[')
		for i := lo; i < hi; i++ {
			if i > lo {
				buf.WriteByte(',')
			}
			key := strconv.Itoa(i)
			buf.Write(m.Held[key])
			delete(m.Held, key)
		}
		buf.WriteByte(']')
		data, finished = buf.Bytes(), true
		m.Shards[k] = Sum(data)
	}
	if len(m.Held) == 0 {
		m.Held = nil
	}
	return k, data, finished
}

// Progress is the map's progress for views.
func (m *State) Progress() *cairn.MapProgress {
	if m == nil {
		return nil
	}
	return &cairn.MapProgress{Total: m.Total, Completed: m.Completed, Failed: m.Failed, Running: m.Running, Errors: append([]cairn.ErrorInfo{}, m.Errors...)}
}

// Sum is the content hash that names an items object or an output shard.
func Sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// TooLargeError refuses a collected output over the output limit.
type TooLargeError struct {
	Step      string
	Size, Max int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the collected output of map step %s is %d bytes, over the %d-byte output limit", e.Step, e.Size, e.Max)
}

// Collect reads the output shards of map step step (key names shard k of
// hash sum), eight at a time, and returns the outputs in input order as
// one array: a *TooLargeError when it would exceed maxBytes.
func Collect(ctx context.Context, b *blob.Bucket, key func(k int, sum string) string, step string, shards []string, total, maxBytes int) (json.RawMessage, error) {
	parts := make([][]json.RawMessage, len(shards))
	errs := make([]error, len(shards))
	par.Each(8, len(shards), func(k int) {
		o, err := b.Get(ctx, key(k, shards[k]))
		if err == nil {
			err = json.Unmarshal(o.Data, &parts[k])
		}
		errs[k] = err
	})
	size := 2
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("map %s shard %d: %w", step, k, err)
		}
		for _, p := range parts[k] {
			size += len(p) + 1
		}
	}
	if size > maxBytes {
		return nil, &TooLargeError{Step: step, Size: size, Max: maxBytes}
	}
	all := make([]json.RawMessage, 0, total)
	for _, p := range parts {
		all = append(all, p...)
	}
	return object.JSON(all), nil
}

// Items reads elements of map steps' items objects, keeping the decoded
// objects (immutable) in a cache: first in, first out, through Peek and
// Add only.
type Items struct {
	bucket *blob.Bucket
	cache  *cache.Cache[string, []json.RawMessage]
}

// NewItems returns an Items reading b.
func NewItems(b *blob.Bucket) *Items {
	return &Items{bucket: b, cache: cache.New[string, []json.RawMessage](CacheEntries)}
}

// Get returns element i of the items object at key.
func (x *Items) Get(ctx context.Context, key string, i int) (json.RawMessage, error) {
	items, ok := x.cache.Peek(key)
	if !ok {
		o, err := x.bucket.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(o.Data, &items); err != nil {
			return nil, fmt.Errorf("items object %s: %w", key, err)
		}
		x.cache.Add(key, items)
	}
	if i < 0 || i >= len(items) {
		return nil, fmt.Errorf("map item %d: the items object has %d", i, len(items))
	}
	return items[i], nil
}

// ItemSteps lists the map items among a run record's steps, sorted.
func ItemSteps[V any](steps map[string]V) []string {
	var out []string
	for id := range steps {
		if _, _, ok := keys.SplitItem(id); ok {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// DroppedJournal says which journal entries of map items are not kept:
// the routine ones (ready, claimed, completed, retried, requeued), so a
// 10,000-item map does not grow the journal by an entry per item.
// Failures and lost leases are kept (item failures bounded by
// ErrorsKept).
func DroppedJournal(j cairn.JournalEntry) bool {
	if !strings.Contains(j.Step, ".") {
		return false
	}
	switch j.Type {
	case cairn.JournalStepReady, cairn.JournalStepClaimed, cairn.JournalStepCompleted, cairn.JournalStepRetryScheduled, cairn.JournalStepRequeued:
		return true
	}
	return false
}

// PreWrite is an object a commit writes before its swap: content that
// the new record refers to. Written unconditionally (plain put): its key
// is derived from its content, so a rewrite is harmless.
type PreWrite struct {
	Key  string
	Data []byte
}

// Put writes a commit's objects before its swap, in order.
func Put(ctx context.Context, b *blob.Bucket, ws []PreWrite) error {
	for _, w := range ws {
		if _, err := b.Put(ctx, w.Key, w.Data, blob.WriteOptions{}); err != nil {
			return err
		}
	}
	return nil
}
