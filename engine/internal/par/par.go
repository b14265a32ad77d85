// Package par runs the engine's bounded fan-outs: a reaper pass's run
// visits, a run's lease reads, a batch of heartbeats, a map's shard
// reads — each a loop of independent store requests that may overlap,
// a few at a time.
package par

import "sync"

// Each calls fn(i) for every i in [0, count), at most n at once, and
// returns when every call has returned. A goroutine is started only when
// a slot is free, so a long list never holds more than n goroutines.
func Each(n, count int, fn func(i int)) {
	if n < 1 {
		n = 1
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i := range count {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}
