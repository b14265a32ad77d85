package render

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzTemplate: any input template either fails to compile or renders
// (or refuses) within the render limits' time; nothing panics.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{
		`"${input.x}"`, `{"a":"${input.x + 1}","b":["${steps.a.output}", 2]}`, `"${state.k} and ${run.id}"`,
		`"${[1,2,3].map(x, x * x)}"`, `"${input.s.size() > 3 ? 'long' : 'short'}"`, `"${unclosed"`,
		`"${'a'.repeat(1000000)}"`, `"${[1,2,3,4,5,6,7,8].map(a, [1,2,3,4,5,6,7,8].map(b, [1,2,3,4,5,6,7,8].map(c, a*b*c)))}"`,
	} {
		f.Add(s, `{"x":1,"s":"hello"}`)
	}
	f.Fuzz(func(t *testing.T, tmpl, input string) {
		if !json.Valid([]byte(tmpl)) {
			return
		}
		tp, err := Compile(json.RawMessage(tmpl))
		if err != nil {
			return
		}
		if !json.Valid([]byte(input)) {
			input = `{}`
		}
		t0 := time.Now()
		out, err := tp.Render(Vars{Input: json.RawMessage(input), RunID: "7YBQ8BJD03WTTD0XEM50YZFHTH", Workflow: "w", Version: "1",
			Steps: map[string]json.RawMessage{"a": json.RawMessage(`{"n":[1,2,3]}`)}})
		if d := time.Since(t0); d > 5*time.Second {
			t.Fatalf("rendering %s took %v: the cost limit does not bound it", tmpl, d)
		}
		if err == nil && !json.Valid(out) {
			t.Fatalf("rendered invalid JSON %q", out)
		}
	})
}
