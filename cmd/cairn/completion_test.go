package main

import (
	"strings"
	"testing"
	"time"
)

// complete runs the shell completion of args (the last one the word
// being typed) and returns the words offered and the directive line.
func complete(t *testing.T, server string, args ...string) ([]string, string) {
	t.Helper()
	out := mustCLI(t, server, append([]string{"__complete"}, args...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var words []string
	for _, l := range lines[:len(lines)-1] {
		words = append(words, strings.SplitN(l, "\t", 2)[0])
	}
	return words, lines[len(lines)-1]
}

// Completion offers workflow names, run ids and schedule ids read from
// the server, and never files (directive 4: no file completion), also
// when the server does not answer.
func TestCompletionAsksTheServer(t *testing.T) {
	srv, _ := startServed(t)
	out := mustCLI(t, srv.URL, "runs", "start", "gate")
	run := runIDRE.FindStringSubmatch(out)[1]
	mustCLI(t, srv.URL, "schedules", "create", "greet", "0 2 * * *", "--id", "nightly", "--paused")

	const noFiles = ":4"
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"runs", "start", ""}, []string{"gate", "greet"}},
		{[]string{"runs", "start", "gr"}, []string{"greet"}},
		{[]string{"workflows", ""}, []string{"gate", "greet"}},
		{[]string{"schedules", "create", ""}, []string{"gate", "greet"}},
		{[]string{"schedules", "create", "greet", ""}, nil},
		{[]string{"runs", "list", "--workflow", "ga"}, []string{"gate"}},
		{[]string{"runs", "get", ""}, []string{run}},
		{[]string{"runs", "watch", run[:5]}, []string{run}},
		{[]string{"runs", "event", run, ""}, nil},
		{[]string{"runs", "rerun", ""}, []string{run}},
		{[]string{"schedules", "pause", ""}, []string{"nightly"}},
		{[]string{"schedules", "backfill", "n"}, []string{"nightly"}},
		{[]string{"runs", "list", ""}, nil},
		{[]string{"batches", "get", ""}, nil},
	} {
		words, directive := complete(t, srv.URL, tc.args...)
		if strings.Join(words, " ") != strings.Join(tc.want, " ") || directive != noFiles {
			t.Errorf("cairn %s<TAB>: %v %s, want %v %s", strings.Join(tc.args, " "), words, directive, tc.want, noFiles)
		}
	}

	// A server that does not answer: nothing, soon, and no files.
	was := completionTimeout
	completionTimeout = 300 * time.Millisecond
	defer func() { completionTimeout = was }()
	began := time.Now()
	words, directive := complete(t, "http://127.0.0.1:1", "runs", "get", "")
	if len(words) != 0 || directive != noFiles || time.Since(began) > 5*time.Second {
		t.Errorf("completion without a server: %v %s after %s", words, directive, time.Since(began))
	}
}
