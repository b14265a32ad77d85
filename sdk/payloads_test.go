package sdk

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

type bigValue struct {
	N   int    `json:"n"`
	Pad string `json:"pad"`
}

func big(n, size int) bigValue { return bigValue{N: n, Pad: strings.Repeat("p", size)} }

// Large values by reference, end to end through the SDK: a 150 KB start
// input reaches a typed body (read through the lease before started), a
// 200 KB output and state value are read by a later step's template and
// through StepContext.Output and State, and the run the client returns
// (the server resolving none of them: ViewResolveBytes 1) holds every
// value itself, the two sinks' output object included.
func TestPayloadsByReferenceEndToEnd(t *testing.T) {
	e := newEnv(t, sdktest.Options{Engine: engine.Config{ViewResolveBytes: 1}})
	wf := Workflow("bigflow", "1").
		Task("first", Handle(func(ctx StepContext, in bigValue) (bigValue, error) {
			if in.N != 1 || len(in.Pad) != 150<<10 {
				return bigValue{}, Fatal(errString("input not resolved"))
			}
			if err := ctx.SetState("blob", big(3, 200<<10)); err != nil {
				return bigValue{}, err
			}
			return big(2, 200<<10), nil
		})).
		Task("second", Handle(func(ctx StepContext, in struct{ N, S int }) (bigValue, error) {
			var out, st bigValue
			if err := ctx.Output("first", &out); err != nil {
				return bigValue{}, Fatal(err)
			}
			if err := ctx.State("blob", &st); err != nil {
				return bigValue{}, Fatal(err)
			}
			if in.N != 2 || in.S != 3 || out.N != 2 || len(out.Pad) != 200<<10 || st.N != 3 || len(st.Pad) != 200<<10 {
				return bigValue{}, Fatal(errString("values by reference not resolved"))
			}
			if o := ctx.Outputs()["first"]; cairn.IsPayloadRefJSON(o) {
				return bigValue{}, Fatal(errString("Outputs holds a reference"))
			}
			return big(4, 100<<10), nil
		}), After("first"), Input(map[string]any{"n": "${steps.first.output.n}", "s": "${state.blob.n}"})).
		Task("third", Handle(func(ctx StepContext, _ struct{}) (bigValue, error) {
			return big(5, 100<<10), nil
		}), After("first"))
	serve(t, NewWorker(e.c, WithLogger(quiet())).Register(wf))
	r := waitRun(t, e.c, start(t, e.c, "bigflow", StartOptions{Input: big(1, 150<<10)}).ID, 20*time.Second)
	if r.Status != RunCompleted {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	var in, out1, st bigValue
	var sinks map[string]bigValue
	for _, x := range []struct {
		raw json.RawMessage
		v   any
	}{{r.Input, &in}, {r.Step("first").Output, &out1}, {r.State["blob"], &st}, {r.Output, &sinks}} {
		if err := json.Unmarshal(x.raw, x.v); err != nil {
			t.Fatalf("%.80s: %v", x.raw, err)
		}
	}
	if in.N != 1 || out1.N != 2 || st.N != 3 || sinks["second"].N != 4 || sinks["third"].N != 5 || len(sinks["third"].Pad) != 100<<10 {
		t.Fatalf("values: %d %d %d %+v", in.N, out1.N, st.N, len(sinks))
	}
}

type errString string

func (e errString) Error() string { return string(e) }
