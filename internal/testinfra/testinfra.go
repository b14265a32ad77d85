// Package testinfra starts the external services that integration tests need:
// a MinIO container (through testcontainers-go) and an Azurite blob service
// (as a local child process). Each is started at most once per test binary,
// on first use, bound to 127.0.0.1, and stopped when the binary ends.
//
// A package whose tests use MinIO or Azurite must run them through Main:
//
//	func TestMain(m *testing.M) { testinfra.Main(m) }
//
// The environment comes from `eval "$(scripts/testenv.sh env)"`, which
// `make test` does: DOCKER_HOST, TESTCONTAINERS_RYUK_DISABLED,
// TESTCONTAINERS_HOST_OVERRIDE, CAIRN_MINIO_IMAGE and CAIRN_AZURITE_BIN.
//
// With -short (make test-short) no service is started: MinIO and Azurite skip
// the calling test. Otherwise a missing service fails the test, so that a
// broken setup never passes as "skipped".
package testinfra

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

const setupHint = `run the tests through "make test", or first: eval "$(scripts/testenv.sh env)"`

var (
	mainRunning atomic.Bool

	stopMu sync.Mutex
	stops  []func() // run in reverse order by stopAll
)

// Main runs the package's tests, then stops every service this package
// started, and exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	mainRunning.Store(true)

	// An interrupted run (Ctrl-C, CI cancelling) still cleans up.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		stopAll()
		fmt.Fprintf(os.Stderr, "testinfra: stopped services after %v\n", s)
		os.Exit(2)
	}()

	code := m.Run()
	stopAll()
	os.Exit(code)
}

// onStop registers f to run when Main finishes.
func onStop(f func()) {
	stopMu.Lock()
	defer stopMu.Unlock()
	stops = append(stops, f)
}

func stopAll() {
	stopMu.Lock()
	fs := stops
	stops = nil
	stopMu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
}

// shared is a service the test binary starts at most once, on first use.
type shared[T any] struct {
	once sync.Once
	v    T
	err  error
}

// start starts the service on the first call; it fails t, naming the
// service what and adding hint, when that start failed. The service is v.
func (s *shared[T]) start(t testing.TB, what, hint string, start func() (T, error)) {
	t.Helper()
	s.once.Do(func() { s.v, s.err = start() })
	if s.err != nil {
		t.Fatalf("testinfra: %s: %v%s", what, s.err, hint)
	}
}

// require applies the rules shared by every service: skip under -short, and
// insist on Main so that nothing outlives the test binary.
func require(t testing.TB, service string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("testinfra: %s is not started in -short mode", service)
	}
	if !mainRunning.Load() {
		t.Fatalf("testinfra: %s needs this package's TestMain to call testinfra.Main(m), "+
			"so that the service is stopped when the tests end", service)
	}
}
