package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
)

func TestRetention(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{
		{"", engine.DefaultRetention},
		{"CAIRN_RETENTION=168h", 7 * 24 * time.Hour},
		{"CAIRN_RETENTION=forever", -1},
	} {
		var env []string
		if c.env != "" {
			env = append(env, c.env)
		}
		cfg, perr := load(t, config.API, append(env, "CAIRN_BLOB=file:///tmp/x", "CAIRN_DEV=true")...)
		if perr != nil {
			t.Fatal(perr)
		}
		if got := cfg.EngineConfig(nil, nil).Retention; got != c.want {
			t.Errorf("%q: retention %v, want %v", c.env, got, c.want)
		}
	}
	for _, bad := range []string{"CAIRN_RETENTION=30d", "CAIRN_RETENTION=1m"} {
		_, perr := load(t, config.API, bad, "CAIRN_BLOB=file:///tmp/x", "CAIRN_DEV=true")
		if perr == nil || !strings.Contains(perr.Error(), "CAIRN_RETENTION") {
			t.Errorf("%s: %v", bad, perr)
		}
	}
}
