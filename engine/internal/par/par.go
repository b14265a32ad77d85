// Package par runs the engine's bounded fan-outs: a reaper pass's run
// visits, a run's lease reads, a batch of heartbeats, a map's shard
// reads — each a loop of independent store requests that may overlap,
// a few at a time.
package par

import "golang.org/x/sync/errgroup"

// Each calls fn(i) for every i in [0, count), at most n at once, and
// returns when every call has returned. A goroutine is started only when
// a slot is free, so a long list never holds more than n goroutines.
func Each(n, count int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(max(n, 1))
	for i := range count {
		g.Go(func() error {
			fn(i)
			return nil
		})
	}
	_ = g.Wait() // fn returns no error
}
