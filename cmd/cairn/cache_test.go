package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// cairn cache invalidate: a run whose step took its output from the cache
// shows it (get, journal); one key's entry is deleted, then what is left of
// the step's; a key that is not JSON is refused. The transcript is a
// golden file.
func TestGoldenCache(t *testing.T) {
	var calls atomic.Int32
	type page struct {
		URL string `json:"url"`
	}
	wf := sdk.Workflow("fetch", "1").Task("get", sdk.Handle(func(_ sdk.StepContext, in page) (string, error) {
		return fmt.Sprintf("%s#%d", in.URL, calls.Add(1)), nil
	}), sdk.Cache("input.url", time.Hour))
	srv, c := serving(t, sdktest.Options{}, nil, wf)
	n := &normalizer{ids: map[string]string{}}
	run := func(url string) *sdk.Run {
		r, err := c.Start(t.Context(), "fetch", sdk.StartOptions{Input: page{URL: url}})
		if err == nil {
			r, err = c.Wait(t.Context(), r.ID)
		}
		if err != nil || r.Status != sdk.RunCompleted {
			t.Fatalf("run of %s: %+v %v", url, r, err)
		}
		return r
	}
	run("u1")
	run("u2")
	// The entries are written just after the completes.
	var cached string
	testutil.Eventually(t, 20*time.Second, "a run completed from the cache", func() (bool, string) {
		r := run("u1")
		cached = r.ID
		return r.Step("get").Cached != nil, fmt.Sprintf("%+v", r.Step("get"))
	})
	s := n.run(t, srv.URL, "runs", "get", cached, "-o", "table")
	s += n.run(t, srv.URL, "runs", "journal", cached)
	s += n.run(t, srv.URL, "cache", "invalidate", "fetch", "get", "--key", `"u1"`)
	s += n.run(t, srv.URL, "cache", "invalidate", "fetch", "get", "--key", `"u1"`)
	s += n.run(t, srv.URL, "cache", "invalidate", "fetch", "get")
	s += n.run(t, srv.URL, "cache", "invalidate", "fetch", "get", "--key", `u1`)
	s += n.run(t, srv.URL, "cache", "invalidate", "fetch", "no/such")
	golden(t, "cache", s)
	if !strings.Contains(s, "completed (cached)") {
		t.Fatal("the transcript does not show the cached step")
	}
}
