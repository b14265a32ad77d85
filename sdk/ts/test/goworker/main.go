// Command goworker is the Go half of the TypeScript SDK's mixed-fleet
// tests: it serves step "a" of workflow "mixed" and refuses step "b" as
// unservable, which the TypeScript worker serves
// (sdk/ts/src/test/mixed.test.ts), and serves the durable function
// "mixed-fn", whose attempts alternate between this worker and the
// TypeScript one, each replaying what the other recorded
// (sdk/ts/src/test/function-mixed.test.ts), and the durable function
// "go-invoker", which runs the workflow "ts-billing" that only the
// TypeScript worker serves. Given a keyring in $CAIRN_GO_WORKER_KEYRING
// (its JSON form), its client encrypts and decodes with it, and it
// serves the Go steps of the encrypted workflow "secret-mixed"
// (sdk/ts/src/test/codec-mixed.test.ts).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/codec"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var copts []sdk.ClientOption
	var defs []*sdk.WorkflowDef
	if k := os.Getenv("CAIRN_GO_WORKER_KEYRING"); k != "" {
		ring, err := codec.ParseKeyring([]byte(k))
		if err != nil {
			log.Error("keyring", "err", err)
			os.Exit(1)
		}
		copts = append(copts, sdk.WithCodec(ring))
		defs = append(defs, secretMixed())
	}
	c, err := sdk.ClientFromEnv(copts...)
	if err != nil {
		log.Error("client", "err", err)
		os.Exit(1)
	}
	wf := sdk.Workflow("mixed", "1").
		Task("a", sdk.Handle(func(ctx sdk.StepContext, in struct{ N int }) (map[string]any, error) {
			return map[string]any{"by": "go", "n": in.N * 2}, nil
		})).
		Task("b", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (any, error) {
			return nil, sdk.Failure("unservable", errors.New("step b is served by the TypeScript worker"))
		}), sdk.After("a"), sdk.Input("${steps.a.output}"))
	w := sdk.NewWorker(c, sdk.WithName("go-worker"), sdk.WithLogger(log)).Register(append(defs, wf, mixedFunction(), invoker())...)
	go func() { <-w.Ready(); os.Stdout.WriteString("ready\n") }()
	if err := w.Serve(ctx); err != nil {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}

// mixedOut is the output of the function "mixed-fn".
type mixedOut struct {
	ID     string    `json:"id"`
	Now    time.Time `json:"now"`
	Random float64   `json:"random"`
	Charge any       `json:"charge"`
	Ship   any       `json:"ship"`
	Finish any       `json:"finish"`
}

// mixedFunction is the function "mixed-fn" as the TypeScript test writes
// it, operation for operation; its steps say which language ran them.
// Each sleep suspends it, so each attempt may run on another worker. Its
// naps last $CAIRN_MIXED_NAP (default 2.5 s): a test on a server with a
// test clock makes them an hour and moves the clock past each, so that no
// nap ends before the test has stopped the worker that must not take it.
func mixedFunction() *sdk.WorkflowDef {
	nap := 2500 * time.Millisecond
	if d, err := time.ParseDuration(os.Getenv("CAIRN_MIXED_NAP")); err == nil {
		nap = d
	}
	by := func(context.Context) (map[string]any, error) { return map[string]any{"by": "go"}, nil }
	return sdk.Function("mixed-fn", "1", func(fc *sdk.Durable, in struct {
		N int `json:"n"`
	}) (mixedOut, error) {
		out := mixedOut{ID: fc.UUID(), Now: fc.Now(), Random: fc.Random()}
		var err error
		if out.Charge, err = sdk.Step(fc, "charge", func(context.Context) (map[string]any, error) {
			return map[string]any{"by": "go", "n": in.N * 2}, nil
		}); err != nil {
			return out, err
		}
		if err := fc.Sleep("nap", nap); err != nil {
			return out, err
		}
		if out.Ship, err = sdk.Step(fc, "ship", by); err != nil {
			return out, err
		}
		if err := fc.Sleep("nap", nap); err != nil {
			return out, err
		}
		out.Finish, err = sdk.Step(fc, "finish", by)
		return out, err
	})
}

// invoker is the function "go-invoker": it invokes "ts-billing" (a DAG
// the TypeScript test registers and serves) with its input and returns
// what it returned, or its error's class.
func invoker() *sdk.WorkflowDef {
	return sdk.Function("go-invoker", "1", func(fc *sdk.Durable, in map[string]any) (map[string]any, error) {
		out, err := sdk.Invoke[map[string]any](fc, "bill", sdk.Call{Workflow: "ts-billing", Input: in})
		if err != nil {
			return map[string]any{"class": sdk.ClassOf(err)}, nil
		}
		return out, nil
	})
}

// secretMixed is the encrypted workflow "secret-mixed" as the TypeScript
// test writes it: this worker serves a (it reads the run's input and
// writes an output and state, all encrypted by the other language or for
// it) and the function fn (its input the TypeScript step's output and an
// event's payload, its operation's result encrypted here); b is the
// TypeScript worker's.
func secretMixed() *sdk.WorkflowDef {
	return sdk.Workflow("secret-mixed", "1").Encrypted("tenant").
		Task("a", sdk.Handle(func(ctx sdk.StepContext, in struct {
			Card   string `json:"card"`
			Tenant string `json:"tenant"`
			Large  string `json:"large"`
		}) (map[string]any, error) {
			if !strings.HasPrefix(in.Card, "CARD-") || !strings.HasPrefix(in.Large, "LARGE-") {
				return nil, sdk.Fatal(fmt.Errorf("the input was not decoded: card %.80q, large %.80q", in.Card, in.Large))
			}
			if err := ctx.SetState("balance", map[string]string{"v": "GO-STATE-PLAIN"}); err != nil {
				return nil, err
			}
			return map[string]any{"note": "GO-OUTPUT-PLAIN", "card": in.Card, "large": len(in.Large)}, nil
		})).
		Task("b", sdk.Handle(func(ctx sdk.StepContext, _ struct{}) (any, error) {
			return nil, sdk.Failure("unservable", errors.New("step b is served by the TypeScript worker"))
		}), sdk.After("a"), sdk.Input(map[string]any{"prev": "${steps.a.output}", "tenant": "${input.tenant}"})).
		Wait("approve", "approve", sdk.After("b")).
		Function("fn", sdk.Durably(func(fc *sdk.Durable, in struct {
			Prev string            `json:"prev"`
			Ev   map[string]string `json:"ev"`
		}) (string, error) {
			v, err := sdk.Step(fc, "look", func(context.Context) (string, error) { return "GO-OPRESULT-PLAIN", nil })
			if err != nil {
				return "", err
			}
			return in.Prev + "+" + in.Ev["by"] + "+" + v, nil
		}), sdk.After("approve"), sdk.Input(map[string]any{"prev": "${steps.b.output}", "ev": "${steps.approve.output}"}))
}
