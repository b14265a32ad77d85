package render

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOpaque(t *testing.T) {
	o := Opaque{Clear: map[string]bool{"tenant": true, "region": true}}
	ok := []string{
		`{"a":"${input}","b":"${input.secret}","c":"${state.k}","d":"${steps.a.output}","e":"${steps}","f":"${state}"}`,
		`{"t":"${input.tenant.id}","u":"${input['tenant'].name}","r":"tenant ${input.region}","s":"${state.tenant.x}"}`,
		`{"id":"${run.id}","n":"${index + 1}","i":"${item.name}"}`,
		`{"x":"${has(steps.a) ? 1 : 2}","y":"${has(steps.a.output)}","z":"${has(input.secret)}"}`,
		`{"l":"${input.tenant.list.map(x, x.y)}","w":"  ${ steps.b.output }  "}`,
		`"$${input.secret.x} is literal"`,
	}
	for _, tpl := range ok {
		if err := o.CheckTemplate(json.RawMessage(tpl)); err != nil {
			t.Errorf("%s: %v", tpl, err)
		}
	}
	bad := map[string]string{
		`{"a":"${steps.a.output.total}"}`:            "inside steps.a.output",
		`{"a":"${steps['a'].output['total']}"}`:      "inside steps.a.output",
		`{"a":"${input.secret.x}"}`:                  "inside input.secret",
		`{"a":"${state.k[0]}"}`:                      "computes with state.k",
		`{"a":"hello ${input.secret}"}`:              "computes with input.secret",
		`{"a":"${input.secret == 'x'}"}`:             "computes with input.secret",
		`{"a":"${size(steps.a.output)}"}`:            "computes with steps.a.output",
		`{"a":"${input[run.id]}"}`:                   "computed key",
		`{"a":["${steps.a.output.list.map(x, x)}"]}`: "inside steps.a.output",
		`{"a":"${has(steps.a.output.x)}"}`:           "tests a field inside steps.a.output",
		`{"a":{"b":"${[input.secret]}"}}`:            "computes with input.secret",
	}
	for tpl, want := range bad {
		err := o.CheckTemplate(json.RawMessage(tpl))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", tpl, err, want)
		}
	}
	if err := o.CheckCondition("${steps.a.output.ok}"); err == nil {
		t.Error("a condition inside an encrypted output passed")
	}
	if err := o.CheckCondition("steps.a.output"); err == nil {
		t.Error("a condition computing with an encrypted output passed")
	}
	if err := o.CheckCondition("has(steps.a) && input.tenant.vip"); err != nil {
		t.Error(err)
	}
	if err := o.CheckString("${input.secret}", false); err == nil {
		t.Error("a key rendering an encrypted value passed")
	}
	if err := o.CheckString("${input.tenant}", false); err != nil {
		t.Error(err)
	}
}
