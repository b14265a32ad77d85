package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	notifymem "github.com/cairn-dev/cairn/notify/mem"
)

// TestRateLimitNeverExceeded: claimers on two instances race for the
// attempts of a step limited to 5 per 10 s per key (burst 1, then burst 3)
// while the engine's clock runs fast. Every grant's time is its lease's
// claimed_at; in no window of one period are there more than
// limit+burst-1 grants of one key, every run completes (attempts beyond
// the rate waited, they did not fail), and the rate was used: the grants
// took about the time the rate needs, not much more.
func TestRateLimitNeverExceeded(t *testing.T) {
	for name, open := range stores(t) {
		for _, burst := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/burst%d", name, burst), func(t *testing.T) {
				h := newHarness(t, onStore(open(t)), withConfig(Config{Bus: notifymem.New(), FallbackInterval: 50 * time.Millisecond}))
				ctx, clk, engines := h.ctx, h.clk, h.instances(2)
				const limit, period = 5, 10 * time.Second
				wf := single("rl", cairn.Step{RateLimit: &cairn.RateLimit{Key: "${input.api}", Limit: limit, Period: cairn.Duration(period), Burst: burst}})
				for i := range 6 {
					register(t, engines[i%2], fmt.Sprintf("w%d", i), wf)
				}
				const perKey = 12
				var runIDs []string
				for i := range 2 * perKey {
					runIDs = append(runIDs, mustStart(t, engines[i%2], "rl", fmt.Sprintf(`{"api": "api-%d"}`, i%2)))
				}
				ttl := engines[0].Config().LeaseTTL
				var (
					mu      sync.Mutex
					grants  = map[string][]time.Time{}
					stopped atomic.Bool
					wg      sync.WaitGroup
					all     = make(chan struct{}) // closed at the last grant awaited
				)
				for i := range 6 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						e := engines[i%2]
						for !stopped.Load() {
							ls, err := e.Claim(ctx, ClaimRequest{WorkerID: fmt.Sprintf("w%d", i), Max: 2, WaitMs: 100})
							if err != nil {
								t.Error(err)
								return
							}
							for _, l := range ls {
								var in struct{ API string }
								_ = json.Unmarshal(l.Input, &in)
								mu.Lock()
								grants[in.API] = append(grants[in.API], l.ExpiresAt.Add(-ttl))
								if len(grants["api-0"])+len(grants["api-1"]) == 2*perKey {
									close(all)
								}
								mu.Unlock()
								if _, err := e.Complete(ctx, l.ID, CompleteRequest{}); err != nil {
									t.Error(err)
								}
							}
						}
					}()
				}
				start := clk.Now()
				wg.Add(1)
				// 250 ms of engine time every 5 ms; every 50 ms on the stores
				// behind a server (MinIO, fake-gcs-server, Azurite), whose
				// requests take 10-100 ms here (the rate must stay usable in
				// engine time for the "used" check to mean something).
				tick, slack := 5*time.Millisecond, 10*time.Second
				if name != "mem" && name != "file" {
					tick, slack = 50*time.Millisecond, 20*time.Second
				}
				go func() {
					defer wg.Done()
					ticker := time.NewTicker(tick)
					defer ticker.Stop()
					for !stopped.Load() {
						<-ticker.C
						clk.Advance(250 * time.Millisecond)
					}
				}()
				select {
				case <-all:
				case <-time.After(time.Minute):
					mu.Lock()
					n0, n1 := len(grants["api-0"]), len(grants["api-1"])
					mu.Unlock()
					var stuck string
					for _, id := range runIDs {
						if !getRun(t, engines[0], id).Status.Terminal() {
							stuck = diagnoseRun(t, engines[0], id)
							break
						}
					}
					t.Errorf("%d and %d grants for api-0 and api-1 within a minute, want %d each; a run not ended:\n%s", n0, n1, perKey, stuck)
				}
				stopped.Store(true)
				wg.Wait()
				per := period / limit
				for key, ts := range grants {
					slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
					if len(ts) != perKey {
						t.Fatalf("key %s: %d grants, want %d", key, len(ts), perKey)
					}
					max := limit + burst - 1
					for i := 0; i+max < len(ts); i++ {
						if ts[i+max].Sub(ts[i]) < period {
							t.Fatalf("key %s: %d grants within %v (%v .. %v), the rate allows %d", key, max+1, ts[i+max].Sub(ts[i]), ts[i].Sub(start), ts[i+max].Sub(start), max)
						}
					}
					// Used, not only respected: the last grant came within
					// a few ticks of the earliest time the rate allows.
					need := time.Duration(perKey-burst) * per
					if took := ts[len(ts)-1].Sub(ts[0]); took > need+slack {
						t.Errorf("key %s: %d grants took %v, the rate allows them in %v", key, perKey, took, need)
					}
				}
				for _, id := range runIDs {
					if r := getRun(t, engines[0], id); r.Status != cairn.RunCompleted {
						t.Fatalf("run %s %s", id, r.Status)
					}
				}
			})
		}
	}
}

// TestRateLimitValidation: the options are checked, naming the step and
// field.
func TestRateLimitValidation(t *testing.T) {
	for _, c := range []struct {
		rl   cairn.RateLimit
		want string
	}{
		{cairn.RateLimit{Limit: 0, Period: cairn.Duration(time.Minute)}, "workflows[0].steps[0].rate_limit.limit: step only: must be between 1 and 1000000"},
		{cairn.RateLimit{Limit: 5, Period: cairn.Duration(time.Millisecond)}, "workflows[0].steps[0].rate_limit.period: step only: must be between 1s and 24h"},
		{cairn.RateLimit{Limit: 5, Period: cairn.Duration(time.Second), Burst: 6}, "workflows[0].steps[0].rate_limit.burst: step only: must be between 0 and limit"},
	} {
		rl := c.rl
		w := single("x", cairn.Step{RateLimit: &rl})
		if err := w.Validate("workflows[0]"); err == nil || err.Error() != c.want {
			t.Errorf("%+v: got %v, want %s", c.rl, err, c.want)
		}
	}
	w := cairn.Workflow{Name: "x", Version: "1", Steps: []cairn.Step{{ID: "s", Kind: cairn.KindSleep, Duration: cairn.Duration(time.Second), RateLimit: &cairn.RateLimit{Limit: 1, Period: cairn.Duration(time.Second)}}}}
	if err := w.Validate("w"); err == nil {
		t.Fatal("a rate limit on a sleep step was accepted")
	}
}
