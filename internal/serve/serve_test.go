package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/internal/testutil"

	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// start runs HTTP on a free port and returns its base URL and the channel
// its result arrives on.
func start(t *testing.T, ctx context.Context, h http.Handler, o Options) (string, <-chan error) {
	t.Helper()
	o.Addr = "127.0.0.1:0"
	if o.Logger == nil {
		o.Logger = quiet()
	}
	addr := make(chan net.Addr, 1)
	o.Ready = func(a net.Addr) { addr <- a }
	done := make(chan error, 1)
	go func() { done <- HTTP(ctx, h, o) }()
	select {
	case a := <-addr:
		return "http://" + a.String(), done
	case err := <-done:
		t.Fatalf("HTTP: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("not listening after 5s")
	}
	return "", nil
}

// TestHTTPDrainsThenStops: when the context ends, Drain runs first (a held
// request answers), then the server waits for the request in flight and
// returns nil.
func TestHTTPDrainsThenStops(t *testing.T) {
	drained := make(chan struct{})
	var drainCalls atomic.Int32
	held := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			close(held)
			select {
			case <-drained:
				io.WriteString(w, "drained")
			case <-time.After(10 * time.Second):
				io.WriteString(w, "timed out")
			}
			return
		}
		io.WriteString(w, "ok")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, done := start(t, ctx, h, Options{Drain: func() {
		drainCalls.Add(1)
		close(drained)
	}})
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/hold")
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	<-held
	t0 := time.Now()
	cancel()
	if got := <-answer; got != "drained" {
		t.Fatalf("held request answered %q, want drained", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("HTTP returned %v", err)
	}
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("stop took %v", took)
	}
	if drainCalls.Load() != 1 {
		t.Errorf("Drain called %d times", drainCalls.Load())
	}
}

// TestHTTPGraceRunsOut: a request that outlives the grace is cut, and HTTP
// says so.
func TestHTTPGraceRunsOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	})
	ctx, cancel := context.WithCancel(context.Background())
	base, done := start(t, ctx, h, Options{Grace: 200 * time.Millisecond})
	go http.Get(base + "/")
	<-started
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "grace") {
			t.Fatalf("HTTP returned %v, want the grace to have run out", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("HTTP did not return after its grace")
	}
}

func TestHTTPListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = HTTP(context.Background(), http.NotFoundHandler(), Options{Addr: ln.Addr().String(), Logger: quiet()})
	if err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Fatalf("got %v", err)
	}
}

// TestHTTPTimeouts: the options reach the server (a client that never
// sends its headers is cut after ReadHeaderTimeout).
func TestHTTPTimeouts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, _ := start(t, ctx, http.NotFoundHandler(), Options{ReadHeaderTimeout: 100 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\n") // and nothing more
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	t0 := time.Now()
	io.ReadAll(c) // the server closes the connection
	if took := time.Since(t0); took > 3*time.Second {
		t.Fatalf("the connection stayed open %v", took)
	}
}

// fakeEngine counts passes; fail makes them fail.
type fakeEngine struct {
	passes atomic.Int32
	fail   atomic.Bool
}

func (f *fakeEngine) Reap(ctx context.Context) (engine.ReapStats, error) {
	f.passes.Add(1)
	if f.fail.Load() {
		return engine.ReapStats{ListRequests: 1}, errors.New("bucket unreachable")
	}
	return engine.ReapStats{ListRequests: 1, RunsVisited: 2, TimersFired: 1}, nil
}

// syncBuffer is a log sink safe for concurrent writers and readers.
type syncBuffer = testutil.SyncBuffer

func TestReaperLoop(t *testing.T) {
	f := &fakeEngine{}
	var logs syncBuffer
	r := NewReaper(f, ReaperConfig{Period: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	// The first pass runs at once, not a period later.
	testutil.Eventually(t, 5*time.Second, "three reaper passes", func() (bool, string) {
		n := f.passes.Load()
		return n >= 3, fmt.Sprintf("%d passes", n)
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	st := r.Stats()
	if st.Passes < 3 || st.Passes != int(f.passes.Load()) || st.RunsVisited != 2*st.Passes || st.Failed != 0 {
		t.Fatalf("stats %+v after %d passes", st, f.passes.Load())
	}
	out := logs.String()
	for _, want := range []string{"cairn reaper: a pass every 20ms", "cairn reaper: pass", "cairn reaper: stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
}

func TestReaperRunOnce(t *testing.T) {
	f := &fakeEngine{}
	var logs syncBuffer
	r := NewReaper(f, ReaperConfig{Name: "x", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if r.Config.Period != DefaultReapPeriod {
		t.Errorf("default period %v", r.Config.Period)
	}
	p, err := r.RunOnce(context.Background())
	if err != nil || p.RunsVisited != 2 || p.ListRequests != 1 {
		t.Fatalf("%+v %v", p, err)
	}
	f.fail.Store(true)
	if _, err := r.RunOnce(context.Background()); err == nil {
		t.Fatal("failure lost")
	}
	if st := r.Stats(); st.Passes != 2 || st.Failed != 1 {
		t.Fatalf("stats %+v", st)
	}
	if out := logs.String(); !strings.Contains(out, "level=ERROR msg=\"x: pass failed\"") || !strings.Contains(out, "bucket unreachable") {
		t.Errorf("logs:\n%s", out)
	}
	// A pass cut by the end of its context is not reported as a failure.
	logs = syncBuffer{}
	r.Config.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.RunOnce(ctx)
	if out := logs.String(); out != "" {
		t.Errorf("a cancelled pass logged:\n%s", out)
	}
}

// TestAPITimeouts: the API's read and write timeouts leave a held claim
// (at most 4/5 of the maximum request time) room to answer.
func TestAPITimeouts(t *testing.T) {
	e, err := engine.New(mem.New(), engine.Config{MaxRequestTime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	o := engineOptions(Options{}, e)
	if o.WriteTimeout != 5*time.Minute+RequestMargin || o.ReadTimeout != o.WriteTimeout || o.WriteTimeout <= e.MaxClaimHold() {
		t.Errorf("read %v write %v for a hold of %v", o.ReadTimeout, o.WriteTimeout, e.MaxClaimHold())
	}
	if o.Drain == nil || o.Grace != DefaultGrace || o.IdleTimeout != DefaultIdleTimeout || o.ReadHeaderTimeout != DefaultReadHeaderTimeout {
		t.Errorf("defaults: %+v", o)
	}
	if o := engineOptions(Options{WriteTimeout: time.Hour}, e); o.WriteTimeout != time.Hour {
		t.Errorf("a set timeout was overridden: %v", o.WriteTimeout)
	}
}

// TestAPIWithReaper: API serves e's handler and runs a reaper beside it
// until ctx ends.
func TestAPIWithReaper(t *testing.T) {
	e, err := engine.New(mem.New(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var logs syncBuffer
	// At Debug: the reaper's routine passes are what the test waits on.
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, stop := testutil.Serving(t, func(ctx context.Context, ready func(string)) error {
		return API(ctx, e, http.NotFoundHandler(), Options{Addr: "127.0.0.1:0", Logger: log, Ready: func(a net.Addr) { ready(a.String()) }},
			10*time.Millisecond)
	})
	// The reaper runs beside the server: two passes, a period apart.
	testutil.Eventually(t, 5*time.Second, "two reaper passes", func() (bool, string) {
		out := logs.String()
		return strings.Count(out, "cairn reaper: pass") >= 2, out
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "cairn reaper: stopped") || !strings.Contains(out, "cairn: stopped") {
		t.Errorf("logs:\n%s", out)
	}
}

// TestReaperVisitsOwnWakesBetweenPasses: with a pass only every hour, a
// sleep this engine armed still ends on time — the reaper loop visits the
// engine's own wakes between passes (engine/ownwake.go) — while commits
// add wakes concurrently with the loop's visits (run it with -race).
func TestReaperVisitsOwnWakesBetweenPasses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := engine.New(mem.New(), engine.Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := NewReaper(e, ReaperConfig{Period: time.Hour, Logger: quiet()})
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	testutil.EventuallyEvery(t, 5*time.Second, time.Millisecond, "the reaper loop's first pass", func() (bool, string) {
		st := r.Stats()
		return st.Passes > 0, fmt.Sprintf("stats %+v", st)
	})
	wf := cairn.Workflow{Name: "nap", Version: "1", Steps: []cairn.Step{{ID: "t"}, {ID: "z", Kind: cairn.KindSleep, Duration: cairn.Duration(300 * time.Millisecond), After: []string{"t"}}}}
	if _, err := e.Register(ctx, cairn.RegisterRequest{WorkerID: "w", Workflows: []cairn.Workflow{wf}}); err != nil {
		t.Fatal(err)
	}
	const runs = 8
	ids := make([]string, runs)
	for i := range ids {
		res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "nap"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.Run.ID
	}
	// How late each sleep ended is read from its run's journal (its task's
	// completion to its own), so the time this machine takes to answer
	// the test's calls does not count.
	ended := make(chan time.Duration, runs)
	for range runs {
		go func() {
			ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: "w", WaitMs: 5000})
			if err != nil || len(ls) != 1 {
				t.Errorf("claim: %v %d", err, len(ls))
				ended <- -1
				return
			}
			if _, err := e.Complete(ctx, ls[0].ID, cairn.CompleteRequest{}); err != nil {
				t.Errorf("complete: %v", err)
			}
			got, _, err := e.AwaitRun(ctx, ls[0].Run, 10*time.Second, "k", "getRun")
			if err != nil || got.Status != cairn.RunCompleted {
				t.Errorf("run %s: %v %+v", ls[0].Run, err, got)
				ended <- -1
				return
			}
			journal, err := e.Journal(ctx, ls[0].Run)
			if err != nil {
				t.Errorf("run %s: %v", ls[0].Run, err)
				ended <- -1
				return
			}
			completed := map[string]time.Time{}
			for _, j := range journal {
				if j.Type == cairn.JournalStepCompleted {
					completed[j.Step] = j.At
				}
			}
			ended <- completed["z"].Sub(completed["t"])
		}()
	}
	for range runs {
		d := <-ended
		if d < 300*time.Millisecond || d > 1300*time.Millisecond {
			t.Fatalf("a 300 ms sleep ended %v after its task, by its run's journal (the reaper passes hourly: only own wakes fire it)", d)
		}
	}
	cancel()
	<-done
	// One pass (the first): every sleep above ended through own wakes.
	if st := r.Stats(); st.Passes != 1 || st.TimersFired == 0 {
		t.Fatalf("stats %+v: want 1 pass and the timers fired by own wakes", st)
	}
}
