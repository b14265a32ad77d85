package gcs_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	gcblob "gocloud.dev/blob"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/blobtest"
	"github.com/cairn-dev/cairn/blob/gcs"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

// fakeGCS starts an in-process fake-gcs-server on 127.0.0.1 (plain HTTP)
// and returns its base URL.
func fakeGCS(t testing.TB) (*fakestorage.Server, string) {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme:     "http",
		Host:       "127.0.0.1",
		NoListener: false,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv, srv.URL()
}

var bucketSeq atomic.Int64

// newBucket creates a fresh bucket on srv and opens it through the driver.
func newBucket(t testing.TB, srv *fakestorage.Server, endpoint string) *blob.Bucket {
	t.Helper()
	name := fmt.Sprintf("cairn-test-%d", bucketSeq.Add(1))
	srv.CreateBucket(name)
	b, err := gcs.New(context.Background(), gcs.Options{Bucket: name, Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformance(t *testing.T) {
	srv, endpoint := fakeGCS(t)
	blobtest.Run(t, blobtest.Harness{
		Open: func(t *testing.T) *blob.Bucket { return newBucket(t, srv, endpoint) },
		OpenUnreachable: func(t *testing.T) *blob.Bucket {
			b, err := gcs.New(context.Background(), gcs.Options{
				Bucket:   "unreachable",
				Endpoint: "http://" + testinfra.FreeAddr(t),
			})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		// Generations are positive integers: 0 would mean "no condition".
		MalformedVersions:  []blob.Version{"0", "-1", "abc", `"etag"`},
		MalformedPageToken: "!!not base64",
	})
}

func TestURLOpener(t *testing.T) {
	srv, endpoint := fakeGCS(t)
	srv.CreateBucket("url-bucket")

	b := blobtest.OpenURL(t, "gs://url-bucket?endpoint="+endpoint)
	v := blobtest.RoundTrip(t, b, "k", "via url")
	if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
		t.Fatalf("version %q is not a decimal generation", v)
	}
	var gb *gcblob.Bucket
	var sc *storage.Client
	if !b.As(&gb) || gb == nil || !b.As(&sc) || sc == nil {
		t.Fatal("As does not expose *gocloud blob.Bucket and *storage.Client")
	}

	// STORAGE_EMULATOR_HOST, as gocloud and the storage client honour it.
	u := srv.URL()
	t.Setenv("STORAGE_EMULATOR_HOST", u[len("http://"):])
	blobtest.SeesVersion(t, "gs://url-bucket", "k", v)

	blobtest.RefusesURLs(t,
		"gs://url-bucket?region=x",
		"gs://url-bucket?anonymous=maybe",
		"gs://url-bucket?access_id=someone",
		"gs://url-bucket/sub/path",
		"gs://url-bucket?endpoint=ftp://127.0.0.1:1",
		"gs:///nobucket",
	)
}

// TestConcurrentPutsGetDistinctGenerations: unconditional writes racing on
// one object must each get their own generation.
func TestConcurrentPutsGetDistinctGenerations(t *testing.T) {
	srv, endpoint := fakeGCS(t)
	b := newBucket(t, srv, endpoint)
	defer b.Close()
	ctx := context.Background()
	const writers, each = 8, 25
	var mu sync.Mutex
	seen := map[blob.Version]string{}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range each {
				data := fmt.Sprintf("w%d-%d", i, j)
				v, err := b.Put(ctx, "same", []byte("x"), blob.WriteOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, dup := seen[v]; dup {
					t.Errorf("generation %s returned for both %s and %s", v, prev, data)
				}
				seen[v] = data
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func TestUnreachableIsFast(t *testing.T) {
	b, err := gcs.New(context.Background(), gcs.Options{
		Bucket:   "nowhere",
		Endpoint: "http://" + testinfra.FreeAddr(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	_, err = b.Create(context.Background(), "k", []byte("x"))
	if err == nil || errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Create to a closed port: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

// TestCreateRetriedAfterLostAnswer: the first upload reaches the store but
// its answer is lost (a 503 here; a timeout or reset on a loaded machine).
// The client retries the create-only write, which meets the first
// attempt's object: 412. That refusal must say the write was retried, or a
// caller takes its own write for another's (engine claimOne orphaned its
// lease that way).
func TestCreateRetriedAfterLostAnswer(t *testing.T) {
	srv, endpoint := fakeGCS(t)
	var uploads atomic.Int32
	target, _ := url.Parse(endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/upload/") && uploads.Add(1) == 1 {
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)                         // applied…
			w.WriteHeader(http.StatusServiceUnavailable) // …answer lost
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	name := fmt.Sprintf("cairn-test-%d", bucketSeq.Add(1))
	srv.CreateBucket(name)
	b, err := gcs.New(context.Background(), gcs.Options{Bucket: name, Endpoint: proxy.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Create(context.Background(), "k", []byte("mine"))
	if uploads.Load() < 2 {
		t.Fatalf("the client did not retry (%d uploads): %v", uploads.Load(), err)
	}
	if !errors.Is(err, blob.ErrPreconditionFailed) || !errors.Is(err, blob.ErrRetriedWrite) {
		t.Fatalf("create retried after a lost answer: %v, want ErrPreconditionFailed with ErrRetriedWrite", err)
	}
	// A first-attempt 412 (contention) carries no mark.
	if _, err := b.Create(context.Background(), "k", []byte("other")); !errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrRetriedWrite) {
		t.Fatalf("plain create on a taken key: %v", err)
	}
}
