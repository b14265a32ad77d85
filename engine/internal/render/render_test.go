package render

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// renderVarsForTests is what the table in TestRenderTemplates renders with.
var renderVarsForTests = Vars{
	Input: json.RawMessage(`{"n": 41, "f": 2.5, "xs": [1, 2, 3], "s": "<script>&amp;</script>",
		"obj": {"z": 1, "a": [1.5, "x", null, false], "m": {}}, "big": 123456789012345678}`),
	Steps: map[string]json.RawMessage{"a": json.RawMessage(`{"ok": true, "items": ["a", "b", "c"]}`)},
	RunID: "run-1", Workflow: "w", Version: "1",
}

// TestRenderTemplates: ordinary templates render byte for byte as they
// did before rendering was bounded and metered (every expected output was
// recorded from the unbounded renderer, which went through structpb and
// protojson).
func TestRenderTemplates(t *testing.T) {
	for _, c := range []struct{ tpl, want string }{
		{typicalTemplate, `{"doubled":[2,4,6],"id":"run-1","label":"item 41 of 3","literal":[1,"two",{"three":3}],"n":42,"prev":{"items":["a","b","c"],"ok":true}}`},
		{`"${input}"`, `{"big":"123456789012345678","f":2.5,"n":41,"obj":{"a":[1.5,"x",null,false],"m":{},"z":1},"s":"\u003cscript\u003e\u0026amp;\u003c/script\u003e","xs":[1,2,3]}`},
		{`"${input.f}"`, `2.5`},
		{`"${input.f * 2.0}"`, `5`},
		{`"${3.0}"`, `3`},
		{`"${1e21}"`, `1e+21`},
		{`"${1e-7}"`, `1e-7`},
		{`"${[1.5, 2.0, 1e300]}"`, `[1.5,2,1e+300]`},
		{`"${9007199254740993}"`, `"9007199254740993"`},
		{`"${[9007199254740993]}"`, `["9007199254740993"]`},
		{`"${18446744073709551615u}"`, `"18446744073709551615"`},
		{`"${'<a&b>' + '\u2028'}"`, `"\u003ca\u0026b\u003e\u2028"`},
		{`"${'tab\\there\\nnl \\u0001 \\\"q\\\" \\\\ / é'}"`, `"tab\there\nnl \u0001 \"q\" \\ / é"`},
		{`"x${'tab\\there\\nnl \\u0001 \\\"q\\\" \\\\ / é <&>'}"`, `"xtab\there\nnl \u0001 \"q\" \\ / é \u003c\u0026\u003e"`},
		{`"${[-0.0, 0.5e-6, 123456789.125, 1e20, 1e21, -1.5]}"`, `[-0,5e-7,123456789.125,100000000000000000000,1e+21,-1.5]`},
		{`"${{'k': [9007199254740991, -9007199254740991, 9007199254740992, -9007199254740992]}}"`, `{"k":[9007199254740991,-9007199254740991,"9007199254740992","-9007199254740992"]}`},
		{`"${[b'\\xff\\x00', duration('1.5s'), timestamp('2024-01-02T03:04:05Z')]}"`, `["/wA=","1.5s","2024-01-02T03:04:05Z"]`},
		{`"${[[], {}, [[]], {'a': {}}]}"`, `[[],{},[[]],{"a":{}}]`},
		{`"${[input.xs, input.obj].map(x, x)}"`, `[[1,2,3],{"a":[1.5,"x",null,false],"m":{},"z":1}]`},
		{`"${input.xs + input.xs}"`, `[1,2,3,1,2,3]`},
		{`"${b'hello'}"`, `"aGVsbG8="`},
		{`"${duration('90m')}"`, `"5400s"`},
		{`"${timestamp('2024-01-02T03:04:05.123Z')}"`, `"2024-01-02T03:04:05.123Z"`},
		{`"${null}"`, `null`},
		{`"${true}"`, `true`},
		{`"${{'b': 1, 'a': [true, null, 'x'], 'c': {'z': 1.5}}}"`, `{"a":[true,null,"x"],"b":1,"c":{"z":1.5}}`},
		{`"n=${input.n} l=${[1, 'a', 2.5]} m=${{'k': 'v'}} s=${'str'} d=${2.0} b=${true} z=${null}"`, `"n=41 l=[1,\"a\",2.5] m={\"k\":\"v\"} s=str d=2 b=true z=null"`},
		{`"$${not} ${input.n} $${x}"`, `"${not} 41 ${x}"`},
		{`{"a": ["${input.xs}", "${size(input.xs)}"], "b": {"c": "${input.s}"}}`, `{"a":[[1,2,3],3],"b":{"c":"\u003cscript\u003e\u0026amp;\u003c/script\u003e"}}`},
		{`"${input.obj}"`, `{"a":[1.5,"x",null,false],"m":{},"z":1}`},
		{`"${-0.0}"`, `0`},
		{`"${input.big}"`, `"123456789012345678"`},
		{`"${input.s}"`, `"\u003cscript\u003e\u0026amp;\u003c/script\u003e"`},
		{`"${'\\xff'}"`, `"ÿ"`},
		{`"${'\\b\\f\\u2029'}"`, `"\b\f\u2029"`},
		// Selection, indexing, macros, operators, conversions.
		{`"${input.xs[input.n - 40]}"`, `2`},
		{`"${has(input.obj.z)}"`, `true`},
		{`"${has(input.obj.q)}"`, `false`},
		{`"${input.n > 40 ? 'big' : 'small'}"`, `"big"`},
		{`"${'z' in input.obj}"`, `true`},
		{`"${2 in input.xs}"`, `true`},
		{`"${input.xs.filter(x, x > 1).map(x, x * 10)}"`, `[20,30]`},
		{`"${input.xs.exists(x, x == 2)}"`, `true`},
		{`"${input.xs.all(x, x > 0)}"`, `true`},
		{`"${input.xs.exists_one(x, x == 3)}"`, `true`},
		{`"${size('héllo')}"`, `5`},
		{`"${'abc'.matches('^a') && 'abc'.startsWith('a') && 'abc'.endsWith('c') && 'abc'.contains('b')}"`, `true`},
		{`"${input.obj.a[1]}"`, `"x"`},
		{`"${steps.a.output.items[0]}"`, `"a"`},
		{`"${steps['a'].output['items'][2]}"`, `"c"`},
		{`"${state}"`, `{}`},
		{`"${run}"`, `{"correlation":"","id":"run-1","version":"1","workflow":"w"}`},
		{`"${int('42') + 1}"`, `43`},
		{`"${string(input.f)}"`, `"2.5"`},
		{`"${[1,2] == [1,2] && {'a': [1]} != {'a': [2]}}"`, `true`},
		{`"${input.xs.map(x, input.xs.filter(y, y <= x))}"`, `[[1],[1,2],[1,2,3]]`},
		{`"${dyn(input.xs).size() + size(input.obj) + input.xs.size()}"`, `9`},
		{`"${type(input.xs) == list}"`, `true`},
		{`"${input.s + '!' + string(input.n)}"`, `"\u003cscript\u003e\u0026amp;\u003c/script\u003e!41"`},
		{`"${(input.xs + [4])[3]}"`, `4`},
		{`"${input.xs.map(x, {'v': x, 'sq': x * x, 'odd': x % 2 == 1})}"`, `[{"odd":true,"sq":1,"v":1},{"odd":false,"sq":4,"v":2},{"odd":true,"sq":9,"v":3}]`},
		{`"${!(input.n < 0) && -input.n < 0 || input.missing}"`, `true`},
		{`"${[input.n, input.f, input.s, null, true].map(v, type(v) == string)}"`, `[false,false,true,false,false]`},
		{`"${timestamp('2024-01-02T03:04:05Z') + duration('1h') > timestamp('2024-01-02T03:04:05Z')}"`, `true`},
		{`"${bytes('abc').size()}"`, `3`},
		{`"${input.xs.map(x, x).filter(x, x in [1, 3])}"`, `[1,3]`},
	} {
		tpl, err := Compile(json.RawMessage(c.tpl))
		if err != nil {
			t.Fatalf("%s: %v", c.tpl, err)
		}
		got, err := tpl.Render(renderVarsForTests)
		if err != nil {
			t.Fatalf("%s: %v", c.tpl, err)
		}
		if string(got) != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.tpl, got, c.want)
		}
	}
}

// TestRenderTemplateErrors: values with no JSON form are errors, as before.
func TestRenderTemplateErrors(t *testing.T) {
	for _, c := range []struct{ tpl, want string }{
		{`"${{1: 'a'}}"`, "map key 1 of type int is not a string"},
		{`"${type(1)}"`, "result of type type is not JSON"},
		{`"${0.0/0.0}"`, "NaN is not a JSON number"},
		{`"${[1.0/0.0]}"`, "+Inf is not a JSON number"},
		{`{"x": "${input.missing.deeper}"}`, "no such key: missing"},
	} {
		tpl, err := Compile(json.RawMessage(c.tpl))
		if err != nil {
			t.Fatalf("%s: %v", c.tpl, err)
		}
		if _, err := tpl.Render(renderVarsForTests); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.tpl, err, c.want)
		}
	}
}

// measure runs f once and returns how long it took and what it allocated.
func measure(f func()) (time.Duration, uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return took, after.TotalAlloc - before.TotalAlloc
}

// renderCost renders a template and returns the cost it was charged.
func renderCost(t *testing.T, tpl *Template, vars Vars) (uint64, error) {
	t.Helper()
	act, err := vars.activation()
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(tpl.raw, &v); err != nil {
		t.Fatal(err)
	}
	r := &renderer{t: tpl, act: act}
	_, err = r.eval(v)
	return r.cost, err
}

// TestRenderNestedMapHitsCostLimit: the nested map over 1,500 ints (2.25M
// products; unbounded it took about 3 s and allocated 846 MB a render) is
// refused at the cost limit, and the error names the limit. Time is only
// sanity-checked, generously; the cost and the allocations are the bound.
func TestRenderNestedMapHitsCostLimit(t *testing.T) {
	tpl, err := Compile(json.RawMessage(nestedMapTemplate))
	if err != nil {
		t.Fatal(err)
	}
	vars := Vars{Input: intsInput(1500)}
	var rerr error
	took, alloc := measure(func() { _, rerr = tpl.Render(vars) })
	t.Logf("refused in %v, %.1f MB allocated: %v", took, float64(alloc)/1e6, rerr)
	if rerr == nil || !strings.Contains(rerr.Error(), "exceeds the CEL cost limit of 1000000") {
		t.Fatalf("got %v, want the cost limit named", rerr)
	}
	if alloc > 64<<20 {
		t.Errorf("allocated %d bytes, want under 64 MiB", alloc)
	}
	if took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	allocs := testing.AllocsPerRun(2, func() { _, _ = tpl.Render(vars) })
	if allocs > 2e6 {
		t.Errorf("%.0f allocations a render, want under 2M (unbounded: 24M)", allocs)
	}
	cost, _ := renderCost(t, tpl, vars)
	if cost < DefaultExprCostLimit || cost > DefaultExprCostLimit+100 {
		t.Errorf("charged %d, want just over the limit", cost)
	}
}

// TestRenderTemplateCostIsSummed: expressions each under the per-expression
// limit are refused together when their sum passes the per-render limit,
// and the sum never passes it.
func TestRenderTemplateCostIsSummed(t *testing.T) {
	lim := Limits{ExprCost: 10_000, TemplateCost: 25_000}
	one := `${input.xs.map(x, x * 2)}`
	vars := Vars{Input: intsInput(400)}
	single, err := CompileWith(json.RawMessage(`"`+one+`"`), lim)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := renderCost(t, single, vars)
	if err != nil || c1 > lim.ExprCost || 4*c1 <= lim.TemplateCost {
		t.Fatalf("one expression costs %d (%v); the test wants it under %d and four over %d", c1, err, lim.ExprCost, lim.TemplateCost)
	}
	four, err := CompileWith(json.RawMessage(`{"a": "`+one+`", "b": "`+one+`", "c": ["`+one+`", "x `+one+`"]}`), lim)
	if err != nil {
		t.Fatal(err)
	}
	cost, err := renderCost(t, four, vars)
	if err == nil || !strings.Contains(err.Error(), "template exceeds the CEL cost limit of 25000 per render") {
		t.Fatalf("got %v, want the per-render limit named", err)
	}
	if cost > lim.TemplateCost+10 {
		t.Errorf("charged %d in all, over the per-render limit %d", cost, lim.TemplateCost)
	}
	if _, err := four.Render(vars); err == nil || !strings.Contains(err.Error(), "25000") {
		t.Fatalf("render: got %v", err)
	}
	// One expression over its own limit names that one.
	heavy, err := CompileWith(json.RawMessage(`"${input.xs.map(x, input.xs.map(y, x))}"`), lim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := heavy.Render(vars); err == nil || !strings.Contains(err.Error(), "exceeds the CEL cost limit of 10000 per expression") {
		t.Fatalf("got %v, want the per-expression limit named", err)
	}
}

// TestRenderHugeStringHitsByteCap: a string doubled 17 times (2 MiB, well
// under the cost limit) is refused by the rendered-input cap, whole or
// interpolated.
func TestRenderHugeStringHitsByteCap(t *testing.T) {
	expr := `${['xxxxxxxxxxxxxxxx']` + strings.Repeat(`.map(a, a + a)`, 17) + `[0]}`
	for _, src := range []string{`{"s": "` + expr + `"}`, `{"s": "big: ` + expr + `"}`} {
		tpl, err := Compile(json.RawMessage(src))
		if err != nil {
			t.Fatal(err)
		}
		wantOverByteCap(t, "", tpl, Vars{}, "rendered input is over the 1048576-byte limit", 32<<20)
	}
	// Sixteen doublings (1 MiB of x's, plus quotes) is over too; fifteen renders.
	ok, err := Compile(json.RawMessage(`"${['xxxxxxxxxxxxxxxx']` + strings.Repeat(`.map(a, a + a)`, 15) + `[0]}"`))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ok.Render(Vars{}); err != nil || len(out) != 16<<15+2 {
		t.Fatalf("got %d bytes, %v", len(out), err)
	}
}

// TestRenderBigListHitsByteCap: a comprehension whose output is huge but
// cheap to compute (1,500 references to one list: about 9 MB of JSON) is
// refused by the byte cap while it is being encoded, not after.
func TestRenderBigListHitsByteCap(t *testing.T) {
	tpl, err := Compile(json.RawMessage(`{"m": "${input.xs.map(x, input.xs)}"}`))
	if err != nil {
		t.Fatal(err)
	}
	vars := Vars{Input: intsInput(1500)}
	wantOverByteCap(t, "", tpl, vars, "over the 1048576-byte limit", 64<<20)
	// Shared structure: a list of itself 40 levels deep is 2^40 lists as
	// JSON, built at a cost of a few hundred.
	shared, err := Compile(json.RawMessage(`"${[input.xs]` + strings.Repeat(`.map(a, [a, a])`, 40) + `}"`))
	if err != nil {
		t.Fatal(err)
	}
	wantOverByteCap(t, "shared: ", shared, vars, "over the 1048576-byte limit", 64<<20)
}

// wantOverByteCap renders tpl with vars, which the rendered-input byte
// cap must refuse with an error containing want, allocating at most
// maxAlloc bytes on the way; what prefixes the failures.
func wantOverByteCap(t *testing.T, what string, tpl *Template, vars Vars, want string, maxAlloc uint64) {
	t.Helper()
	var rerr error
	_, alloc := measure(func() { _, rerr = tpl.Render(vars) })
	if rerr == nil || !strings.Contains(rerr.Error(), want) {
		t.Fatalf("%sgot %v, want the byte cap named", what, rerr)
	}
	if alloc > maxAlloc {
		t.Errorf("%sallocated %d bytes", what, alloc)
	}
}

// TestRenderFinalSizeIsChecked: the cap holds for the whole rendered
// input, literal parts included, with its exact size in the error.
func TestRenderFinalSizeIsChecked(t *testing.T) {
	tpl, err := CompileWith(json.RawMessage(`{"pad": "`+strings.Repeat("p", 90)+`", "n": "${input.n}"}`), Limits{MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Render(renderVarsForTests)
	if err == nil || err.Error() != "rendered input is 107 bytes, over the 100-byte limit" {
		t.Fatalf("got %v", err)
	}
}

// TestRenderConcatenationIsMetered: concatenations of dynamic values are
// paid for by size. cel's own cost tracking charges them one unit each: it
// let this string reach 64 MiB at a cost of 587, and this list 3e15
// elements (lazily) at 1,315, after which "in" would walk it for ever.
func TestRenderConcatenationIsMetered(t *testing.T) {
	vars := Vars{Input: json.RawMessage(`{"s": "xxxxxxxxxxxxxxxx", "xs": [1, 2, 3]}`)}
	for _, src := range []string{
		`"${[input.s]` + strings.Repeat(`.map(a, a + a)`, 30) + `[0].size()}"`,
		`"${0 in [input.xs]` + strings.Repeat(`.map(a, a + a)`, 60) + `[0]}"`,
	} {
		tpl, err := Compile(json.RawMessage(src))
		if err != nil {
			t.Fatal(err)
		}
		var rerr error
		took, alloc := measure(func() { _, rerr = tpl.Render(vars) })
		if rerr == nil || !strings.Contains(rerr.Error(), "exceeds the CEL cost limit of 1000000") {
			t.Fatalf("%.40s: got %v, want the cost limit named", src, rerr)
		}
		if alloc > 32<<20 || took > 2*time.Second {
			t.Errorf("%.40s: %v, %d bytes", src, took, alloc)
		}
	}
}

// TestRenderLongComprehensionIsLinear: metering is constant work a node.
// cel's cost tracker is quadratic in a comprehension's length: a map over
// 60,000 ints, under its limit, took 6 s. Checked as a ratio, so a loaded
// machine does not fail it: four times the elements must cost about four
// times the time (quadratic would be sixteen).
func TestRenderLongComprehensionIsLinear(t *testing.T) {
	tpl, err := Compile(json.RawMessage(`"${input.xs.map(x, x + 1).size()}"`))
	if err != nil {
		t.Fatal(err)
	}
	// Bytes allocated, not time: a quadratic comprehension copies its
	// accumulator at every element (16 times the bytes for 4 times the
	// elements), and bytes do not vary with the machine's load as times do.
	least := func(n int) (uint64, time.Duration) {
		in := intsInput(n)
		bytes, took := uint64(math.MaxUint64), time.Duration(0)
		for range 3 {
			var out json.RawMessage
			var rerr error
			d, b := measure(func() { out, rerr = tpl.Render(Vars{Input: in}) })
			if rerr != nil || string(out) != strconv.Itoa(n) {
				t.Fatalf("%d elements: got %s, %v", n, out, rerr)
			}
			if b < bytes {
				bytes, took = b, d
			}
		}
		return bytes, took
	}
	small, smallTook := least(10_000)
	large, largeTook := least(40_000)
	ratio := float64(large) / float64(small)
	t.Logf("10,000 elements: %d bytes (%v); 40,000: %d bytes (%v); %.2f times", small, smallTook, large, largeTook, ratio)
	if ratio > 6 {
		t.Errorf("10,000 elements allocated %d bytes (%v), 40,000 %d (%v): %.1f times, want about 4 (linear)", small, smallTook, large, largeTook, ratio)
	}
}

// TestRenderCostsOfOrdinaryTemplates: what ordinary templates are charged,
// so the defaults leave them room to spare.
func TestRenderCostsOfOrdinaryTemplates(t *testing.T) {
	vars := Vars{
		Input: json.RawMessage(`{"n": 41, "xs": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}`),
		Steps: map[string]json.RawMessage{"a": json.RawMessage(`{"ok": true, "items": ["a", "b", "c"]}`)},
		RunID: "run-1",
	}
	tpl, err := Compile(json.RawMessage(typicalTemplate))
	if err != nil {
		t.Fatal(err)
	}
	cost, err := renderCost(t, tpl, vars)
	if err != nil || cost > 1000 {
		t.Fatalf("typical template: cost %d, %v", cost, err)
	}
	thousand, err := Compile(json.RawMessage(`"${input.xs.map(x, {'id': x, 'label': 'item ' + string(x)})}"`))
	if err != nil {
		t.Fatal(err)
	}
	big, err := renderCost(t, thousand, Vars{Input: intsInput(1000)})
	if err != nil || big > DefaultTemplateCostLimit/10 {
		t.Fatalf("a map over 1,000 items: cost %d, %v", big, err)
	}
	t.Logf("typical template: %d; map over 1,000 items to objects: %d", cost, big)
}

// TestRenderConcurrentRendersShareATemplate: metered instances serve one
// render at a time; concurrent renders of one template agree, and limits
// hit in one do not leak into the others.
func TestRenderConcurrentRendersShareATemplate(t *testing.T) {
	tpl, err := CompileWith(json.RawMessage(`{"d": "${input.xs.map(x, x * 2)}", "n": "${size(input.xs)}"}`), Limits{ExprCost: 5_000})
	if err != nil {
		t.Fatal(err)
	}
	small, large := Vars{Input: intsInput(50)}, Vars{Input: intsInput(5000)}
	want, err := tpl.Render(small)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if (g+i)%3 == 0 {
					if _, err := tpl.Render(large); err == nil {
						errs <- fmt.Errorf("a render over the limit passed")
					}
					continue
				}
				got, err := tpl.Render(small)
				if err != nil || string(got) != string(want) {
					errs <- fmt.Errorf("got %s, %v", got, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
