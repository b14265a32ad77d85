package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk"
)

// Exec is one execution of a step body, appended by the worker to the
// execution log before the body returns: the ground truth the checks
// compare the store's records with.
type Exec struct {
	Run      string `json:"run"`
	Workflow string `json:"workflow"`
	Step     string `json:"step"`
	Attempt  int    `json:"attempt"`
	Lease    string `json:"lease"`
	Worker   string `json:"worker"`
	Delivery string `json:"delivery"`
	// Nonce is the body's output: unique per execution, so a recorded
	// output names the execution it came from.
	Nonce string `json:"nonce"`
	// Failed: the body returned an error instead of its output.
	Failed bool `json:"failed,omitempty"`
	// Op is, for a step of a durable function, the operation's id (Step is
	// the function's step).
	Op string `json:"op,omitempty"`
}

// Output is what every chaos body returns.
type Output struct {
	Nonce string `json:"nonce"`
}

// Input is what the driver starts runs with.
type Input struct {
	// WorkMs bounds each body's simulated work.
	WorkMs int `json:"work_ms"`
	// SlowMs is the slow workflow's body duration (cancelled mid-run).
	SlowMs int `json:"slow_ms,omitempty"`
}

// Workflow names of the chaos workloads.
const (
	WfLinear = "chaos-linear"
	WfFanout = "chaos-fanout"
	WfAMO    = "chaos-amo"
	WfWait   = "chaos-wait"
	WfSleep  = "chaos-sleep"
	WfFlaky  = "chaos-flaky"
	WfSlow   = "chaos-slow"
	// WfFunction is a durable function: a step, an at_most_once step, a
	// sleep that suspends it, and a last step whose result it returns.
	WfFunction = "chaos-fn"
	// FunctionOnce is the function's at_most_once operation.
	FunctionOnce = "/once#0"
	// FanoutWidth is how many parallel branches the fan-out has.
	FanoutWidth = 8
	// WaitEvent is the event the wait workflow waits for.
	WaitEvent = "go"
	// WfTriggered is started by publishing TriggerEvent (POST /events),
	// its id the job's key: a retried publish must start nothing twice.
	WfTriggered  = "chaos-triggered"
	TriggerEvent = "chaos.order"
)

// Workflows lists every chaos workload's workflow name.
var Workflows = []string{WfLinear, WfFanout, WfAMO, WfWait, WfSleep, WfFlaky, WfSlow, WfFunction, WfTriggered}

// execLog appends Exec lines to a file with O_APPEND: each line is one
// write(2) below PIPE_BUF, so lines from many processes never interleave
// and a kill -9 loses nothing already written.
type execLog struct {
	mu sync.Mutex
	f  *os.File
}

func openExecLog(path string) (*execLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &execLog{f: f}, nil
}

func (l *execLog) add(e Exec) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.f.Write(b)
	return err
}

// Defs returns the chaos workflows with bodies that log each execution to
// log and draw their work time and nonces from rng.
func defs(log *execLog, worker string) []*sdk.WorkflowDef {
	work := executor(log, worker)
	body := func(fail func(sdk.StepContext) error) sdk.Handler {
		return sdk.Handle(func(ctx sdk.StepContext, in Input) (Output, error) {
			var f func() error
			if fail != nil {
				f = func() error { return fail(ctx) }
			}
			return work(ctx, ctx.Info(), "", in, f)
		})
	}
	in := sdk.Input(map[string]any{"work_ms": "${input.work_ms}"})
	linear := sdk.Workflow(WfLinear, "1").
		Task("a", body(nil), in).
		Task("b", body(nil), in, sdk.After("a")).
		Task("c", body(nil), in, sdk.After("b"))
	fan := sdk.Workflow(WfFanout, "1").Task("split", body(nil), in)
	var branches []string
	for i := range FanoutWidth {
		id := fmt.Sprintf("p%d", i)
		branches = append(branches, id)
		fan.Task(id, body(nil), in, sdk.After("split"))
	}
	fan.Task("join", body(nil), in, sdk.After(branches...))
	amo := sdk.Workflow(WfAMO, "1").
		Task("prep", body(nil), in).
		Task("once", body(nil), in, sdk.After("prep"), sdk.AtMostOnce()).
		Task("after", body(nil), in, sdk.After("once"))
	wait := sdk.Workflow(WfWait, "1").
		Task("t1", body(nil), in).
		Wait("w", WaitEvent, sdk.After("t1")).
		Task("t2", body(nil), in, sdk.After("w"))
	sleep := sdk.Workflow(WfSleep, "1").
		Task("t1", body(nil), in).
		Sleep("s", 300*time.Millisecond, sdk.After("t1")).
		Task("t2", body(nil), in, sdk.After("s"))
	flaky := sdk.Workflow(WfFlaky, "1").
		Task("flaky", body(func(ctx sdk.StepContext) error {
			if ctx.Info().Attempt <= 2 {
				return sdk.Retryable(errors.New("chaos: planned failure"))
			}
			return nil
		}), in, sdk.Retry(sdk.RetryPolicy{MaxAttempts: 8, InitialBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, Multiplier: 2})).
		Task("after", body(nil), in, sdk.After("flaky"))
	slow := sdk.Workflow(WfSlow, "1").
		Task("slow", body(nil), sdk.Input(map[string]any{"slow_ms": "${input.slow_ms}"})).
		Task("after", body(nil), in, sdk.After("slow"))
	triggered := sdk.Workflow(WfTriggered, "1").On(TriggerEvent, "").
		Task("t1", body(nil), in).
		Task("t2", body(nil), in, sdk.After("t1"))
	return []*sdk.WorkflowDef{linear, fan, amo, wait, sleep, flaky, slow, function(work), triggered}
}

// function is the durable function workload, its steps executions of work.
func function(work execFunc) *sdk.WorkflowDef {
	return sdk.Function(WfFunction, "1", func(fc *sdk.Durable, in Input) (Output, error) {
		op := func(name string, opts ...sdk.StepOption) (Output, error) {
			return sdk.Step(fc, name, func(ctx context.Context) (Output, error) {
				info := fc.Info() // the function's attempt; the operation's delivery
				if "/"+name+"#0" == FunctionOnce {
					info.Delivery = cairn.AtMostOnce
				}
				return work(ctx, info, "/"+name+"#0", in, nil)
			}, opts...)
		}
		if _, err := op("a"); err != nil {
			return Output{}, err
		}
		if _, err := op("once", sdk.AtMostOnce()); err != nil {
			return Output{}, err
		}
		if err := fc.Sleep("nap", 2500*time.Millisecond); err != nil { // suspends: past the inline bound
			return Output{}, err
		}
		return op("b")
	})
}

// execFunc is one execution of a chaos body (op names a function's
// operation, "" for a task): simulated work, then its Exec logged.
type execFunc = func(ctx context.Context, info sdk.StepInfo, op string, in Input, fail func() error) (Output, error)

// executor returns the executions of worker's bodies, their work times and
// nonces drawn from a random source of their own.
func executor(log *execLog, worker string) execFunc {
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	return func(ctx context.Context, info sdk.StepInfo, op string, in Input, fail func() error) (Output, error) {
		rmu.Lock()
		nonce := fmt.Sprintf("%016x", rng.Uint64())
		work := time.Duration(0)
		if in.WorkMs > 0 {
			work = time.Duration(rng.IntN(in.WorkMs)) * time.Millisecond
		}
		rmu.Unlock()
		if info.Workflow == WfSlow && in.SlowMs > 0 {
			work = time.Duration(in.SlowMs) * time.Millisecond
		}
		select {
		case <-time.After(work):
		case <-ctx.Done():
			return Output{}, context.Cause(ctx)
		}
		e := Exec{Run: info.Run, Workflow: info.Workflow, Step: info.Step, Attempt: info.Attempt, Lease: info.Lease,
			Worker: worker, Delivery: string(info.Delivery), Nonce: nonce, Op: op}
		var ferr error
		if fail != nil {
			ferr = fail()
		}
		e.Failed = ferr != nil
		if err := log.add(e); err != nil {
			return Output{}, fmt.Errorf("exec log: %w", err)
		}
		if ferr != nil {
			return Output{}, ferr
		}
		return Output{Nonce: nonce}, nil
	}
}
