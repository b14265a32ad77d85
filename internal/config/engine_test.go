package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
)

// The engine settings an API's configuration makes from CAIRN_*
// variables: each test gives good values and what the engine gets from
// them, and bad ones, which must be problems naming the variable.

// devFile is an API in dev mode on a file bucket: nothing else needed.
var devFile = []string{"CAIRN_BLOB=file:///tmp/x", "CAIRN_DEV=true"}

// engineConfig is the engine configuration of an API configured by env,
// failing the test on a problem.
func engineConfig(t *testing.T, env ...string) engine.Config {
	t.Helper()
	c, perr := load(t, config.API, env...)
	if perr != nil {
		t.Fatalf("%q: %v", env, perr)
	}
	return c.EngineConfig(nil, nil)
}

// refuses checks that each of bad (NAME=value), with base, is a problem
// naming NAME.
func refuses(t *testing.T, base []string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		name, _, _ := strings.Cut(b, "=")
		if _, perr := load(t, config.API, append([]string{b}, base...)...); perr == nil || !strings.Contains(perr.Error(), name) {
			t.Errorf("%s: %v, want a problem naming %s", b, perr, name)
		}
	}
}

func TestRetention(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, engine.DefaultRetention},
		{[]string{"CAIRN_RETENTION=168h"}, 7 * 24 * time.Hour},
		{[]string{"CAIRN_RETENTION=forever"}, -1},
	} {
		if got := engineConfig(t, append(c.env, devFile...)...).Retention; got != c.want {
			t.Errorf("%q: retention %v, want %v", c.env, got, c.want)
		}
	}
	refuses(t, devFile, "CAIRN_RETENTION=30d", "CAIRN_RETENTION=1m")
}

// CAIRN_SHED_ABOVE reaches the engine (unset: the engine's default; off:
// never shed), a gs:// bucket tells the committer GCS's per-object limit,
// and bad values are problems naming the variable.
func TestShedAboveAndObjectPacing(t *testing.T) {
	for _, tc := range []struct {
		env   []string
		shed  float64
		paced float64
	}{
		{[]string{"CAIRN_BLOB=mem://"}, 0, 0},
		{[]string{"CAIRN_BLOB=mem://", "CAIRN_SHED_ABOVE=0.25"}, 0.25, 0},
		{[]string{"CAIRN_BLOB=mem://", "CAIRN_SHED_ABOVE=off"}, -1, 0},
		{[]string{"CAIRN_BLOB=gs://b"}, 0, 1},
		{[]string{"CAIRN_BLOB=s3://b?region=us-east-1"}, 0, 0},
	} {
		ec := engineConfig(t, append([]string{"CAIRN_KEYS=" + keys}, tc.env...)...)
		if ec.ShedAbove != tc.shed || ec.ObjectWritesPerSecond != tc.paced {
			t.Errorf("%v: ShedAbove %g, ObjectWritesPerSecond %g; want %g and %g", tc.env, ec.ShedAbove, ec.ObjectWritesPerSecond, tc.shed, tc.paced)
		}
	}
	if engine.DefaultShedAbove != 0.1 {
		t.Errorf("the engine's default is %g; docs/DEPLOY.md says 0.1", engine.DefaultShedAbove)
	}
	var bad []string
	for _, v := range []string{"2", "0", "-0.5", "x", "1"} {
		bad = append(bad, "CAIRN_SHED_ABOVE="+v)
	}
	refuses(t, []string{"CAIRN_BLOB=mem://", "CAIRN_KEYS=" + keys}, bad...)
}

func TestPayloadSizes(t *testing.T) {
	for _, c := range []struct {
		env             []string
		inline, payload int
	}{
		{nil, 0, 0}, // the engine's defaults
		{[]string{"CAIRN_PAYLOAD_INLINE_MAX=16384", "CAIRN_MAX_PAYLOAD_BYTES=8388608"}, 16384, 8 << 20},
		{[]string{"CAIRN_PAYLOAD_INLINE_MAX=off"}, -1, 0},
	} {
		e := engineConfig(t, append(c.env, devFile...)...)
		if e.PayloadInlineMax != c.inline || e.MaxOutputBytes != c.payload {
			t.Errorf("%q: inline %d, payload %d", c.env, e.PayloadInlineMax, e.MaxOutputBytes)
		}
	}
	refuses(t, devFile, "CAIRN_PAYLOAD_INLINE_MAX=64KiB", "CAIRN_PAYLOAD_INLINE_MAX=10", "CAIRN_MAX_PAYLOAD_BYTES=-5")
}

func TestKeyLayout(t *testing.T) {
	for env, want := range map[string]string{"": "", "CAIRN_KEY_LAYOUT=flat": "flat", "CAIRN_KEY_LAYOUT=sharded": "sharded"} {
		args := devFile
		if env != "" {
			args = append([]string{env}, devFile...)
		}
		if got := engineConfig(t, args...).KeyLayout; got != want {
			t.Errorf("%q: layout %q, want %q", env, got, want)
		}
	}
	refuses(t, devFile, "CAIRN_KEY_LAYOUT=hashed")
}
