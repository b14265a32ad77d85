package watch

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWokenRequestsShareOneRead: the requests woken by one change read
// the record once between them; a change signals every request of its
// run and no other; a run's entry goes with its last request.
func TestWokenRequestsShareOneRead(t *testing.T) {
	r := New[string]()
	w, stop := r.Add("run")
	_, stop2 := r.Add("run")
	other, stopOther := r.Add("other")
	_, next := r.State(w)
	_, otherNext := r.State(other)
	r.Changed("run", 7)
	select {
	case <-next:
	case <-time.After(10 * time.Second):
		t.Fatal("the change did not signal its run's requests")
	}
	select {
	case <-otherNext:
		t.Fatal("a change of run signalled another run's requests")
	default:
	}
	var reads atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			v, err := w.AtLeast(7, func() (*string, int64, error) {
				reads.Add(1)
				<-release
				s := "rev 7"
				return &s, 7, nil
			})
			if err != nil || *v != "rev 7" {
				t.Errorf("AtLeast: %v, %v", v, err)
			}
		})
	}
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads for 8 requests woken by one change, want 1", n)
	}
	stop()
	stop2()
	stopOther()
	if n := r.Waiting("run") + r.Waiting("other"); n != 0 {
		t.Fatalf("%d requests still registered", n)
	}
}
