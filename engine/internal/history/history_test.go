package history

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
)

var lim = Limits{Operations: 3, ResultBytes: 16, Bytes: 40}

func step(seq int, id, result string) cairn.Operation {
	return cairn.Operation{ID: id, Seq: seq, Kind: cairn.OpStep, Status: cairn.OpCompleted, Result: json.RawMessage(result)}
}

func TestAppendContinuesAndSkipsWhatItHolds(t *testing.T) {
	now := time.Unix(100, 0)
	hist := []cairn.Operation{step(0, "/a#0", "1")}
	added, err := Append(hist, []cairn.Operation{step(0, "/a#0", "1"), step(1, "/b#0", "2")}, now, lim)
	if err != nil || len(added) != 1 || added[0].ID != "/b#0" || !added[0].At.Equal(now) {
		t.Fatalf("added %+v, %v", added, err)
	}
}

func TestAppendRefuses(t *testing.T) {
	hist := []cairn.Operation{step(0, "/a#0", "1")}
	wake := time.Unix(5, 0)
	for _, c := range []struct {
		name  string
		ops   []cairn.Operation
		field string
		words string
	}{
		{"gap", []cairn.Operation{step(2, "/c#0", "1")}, "operations[0].seq", "continues at 1"},
		{"another operation at a held position", []cairn.Operation{step(0, "/z#0", "1")}, "operations[0].seq", `holds step "/a#0"`},
		{"negative seq", []cairn.Operation{step(-1, "/c#0", "1")}, "operations[0].seq", "negative"},
		{"no id", []cairn.Operation{step(1, "", "1")}, "operations[0].id", "1 to 512"},
		{"bad utf-8", []cairn.Operation{step(1, "\xff", "1")}, "operations[0].id", "UTF-8"},
		{"unknown kind", []cairn.Operation{{ID: "/c#0", Seq: 1, Kind: "dance", Status: cairn.OpCompleted}}, "operations[0].kind", "dance"},
		{"unknown status", []cairn.Operation{{ID: "/c#0", Seq: 1, Kind: cairn.OpStep, Status: "maybe"}}, "operations[0].status", "maybe"},
		{"result not JSON", []cairn.Operation{step(1, "/c#0", "{")}, "operations[0].result", "JSON"},
		{"result too large", []cairn.Operation{step(1, "/c#0", `"`+strings.Repeat("x", 20)+`"`)}, "operations[0].result", "16-byte"},
		{"failed without error", []cairn.Operation{{ID: "/c#0", Seq: 1, Kind: cairn.OpStep, Status: cairn.OpFailed}}, "operations[0].error", "error"},
		{"sleep without end", []cairn.Operation{{ID: "/c#0", Seq: 1, Kind: cairn.OpSleep, Status: cairn.OpCompleted}}, "operations[0].wake_at", "end"},
		{"too many", []cairn.Operation{step(1, "/b#0", "1"), step(2, "/c#0", "1"), {ID: "/d#0", Seq: 3, Kind: cairn.OpSleep, Status: cairn.OpCompleted, WakeAt: &wake}}, "operations", "over 3 operations"},
		{"too many bytes", []cairn.Operation{step(1, "/b#0", `"0123456789abc"`), step(2, "/c#0", `"0123456789abc"`)}, "operations", "over 40 bytes"},
	} {
		_, err := Append(hist, c.ops, time.Now(), lim)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Message, c.words) {
			t.Errorf("%s: got %v, want %s: …%s…", c.name, err, c.field, c.words)
		}
	}
}

func TestResumableStopsAtTheFirstFailureOrOpenStart(t *testing.T) {
	wake := time.Unix(5, 0)
	started := func(seq int, id string) cairn.Operation {
		return cairn.Operation{ID: id, Seq: seq, Kind: cairn.OpStep, Status: cairn.OpStarted}
	}
	failed := cairn.Operation{ID: "/c#0", Seq: 4, Kind: cairn.OpStep, Status: cairn.OpFailed, Error: &cairn.ErrorInfo{Class: "x"}}
	hist := []cairn.Operation{step(0, "/a#0", "1"), started(1, "/once#0"), step(2, "/once#0", "2"),
		{ID: "/nap#0", Seq: 3, Kind: cairn.OpSleep, Status: cairn.OpCompleted, WakeAt: &wake}, failed, step(5, "/d#0", "3")}
	if got := Resumable(hist); len(got) != 4 || got[3].ID != "/nap#0" {
		t.Fatalf("a failure at 4: kept %+v", got)
	}
	open := append(slices.Clone(hist[:4]), started(4, "/charge#0"))
	if got := Resumable(open); len(got) != 4 {
		t.Fatalf("an at_most_once start without outcome at 4: kept %d", len(got))
	}
	if got := Resumable(hist[:4]); len(got) != 4 {
		t.Fatalf("nothing failed: kept %d of 4", len(got))
	}
}

// An operation started before the cut that ends after it (interleaved
// branches) is cut with what follows: no start is kept without its end.
func TestResumableKeepsNoStartWithoutItsEnd(t *testing.T) {
	hist := []cairn.Operation{
		step(0, "/first#0", "1"),
		{ID: "/m#0/0/charge#0", Seq: 1, Kind: cairn.OpStep, Status: cairn.OpStarted},
		{ID: "/m#0/1/other#0", Seq: 2, Kind: cairn.OpStep, Status: cairn.OpFailed, Error: &cairn.ErrorInfo{Class: "x"}},
		{ID: "/m#0/0/charge#0", Seq: 3, Kind: cairn.OpStep, Status: cairn.OpCompleted},
	}
	if got := Resumable(hist); len(got) != 1 || got[0].ID != "/first#0" {
		t.Fatalf("kept %+v", got)
	}
}

// An operation's error is bounded in every field; a conflict with an
// outcome the engine may have recorded (an event, an invoked run's end)
// is a changed history, any other a malformed checkpoint.
func TestAppendErrorFieldsAndChangedHistory(t *testing.T) {
	bad := []struct {
		err   cairn.ErrorInfo
		field string
	}{
		{cairn.ErrorInfo{Class: strings.Repeat("c", 129), Message: "m"}, "operations[0].error.class"},
		{cairn.ErrorInfo{Class: "c", Message: "m", Step: "main"}, "operations[0].error.step"},
	}
	for _, b := range bad {
		e := b.err
		_, err := Append(nil, []cairn.Operation{{ID: "/a#0", Kind: cairn.OpStep, Status: cairn.OpFailed, Error: &e}}, time.Now(), lim)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != b.field {
			t.Errorf("%+v: got %v, want %s", b.err, err, b.field)
		}
	}
	invoked := []cairn.Operation{
		{ID: "/call#0", Seq: 0, Kind: cairn.OpInvoke, Status: cairn.OpStarted},
		{ID: "/call#0", Seq: 1, Kind: cairn.OpInvoke, Status: cairn.OpCompleted, Result: json.RawMessage("1")},
	}
	if _, err := Append(invoked, []cairn.Operation{step(1, "/next#0", "2")}, time.Now(), lim); !errors.Is(err, ErrChanged) {
		t.Fatalf("a step where the engine recorded an invoked run's end: %v, want ErrChanged", err)
	}
}
