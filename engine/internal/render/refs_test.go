package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
)

// TestPayloadRefNeeds: a template resolves only the references its
// expressions read.
func TestPayloadRefNeeds(t *testing.T) {
	tpl, err := Compile(json.RawMessage(`{"a":"${steps.a.output.x + state.k}","b":"${has(steps.b.output.y)}","c":"${steps['c'].output}"}`))
	if err != nil {
		t.Fatal(err)
	}
	n := tpl.needs
	if n.input || n.allSteps || n.allState || !n.steps["a"] || !n.steps["b"] || !n.steps["c"] || len(n.steps) != 3 || !n.state["k"] || len(n.state) != 1 {
		t.Fatalf("needs %+v", n)
	}
	tpl, _ = Compile(json.RawMessage(`"${steps.map(k, k).size() + size(input)}"`))
	if !tpl.needs.allSteps || !tpl.needs.input {
		t.Fatalf("needs %+v", tpl.needs)
	}
	// Rendering reads only what is needed.
	read := 0
	ref := cairn.PayloadRef{SHA256: strings.Repeat("0", 64), Bytes: 9}.JSON()
	tpl, _ = Compile(json.RawMessage(`"${steps.a.output}"`))
	out, err := tpl.Render(Vars{
		Steps: map[string]json.RawMessage{"a": ref, "b": ref},
		Resolve: func(json.RawMessage) (json.RawMessage, error) {
			read++
			return json.RawMessage(`"v"`), nil
		},
	})
	if err != nil || string(out) != `"v"` || read != 1 {
		t.Fatalf("render %s %v, %d reads", out, err, read)
	}
}
