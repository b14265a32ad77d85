package main

import (
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
