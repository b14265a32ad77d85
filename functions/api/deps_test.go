package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// makeVar is the default of a variable the Makefile sets with ?=: the
// tags make lambda builds with, which these tests build with too.
func makeVar(t testing.TB, name string) string {
	t.Helper()
	mk, err := os.ReadFile(repoRoot(t) + "/Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*\?=\s*(\S+)`).FindSubmatch(mk)
	if m == nil {
		t.Fatalf("no %s in the Makefile", name)
	}
	return string(m[1])
}

// lambdaDeps lists the packages fn links when built with tags for Lambda.
func lambdaDeps(t *testing.T, fn, tags string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, "-f", "{{.ImportPath}}", fn)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %s %s: %v", tags, fn, err)
	}
	return strings.Fields(string(out))
}

// TestLambdaLinksNoGRPC keeps gRPC and the Prometheus client out of the
// Lambda bootstraps (make lambda's LAMBDA_TAGS): they exist there for
// exporters Lambda has no use for, and they doubled the bootstrap and its
// cold start. The NATS client too: a frozen environment cannot hold a
// subscription, and the Lambda stack's bus is SQS. Nor the benchmark
// hooks (internal/app's blob counting and fault profiles and
// net/http/pprof: 0.56 MB): the benchmark runs `cairn serve`. The
// functions' other builds (the image, a laptop) link them.
func TestLambdaLinksNoGRPC(t *testing.T) {
	tags := makeVar(t, "LAMBDA_TAGS")
	for _, fn := range []string{"./functions/api", "./functions/reaper"} {
		for _, pkg := range lambdaDeps(t, fn, tags) {
			if strings.HasPrefix(pkg, "google.golang.org/grpc") || strings.Contains(pkg, "prometheus") || strings.HasPrefix(pkg, "github.com/nats-io/") ||
				pkg == "net/http/pprof" || pkg == "github.com/cairn-dev/cairn/blob/faults" || pkg == "github.com/cairn-dev/cairn/blob/counting" {
				t.Errorf("%s (-tags %s) links %s", fn, tags, pkg)
			}
		}
	}
}

// TestLambdaAPILinksNoDashboard keeps the dashboard out of the Lambda API
// function and in the dashboard function (make lambda builds both from
// functions/api). The dashboard's html/template execution looks methods up
// by a name known only at run time, so the linker keeps every exported
// method of every type the program reaches: ≈ 10 MB, which would take the
// API's bootstrap past its 25 MB budget and lengthen its cold start.
// (text/template may be linked, cel-go imports it, as long as nothing
// executes a template: TestBinaries/LambdaBootstraps checks the size.)
func TestLambdaAPILinksNoDashboard(t *testing.T) {
	const ui = "github.com/cairn-dev/cairn/ui"
	tags := makeVar(t, "LAMBDA_TAGS")
	for _, pkg := range lambdaDeps(t, "./functions/api", tags) {
		if pkg == ui || pkg == "html/template" {
			t.Errorf("the Lambda API function (-tags %s) links %s", tags, pkg)
		}
	}
	dash := makeVar(t, "LAMBDA_DASHBOARD_TAGS")
	if !slices.Contains(lambdaDeps(t, "./functions/api", dash), ui) {
		t.Errorf("the dashboard function (-tags %s) does not link %s", dash, ui)
	}
}
