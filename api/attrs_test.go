package api_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/api"
)

// GET /runs filters by search attributes (attr, repeated), combined with
// status and workflow; the run shows its attributes; a bad condition is
// a 422 naming attr.
func TestListRunsByAttributes(t *testing.T) {
	s := newServer(t, api.Config{DevMode: true})
	if r := register(s, okWorkflow); r.status != 200 {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	start := func(attrs string) string {
		r := s.do("POST", "/runs", `{"workflow":"wf","attributes":`+attrs+`}`)
		if r.status != 201 {
			t.Fatalf("start: %d %s", r.status, r.raw)
		}
		return r.body["run"].(map[string]any)["id"].(string)
	}
	a := start(`{"customer":"acme","amount":1}`)
	b := start(`{"customer":"acme","amount":2}`)
	c := start(`{"customer":"globex","amount":3}`)
	ids := func(q ...string) []string {
		return s.runIDs(url.Values{"attr": q}.Encode() + "&status=running&workflow=wf")
	}
	if got := ids("amount>1"); !slices.Equal(got, []string{b, c}) {
		t.Errorf("amount>1: %v, want [%s %s] (by value)", got, b, c)
	}
	if got := ids("customer:acme", "amount<=1.5"); !slices.Equal(got, []string{a}) {
		t.Errorf("customer:acme and amount<=1.5: %v, want [%s]", got, a)
	}
	if got := ids("customer:globex"); !slices.Equal(got, []string{c}) {
		t.Errorf("customer:globex: %v, want [%s]", got, c)
	}
	if r := s.do("GET", "/runs/"+a, ""); !strings.Contains(r.raw, `"attributes":{"amount":1,"customer":"acme"}`) {
		t.Errorf("the run does not show its attributes: %s", r.raw)
	}
	if r := s.do("GET", "/runs?attr=amount", ""); r.status != 422 || !strings.Contains(r.raw, "attr") {
		t.Errorf("a bad condition: %d %s", r.status, r.raw)
	}
	if r := s.do("POST", "/runs", `{"workflow":"wf","attributes":{"x":{"nested":1}}}`); r.status != 422 || !strings.Contains(r.raw, "attributes.x") {
		t.Errorf("a nested attribute: %d %s", r.status, r.raw)
	}
}
