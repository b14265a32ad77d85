package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestVersion: cairn --version prints the build line; an unknown
// subcommand is an error (a non-zero exit from main).
func TestVersion(t *testing.T) {
	out := mustCLI(t, "http://127.0.0.1:1", "--version")
	if !strings.HasPrefix(out, "cairn version ") || !strings.Contains(out, "go1.") {
		t.Fatalf("--version printed %q", out)
	}
	if _, err := cli(t, "http://127.0.0.1:1", "frobnicate"); err == nil {
		t.Fatal("an unknown subcommand succeeded")
	}
}

// An unknown subcommand, of the root or of a group, is an error (the
// process exits non-zero); a group alone prints its help.
func TestUnknownSubcommandFails(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"runs", "frobnicate"}} {
		root := newRootCmd()
		root.SetArgs(args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "unknown command") {
			t.Errorf("cairn %v: %v, want an unknown-command error", args, err)
		}
	}
	root := newRootCmd()
	var out strings.Builder
	root.SetArgs([]string{"runs"})
	root.SetOut(&out)
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "Available Commands") {
		t.Errorf("cairn runs: %v\n%s", err, out.String())
	}
}

// The help of runs, batches and schedules says why their ids differ, and
// runs' help how steps are counted.
func TestHelpExplainsIdsAndStepCounts(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  []string
	}{
		{"runs", []string{"ULIDs with inverted time", "newest first", "steps the workflow declares"}},
		{"batches", []string{"Batch ids are plain ULIDs"}},
		{"schedules", []string{"Schedule ids are lower case"}},
	} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs([]string{tc.group, "--help"})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), w) {
				t.Errorf("cairn %s --help lacks %q:\n%s", tc.group, w, out.String())
			}
		}
	}
}
