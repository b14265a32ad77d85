package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int64
	began := time.Now()
	ok, _ := wait(5*time.Second, time.Millisecond, func() (bool, string) { return n.Add(1) >= 3, "" })
	if !ok || n.Load() != 3 {
		t.Fatalf("wait answered %v after %d checks, want true after 3", ok, n.Load())
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("wait took %v for three 1 ms ticks", took)
	}
}

func TestWaitFailsAtTheBoundWithTheLastDiagnosis(t *testing.T) {
	var n atomic.Int64
	began := time.Now()
	ok, diag := wait(50*time.Millisecond, 5*time.Millisecond, func() (bool, string) {
		return false, fmt.Sprintf("check %d", n.Add(1))
	})
	took := time.Since(began)
	if ok || diag != fmt.Sprintf("check %d", n.Load()) {
		t.Fatalf("wait answered %v %q after %d checks; want false with the last check's diagnosis", ok, diag, n.Load())
	}
	if took < 50*time.Millisecond {
		t.Fatalf("wait gave up after %v, before its bound of 50ms", took)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and
// ends the goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestEventuallyFailsLoudly(t *testing.T) {
	f := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		EventuallyEvery(f, 20*time.Millisecond, time.Millisecond, "the answer", func() (bool, string) { return false, "41" })
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Eventually did not return within 10 s of its 20 ms bound")
	}
	for _, want := range []string{"20ms", "the answer", "41"} {
		if !strings.Contains(f.msg, want) {
			t.Errorf("failure %q lacks %q", f.msg, want)
		}
	}
}
