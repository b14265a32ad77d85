package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testinfra"
	"github.com/cairn-dev/cairn/internal/testinfra/testnats"
	"github.com/cairn-dev/cairn/internal/testutil"
)

// killCluster is three `cairn serve` processes and a `cairn reaper` on one
// bucket, NATS between them; any instance can be killed with kill -9 and
// started again on its address.
type killCluster struct {
	t    *testing.T
	bin  string
	env  []string
	addr [3]string

	mu      sync.Mutex
	cmds    [3]*exec.Cmd
	logs    [3]*testutil.SyncBuffer
	dead    [3]bool
	serving [3]bool       // healthy, and not killed since
	changed chan struct{} // closed (and replaced) when an instance starts serving or is killed
}

func (c *killCluster) base(i int) string { return "http://" + c.addr[i] + "/v1/api" }

// alive reports whether instance i serves: it answered its health check
// and was not killed since.
func (c *killCluster) alive(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serving[i]
}

// changes is closed at the next kill or start of an instance: take it
// before looking at alive, then wait on it for the instances to change.
func (c *killCluster) changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// setServing marks instance i serving or not and signals the change; the
// caller holds c.mu.
func (c *killCluster) setServing(i int, on bool) {
	c.serving[i] = on
	close(c.changed)
	c.changed = make(chan struct{})
}

// serve starts instance i and waits for it to answer.
func (c *killCluster) serve(i int) {
	cmd := exec.Command(c.bin, "serve", "--addr", c.addr[i])
	cmd.Env = append(os.Environ(), c.env...)
	var logs testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.cmds[i], c.logs[i], c.dead[i] = cmd, &logs, false
	c.mu.Unlock()
	waitHealthy(c.t, c.base(i))
	c.mu.Lock()
	c.setServing(i, true)
	c.mu.Unlock()
}

// kill sends SIGKILL to instance i and reaps the process.
func (c *killCluster) kill(i int) {
	c.mu.Lock()
	cmd := c.cmds[i]
	c.dead[i] = true
	c.setServing(i, false) // before the kill: a request it fails finds it down
	c.mu.Unlock()
	cmd.Process.Kill()
	cmd.Wait()
}

func newKillCluster(t *testing.T, bin, blobURL string, extra ...string) *killCluster {
	c := &killCluster{t: t, bin: bin, changed: make(chan struct{}), env: append([]string{
		"CAIRN_BLOB=" + blobURL,
		"CAIRN_NOTIFY=" + testnats.URL(t),
		"CAIRN_DEV=true",
		"CAIRN_LEASE_TTL=2s",
	}, extra...)}
	for i := range c.addr {
		c.addr[i] = testinfra.FreeAddr(t)
	}
	t.Cleanup(func() {
		for i := range c.cmds {
			c.mu.Lock()
			cmd, dead := c.cmds[i], c.dead[i]
			c.mu.Unlock()
			if cmd == nil || dead {
				continue
			}
			terminate(cmd)
		}
		if t.Failed() {
			for i := range c.logs {
				if c.logs[i] != nil {
					t.Logf("instance %d (last start):\n%s", i, tail(c.logs[i].String(), 4000))
				}
			}
		}
	})
	for i := range c.addr {
		c.serve(i)
	}
	start(t, bin, c.env, "reaper", "--every", "250ms")
	return c
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

var errDown = errors.New("instance unreachable")

// try posts JSON like call but reports a transport error (a killed
// instance) instead of failing the test.
func try(method, url string, body, out any) (int, error) {
	status, b, err := send(method, url, body)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errDown, err)
	}
	if out != nil && status < 300 {
		json.Unmarshal(b, out)
	}
	if status >= 500 {
		return status, fmt.Errorf("%s %s → %d %s", method, url, status, b)
	}
	return status, nil
}

type itemLease struct {
	ID    string          `json:"id"`
	Run   string          `json:"run"`
	Step  string          `json:"step"`
	Item  *int            `json:"item"`
	Input json.RawMessage `json:"input"`
}

type flowStep struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Child  string          `json:"child"`
	Map    *struct {
		Total     int `json:"total"`
		Completed int `json:"completed"`
		Running   int `json:"running"`
	} `json:"map"`
}

type flowRun struct {
	Status string          `json:"status"`
	Parent string          `json:"parent"`
	Output json.RawMessage `json:"output"`
	Error  json.RawMessage `json:"error"`
	Steps  []flowStep      `json:"steps"`
}

func (r flowRun) step(id string) flowStep {
	for _, s := range r.Steps {
		if s.ID == id {
			return s
		}
	}
	return flowStep{}
}

// view reads a run from the first instance alive.
func (c *killCluster) view(t *testing.T, run string) flowRun {
	t.Helper()
	for i := range c.addr {
		if !c.alive(i) {
			continue
		}
		var r flowRun
		if s, err := try("GET", c.base(i)+"/runs/"+run, nil, &r); err == nil && s == 200 {
			return r
		}
	}
	t.Fatalf("no instance answers for run %s", run)
	return flowRun{}
}

// awaitRun reads run until cond holds, failing the test at within or
// once the run ended without it. Between reads it holds a status request
// until the run's next commit (the API's long poll), not a sleep.
func (c *killCluster) awaitRun(t *testing.T, run string, within time.Duration, what string, cond func(flowRun) bool) flowRun {
	t.Helper()
	deadline := time.Now().Add(within)
	var rev int64
	for {
		r := c.view(t, run)
		if cond(r) {
			return r
		}
		left := time.Until(deadline)
		if left <= 0 || r.Status != "running" {
			b, _ := json.Marshal(r)
			why := fmt.Sprintf("not reached within %v", within)
			if r.Status != "running" {
				why = "not reached before the run ended"
			}
			t.Fatalf("run %s: %s %s: %s", run, what, why, tail(string(b), 2000))
		}
		rev = c.nextRev(t, run, rev, min(left, 5*time.Second))
	}
}

// nextRev holds a status request on run, on the first instance that
// answers, until the run's rev exceeds after (a commit on any instance
// wakes it) or hold passes, and returns the rev seen.
func (c *killCluster) nextRev(t *testing.T, run string, after int64, hold time.Duration) int64 {
	t.Helper()
	var errs []string
	for i := range c.addr {
		if !c.alive(i) {
			continue
		}
		var st struct {
			Rev int64 `json:"rev"`
		}
		url := fmt.Sprintf("%s/runs/%s/status?after=%d&wait_ms=%d", c.base(i), run, after, hold.Milliseconds())
		s, err := try("GET", url, nil, &st)
		if err == nil && s == 200 {
			return st.Rev
		}
		errs = append(errs, fmt.Sprintf("instance %d: %d %v", i, s, err))
	}
	t.Fatalf("no instance answers the status of run %s: %v", run, errs)
	return 0
}

const (
	mapItems = 300
	mapConc  = 20
)

func killFlows() []map[string]any {
	return []map[string]any{
		{"name": "kmap", "version": "1", "steps": []map[string]any{
			{"id": "fetch"},
			{"id": "each", "kind": "map", "after": []string{"fetch"}, "items": "${steps.fetch.output.items}", "max_concurrency": mapConc},
			{"id": "sum", "after": []string{"each"}, "input": "${size(steps.each.output)}"},
		}},
		{"name": "kparent", "version": "1", "steps": []map[string]any{
			{"id": "prep"},
			{"id": "ship", "kind": "child", "workflow": "kchild", "after": []string{"prep"}, "input": map[string]any{"order": "${steps.prep.output}"}},
			{"id": "done", "after": []string{"ship"}, "input": "${steps.ship.output.tracking}"},
		}},
		{"name": "kchild", "version": "1", "steps": []map[string]any{
			{"id": "label", "input": map[string]any{"for": "${input.order}"}},
		}},
	}
}

// itemOutput is what the worker answers for map element n.
func itemOutput(n int) int { return n*7 + 3 }

// TestKillInstanceMidMap: kill -9 an API instance while a map step is
// half done and some of its items are leased through that instance. Part
// of those leases are completed through another instance after the kill
// (the worker survives, its instance did not), part are abandoned (the
// worker went down with it): the reaper recovers them. The instance comes
// back. The map's output has every item once, in input order.
//
// TestKillInstanceMidChild: kill -9 the instance that committed the step
// before a child step (the child's start is its after-commit work) and the
// instance that completed the child's last step (the parent's resume is
// its after-commit work); the reaper finishes both, the parent sees the
// child's output.
func TestKillInstanceMidFlows(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process: not in -short mode (make test runs it)")
	}
	bin := buildCairn(t)
	stores := map[string]func(t *testing.T) (string, []string){
		"file": func(t *testing.T) (string, []string) {
			return "file://" + t.TempDir() + "?nosync=true", nil
		},
		"minio": func(t *testing.T) (string, []string) {
			mc := minioForKill(t)
			bucket := testinfra.NewBucketName(t)
			mc.CreateBucket(t, bucket)
			return "s3://" + bucket + "?endpoint=" + mc.Endpoint + "&use_path_style=true&region=" + mc.Region,
				[]string{"AWS_ACCESS_KEY_ID=" + mc.AccessKey, "AWS_SECRET_ACCESS_KEY=" + mc.SecretKey}
		},
	}
	for _, name := range []string{"file", "minio"} {
		t.Run(name, func(t *testing.T) {
			url, env := stores[name](t)
			c := newKillCluster(t, bin, url, env...)
			if s, err := try("POST", c.base(1)+"/workers/register", map[string]any{"worker_id": "kw", "workflows": killFlows()}, nil); err != nil || s != 200 {
				t.Fatalf("register: %d %v", s, err)
			}
			t.Run("map", func(t *testing.T) { killMidMap(t, c) })
			t.Run("child", func(t *testing.T) { killMidChild(t, c) })
		})
	}
}

func killMidMap(t *testing.T, c *killCluster) {
	const victim = 0
	var started struct {
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	if s, err := try("POST", c.base(1)+"/runs", map[string]any{"workflow": "kmap", "input": map[string]any{}}, &started); err != nil || s != 201 {
		t.Fatalf("start: %d %v", s, err)
	}
	run := started.Run.ID

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		killed   = make(chan struct{}) // closed after the victim died
		parkedMu sync.Mutex
		parked   []itemLease // leases of items claimed through the victim, held across the kill
		parkedN  atomic.Int64
		done     atomic.Int64 // answers the engine accepted (a retried answer may count twice)
		leasesMu sync.Mutex
		leases   = map[int]int{} // leases handed out per item
		errs     = make(chan error, 16)
	)
	arm := make(chan struct{}) // closed when enough items are done: park the victim's leases
	var armOnce sync.Once

	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	// complete answers lease l on instance i, falling back to the others
	// while i is down. 4xx (a lease lost to the reaper, an answer already
	// applied) is final.
	complete := func(i int, l itemLease, out any) {
		for ctx.Err() == nil {
			changed := c.changes()
			for k := range 3 {
				j := (i + k) % 3
				if !c.alive(j) {
					continue
				}
				s, err := try("POST", c.base(j)+"/steps/"+l.ID+"/complete", map[string]any{"output": out}, nil)
				if err == nil {
					if s == 200 {
						done.Add(1)
					}
					return
				}
				if !errors.Is(err, errDown) {
					report(err)
					return
				}
			}
			// No instance took it: wait for one to come back. An
			// instance still serving that failed the request (no kill
			// explains it) gets another try after a short backoff, which
			// an instance's return cuts short.
			select {
			case <-ctx.Done():
			case <-changed:
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	answer := func(l itemLease) (any, bool) {
		switch l.Step {
		case "fetch":
			xs := make([]int, mapItems)
			for i := range xs {
				xs[i] = i
			}
			return map[string]any{"items": xs}, true
		case "each":
			var n int
			if l.Item == nil || json.Unmarshal(l.Input, &n) != nil || n != *l.Item {
				select {
				case errs <- fmt.Errorf("item lease %v with input %s", l.Item, l.Input):
				default:
				}
				return nil, false
			}
			return itemOutput(n), true
		default:
			return json.RawMessage(l.Input), true
		}
	}

	var wg sync.WaitGroup
	for w := range 6 {
		inst := w % 3
		wg.Go(func() {
			for ctx.Err() == nil {
				changed := c.changes()
				if !c.alive(inst) {
					// Its instance is down: wait until it serves again.
					select {
					case <-ctx.Done():
					case <-changed:
					}
					continue
				}
				var out struct {
					Leases []itemLease `json:"leases"`
				}
				s, err := try("POST", c.base(inst)+"/steps/claim", map[string]any{"worker_id": "kw", "max": 4, "wait_ms": 500, "run": run}, &out)
				switch {
				case errors.Is(err, errDown):
					// Killed under the claim (it is marked down before the
					// kill: the loop then waits for its return), or failed
					// while serving: another try after a short backoff,
					// cut short by any instance's change.
					select {
					case <-ctx.Done():
					case <-changed:
					case <-time.After(20 * time.Millisecond):
					}
					continue
				case err != nil:
					report(err)
					return
				case s == http.StatusConflict:
					return // run_terminal: the run ended, nothing more to claim
				case s != 200:
					report(fmt.Errorf("claim on instance %d: HTTP %d", inst, s))
					return
				}
				for _, l := range out.Leases {
					if l.Item != nil {
						leasesMu.Lock()
						leases[*l.Item]++
						leasesMu.Unlock()
					}
					res, ok := answer(l)
					if !ok {
						continue
					}
					if inst == victim && l.Step == "each" {
						select {
						case <-arm:
							select {
							case <-killed:
							default:
								// Held through the kill.
								parkedMu.Lock()
								parked = append(parked, l)
								parkedMu.Unlock()
								parkedN.Add(1)
								continue
							}
						default:
						}
					}
					complete(inst, l, res)
				}
			}
		})
	}
	defer wg.Wait()
	defer cancel()

	// Mid-way: a third of the items done, then hold the victim's next
	// leases until at least 6 are parked, and kill it.
	// failed fails the test on an error a worker stopped on: the run
	// would not go on without it.
	failed := func() {
		t.Helper()
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	c.awaitRun(t, run, 30*time.Second, "a third of the items done", func(r flowRun) bool {
		failed()
		m := r.step("each").Map
		return m != nil && m.Completed >= mapItems/3
	})
	armOnce.Do(func() { close(arm) })
	testutil.Eventually(t, 20*time.Second, "6 leases parked on the victim", func() (bool, string) {
		n := parkedN.Load()
		return n >= 6, fmt.Sprintf("%d parked", n)
	})
	mid := c.view(t, run).step("each").Map
	c.kill(victim)
	close(killed)
	t.Logf("killed instance %d with %d/%d items completed, %d running, %d leases held through it", victim, mid.Completed, mid.Total, mid.Running, parkedN.Load())
	if mid.Completed >= mapItems {
		t.Fatalf("the map was over before the kill")
	}

	// Half the parked leases: the worker survives and answers through
	// another instance. The other half: abandoned, for the reaper.
	parkedMu.Lock()
	held := parked
	parkedMu.Unlock()
	var abandoned []int
	for i, l := range held {
		if i%2 == 0 {
			res, _ := answer(l)
			complete(victim, l, res)
		} else {
			abandoned = append(abandoned, *l.Item)
		}
	}
	// The victim comes back while the map finishes.
	c.serve(victim)

	r := c.awaitRun(t, run, 45*time.Second, "completed", func(r flowRun) bool {
		failed()
		return r.Status != "running"
	})
	cancel()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if r.Status != "completed" {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	var outs []int
	if err := json.Unmarshal(r.step("each").Output, &outs); err != nil || len(outs) != mapItems {
		t.Fatalf("map output (%v) %s", err, tail(string(r.step("each").Output), 300))
	}
	for i, o := range outs {
		if o != itemOutput(i) {
			t.Fatalf("map output[%d] = %d, want %d: items out of order or doubled", i, o, itemOutput(i))
		}
	}
	if m := r.step("each").Map; m == nil || m.Total != mapItems || m.Completed != mapItems || m.Running != 0 {
		t.Fatalf("map progress %+v", m)
	}
	if string(r.Output) != fmt.Sprint(mapItems) {
		t.Fatalf("sum saw %s items", r.Output)
	}
	// Every abandoned item was recovered: its lease expired, the reaper
	// made it ready again, a worker claimed it again.
	wg.Wait()
	leasesMu.Lock()
	defer leasesMu.Unlock()
	for _, n := range abandoned {
		if leases[n] < 2 {
			t.Fatalf("abandoned item %d was leased %d times: not recovered", n, leases[n])
		}
	}
	total := 0
	for _, k := range leases {
		total += k
	}
	t.Logf("map completed: %d item leases, %d answers accepted (2 of them fetch and sum) for %d items; %d abandoned items re-leased", total, done.Load(), mapItems, len(abandoned))
}

func killMidChild(t *testing.T, c *killCluster) {
	// worker claims one lease of run through instance i and completes it
	// there with out.
	claimOn := func(i int, run string, out func(itemLease) any) itemLease {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			var res struct {
				Leases []itemLease `json:"leases"`
			}
			s, err := try("POST", c.base(i)+"/steps/claim", map[string]any{"worker_id": "kw", "max": 1, "wait_ms": 1000, "run": run}, &res)
			if err != nil || s != 200 {
				t.Fatalf("claim on %d: %d %v", i, s, err)
			}
			if len(res.Leases) == 1 {
				l := res.Leases[0]
				if s, err := try("POST", c.base(i)+"/steps/"+l.ID+"/complete", map[string]any{"output": out(l)}, nil); err != nil || s != 200 {
					t.Fatalf("complete %s on %d: %d %v", l.Step, i, s, err)
				}
				return l
			}
		}
		t.Fatalf("nothing to claim of run %s on instance %d", run, i)
		return itemLease{}
	}
	start := func(i int, order string) string {
		var out struct {
			Run struct {
				ID string `json:"id"`
			} `json:"run"`
		}
		if s, err := try("POST", c.base(i)+"/runs", map[string]any{"workflow": "kparent", "input": map[string]any{"order": order}}, &out); err != nil || s != 201 {
			t.Fatalf("start: %d %v", s, err)
		}
		return out.Run.ID
	}
	tracking := func(l itemLease) any {
		var in struct {
			For string `json:"for"`
		}
		json.Unmarshal(l.Input, &in)
		return map[string]any{"tracking": "T-" + in.For}
	}
	echo := func(l itemLease) any { return json.RawMessage(l.Input) }

	for round, victim := range []int{1, 2} {
		other := (victim + 1) % 3
		order := fmt.Sprintf("o-%d", round)
		run := start(other, order)

		// Kill 1: the victim commits prep; its after-commit work starts
		// the child. Killed at once, the child may or may not exist: the
		// reaper makes sure there is exactly one.
		claimOn(victim, run, func(itemLease) any { return order })
		c.kill(victim)
		p := c.awaitRun(t, run, 20*time.Second, "child started", func(r flowRun) bool {
			return r.step("ship").Child != "" && r.step("ship").Status == "child_running"
		})
		child := p.step("ship").Child
		c.serve(victim)

		// Kill 2: the victim completes the child's only step, which ends
		// the child run; resuming the parent is its after-commit work.
		l := claimOn(victim, child, tracking)
		if l.Step != "label" || string(l.Input) != `{"for":"`+order+`"}` {
			t.Fatalf("child lease %s %s", l.Step, l.Input)
		}
		c.kill(victim)
		c.awaitRun(t, run, 20*time.Second, "ship completed", func(r flowRun) bool {
			return r.step("ship").Status == "completed"
		})
		c.serve(victim)
		d := claimOn(other, run, echo)
		if d.Step != "done" || string(d.Input) != `"T-`+order+`"` {
			t.Fatalf("parent's done got %s %s, want the child's tracking", d.Step, d.Input)
		}
		r := c.awaitRun(t, run, 10*time.Second, "completed", func(r flowRun) bool { return r.Status != "running" })
		if r.Status != "completed" || string(r.Output) != `"T-`+order+`"` {
			t.Fatalf("parent %s output %s error %s", r.Status, r.Output, r.Error)
		}
		if s := r.step("ship"); s.Child != child || !strings.Contains(string(s.Output), "T-"+order) {
			t.Fatalf("ship child %s output %s", s.Child, s.Output)
		}
		if cr := c.view(t, child); cr.Status != "completed" {
			t.Fatalf("child %s", cr.Status)
		}
		// Exactly one child run: the list of kchild runs has one per round.
		var list struct {
			Runs []struct {
				ID string `json:"id"`
			} `json:"runs"`
		}
		if s, err := try("GET", c.base(other)+"/runs?workflow=kchild&limit=100", nil, &list); err != nil || s != 200 {
			t.Fatalf("list: %d %v", s, err)
		}
		n := 0
		for _, cr := range list.Runs {
			if c.view(t, cr.ID).Parent == run {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d child runs of %s", n, run)
		}
	}
}

// minioForKill is the test binary's MinIO container, or, with the MinIO
// binary at hand (CAIRN_MINIO_BIN, exported by scripts/testenv.sh), a
// MinIO process of this test on a free loopback port: the pattern of the
// chaos suite's MinIO round, which does not depend on the container engine.
func minioForKill(t *testing.T) *testinfra.MinIOEndpoint {
	bin := os.Getenv("CAIRN_MINIO_BIN")
	if bin == "" {
		return testinfra.MinIO(t)
	}
	addr, console := testinfra.FreeAddr(t), testinfra.FreeAddr(t)
	ep := &testinfra.MinIOEndpoint{Endpoint: "http://" + addr, AccessKey: "minioadmin", SecretKey: "minioadmin", Region: "us-east-1"}
	cmd := exec.Command(bin, "server", t.TempDir(), "--address", addr, "--console-address", console, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+ep.AccessKey, "MINIO_ROOT_PASSWORD="+ep.SecretKey, "MINIO_BROWSER=off", "MINIO_UPDATE=off")
	var logs testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("minio:\n%s", tail(logs.String(), 2000))
		}
	})
	testutil.EventuallyEvery(t, 60*time.Second, 50*time.Millisecond, "minio ready at "+ep.Endpoint, func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("minio exited: %s", tail(logs.String(), 2000))
		default:
		}
		res, err := http.Get(ep.Endpoint + "/minio/health/ready")
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return res.StatusCode == 200, "ready probe " + res.Status
	})
	return ep
}
