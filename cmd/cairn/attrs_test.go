package main

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// runs start --attr sets search attributes, runs list --attr filters on
// them (table and JSON), runs get shows them; testdata/runs_attrs.golden.
func TestGoldenAttributes(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	n := &normalizer{ids: map[string]string{}}
	register(t, srv.URL, "ghost", sdk.Workflow("billing", "1").Wait("paid", "paid"))
	var s string
	for _, args := range [][]string{
		{"runs", "start", "billing", "--attr", "customer=acme", "--attr", "amount=120.5", "--attr", "vip=true"},
		{"runs", "start", "billing", "--attr", "customer=globex", "--attr", "amount=80"},
		{"runs", "list", "--attr", "amount>0"},
		{"runs", "list", "--attr", "customer:acme", "-o", "json"},
		{"runs", "list", "--attr", "amount>=100", "--attr", "vip:true", "--status", "running"},
		{"runs", "list", "--attr", "customer:initech"},
		{"runs", "list", "--attr", "amount"},
		{"runs", "start", "billing", "--attr", "nested"},
	} {
		s += n.run(t, srv.URL, args...)
	}
	golden(t, "runs_attrs", s)
	out, err := cli(t, srv.URL, "runs", "list", "--attr", "customer:acme", "-o", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	id := ulidRE.FindString(out)
	if got, _ := cli(t, srv.URL, "runs", "get", id); !strings.Contains(got, "attrs     amount=120.5 customer=acme vip=true") {
		t.Errorf("runs get does not show the attributes:\n%s", got)
	}
}
