package progress

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/notify"
)

// bus records what is published.
type bus struct{ sent []notify.Hint }

func (b *bus) Publish(_ context.Context, hints []notify.Hint) error {
	b.sent = append(b.sent, hints...)
	return nil
}
func (b *bus) Subscribe(func(notify.Hint)) (func(), error) { return func() {}, nil }

// Hand: a value over the bound is invalid; a lease is read once and then
// proven (or proven by the cache, unread); an ended lease is fenced; an
// accepted message reaches this instance's watchers and the bus.
func TestHand(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := New(func() time.Time { return now }, 1000, 100)
	sub, stop := h.Subscribe("r")
	defer stop()
	b := &bus{}
	reads, live := 0, true
	proof := Lease{Cached: func() bool { return false }, Live: func(context.Context) (bool, error) { reads++; return live, nil }}
	p := notify.Progress{Run: "r", Step: "s", Attempt: 1, Value: json.RawMessage(`1`)}
	big := p
	big.Value = json.RawMessage(`"` + strings.Repeat("x", MaxValueBytes) + `"`)
	var invalid *errs.InvalidError
	if err := h.Hand(ctx, b, slog.Default(), "l1", big, proof); !errors.As(err, &invalid) {
		t.Fatalf("a value over the bound: %v; want invalid", err)
	}
	for range 2 {
		if err := h.Hand(ctx, b, slog.Default(), "l1", p, proof); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 1 || len(b.sent) != 2 {
		t.Fatalf("%d lease reads, %d published; want one read, then proven, and both published", reads, len(b.sent))
	}
	if got := <-sub.C(); got.Run != "r" || !got.At.Equal(now) || got.Seq == 0 {
		t.Fatalf("watcher got %+v; want the message stamped", got)
	}
	cached := Lease{Cached: func() bool { return true }, Live: func(context.Context) (bool, error) { t.Fatal("read a cached lease"); return false, nil }}
	if err := h.Hand(ctx, nil, slog.Default(), "l2", p, cached); err != nil {
		t.Fatal(err)
	}
	live = false
	if err := h.Hand(ctx, nil, slog.Default(), "l3", p, proof); !isFenced(err) {
		t.Fatalf("an ended lease: %v; want fenced", err)
	}
}

func isFenced(err error) bool {
	reason, ok := errs.IsRejection(err)
	return ok && reason == cairn.ReasonFenced
}
