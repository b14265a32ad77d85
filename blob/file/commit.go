package file

import (
	"os"
	"sync"
)

// Group commit. A writer holding its key's lock writes a temporary file
// and hands it to the bucket's committer: commitLanes goroutines taking
// from one queue, each making the writes that queued meanwhile durable
// together. On Linux one syncfs(2) makes two of a loop's batches durable
// at once — the contents of the batch just taken and the renames of the
// one before:
//
//	loop:
//	  take the queue (batch k)
//	  syncfs: batch k's temporary files and batch k-1's renames durable
//	  wake batch k-1's writers (acknowledged)
//	  rename batch k's files over their objects
//
// with a syncfs at once when the queue is empty but a batch waits for its
// renames. Elsewhere (no syncfs) each batch is flushed in three steps: an
// fsync per temporary file in parallel, the renames, an fsync per
// directory of the batch in parallel.
//
// A write is acknowledged only once its rename is durable, and its object
// is visible only from its rename, after its content is durable: a crash
// at any point leaves each object either as it was or whole and new. A
// writer keeps its key's lock until it is woken, so no batch holds two
// writes of a key, and a key's writes are renamed in their order.
type committer struct {
	mu      sync.Mutex
	queue   []*pending
	stopped bool          // a loop has ended: writers flush by themselves
	wake    chan struct{} // a write queued (buffered: 1)
	stop    chan struct{}
	ended   sync.WaitGroup
}

// commitLanes is how many commit loops share a bucket's queue: while one
// waits in its sync, another takes what queued meanwhile and starts its
// own, so a write seldom waits for a sync that began before it queued.
// Three measured best on the engine's linear workload (docs/PERFORMANCE.md).
const commitLanes = 3

// pending is a write handed to the committer.
type pending struct {
	f         *os.File // the temporary file, open (nil with syncfs: closed)
	tmp, path string
	dir       string
	err       error
	done      chan struct{} // closed when err is set
}

func (c *committer) start(d *driver) {
	c.wake = make(chan struct{}, 1)
	c.stop = make(chan struct{})
	for range commitLanes {
		c.ended.Add(1)
		go d.commitLoop()
	}
}

// close ends the loops once the queue is empty and each loop's renames
// are synced; a write that comes later is flushed by its writer.
func (c *committer) close() {
	if c.stop == nil {
		return
	}
	close(c.stop)
	c.ended.Wait()
}

// commit makes p durable and visible, and returns its outcome.
func (d *driver) commit(p *pending) error {
	p.done = make(chan struct{})
	c := &d.gc
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		d.flush([]*pending{p})
		return p.err
	}
	c.queue = append(c.queue, p)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-p.done
	return p.err
}

func (d *driver) commitLoop() {
	c := &d.gc
	defer c.ended.Done()
	var renamed []*pending // renamed, waiting for their renames' sync
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		if len(batch) == 0 && len(renamed) == 0 {
			select {
			case <-c.stop:
				c.stopped = true
				c.mu.Unlock()
				return
			default:
			}
		}
		c.mu.Unlock()
		if len(batch) == 0 && len(renamed) == 0 {
			select {
			case <-c.wake:
			case <-c.stop:
			}
			continue
		}
		if !useSyncfs {
			d.flush(batch)
			continue
		}
		syncs.Add(1)
		err := syncfs(d.rootDir)
		for _, p := range renamed {
			p.err = err
			close(p.done)
		}
		renamed = nil
		for _, p := range batch {
			p.err = err
			if err == nil {
				p.err = os.Rename(p.tmp, p.path)
			}
			if p.err != nil {
				os.Remove(p.tmp)
				close(p.done)
				continue
			}
			renamed = append(renamed, p)
		}
	}
}

// flush runs the three steps of a group commit over batch and sets each
// write's err.
func (d *driver) flush(batch []*pending) {
	defer func() {
		for _, p := range batch {
			close(p.done)
		}
	}()
	// 1. The contents.
	if useSyncfs {
		syncs.Add(1)
		err := syncfs(d.rootDir)
		for _, p := range batch {
			p.err = err
		}
	} else {
		parallel(len(batch), func(i int) {
			p := batch[i]
			syncs.Add(1)
			p.err = p.f.Sync()
			if cerr := p.f.Close(); p.err == nil {
				p.err = cerr
			}
		})
	}
	if d.renameAll(batch) > 0 {
		d.syncRenames(batch)
	}
}

// renameAll renames the batch's files whose err is nil over their
// objects, and returns how many it renamed.
func (d *driver) renameAll(batch []*pending) int {
	renamed := 0
	for _, p := range batch {
		if p.err == nil {
			p.err = os.Rename(p.tmp, p.path)
		}
		if p.err != nil {
			os.Remove(p.tmp)
		} else {
			renamed++
		}
	}
	return renamed
}

// syncRenames makes the renames of the batch's writes whose err is nil
// durable.
func (d *driver) syncRenames(batch []*pending) {
	if !useSyncfs {
		// An fsync per directory, its error ignored as it always was
		// (Windows cannot sync a directory).
		seen := map[string]bool{}
		var dirs []string
		for _, p := range batch {
			if p.err == nil && !seen[p.dir] {
				seen[p.dir] = true
				dirs = append(dirs, p.dir)
			}
		}
		parallel(len(dirs), func(i int) {
			syncs.Add(1)
			syncDir(dirs[i])
		})
		return
	}
	syncs.Add(1)
	if err := syncfs(d.rootDir); err != nil {
		for _, p := range batch {
			if p.err == nil {
				p.err = err
			}
		}
	}
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	f.Close()
	return err
}

// parallel runs fn(0..n-1), each in its own goroutine but the last, and
// waits for them.
func parallel(n int, fn func(int)) {
	var wg sync.WaitGroup
	for i := 0; i < n-1; i++ {
		wg.Go(func() {
			fn(i)
		})
	}
	if n > 0 {
		fn(n - 1)
	}
	wg.Wait()
}
