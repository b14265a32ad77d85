package file_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/blobtest"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/internal/testutil"
)

func open(t testing.TB, dir string) *blob.Bucket {
	b, err := file.New(dir, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformance(t *testing.T) {
	blobtest.Run(t, blobtest.Harness{Open: func(t *testing.T) *blob.Bucket { return open(t, t.TempDir()) }})
}

func TestOpenURL(t *testing.T) {
	dir := t.TempDir()
	b := blobtest.OpenURL(t, "file://"+dir+"?nosync=true")
	var root string
	if !b.As(&root) || root != dir {
		t.Fatalf("As root = %q, want %q", root, dir)
	}
	blobtest.RefusesURLs(t, "file://host/x", "file:///x?bogus=1")
}

// The multi-process test re-executes this test binary as child processes
// that race on one directory.
const (
	childEnv = "CAIRN_FILEBLOB_CHILD"
	dirEnv   = "CAIRN_FILEBLOB_DIR"
	idEnv    = "CAIRN_FILEBLOB_ID"
)

const (
	processes      = 4
	incrementsEach = 25
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	if os.Getenv(crashEnv) != "" {
		os.Exit(crashChild())
	}
	os.Exit(m.Run())
}

// child creates a contended key (one winner among processes) and
// increments a shared counter with read-modify-swap loops.
func child() int {
	b, err := file.New(os.Getenv(dirEnv), file.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	if _, err := b.Create(ctx, "race/winner", []byte(os.Getenv(idEnv))); err == nil {
		fmt.Println("won")
	} else if !blobIsPrecondition(err) {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for range incrementsEach {
		if err := blobtest.Increment(ctx, b, "race/counter"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	return 0
}

func blobIsPrecondition(err error) bool {
	return errors.Is(err, blob.ErrPreconditionFailed)
}

func TestMultiProcess(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir)
	if _, err := b.Create(context.Background(), "race/counter", []byte("0")); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outs := make([][]byte, processes)
	errs := make([]error, processes)
	for i := range processes {
		wg.Go(func() {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=1", dirEnv+"="+dir, idEnv+"="+strconv.Itoa(i))
			cmd.Stderr = os.Stderr
			outs[i], errs[i] = cmd.Output()
		})
	}
	wg.Wait()
	winners := 0
	for i := range processes {
		if errs[i] != nil {
			t.Fatalf("child %d: %v", i, errs[i])
		}
		if string(outs[i]) == "won\n" {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("%d processes won the create-only race, want exactly 1", winners)
	}
	o, err := b.Get(context.Background(), "race/counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(processes * incrementsEach); string(o.Data) != want {
		t.Fatalf("counter = %s after %s increments from %d processes: updates were lost", o.Data, want, processes)
	}
}

func BenchmarkSwapContended(b *testing.B) {
	blobtest.BenchmarkSwapContended(b, open(b, b.TempDir()))
}

func BenchmarkCreateDistinct(b *testing.B) {
	blobtest.BenchmarkCreateDistinct(b, open(b, b.TempDir()))
}

// TestSweepTemp: a temporary file left by a writer killed before its
// rename is removed once older than the max age; a fresh one (a write in
// progress) and the objects are kept.
func TestSweepTemp(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir)
	ctx := context.Background()
	if _, err := b.Put(ctx, "leases/r1/s/000001", []byte("x"), blob.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	sub := filepath.Join(dir, "leases~", "r1~", "s~")
	stale, fresh := filepath.Join(sub, "~tmp-123"), filepath.Join(sub, "~tmp-456")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if n := file.SweepTemp(dir, time.Minute, nil); n != 1 {
		t.Fatalf("swept %d files, want 1", n)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale temp file still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("fresh temp file removed: %v", err)
	}

	// An open bucket sweeps by itself.
	b, err := blob.OpenBucket(ctx, "file://"+dir+"?tmp_max_age=20ms")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	testutil.Eventually(t, 10*time.Second, "the open bucket to sweep the temp file", func() (bool, string) {
		_, err := os.Stat(fresh)
		return errors.Is(err, fs.ErrNotExist), fmt.Sprintf("stat: %v", err)
	})
	if o, err := b.Get(ctx, "leases/r1/s/000001"); err != nil || string(o.Data) != "x" {
		t.Fatalf("object after sweep: %v", err)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkConcurrentConditionalWrites: N writers at once, each making the
// engine's two writes per step — a create-only write of a new key (the
// step's lease) and a compare-and-swap of its own record. Reports writes
// per second, fsync-class system calls per write and the process's CPU
// time (user and system) per write.
func BenchmarkConcurrentConditionalWrites(b *testing.B) {
	for _, mode := range []string{"syncfs", "fsync"} {
		defer file.SetSyncfs(file.SetSyncfs(mode == "syncfs"))
		b.Run("sync="+mode, func(b *testing.B) { benchmarkConcurrentConditionalWrites(b) })
	}
}

func benchmarkConcurrentConditionalWrites(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			bk := open(b, b.TempDir())
			defer bk.Close()
			ctx := context.Background()
			vers := make([]blob.Version, writers)
			for w := range writers {
				v, err := bk.Create(ctx, fmt.Sprintf("runs/w%d/record", w), []byte("0"))
				if err != nil {
					b.Fatal(err)
				}
				vers[w] = v
			}
			var next, done atomic.Int64 // writes handed out, made
			data := make([]byte, 600)   // about a run record's size
			syncs0, cpu0 := file.Syncs(), cpuTime()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for {
						n := next.Add(2)
						if n > int64(b.N)+1 {
							return
						}
						if _, err := bk.Create(ctx, fmt.Sprintf("leases/w%d/%08d", w, n), data); err != nil {
							b.Error(err)
							return
						}
						v, err := bk.Swap(ctx, fmt.Sprintf("runs/w%d/record", w), data, vers[w])
						if err != nil {
							b.Error(err)
							return
						}
						vers[w] = v
						done.Add(2)
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			writes := float64(done.Load())
			b.ReportMetric(writes/el.Seconds(), "writes/s")
			b.ReportMetric(float64(file.Syncs()-syncs0)/writes, "fsyncs/write")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/writes, "cpu-µs/write")
		})
	}
}
