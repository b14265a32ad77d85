package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
)

// TestClaimHold: the claim hold and pause by platform and variable, as
// the engine built from the configuration applies them.
func TestClaimHold(t *testing.T) {
	const lambda = "AWS_LAMBDA_RUNTIME_API=127.0.0.1:9001"
	for _, tc := range []struct {
		name        string
		env         []string
		hold, pause time.Duration
	}{
		{"default", nil, 24 * time.Second, 0},
		{"default, 60s requests", []string{"CAIRN_MAX_REQUEST_TIME=60s"}, 48 * time.Second, 0},
		{"Lambda", []string{lambda}, config.LambdaClaimHold, config.LambdaClaimPause},
		{"Lambda, 2s requests", []string{lambda, "CAIRN_MAX_REQUEST_TIME=2s"}, 1600 * time.Millisecond, config.LambdaClaimPause},
		{"Lambda, set", []string{lambda, "CAIRN_CLAIM_HOLD=5s", "CAIRN_CLAIM_PAUSE=10s"}, 5 * time.Second, 10 * time.Second},
		{"Lambda, long holds", []string{lambda, "CAIRN_CLAIM_HOLD=24s", "CAIRN_CLAIM_PAUSE=0s"}, 24 * time.Second, 0},
		{"no hold", []string{"CAIRN_CLAIM_HOLD=0s", "CAIRN_CLAIM_PAUSE=1s"}, 0, time.Second},
		{"Cloud Run", []string{"K_SERVICE=cairn-api", "CAIRN_MAX_REQUEST_TIME=300s"}, 240 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, perr := load(t, config.API, append([]string{"CAIRN_BLOB=mem://", "CAIRN_KEYS=" + keys}, tc.env...)...)
			if perr != nil {
				t.Fatal(perr)
			}
			e, err := engine.New(mem.New(), c.EngineConfig(nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if e.ClaimHold() != tc.hold || e.ClaimPause() != tc.pause {
				t.Errorf("hold %v pause %v, want %v and %v", e.ClaimHold(), e.ClaimPause(), tc.hold, tc.pause)
			}
		})
	}
	for env, want := range map[string]string{
		"CAIRN_CLAIM_HOLD=25s":  "longer than 4/5 of CAIRN_MAX_REQUEST_TIME",
		"CAIRN_CLAIM_HOLD=-1s":  "out of range",
		"CAIRN_CLAIM_HOLD=2":    "no unit",
		"CAIRN_CLAIM_PAUSE=61s": "out of range",
		"CAIRN_CLAIM_PAUSE=x":   "want a duration",
	} {
		_, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_KEYS="+keys, env)
		if perr == nil || !strings.Contains(perr.Error(), strings.SplitN(env, "=", 2)[0]) || !strings.Contains(perr.Error(), want) {
			t.Errorf("%s: %v, want a problem saying %q", env, perr, want)
		}
	}
}
