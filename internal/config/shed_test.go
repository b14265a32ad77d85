package config_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
)

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
		c, perr := load(t, config.API, append([]string{"CAIRN_KEYS=" + keys}, tc.env...)...)
		if perr != nil {
			t.Fatalf("%v: %v", tc.env, perr)
		}
		ec := c.EngineConfig(nil, nil)
		if ec.ShedAbove != tc.shed || ec.ObjectWritesPerSecond != tc.paced {
			t.Errorf("%v: ShedAbove %g, ObjectWritesPerSecond %g; want %g and %g", tc.env, ec.ShedAbove, ec.ObjectWritesPerSecond, tc.shed, tc.paced)
		}
	}
	if engine.DefaultShedAbove != 0.1 {
		t.Errorf("the engine's default is %g; docs/DEPLOY.md says 0.1", engine.DefaultShedAbove)
	}
	for _, v := range []string{"2", "0", "-0.5", "x", "1"} {
		_, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_KEYS="+keys, "CAIRN_SHED_ABOVE="+v)
		if perr == nil || !strings.Contains(perr.Error(), "CAIRN_SHED_ABOVE") {
			t.Errorf("CAIRN_SHED_ABOVE=%s: %v, want a problem naming it", v, perr)
		}
	}
}
