package render

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// intsInput is {"xs": [1, 2, …, n]}.
func intsInput(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"xs":[`)
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

// nestedMapTemplate multiplies every pair of input.xs: 2.25M products for
// 1,500 ints.
const nestedMapTemplate = `{"m": "${input.xs.map(x, input.xs.map(y, x*y))}"}`

// BenchmarkRenderBounded renders the nested-map template over 1,500 ints:
// unbounded it runs to completion (seconds, hundreds of MB); bounded it
// is refused at the cost limit.
func BenchmarkRenderBounded(b *testing.B) {
	tpl, err := Compile(json.RawMessage(nestedMapTemplate))
	if err != nil {
		b.Fatal(err)
	}
	vars := Vars{Input: intsInput(1500)}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_, _ = tpl.Render(vars)
	}
}

// typicalTemplate is what templates mostly look like: selections, a little
// arithmetic and interpolation, one map over a short list.
const typicalTemplate = `{
	"id": "${run.id}",
	"prev": "${steps.a.output}",
	"n": "${input.n + 1}",
	"label": "item ${input.n} of ${size(input.xs)}",
	"doubled": "${input.xs.map(x, x * 2)}",
	"literal": [1, "two", {"three": 3}]
}`

// BenchmarkRenderTypical is the price of the bounds on an ordinary
// template.
func BenchmarkRenderTypical(b *testing.B) {
	tpl, err := Compile(json.RawMessage(typicalTemplate))
	if err != nil {
		b.Fatal(err)
	}
	vars := Vars{
		Input: json.RawMessage(`{"n": 41, "xs": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}`),
		Steps: map[string]json.RawMessage{"a": json.RawMessage(`{"ok": true, "items": ["a", "b", "c"]}`)},
		RunID: "run-1", Workflow: "w", Version: "1",
	}
	if _, err := tpl.Render(vars); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := tpl.Render(vars); err != nil {
			b.Fatal(err)
		}
	}
}
