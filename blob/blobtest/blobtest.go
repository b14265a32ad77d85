// Package blobtest is the conformance suite every blob driver must pass,
// in the spirit of gocloud.dev's drivertest. A driver's test calls
//
//	blobtest.Run(t, blobtest.Harness{Open: func(t *testing.T) *blob.Bucket { … }})
//
// and gets one subtest per property cairn relies on: typed errors, exactly
// one winner among concurrent create-only and compare-and-swap writers
// (also round after round on one object), version tokens that change on
// every write, consistent paginated listings, large and empty objects, and
// prompt failure on cancelled contexts and unreachable endpoints.
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairn-dev/cairn/blob"
)

// Contenders is how many goroutines race in the concurrency tests.
const Contenders = 16

// Harness tells the suite how to reach a driver.
type Harness struct {
	// Open returns an empty bucket (or one no other subtest writes to).
	// The suite closes it.
	Open func(t *testing.T) *blob.Bucket
	// OpenUnreachable, if set, returns a bucket whose endpoint does not
	// answer (a closed port on 127.0.0.1). Drivers without a network leave
	// it nil.
	OpenUnreachable func(t *testing.T) *blob.Bucket
	// NoNestedKeys says the store cannot hold an object and objects under
	// its name ("a" and "a/b") at once: MinIO keeps objects in a directory
	// tree and does not list such pairs. The suite then never writes them.
	// cairn's own key layout never nests (docs/ARCHITECTURE.md).
	NoNestedKeys bool
	// MalformedVersions, if set, are versions the driver can tell it never
	// issues: a Swap against one must be refused with
	// blob.ErrPreconditionFailed and change nothing.
	MalformedVersions []blob.Version
	// MalformedPageToken, if set, is a page token the driver can tell it
	// never issues: a List with it must fail with blob.ErrInvalidArgument.
	MalformedPageToken string
}

// nested is whether the suite may write nested keys (see
// Harness.NoNestedKeys). Run sets it; suites do not run in parallel.
var nested = true

// Run runs the conformance suite.
func Run(t *testing.T, h Harness) {
	nested = !h.NoNestedKeys
	type test struct {
		name string
		fn   func(t *testing.T, b *blob.Bucket)
	}
	tests := []test{
		{"MissingObject", testMissing},
		{"CreateGetStat", testCreateGetStat},
		{"CreateExisting", testCreateExisting},
		{"ConcurrentCreateOneWinner", testConcurrentCreate},
		{"Swap", testSwap},
		{"SwapStaleAndMissing", testSwapStaleAndMissing},
		{"ConcurrentSwapOneWinner", testConcurrentSwap},
		{"ConcurrentSwapRounds", testConcurrentSwapRounds},
		{"SwapCounterIsLinearizable", testSwapCounter},
		{"VersionChangesOnIdenticalContent", testVersionChanges},
		{"UnconditionalPut", testUnconditionalPut},
		{"DeleteAndRecreate", testDeleteRecreate},
		{"ListPrefixAndPages", testList},
		{"ListAfterWritesAndDeletes", testListConsistency},
		{"ListStartAfter", testListStartAfter},
		{"LargeAndEmptyObjects", testSizes},
		{"KeyShapes", testKeyShapes},
		{"InvalidArguments", testInvalid},
		{"CancelledContext", testCancelled},
		{"Closed", testClosed},
		{"AsUnsupportedType", testAsUnsupported},
	}
	if h.MalformedVersions != nil {
		tests = append(tests, test{"MalformedVersions", func(t *testing.T, b *blob.Bucket) { testMalformedVersions(t, b, h.MalformedVersions) }})
	}
	if h.MalformedPageToken != "" {
		tests = append(tests, test{"MalformedPageToken", func(t *testing.T, b *blob.Bucket) { testMalformedPageToken(t, b, h.MalformedPageToken) }})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := h.Open(t)
			t.Cleanup(func() { b.Close() })
			defer func() {
				if r := recover(); r != nil {
					f, ok := r.(failure)
					if !ok {
						panic(r)
					}
					t.Fatalf("unexpected error: %v", f.err)
				}
			}()
			tc.fn(t, b)
		})
	}
	if h.OpenUnreachable != nil {
		t.Run("UnreachableEndpoint", func(t *testing.T) { testUnreachable(t, h.OpenUnreachable(t)) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// key returns a key unique to this test run, so suites may share a bucket.
func key(t *testing.T, name string) string {
	var r [4]byte
	rand.Read(r[:])
	return "blobtest/" + hex.EncodeToString(r[:]) + "/" + name
}

// failure carries an unexpected error from must to the subtest's recover.
type failure struct{ err error }

// must returns v, or stops the subtest when err is set (Run recovers the
// panic and turns it into t.Fatal).
func must[T any](v T, err error) T {
	if err != nil {
		panic(failure{err})
	}
	return v
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
	var be *blob.Error
	if !errors.As(err, &be) {
		t.Fatalf("error %v is not a *blob.Error naming operation and key", err)
	}
}

func testMissing(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "missing")
	_, err := b.Get(c, k)
	wantErr(t, err, blob.ErrNotFound)
	_, err = b.Stat(c, k)
	wantErr(t, err, blob.ErrNotFound)
	wantErr(t, b.Delete(c, k), blob.ErrNotFound)
}

func testCreateGetStat(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "obj")
	data := []byte(`{"hello":"world"}`)
	v := must(b.Create(c, k, data))
	if v == "" {
		t.Fatal("Create returned an empty version")
	}
	o := must(b.Get(c, k))
	if !bytes.Equal(o.Data, data) {
		t.Fatalf("Get data = %q, want %q", o.Data, data)
	}
	if o.Version != v || o.Key != k || o.Size != int64(len(data)) {
		t.Fatalf("Get attributes = %+v, want version %q key %q size %d", o.Attributes, v, k, len(data))
	}
	a := must(b.Stat(c, k))
	if a.Version != v || a.Size != int64(len(data)) || a.Key != k {
		t.Fatalf("Stat = %+v, want version %q size %d", a, v, len(data))
	}
	if a.ModTime.IsZero() || time.Since(a.ModTime) > time.Hour || time.Until(a.ModTime) > time.Hour {
		t.Fatalf("Stat ModTime = %v, want about now", a.ModTime)
	}
}

func testCreateExisting(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "obj")
	v := must(b.Create(c, k, []byte("first")))
	_, err := b.Create(c, k, []byte("second"))
	wantErr(t, err, blob.ErrPreconditionFailed)
	o := must(b.Get(c, k))
	if string(o.Data) != "first" || o.Version != v {
		t.Fatalf("after a refused create: %q %q, want %q %q", o.Data, o.Version, "first", v)
	}
}

// retrying runs a conditional write, repeating it while the store answers
// with a transient refusal (S3's 409 ConditionalRequestConflict, 429/503),
// as callers are told to.
func retrying(write func() (blob.Version, error)) (blob.Version, error) {
	for i := 0; ; i++ {
		v, err := write()
		if !blob.IsRetryable(err) || i == 50 {
			return v, err
		}
		time.Sleep(time.Duration(10+i*10) * time.Millisecond)
	}
}

// contend has Contenders goroutines write at once, the i-th the data
// data(i) through write (retrying transient refusals). It returns what the
// writes that succeeded wrote and the version each got, and how many were
// refused with blob.ErrPreconditionFailed; any other error fails the test,
// which what names ("a concurrent create").
func contend(t *testing.T, what string, data func(i int) []byte, write func(data []byte) (blob.Version, error)) (wins []written, losses int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, Contenders)
	for i := range Contenders {
		wg.Go(func() {
			<-start
			d := data(i)
			v, err := retrying(func() (blob.Version, error) { return write(d) })
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins = append(wins, written{d, v})
			case errors.Is(err, blob.ErrPreconditionFailed):
				losses++
			default:
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error from %s: %v", what, err)
	}
	return wins, losses
}

// written is a write that succeeded: the data and the version it got.
type written struct {
	data    []byte
	version blob.Version
}

// oneWinner checks that exactly one of the Contenders writes to k won, the
// others refused with a precondition failure, and that k holds the
// winner's data at the winner's version.
func oneWinner(t *testing.T, c context.Context, b *blob.Bucket, k string, wins []written, losses int) {
	t.Helper()
	if len(wins) != 1 || losses != Contenders-1 {
		t.Fatalf("%d winners and %d precondition failures, want 1 and %d", len(wins), losses, Contenders-1)
	}
	w := wins[0]
	o := must(b.Get(c, k))
	if !bytes.Equal(o.Data, w.data) || o.Version != w.version {
		t.Fatalf("stored %q@%q, but the winner wrote %q@%q", o.Data, o.Version, w.data, w.version)
	}
}

func testConcurrentCreate(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "contended")
	wins, losses := contend(t, "a concurrent create",
		func(i int) []byte { return []byte("writer-" + strconv.Itoa(i)) },
		func(data []byte) (blob.Version, error) { return b.Create(c, k, data) })
	oneWinner(t, c, b, k, wins, losses)
}

func testSwap(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "obj")
	v1 := must(b.Create(c, k, []byte("v1")))
	v2 := must(b.Swap(c, k, []byte("v2"), v1))
	if v2 == v1 || v2 == "" {
		t.Fatalf("Swap returned version %q after %q, want a new one", v2, v1)
	}
	o := must(b.Get(c, k))
	if string(o.Data) != "v2" || o.Version != v2 {
		t.Fatalf("after swap read %q@%q, want %q@%q", o.Data, o.Version, "v2", v2)
	}
	v3 := must(b.Swap(c, k, []byte("v3"), o.Version))
	if a := must(b.Stat(c, k)); a.Version != v3 {
		t.Fatalf("Stat version %q, want the one Swap returned %q", a.Version, v3)
	}
}

func testSwapStaleAndMissing(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "obj")
	v1 := must(b.Create(c, k, []byte("v1")))
	must(b.Swap(c, k, []byte("v2"), v1))
	_, err := b.Swap(c, k, []byte("stale"), v1)
	wantErr(t, err, blob.ErrPreconditionFailed)
	if o := must(b.Get(c, k)); string(o.Data) != "v2" {
		t.Fatalf("a stale swap changed the object to %q", o.Data)
	}
	_, err = b.Swap(c, key(t, "never-written"), []byte("x"), v1)
	if !errors.Is(err, blob.ErrNotFound) && !errors.Is(err, blob.ErrPreconditionFailed) {
		t.Fatalf("swap of a missing object: %v, want not found or precondition failed", err)
	}
	if _, err := b.Stat(c, key(t, "never-written")); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a swap of a missing object created it: %v", err)
	}
}

func testConcurrentSwap(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "contended")
	v0 := must(b.Create(c, k, []byte("base")))
	wins, losses := contend(t, "a concurrent swap",
		func(i int) []byte { return []byte("swapper-" + strconv.Itoa(i)) },
		func(data []byte) (blob.Version, error) { return b.Swap(c, k, data, v0) })
	oneWinner(t, c, b, k, wins, losses)
}

// testConcurrentSwapRounds repeats the one-winner check round after round
// on one object, each round swapping against the version the previous
// round's winner got: a store whose precondition check is not atomic with
// the write shows up as two winners in some round, and one that reuses a
// version as a version returned twice.
func testConcurrentSwapRounds(t *testing.T, b *blob.Bucket) {
	const rounds = 25
	c, k := ctx(t), key(t, "cas")
	v := must(b.Create(c, k, []byte("0")))
	seen := map[blob.Version]bool{v: true}
	for r := range rounds {
		wins, _ := contend(t, fmt.Sprintf("a concurrent swap in round %d", r),
			func(i int) []byte { return fmt.Appendf(nil, "r%d-w%d", r, i) },
			func(data []byte) (blob.Version, error) { return b.Swap(c, k, data, v) })
		if len(wins) != 1 {
			t.Fatalf("round %d: %d winners, want 1", r, len(wins))
		}
		v = wins[0].version
		if seen[v] {
			t.Fatalf("round %d: version %q returned twice", r, v)
		}
		seen[v] = true
	}
}

// testSwapCounter increments a counter from many goroutines with
// read-modify-swap loops: a lost update would show as a short count.
func testSwapCounter(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "counter")
	must(b.Create(c, k, []byte("0")))
	const workers, each = 8, 5
	var g errgroup.Group
	for range workers {
		g.Go(func() error {
			for range each {
				if err := Increment(c, b, k); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	o := must(b.Get(c, k))
	if string(o.Data) != strconv.Itoa(workers*each) {
		t.Fatalf("counter = %s after %d increments: updates were lost", o.Data, workers*each)
	}
}

// Increment adds one to the decimal counter stored at key with a
// read-modify-swap loop. It is the suite's model of every state transition
// cairn makes, and the body of the CAS benchmark.
func Increment(c context.Context, b *blob.Bucket, key string) error {
	for attempt := 0; ; attempt++ {
		o, err := b.Get(c, key)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(string(o.Data))
		if err != nil {
			return fmt.Errorf("counter %q holds %q: %w", key, o.Data, err)
		}
		_, err = b.Swap(c, key, []byte(strconv.Itoa(n+1)), o.Version)
		if err == nil {
			return nil
		}
		if !errors.Is(err, blob.ErrPreconditionFailed) && !blob.IsRetryable(err) {
			return err
		}
		if attempt > 10000 {
			return fmt.Errorf("increment %q: gave up after %d attempts: %w", key, attempt, err)
		}
	}
}

func testVersionChanges(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "same")
	data := []byte("identical bytes")
	seen := map[blob.Version]bool{}
	v := must(b.Create(c, k, data))
	seen[v] = true
	for i := range 3 {
		nv := must(b.Swap(c, k, data, v))
		if seen[nv] {
			t.Fatalf("swap %d of identical content returned a version seen before (%q)", i, nv)
		}
		seen[nv] = true
		v = nv
	}
	nv := must(b.Put(c, k, data, blob.WriteOptions{}))
	if seen[nv] {
		t.Fatalf("put of identical content returned a version seen before (%q)", nv)
	}
	// The old token must now be stale, though the content is the same.
	_, err := b.Swap(c, k, data, v)
	wantErr(t, err, blob.ErrPreconditionFailed)
	// Delete and re-create with the same content: a new version too.
	if err := b.Delete(c, k); err != nil {
		t.Fatal(err)
	}
	rv := must(b.Create(c, k, data))
	if seen[rv] || rv == nv {
		t.Fatalf("re-created object got version %q seen before", rv)
	}
}

func testUnconditionalPut(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "obj")
	v1 := must(b.Put(c, k, []byte("one"), blob.WriteOptions{}))
	v2 := must(b.Put(c, k, []byte("two"), blob.WriteOptions{ContentType: "application/json"}))
	if v1 == v2 {
		t.Fatal("unconditional overwrite kept the version")
	}
	if o := must(b.Get(c, k)); string(o.Data) != "two" || o.Version != v2 {
		t.Fatalf("read %q@%q, want %q@%q", o.Data, o.Version, "two", v2)
	}
}

func testDeleteRecreate(t *testing.T, b *blob.Bucket) {
	c, k := ctx(t), key(t, "obj")
	v := must(b.Create(c, k, []byte("a")))
	if err := b.Delete(c, k); err != nil {
		t.Fatal(err)
	}
	_, err := b.Get(c, k)
	wantErr(t, err, blob.ErrNotFound)
	_, err = b.Swap(c, k, []byte("b"), v)
	if !errors.Is(err, blob.ErrNotFound) && !errors.Is(err, blob.ErrPreconditionFailed) {
		t.Fatalf("swap after delete: %v, want not found or precondition failed", err)
	}
	must(b.Create(c, k, []byte("c")))
	if o := must(b.Get(c, k)); string(o.Data) != "c" {
		t.Fatalf("read %q after re-create", o.Data)
	}
}

func keysOf(as []blob.Attributes) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Key
	}
	return out
}

func testList(t *testing.T, b *blob.Bucket) {
	c, root := ctx(t), key(t, "list")
	names := []string{"a", "b/1", "b/2", "b/3", "ba", "c", "b"}
	if !nested {
		names = []string{"a", "b/1", "b/2", "b/3", "ba", "c", "b-"}
	}
	want := map[string]blob.Version{}
	for _, n := range names {
		want[root+"/"+n] = must(b.Create(c, root+"/"+n, []byte(n)))
	}
	must(b.Create(c, root+"-sibling", []byte("outside the prefix")))

	all := must(b.ListAll(c, root+"/"))
	got := keysOf(all)
	wantKeys := []string{root + "/a", root + "/b", root + "/b/1", root + "/b/2", root + "/b/3", root + "/ba", root + "/c"}
	if !nested {
		wantKeys[1] = root + "/b-" // "b-" sorts before "b/", like "b"
	}
	if fmt.Sprint(got) != fmt.Sprint(wantKeys) {
		t.Fatalf("ListAll = %v, want %v", got, wantKeys)
	}
	for _, a := range all {
		if a.Version != want[a.Key] || a.Size != int64(len(a.Key)-len(root)-1) {
			t.Fatalf("listed %+v, want version %q and size %d", a, want[a.Key], len(a.Key)-len(root)-1)
		}
	}
	if got := keysOf(must(b.ListAll(c, root+"/b/"))); fmt.Sprint(got) != fmt.Sprint(wantKeys[2:5]) {
		t.Fatalf("prefix b/: %v, want %v", got, wantKeys[2:5])
	}
	if got := keysOf(must(b.ListAll(c, root+"/b"))); fmt.Sprint(got) != fmt.Sprint(wantKeys[1:6]) {
		t.Fatalf("prefix b: %v, want %v", got, wantKeys[1:6])
	}
	if got := must(b.ListAll(c, root+"/zzz")); len(got) != 0 {
		t.Fatalf("empty prefix listed %v", keysOf(got))
	}

	// Pages of two: 2+2+2+1, each in order, no repeats.
	pages := listPages(t, c, b, blob.ListOptions{Prefix: root + "/", PageSize: 2})
	for _, p := range pages {
		if len(p) > 2 {
			t.Fatalf("page of %d objects with page size 2", len(p))
		}
	}
	if paged := slices.Concat(pages...); fmt.Sprint(paged) != fmt.Sprint(wantKeys) || len(pages) < 4 {
		t.Fatalf("paged listing = %v in %d pages, want %v in 4", paged, len(pages), wantKeys)
	}
}

// listPages lists with opts a page at a time, following the page tokens
// to the end, and returns each page's keys; more than 10 pages fail.
func listPages(t *testing.T, c context.Context, b *blob.Bucket, opts blob.ListOptions) [][]string {
	t.Helper()
	var pages [][]string
	for {
		p := must(b.List(c, opts))
		pages = append(pages, keysOf(p.Objects))
		if p.NextPageToken == "" {
			return pages
		}
		if len(pages) > 10 {
			t.Fatal("pagination does not end")
		}
		opts.PageToken = p.NextPageToken
	}
}

// createKeys creates an empty object at name(i) for i in [0, n), and
// returns the keys, in that order.
func createKeys(c context.Context, b *blob.Bucket, n int, name func(i int) string) []string {
	keys := make([]string, n)
	for i := range n {
		keys[i] = name(i)
		must(b.Create(c, keys[i], nil))
	}
	return keys
}

// testListStartAfter: a listing with StartAfter holds only the keys after
// it, in pages that continue after it.
func testListStartAfter(t *testing.T, b *blob.Bucket) {
	c, root := ctx(t), key(t, "after")
	all := createKeys(c, b, 7, func(i int) string { return fmt.Sprintf("%s/k%d", root, i) })
	for _, after := range []string{root + "/k2", root + "/k2x", root + "/", root + "/k6"} {
		got := slices.Concat(listPages(t, c, b, blob.ListOptions{Prefix: root + "/", StartAfter: after, PageSize: 2})...)
		var want []string
		for _, k := range all {
			if k > after {
				want = append(want, k)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after %q: %v, want %v", after, got, want)
		}
	}
}

func testListConsistency(t *testing.T, b *blob.Bucket) {
	c, root := ctx(t), key(t, "list")
	want := createKeys(c, b, 12, func(i int) string { return fmt.Sprintf("%s/%02d", root, i) })
	for _, i := range []int{0, 5, 11} {
		if err := b.Delete(c, want[i]); err != nil {
			t.Fatal(err)
		}
	}
	want = append(append(append([]string{}, want[1:5]...), want[6:11]...), root+"/99")
	must(b.Create(c, root+"/99", []byte("late")))
	if got := keysOf(must(b.ListAll(c, root+"/"))); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listing after writes and deletes = %v, want %v", got, want)
	}
}

func testSizes(t *testing.T, b *blob.Bucket) {
	c := ctx(t)
	big := make([]byte, 5<<20+123)
	rand.Read(big)
	for name, data := range map[string][]byte{"empty": {}, "one": {0}, "big": big} {
		k := key(t, name)
		v := must(b.Create(c, k, data))
		o := must(b.Get(c, k))
		if !bytes.Equal(o.Data, data) || o.Size != int64(len(data)) || o.Version != v {
			t.Fatalf("%s: round trip of %d bytes gave %d bytes (size %d, version %q want %q)", name, len(data), len(o.Data), o.Size, o.Version, v)
		}
		if a := must(b.Stat(c, k)); a.Size != int64(len(data)) {
			t.Fatalf("%s: Stat size %d, want %d", name, a.Size, len(data))
		}
	}
}

func testKeyShapes(t *testing.T, b *blob.Bucket) {
	c, root := ctx(t), key(t, "shapes")
	// An object and a "directory" of the same name coexist, as on S3.
	keys := []string{"a", "a/b", "a/b/c", "x.dir", "x~", "with space", "ünïcødé", "per%cent", "q?uery#frag", "~tmp-1", "dots...", "-dash"}
	if !nested {
		keys = append([]string{"a/b/c"}, keys[3:]...)
	}
	for _, k := range keys {
		must(b.Create(c, root+"/"+k, []byte(k)))
	}
	for _, k := range keys {
		if o := must(b.Get(c, root+"/"+k)); string(o.Data) != k {
			t.Fatalf("key %q read back %q", k, o.Data)
		}
	}
	if got := must(b.ListAll(c, root+"/")); len(got) != len(keys) {
		t.Fatalf("listed %d of %d keys: %v", len(got), len(keys), keysOf(got))
	}
}

func testInvalid(t *testing.T, b *blob.Bucket) {
	c := ctx(t)
	for _, k := range []string{"", "/abs", "a//b", "trailing/", "a/../b", "./a", "nul\x00", string([]byte{0xff})} {
		_, err := b.Create(c, k, nil)
		wantErr(t, err, blob.ErrInvalidArgument)
	}
	_, err := b.Put(c, key(t, "both"), nil, blob.WriteOptions{IfNotExist: true, IfMatch: "x"})
	wantErr(t, err, blob.ErrInvalidArgument)
	_, err = b.Swap(c, key(t, "noversion"), nil, "")
	wantErr(t, err, blob.ErrInvalidArgument)
}

func testAsUnsupported(t *testing.T, b *blob.Bucket) {
	var wrong *int
	if b.As(&wrong) {
		t.Fatal("As accepted an unsupported type")
	}
}

func testMalformedVersions(t *testing.T, b *blob.Bucket, versions []blob.Version) {
	c, k := ctx(t), key(t, "obj")
	if _, err := b.Create(c, k, []byte("a")); err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if _, err := b.Swap(c, k, []byte("b"), v); !errors.Is(err, blob.ErrPreconditionFailed) {
			t.Errorf("Swap with version %q: %v, want ErrPreconditionFailed", v, err)
		}
	}
	if o, err := b.Get(c, k); err != nil || string(o.Data) != "a" {
		t.Fatalf("after malformed swaps: %+v, %v", o, err)
	}
}

func testMalformedPageToken(t *testing.T, b *blob.Bucket, token string) {
	if _, err := b.List(ctx(t), blob.ListOptions{PageToken: token}); !errors.Is(err, blob.ErrInvalidArgument) {
		t.Fatalf("List with a malformed token %q: %v, want ErrInvalidArgument", token, err)
	}
}

func testCancelled(t *testing.T, b *blob.Bucket) {
	k := key(t, "obj")
	must(b.Create(ctx(t), k, []byte("x")))
	c, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err := b.Get(c, k)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v, want context.Canceled", err)
	}
	_, err = b.Create(c, key(t, "other"), []byte("y"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with a cancelled context: %v, want context.Canceled", err)
	}
	_, err = b.List(c, blob.ListOptions{Prefix: k})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("List with a cancelled context: %v, want context.Canceled", err)
	}
	v := must(b.Stat(ctx(t), k)).Version
	for name, call := range map[string]func() error{
		"Stat":   func() error { _, err := b.Stat(c, k); return err },
		"Swap":   func() error { _, err := b.Swap(c, k, []byte("z"), v); return err },
		"Put":    func() error { _, err := b.Put(c, k, []byte("z"), blob.WriteOptions{}); return err },
		"Delete": func() error { return b.Delete(c, k) },
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancelled calls took %v", d)
	}
	// Nothing a cancelled call was asked to do happened.
	if o := must(b.Get(ctx(t), k)); string(o.Data) != "x" || o.Version != v {
		t.Fatalf("after cancelled writes the object is %q@%q, want %q@%q", o.Data, o.Version, "x", v)
	}
	if _, err := b.Stat(ctx(t), key(t, "other")); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a cancelled Create wrote its object: Stat = %v", err)
	}
}

func testClosed(t *testing.T, b *blob.Bucket) {
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := b.Get(ctx(t), "k")
	wantErr(t, err, blob.ErrClosed)
}

func testUnreachable(t *testing.T, b *blob.Bucket) {
	defer b.Close()
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := b.Get(c, "some/key")
	if err == nil {
		t.Fatal("Get from an unreachable endpoint succeeded")
	}
	var be *blob.Error
	if !errors.As(err, &be) || errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("unreachable endpoint gave %v, want a *blob.Error that is not ErrNotFound", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("unreachable endpoint took %v to fail", d)
	}
	t.Logf("unreachable endpoint: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
}
