package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/sdk"
)

// The workflows the benchmark runs, every step a no-op.
const (
	wfLinear = "e2e-linear5"
	wfFanout = "e2e-fanout200"
	wfSingle = "e2e-single"
	// wfChain and wfFunction are the same work, chainSteps no-op steps in
	// a row: a DAG, and a durable function.
	wfChain    = "e2e-chain1000"
	wfFunction = "e2e-function1000"
	chainSteps = 1000

	linearSteps = 5
	fanoutWidth = 200
)

// workflows returns the benchmark's workflow definitions. The single
// step's output is the wall-clock time (Unix ns) its body started: the
// bench and the worker share a machine, so the bench can tell how long an
// idle worker took to pick a new run up.
func workflows() []*sdk.WorkflowDef {
	noop := sdk.Handle(func(sdk.StepContext, struct{}) (struct{}, error) { return struct{}{}, nil })
	linear := sequence(wfLinear, "s", linearSteps, noop)
	fan := sdk.Workflow(wfFanout, "1")
	for i := range fanoutWidth {
		fan.Task(fmt.Sprintf("p%03d", i), noop)
	}
	single := sdk.Workflow(wfSingle, "1").Task("only", sdk.Handle(func(sdk.StepContext, struct{}) (string, error) {
		return strconv.FormatInt(time.Now().UnixNano(), 10), nil
	}))
	chain := sequence(wfChain, "c", chainSteps, noop)
	function := sdk.Function(wfFunction, "1", func(fc *sdk.Durable, _ struct{}) (int, error) {
		for i := range chainSteps {
			if _, err := sdk.Step(fc, "c", func(context.Context) (int, error) { return i, nil }); err != nil {
				return 0, err
			}
		}
		return chainSteps, nil
	})
	return []*sdk.WorkflowDef{linear, fan, single, chain, function}
}

// sequence is workflow name at version 1: n steps prefix0 … prefix(n-1)
// running body, each after the one before.
func sequence(name, prefix string, n int, body sdk.Handler) *sdk.WorkflowDef {
	wf := sdk.Workflow(name, "1")
	for i := range n {
		var opts []sdk.StepOption
		if i > 0 {
			opts = append(opts, sdk.After(fmt.Sprintf("%s%d", prefix, i-1)))
		}
		wf.Task(fmt.Sprintf("%s%d", prefix, i), body, opts...)
	}
	return wf
}

// workerMain is the worker process: one SDK worker with `slots` slots on
// server, serving until SIGTERM. It prints "ready" once registered.
func workerMain(server string, slots int) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := sdk.NewClient(server)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := sdk.NewWorker(c, sdk.WithConcurrency(slots), sdk.WithName("e2e-bench"),
		sdk.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))).Register(workflows()...)
	go func() {
		select {
		case <-w.Ready():
			fmt.Println("ready")
		case <-ctx.Done():
		}
	}()
	if err := w.Serve(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}
