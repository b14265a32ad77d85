package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestLambdaLinksNoGRPC keeps gRPC and the Prometheus client out of the
// Lambda bootstraps (make lambda's LAMBDA_TAGS): they exist there for
// exporters Lambda has no use for, and they doubled the bootstrap and its
// cold start. The functions' other builds (the image, a laptop) link them.
func TestLambdaLinksNoGRPC(t *testing.T) {
	mk, err := os.ReadFile(repoRoot(t) + "/Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LAMBDA_TAGS\s*\?=\s*(\S+)`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no LAMBDA_TAGS in the Makefile")
	}
	tags := string(m[1])
	for _, fn := range []string{"./functions/api", "./functions/reaper"} {
		cmd := exec.Command("go", "list", "-deps", "-tags", tags, "-f", "{{.ImportPath}}", fn)
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", fn, err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			if strings.HasPrefix(pkg, "google.golang.org/grpc") || strings.Contains(pkg, "prometheus") {
				t.Errorf("%s (-tags %s) links %s", fn, tags, pkg)
			}
		}
	}
}
