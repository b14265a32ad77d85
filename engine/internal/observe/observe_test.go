package observe

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/telemetry"
)

func TestCommitLogsTheLifecycle(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := Run{Run: telemetry.Run{ID: "r1", Workflow: "w", Version: "1", CreatedAt: at},
		Status: cairn.RunFailed, Error: &cairn.ErrorInfo{Class: cairn.ClassFatal}}
	Commit(log, nil, r, []cairn.JournalEntry{
		{Type: cairn.JournalRunStarted, At: at},
		{Type: cairn.JournalStepCompleted, Step: "a", At: at},
		{Type: cairn.JournalRunFailed, At: at.Add(1500 * time.Millisecond)},
	})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `msg="run started" run=r1 workflow=w version=1`) ||
		!strings.Contains(lines[1], `msg="run ended" run=r1`) || !strings.Contains(lines[1], "took=1.5s") || !strings.Contains(lines[1], "class="+cairn.ClassFatal) {
		t.Fatalf("logged:\n%s\nwant a start and an end with its duration and class", buf.String())
	}
}

func TestAttemptFindsItInTheRecord(t *testing.T) {
	attempts := []cairn.Attempt{{N: 1}, {N: 2}}
	r := Run{Attempts: func(step string) []cairn.Attempt {
		if step == "a" {
			return attempts
		}
		return nil
	}}
	if a := r.attempt("a", 2); a != &attempts[1] {
		t.Fatalf("attempt 2 of a: %v; want the record's own", a)
	}
	if a := r.attempt("a", 3); a != nil {
		t.Fatalf("attempt 3 of a: %v; want none", a)
	}
	if a := r.attempt("b", 1); a != nil {
		t.Fatalf("attempt 1 of b: %v; want none", a)
	}
}
