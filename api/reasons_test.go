package api_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
)

// The worker protocol's refusal reasons are one closed set, the same in
// the engine, the spec, docs/API.md and the three SDKs
// (docs/DECISIONS.md §30).
func TestRefusalReasonsAgreeEverywhere(t *testing.T) {
	var want []string
	for _, r := range cairn.Reason("").Values() {
		want = append(want, string(r))
	}
	slices.Sort(want)
	if len(want) != 5 {
		t.Fatalf("engine reasons %v: the set is five (docs/DECISIONS.md §30)", want)
	}
	var spec []string
	for _, v := range api.Spec().Components.Schemas.Map()["Problem"].Properties["reason"].Enum {
		spec = append(spec, v.(string))
	}
	slices.Sort(spec)
	if !slices.Equal(spec, want) {
		t.Errorf("spec Problem.reason enum %v, engine %v", spec, want)
	}
	read := func(path string) string {
		b, err := os.ReadFile("../" + path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	doc := read("docs/API.md")
	i := strings.Index(doc, "A worker call the engine refuses is a **409**")
	if i < 0 {
		t.Fatal("docs/API.md: no table of refusal reasons")
	}
	table := doc[i:]
	table = table[:strings.Index(table, "\n## ")]
	var docs []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		docs = append(docs, m[1])
	}
	slices.Sort(docs)
	if !slices.Equal(docs, want) {
		t.Errorf("docs/API.md lists %v, engine %v", docs, want)
	}
	goSDK, py, ts := read("sdk/errors.go"), read("sdk/python/src/cairn/errors.py"), read("sdk/ts/src/worker.ts")
	for _, r := range want {
		goName := "Reason" + strings.ReplaceAll(strings.Title(strings.ReplaceAll(r, "_", " ")), " ", "") //nolint:staticcheck // ASCII names
		if !regexp.MustCompile(`(?m)^\s*` + goName + `\s*=\s*cairn\.` + goName + `$`).MatchString(goSDK) {
			t.Errorf("Go SDK: no sdk.%s", goName)
		}
		if !strings.Contains(py, "REASON_"+strings.ToUpper(r)+` = "`+r+`"`) {
			t.Errorf("Python SDK: no REASON_%s", strings.ToUpper(r))
		}
		if !strings.Contains(ts, `case "`+r+`":`) {
			t.Errorf("TypeScript worker: %s is not handled", r)
		}
	}
}
