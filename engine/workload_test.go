package engine

import "time"

// spend passes d of wall-clock time that is the input of a test, not a
// wait for something to happen: a simulated worker's step body (held so
// that attempts overlap), its backoff before retrying a transient failure
// (as the SDK backs off: retrying at once would load a busy store more
// than the workers the tests stand for do), or a benchmark's pause before
// the change it measures. It is the engine tests' one sleep; a test that
// waits for a state uses awaitRun, a signal or testutil.Eventually.
func spend(d time.Duration) { time.Sleep(d) }
