package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestFreeFormValues(t *testing.T) {
	spec := `{"components":{"schemas":{
	  "B":{"type":"object","properties":{
	    "any":{"description":"any JSON"},
	    "typed":{"type":"string"},
	    "ref":{"$ref":"#/components/schemas/A"},
	    "map":{"type":"object","additionalProperties":{}},
	    "closed":{"type":"object","additionalProperties":false},
	    "list":{"type":["array","null"],"items":{}},
	    "odd-name":{}}},
	  "A":{"type":"object","properties":{"x":{}}}}}}`
	got, err := freeFormValues([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	want := []action{
		{"$.components.schemas.A.properties.x", true},
		{"$.components.schemas.B.properties.any", true},
		{"$.components.schemas.B.properties.list.items", false},
		{"$.components.schemas.B.properties.map.additionalProperties", false},
		{"$.components.schemas.B.properties['odd-name']", true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("action %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

// The committed overlay is the one the committed spec gives (make
// openapi-check says the same, with the spec regenerated first).
func TestCommittedOverlayIsCurrent(t *testing.T) {
	spec, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := write(&b, spec); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../client/overlay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), committed) {
		t.Fatal("openapi/client/overlay.yaml is stale: run make openapi and commit")
	}
	for _, want := range []string{"Run.properties.output", "Lease.properties.input", "StartRequest.properties.state.additionalProperties"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the overlay lacks %s", want)
		}
	}
}
