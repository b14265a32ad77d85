package api

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
)

// TestStoreLogSummarisesAnOutage: requests failing at once on an
// unreachable store log one line, then one line per storeLogEvery with the
// count of the requests not logged.
func TestStoreLogSummarisesAnOutage(t *testing.T) {
	var buf testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := &storeLog{now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}
	fail := func(n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				s.unreachable(context.Background(), log, "get", errors.New("connection refused"))
			})
		}
		wg.Wait()
	}
	fail(200)
	if got := strings.Count(buf.String(), `msg="store unreachable"`); got != 1 {
		t.Fatalf("200 failing requests logged %d lines, want 1:\n%s", got, buf.String())
	}
	mu.Lock()
	now = now.Add(storeLogEvery)
	mu.Unlock()
	fail(50)
	out := buf.String()
	if got := strings.Count(out, `msg="store unreachable"`); got != 2 {
		t.Fatalf("after %v: %d lines, want 2:\n%s", storeLogEvery, got, out)
	}
	if !strings.Contains(out, "failed_requests_not_logged=199") {
		t.Fatalf("the second line does not count the 199 requests not logged:\n%s", out)
	}
}
