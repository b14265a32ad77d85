package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/auth"
)

// openOperations are the operations that need no key, each with its
// reason. Every other operation declares the scope its key needs.
var openOperations = map[string]string{
	"health": "liveness, for load balancers",
	"ready":  "readiness, for load balancers",
}

var allScopes = []string{auth.ScopeWorker, auth.ScopeExecute, auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin, auth.ScopeStore}

// Every operation of the spec × every scope, against a server with a
// key per scope: a key is let through (whatever the operation then
// answers) exactly when its scope grants the one the operation declares,
// and is otherwise refused 403; no key at all is a 401. An operation
// added without a scope (and not listed as open) fails here.
func TestEveryOperationTimesEveryScope(t *testing.T) {
	var specs []string
	for _, sc := range allScopes {
		specs = append(specs, "k-"+sc+":"+sc+":"+auth.HashSecret("secret-"+sc))
	}
	keys, err := auth.ParseKeys(strings.Join(specs, ","))
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, api.Config{Keys: keys})
	fill := strings.NewReplacer("{run}", "R1", "{lease}", "L1", "{schedule}", "s1", "{worker}", "w1", "{batch}", "B1",
		"{name}", "wf", "{version}", "1", "{step}", "a", "{attempt}", "1", "{sha256}", strings.Repeat("a", 64), "{namespace}", "ns", "{key}", "k")
	cells := 0
	for _, op := range operations(api.Spec()) {
		need, _ := op.Metadata["scope"].(string)
		if _, open := openOperations[op.OperationID]; open != (need == "") {
			t.Errorf("%s: scope %q; an operation either declares a scope or is listed in openOperations with a reason", op.OperationID, need)
			continue
		}
		method, path := op.Method, fill.Replace(strings.TrimPrefix(op.Path, api.BasePath))
		body := ""
		if op.RequestBody != nil {
			body = "{}"
		}
		for _, sc := range append([]string{""}, allScopes...) {
			cells++
			s.key = ""
			if sc != "" {
				s.key = "secret-" + sc
			}
			r := s.do(method, path, body)
			cell := fmt.Sprintf("%s (needs %q) with key %q: %d %s", op.OperationID, need, sc, r.status, r.raw)
			switch {
			case r.status >= 500 && r.status != http.StatusServiceUnavailable:
				t.Errorf("%s", cell)
			case need == "":
				if r.status == 401 || r.status == 403 {
					t.Errorf("open operation refused: %s", cell)
				}
			case sc == "":
				if r.status != 401 {
					t.Errorf("want 401: %s", cell)
				}
			case auth.Grants([]string{sc}, need):
				if r.status == 401 || r.status == 403 {
					t.Errorf("want allowed: %s", cell)
				}
			default:
				if r.status != 403 {
					t.Errorf("want 403: %s", cell)
				}
			}
		}
	}
	if n := len(operations(api.Spec())); cells != n*(len(allScopes)+1) || n < 30 {
		t.Fatalf("%d cells for %d operations", cells, n)
	}
	t.Logf("%d operations × %d keys (none and one per scope) = %d cells", cells/(len(allScopes)+1), len(allScopes)+1, cells)
}
