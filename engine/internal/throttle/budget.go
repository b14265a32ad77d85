package throttle

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// BudgetMax is how many retries a full Budget allows in a row.
const BudgetMax = 100

// Budget bounds an instance's own retries so that they absorb a burst of
// refusals without multiplying the load of a store that stays overloaded
// (the client retries too): a retry spends a token, a call whose writes
// all succeeded first time earns a tenth of one, up to BudgetMax. So
// under sustained throttling about one call in ten retries, and the rest
// are left to the client's backoff (as the AWS SDKs' retry quota does).
// The zero value is a full budget.
type Budget struct {
	mu sync.Mutex
	// spent is the tenths of a retry spent and not yet earned back
	// (exact, unlike a float).
	spent int
}

// Take spends a retry, reporting false when none is left.
func (b *Budget) Take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent > (BudgetMax-1)*10 {
		return false
	}
	b.spent += 10
	return true
}

// Earn gives back a tenth of a retry.
func (b *Budget) Earn() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent = max(b.spent-1, 0)
}

// Retry calls f until it succeeds, fails with an error retryable refuses,
// has been retried tries times, or the budget is spent, waiting base,
// 2×base, 4×base … plus as much again at random before each retry. It
// reports whether it retried.
func Retry(ctx context.Context, b *Budget, tries int, base time.Duration, retryable func(error) bool, f func() error) (bool, error) {
	err := f()
	retried := false
	for attempt := 0; attempt < tries && err != nil && retryable(err) && b.Take(); attempt++ {
		retried = true
		d := base << attempt
		t := time.NewTimer(d + rand.N(d))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return retried, err
		}
		err = f()
	}
	return retried, err
}
