package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/testutil"
	memnotify "github.com/cairn-dev/cairn/notify/mem"
	"github.com/cairn-dev/cairn/sdk"
)

// ---- an in-process model of Lambda's concurrency ----
//
// lambdaPool serves HTTP the way a Lambda function does: each request
// runs in an execution environment that serves nothing else meanwhile; a
// free warm environment is reused (the most recently freed: Lambda keeps
// its warm pool small), otherwise a new one starts, unless the function's
// concurrency limit is reached, when the request is refused with 429 as
// Lambda's TooManyRequestsException reaches a client. Every environment
// is its own engine (its own caches, fallback-scan clock and worker
// sightings, as on Lambda) over one shared bucket and bus, configured by
// internal/config from a Lambda environment, the real code path's
// defaults included.

type lambdaEnv struct {
	h http.Handler
	e *engine.Engine
}

type lambdaPool struct {
	limit   int // concurrent executions; 0: unbounded
	timeout time.Duration
	newEnv  func() *lambdaEnv

	mu        sync.Mutex
	idle      []*lambdaEnv
	all       []*lambdaEnv
	busy      int
	peak      int
	busySecs  float64 // the integral of busy environments over time
	last      time.Time
	calls     int
	throttled int
}

func (p *lambdaPool) account(now time.Time) {
	if !p.last.IsZero() {
		p.busySecs += float64(p.busy) * now.Sub(p.last).Seconds()
	}
	p.last = now
}

func (p *lambdaPool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.account(time.Now())
	p.calls++
	var env *lambdaEnv
	switch {
	case len(p.idle) > 0:
		env = p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
	case p.limit > 0 && p.busy >= p.limit:
		p.throttled++
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"Reason":"ReservedFunctionConcurrentInvocationLimitExceeded","Type":"User","message":"Rate Exceeded."}`)
		return
	default:
		env = p.newEnv()
		p.all = append(p.all, env)
	}
	p.busy++
	p.peak = max(p.peak, p.busy)
	p.mu.Unlock()

	ctx, cancel := context.WithTimeout(r.Context(), p.timeout) // the invocation's deadline
	env.h.ServeHTTP(w, r.WithContext(ctx))
	cancel()

	p.mu.Lock()
	p.account(time.Now())
	p.busy--
	p.idle = append(p.idle, env)
	p.mu.Unlock()
}

type poolStats struct {
	calls, throttled, envs, peak int
	busySecs                     float64
}

// reset starts a measurement window; stats reads it.
func (p *lambdaPool) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.account(time.Now())
	p.busySecs, p.calls, p.throttled, p.peak = 0, 0, 0, p.busy
}

func (p *lambdaPool) stats() poolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.account(time.Now())
	return poolStats{calls: p.calls, throttled: p.throttled, envs: len(p.all), peak: p.peak, busySecs: p.busySecs}
}

func (p *lambdaPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, env := range p.all {
		env.e.Close()
	}
}

// lambdaStack is the SAM template's shape: the API function, and the
// claims function that the HTTP API's claim route reaches (or none: one
// function serves every path, as behind the Function URL).
type lambdaStack struct {
	srv         *httptest.Server
	api, claims *lambdaPool
	counts      *counting.Counts
	store       *blob.Bucket
}

type stackOptions struct {
	env                    []string // CAIRN_ variables over the template's
	apiLimit, claimsLimit  int      // concurrency limits; claimsLimit < 0: no claims function
	apiTimeout, claimsTime time.Duration
}

func startLambdaStack(t *testing.T, o stackOptions) *lambdaStack {
	t.Helper()
	store, counts := counting.Wrap(mem.New())
	bus := memnotify.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// What the template sets (Globals and the functions), on Lambda.
	environ := append([]string{
		"AWS_LAMBDA_RUNTIME_API=127.0.0.1:9001", "CAIRN_BLOB=mem://", "CAIRN_KEYS=" + "w1:worker:" + auth.HashSecret("w"),
		"CAIRN_FALLBACK_INTERVAL=3s", "CAIRN_MAX_REQUEST_TIME=30s",
	}, o.env...)
	cfg, err := config.FromEnv(config.API, environ)
	if err != nil {
		t.Fatal(err)
	}
	newEnv := func() *lambdaEnv {
		e, err := engine.New(store, cfg.EngineConfig(bus, log))
		if err != nil {
			panic(err) // the configuration was accepted above: a bug
		}
		// Dev mode: the keys are the template's business, not this test's.
		return &lambdaEnv{e: e, h: api.New(e, api.Config{DevMode: true, Logger: log}).Handler()}
	}
	s := &lambdaStack{counts: counts, store: store}
	s.api = &lambdaPool{limit: o.apiLimit, timeout: orDefault(o.apiTimeout, 30*time.Second), newEnv: newEnv}
	route := http.Handler(s.api)
	if o.claimsLimit >= 0 {
		s.claims = &lambdaPool{limit: o.claimsLimit, timeout: orDefault(o.claimsTime, 30*time.Second), newEnv: newEnv}
		route = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == api.BasePath+"/steps/claim" {
				s.claims.ServeHTTP(w, r)
				return
			}
			s.api.ServeHTTP(w, r)
		})
	}
	s.srv = httptest.NewServer(route)
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
		s.api.close()
		if s.claims != nil {
			s.claims.close()
		}
	})
	return s
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// idleFleet serves n SDK workers (concurrency 1, default options) until
// the test ends, and returns once all are registered.
func idleFleet(t *testing.T, base string, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wf := sdk.Workflow("idle", "1").Task("a", sdk.Handle(func(sdk.StepContext, struct{}) (int, error) { return 1, nil }))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range n {
		c, err := sdk.NewClient(base)
		if err != nil {
			t.Fatal(err)
		}
		w := sdk.NewWorker(c, sdk.WithConcurrency(1), sdk.WithName(fmt.Sprintf("idle-%04d", i)), sdk.WithLogger(quiet)).Register(wf)
		wg.Go(func() {
			if err := w.Serve(ctx); err != nil {
				t.Errorf("worker: %v", err)
			}
		})
		select {
		case <-w.Ready():
		case <-time.After(30 * time.Second):
			t.Fatal("worker not ready within 30 s")
		}
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

var (
	idleWindow = flag.Duration("idle-window", 2*time.Minute, "TestLambdaIdleClaims: how long to measure")
	idleLayout = flag.String("idle-layout", "flat", "TestLambdaIdleClaims: CAIRN_KEY_LAYOUT")
	idleWarm   = flag.Duration("idle-warm", 30*time.Second, "TestLambdaIdleClaims: how long the fleet idles before the measure")
)

// Prices for the idle cost (us-east-1, arm64, 2026): Lambda duration per
// GB-second and requests, API Gateway HTTP API requests.
const (
	lambdaGBSecond   = 0.0000133334
	lambdaPerRequest = 0.20 / 1e6
	httpAPIPerCall   = 1.00 / 1e6
	lambdaMemoryGB   = 0.5 // the template's MemorySize
	secondsPerMonth  = 30 * 24 * 3600
)

// TestLambdaIdleClaims measures what an idle worker costs on the SAM
// template's shape with the Lambda claim policy (CAIRN_CLAIM_HOLD 2s,
// CAIRN_CLAIM_PAUSE 20s: the defaults on Lambda) against 20 s holds with
// no pause (the SDK's claim wait, the policy before): Lambda environments
// held, claims, bucket requests by class, all per worker per minute and
// priced per worker-month. It checks the short policy takes a small
// fraction of an environment per idle worker and still picks up new work
// within a pause and a hold.
func TestLambdaIdleClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for two minutes")
	}
	const workers = 40
	window := *idleWindow
	type result struct {
		name                 string
		claimsPerMin, envs   float64
		s3                   counting.Snapshot
		perWorkerMin         float64 // S3 requests
		monthS3, monthLambda float64
		monthAPI             float64
	}
	results := make([]result, 2)
	for i, pol := range []struct {
		name string
		env  []string
	}{
		{"hold 2s, pause 20s (Lambda default)", nil},
		{"hold 20s, no pause (before)", []string{"CAIRN_CLAIM_HOLD=24s", "CAIRN_CLAIM_PAUSE=0s"}},
	} {
		t.Run(fmt.Sprintf("policy%d", i), func(t *testing.T) {
			t.Parallel()
			s := startLambdaStack(t, stackOptions{env: append(pol.env, "CAIRN_KEY_LAYOUT="+*idleLayout)})
			idleFleet(t, s.srv.URL, workers)
			time.Sleep(*idleWarm) // the idle backoffs reach the pause
			s.claims.reset()
			s.api.reset()
			before := s.counts.Snapshot()
			began := time.Now()
			time.Sleep(window)
			el := time.Since(began)
			cs := s.claims.stats()
			s3 := s.counts.Snapshot().Sub(before)
			perMin := func(n float64) float64 { return n / workers / el.Minutes() }
			envs := cs.busySecs / el.Seconds() / workers
			months := secondsPerMonth / el.Seconds() / workers
			r := result{
				name: pol.name, claimsPerMin: perMin(float64(cs.calls)), envs: envs, s3: s3,
				perWorkerMin: perMin(float64(s3.Total())),
				monthS3:      s3.Cost() * months,
				monthLambda:  envs*lambdaMemoryGB*lambdaGBSecond*secondsPerMonth + float64(cs.calls)*lambdaPerRequest*months,
				monthAPI:     float64(cs.calls) * httpAPIPerCall * months,
			}
			results[i] = r
			t.Logf("%s, %s layout, %d idle workers, %v: per worker per minute %.2f claims, %.2f S3 requests (%s); %.3f Lambda environments held per worker (peak %d, %d environments started); per worker-month: S3 $%.3f, Lambda $%.2f, HTTP API $%.3f",
				pol.name, *idleLayout, workers, el.Round(time.Second), r.claimsPerMin, r.perWorkerMin, s3, envs, cs.peak, cs.envs, r.monthS3, r.monthLambda, r.monthAPI)
			if cs.throttled > 0 {
				t.Errorf("%d claims throttled without a limit", cs.throttled)
			}
			if i == 0 {
				// About hold/(hold + 3/4 pause) ≈ 0.12 of an environment
				// (0.13 measured; more on a loaded machine, where requests
				// take longer, or while the backoffs still ramp).
				if envs > 0.22 || envs < 0.03 {
					t.Errorf("%.3f environments per idle worker; want about 0.12 (0.03 to 0.22)", envs)
				}
				// New work is picked up within a pause and a hold.
				c, _ := sdk.NewClient(s.srv.URL)
				start := time.Now()
				run, err := c.Start(context.Background(), "idle", sdk.StartOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if r, err := c.Wait(ctx, run.ID); err != nil || r.Status != sdk.RunCompleted {
					t.Fatalf("run: %v %v", r, err)
				}
				took := time.Since(start)
				t.Logf("a run started into the idle fleet completed in %v", took.Round(time.Millisecond))
				if took > 23*time.Second {
					t.Errorf("a run started into the idle fleet took %v; want within a pause and a hold", took)
				}
			} else if envs < 0.8 {
				t.Errorf("%.3f environments per idle worker holding 20 s claims; want nearly 1", envs)
			}
		})
	}
}

// TestLambdaClaimsKeepCompletesAlive: on an account quota that idle
// workers could fill, one function serving every path (the Function URL
// alone, 20 s holds) refuses starts while the workers wait, which is the
// failure of issue #18; with the claims function's reserved concurrency
// the same workers, even holding 20 s, are refused claims past the
// reservation (the SDK backs off) and starts, claims and completes of a
// run go through.
func TestLambdaClaimsKeepCompletesAlive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fleet of workers")
	}
	const quota, reserved, workers = 30, 10, 30
	long := []string{"CAIRN_CLAIM_HOLD=24s", "CAIRN_CLAIM_PAUSE=0s"}
	start := func(base string) (code int, run string) {
		req, _ := http.NewRequest("POST", base+api.BasePath+"/runs", strings.NewReader(`{"workflow":"idle"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Run struct{ ID string } `json:"run"`
		}
		json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r.Run.ID
	}
	t.Run("one function", func(t *testing.T) {
		t.Parallel()
		s := startLambdaStack(t, stackOptions{env: long, apiLimit: quota, claimsLimit: -1})
		idleFleet(t, s.srv.URL, workers)
		// A start every 100 ms until one is refused.
		tries := 0
		testutil.EventuallyEvery(t, 10*time.Second, 100*time.Millisecond,
			fmt.Sprintf("a start refused (429) with %d workers holding claims on a %d quota (else the model does not show the failure)", workers, quota),
			func() (bool, string) {
				tries++
				code, _ := start(s.srv.URL)
				return code == http.StatusTooManyRequests, fmt.Sprintf("%d starts, the last answered %d", tries, code)
			})
		t.Logf("one function, quota %d, %d idle workers holding 20 s claims: starts refused (429)", quota, workers)
	})
	t.Run("claims function", func(t *testing.T) {
		t.Parallel()
		s := startLambdaStack(t, stackOptions{env: long, apiLimit: quota - reserved, claimsLimit: reserved})
		idleFleet(t, s.srv.URL, workers)
		c, _ := sdk.NewClient(s.srv.URL)
		for i := range 5 {
			began := time.Now()
			code, run := start(s.srv.URL)
			if code != http.StatusCreated {
				t.Fatalf("start %d: HTTP %d", i, code)
			}
			t.Logf("start %d answered in %v", i, time.Since(began).Round(time.Millisecond))
			// The run completes before the next start: claims within the
			// reservation take it, its complete goes through the API.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			got, err := c.Wait(ctx, run)
			cancel()
			if err != nil || got.Status != sdk.RunCompleted {
				t.Fatalf("run %d (%s) not completed within 30 s of its start: %v %v", i, run, got, err)
			}
		}
		cs, as := s.claims.stats(), s.api.stats()
		if as.throttled > 0 {
			t.Errorf("the API function refused %d calls: claims starved it", as.throttled)
		}
		if cs.throttled == 0 || cs.peak > reserved {
			t.Errorf("claims: %d refused, peak %d environments; want refusals past the reservation of %d", cs.throttled, cs.peak, reserved)
		}
		t.Logf("claims function reserved %d of a %d quota, %d workers holding 20 s claims: %d claims, %d refused (429, the SDK backs off); API function: %d calls, none refused, peak %d environments",
			reserved, quota, workers, cs.calls, cs.throttled, as.calls, as.peak)
	})
}
