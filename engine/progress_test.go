package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/notify"
)

// awaitProgress receives n progress messages from c, in order, or fails.
func awaitProgress(t testing.TB, c <-chan notify.Progress, n int) []notify.Progress {
	t.Helper()
	var got []notify.Progress
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case p := <-c:
			got = append(got, p)
		case <-timeout:
			t.Fatalf("got %d progress messages of %d within 10s", len(got), n)
		}
	}
	return got
}

// Progress costs no request on the instance that holds the lease (its
// lease cache proves it), one read per lease on another instance, and
// reaches the run's watchers in order; the run's stream has its journal.
func TestProgressCostsNoRequests(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		register(t, h.e, "w", single("p", cairn.Step{}))
		run := h.start("p", "")
		l := h.claim("w")
		sub, stop := h.e.WatchProgress(run)
		defer stop()
		peer, peerCounts := h.countedPeer()
		// The claim's worker sighting (a read and a swap of the worker
		// record) runs in the background: let it land before counting.
		h.e.Settle()
		before := h.counts.Snapshot()
		for i := range 10 {
			if err := h.e.Progress(h.ctx, l.ID, json.RawMessage(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		if d := h.counts.Snapshot().Sub(before); d.Total() != 0 {
			t.Errorf("10 progress messages through the lease's instance cost %s, want nothing", d)
		}
		for i := range 5 {
			if err := peer.Progress(h.ctx, l.ID, json.RawMessage(fmt.Sprint(10+i))); err != nil {
				t.Fatal(err)
			}
		}
		if d := peerCounts.Snapshot(); d.Reads() != 1 || d.Total() != 1 {
			t.Errorf("5 progress messages through another instance cost %s, want one read", d)
		}
		// No bus: the watcher hears only this instance's messages.
		got := awaitProgress(t, sub.C(), 10)
		for i, p := range got {
			if string(p.Value) != fmt.Sprint(i) || p.Step != l.Step || p.Attempt != 1 || p.Run != run {
				t.Fatalf("message %d = %+v", i, p)
			}
		}
		st, journal, err := h.e.RunStream(h.ctx, run, 0, 0)
		if err != nil || st.Status != cairn.RunRunning || len(journal) == 0 {
			t.Fatalf("RunStream = %+v, %d entries, %v", st, len(journal), err)
		}
	}, counted())
}

// A forged or malformed lease, an oversized value and a message over the
// rate are refused, naming what is wrong; the rate refills with time.
func TestProgressRefusals(t *testing.T) {
	h := newHarness(t, withWorkflows("w", single("p", cairn.Step{})))
	h.start("p", "")
	l := h.claim("w")
	tok := mustToken(t, l.ID)
	tok.Nonce = strings.Repeat("A", 22)
	var nf *NotFoundError
	if err := h.e.Progress(h.ctx, tok.ID(), json.RawMessage(`1`)); !errors.As(err, &nf) || nf.What != "lease" {
		t.Errorf("forged lease: %v, want lease not found", err)
	}
	var inv *InvalidError
	if err := h.e.Progress(h.ctx, "nope", json.RawMessage(`1`)); !errors.As(err, &inv) || inv.Field != "lease" {
		t.Errorf("malformed lease: %v, want invalid lease", err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 16<<10) + `"`)
	if err := h.e.Progress(h.ctx, l.ID, big); !errors.As(err, &inv) || inv.Field != "value" {
		t.Errorf("oversized value: %v, want invalid value", err)
	}
	var rate *ProgressRateError
	sent := 0
	for ; sent < 100; sent++ {
		if err := h.e.Progress(h.ctx, l.ID, json.RawMessage(`1`)); err != nil {
			if !errors.As(err, &rate) || rate.RetryAfter <= 0 || rate.RetryAfter > time.Second {
				t.Fatalf("message %d: %v, want a rate refusal", sent, err)
			}
			break
		}
	}
	if sent != 20 { // the burst (the refused ones were not charged)
		t.Errorf("accepted %d messages at once, want the burst of 20", sent)
	}
	h.clk.Advance(rate.RetryAfter)
	if err := h.e.Progress(h.ctx, l.ID, json.RawMessage(`1`)); err != nil {
		t.Errorf("after Retry-After: %v", err)
	}
}
