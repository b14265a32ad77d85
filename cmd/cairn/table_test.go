package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// onTerminal makes the CLI take its terminal code paths (colours, the
// live status line) for the rest of the test, as on a terminal that
// allows colours.
func onTerminal(t *testing.T) {
	t.Helper()
	was := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { isTerminal = was })
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
}

// checkAligned fails unless every line of a table, as a terminal shows
// it (colour sequences take no width), starts each column where the
// header does: a column is the header's word; the cell under it starts
// at that offset after at least two blanks.
func checkAligned(t *testing.T, out string, columns ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(ansiRE.ReplaceAllString(out, ""), "\n"), "\n")
	header := lines[0]
	for _, col := range columns {
		at := strings.Index(header, col)
		if at < 2 {
			t.Fatalf("no column %s in header %q", col, header)
		}
		for _, l := range lines[1:] {
			if len(l) >= at-2 && strings.TrimSpace(l[at-2:]) == "" {
				continue // an empty last cell
			}
			if len(l) <= at || l[at-2:at] != "  " || l[at] == ' ' {
				t.Errorf("column %s does not start at %d in %q (header %q):\n%s", col, at, l, header, out)
			}
		}
	}
}

func TestTableIgnoresColoursInWidths(t *testing.T) {
	var b strings.Builder
	tw := newTable(&b)
	io.WriteString(tw, "RUN\tSTATUS\tSTEPS\n")
	io.WriteString(tw, "a\t"+paintStatus("completed", true)+"\t2/2\n")
	io.WriteString(tw, "bb\trunning\t1/2\n")
	io.WriteString(tw, "ccc\t"+paintStatus("failed", true)+"\t0/2\n")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\033[32mcompleted\033[0m") {
		t.Fatalf("the colours are gone:\n%q", b.String())
	}
	checkAligned(t, b.String(), "STATUS", "STEPS")
}

// On a terminal, runs list colours the statuses and still aligns every
// column: a coloured status is as wide as it looks.
func TestRunsListAlignsColouredStatuses(t *testing.T) {
	srv, _ := startServed(t)
	mustCLI(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"ana"}`, "--wait")
	cli(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"boom"}`, "--wait")
	out := mustCLI(t, srv.URL, "runs", "start", "gate")
	id := runIDRE.FindStringSubmatch(out)[1]
	mustCLI(t, srv.URL, "runs", "start", "gate")
	mustCLI(t, srv.URL, "runs", "cancel", id, "--reason", "changed my mind")

	onTerminal(t)
	out = mustCLI(t, srv.URL, "runs", "list")
	if !strings.Contains(out, "\033[") {
		t.Fatalf("runs list on a terminal has no colours:\n%s", out)
	}
	checkAligned(t, out, "WORKFLOW", "STATUS", "STEPS", "STARTED", "TOOK", "ERROR")
}

// Every CLI view writes a moment one way, as the dashboard does: local
// time with its offset from UTC.
func TestStampSaysItsZone(t *testing.T) {
	at := time.Date(2026, 12, 4, 9, 3, 4, 0, time.UTC)
	for zone, want := range map[string]string{
		"UTC":              "2026-12-04 09:03:04 UTC",
		"Asia/Tokyo":       "2026-12-04 18:03:04 UTC+09:00",
		"America/New_York": "2026-12-04 04:03:04 UTC-05:00",
		"Asia/Kolkata":     "2026-12-04 14:33:04 UTC+05:30",
	} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		if got := stampIn(at, loc); got != want {
			t.Errorf("%s: %q, want %q", zone, got, want)
		}
	}
}
