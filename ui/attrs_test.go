package ui_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
)

// The runs page filters by search attributes (its Attributes field) and
// shows them; the run page shows them; bulk actions, whose filters have
// no attributes, are not offered on such a listing.
func TestRunsPageFiltersByAttributes(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	f.registerFor("w1", cairn.Workflow{Name: "b", Version: "1", Steps: []cairn.Step{{ID: "a"}}})
	start := func(attrs string) string {
		var a map[string]json.RawMessage
		json.Unmarshal([]byte(attrs), &a)
		r, err := f.e.StartRun(context.Background(), cairn.StartRequest{Workflow: "b", Attributes: a})
		if err != nil {
			t.Fatal(err)
		}
		return r.Run.ID
	}
	acme := start(`{"customer":"acme","amount":120}`)
	globex := start(`{"customer":"<b>globex</b>","amount":80}`)
	_, body, _ := f.get("/ui/?status=running&attr="+url.QueryEscape("customer:acme amount>100"), "")
	if !strings.Contains(body, acme) || strings.Contains(body, globex) {
		t.Errorf("the filtered runs page does not list just %s", acme)
	}
	for _, want := range []string{`value="customer:acme amount&gt;100"`, `<td class="attributes">amount=120 customer=acme</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the runs page lacks %q", want)
		}
	}
	if strings.Contains(body, `class="bulk"`) {
		t.Error("bulk actions are offered on a listing filtered by attributes")
	}
	_, body, _ = f.get("/ui/runs/"+globex, "")
	if !strings.Contains(body, `<dd id="run-attributes">amount=80 customer=&lt;b&gt;globex&lt;/b&gt;</dd>`) {
		t.Errorf("the run page does not show its attributes, escaped")
	}
	if code, body, _ := f.get("/ui/?attr=amount", ""); code != 422 || !strings.Contains(body, "not name:value") {
		t.Errorf("a bad condition: %d %s", code, body)
	}
}
