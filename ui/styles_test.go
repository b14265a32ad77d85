package ui_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/cairn-dev/cairn"
)

// TestEveryStatusHasAStyle: every run and step status has its badge
// colour, and every step status a step can show in the graph besides
// pending (the graph's default) its node colour, so a new status or a new
// kind's active status is not drawn as an unknown grey.
func TestEveryStatusHasAStyle(t *testing.T) {
	css, err := os.ReadFile("assets/app.css")
	if err != nil {
		t.Fatal(err)
	}
	has := func(re string) bool { return regexp.MustCompile(re).Match(css) }
	for _, s := range cairn.RunStatus("").Values() {
		if !has(`\.s-` + regexp.QuoteMeta(string(s)) + `[ ,{]`) {
			t.Errorf("run status %s has no badge style (.s-%s) in assets/app.css", s, s)
		}
	}
	for _, s := range cairn.StepStatus("").Values() {
		if s == cairn.StepPending {
			continue
		}
		if !has(`\.s-` + regexp.QuoteMeta(string(s)) + `[ ,{]`) {
			t.Errorf("step status %s has no badge style (.s-%s) in assets/app.css", s, s)
		}
		if !has(`\.dag \.node\.s-` + regexp.QuoteMeta(string(s)) + ` rect`) {
			t.Errorf("step status %s has no graph style (.dag .node.s-%s rect) in assets/app.css", s, s)
		}
	}
}
