package config_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/config"
)

func TestKeyLayout(t *testing.T) {
	for env, want := range map[string]string{"": "", "CAIRN_KEY_LAYOUT=flat": "flat", "CAIRN_KEY_LAYOUT=sharded": "sharded"} {
		args := []string{"CAIRN_BLOB=file:///tmp/x", "CAIRN_DEV=true"}
		if env != "" {
			args = append(args, env)
		}
		cfg, perr := load(t, config.API, args...)
		if perr != nil {
			t.Fatal(perr)
		}
		if got := cfg.EngineConfig(nil, nil).KeyLayout; got != want {
			t.Errorf("%q: layout %q, want %q", env, got, want)
		}
	}
	_, perr := load(t, config.API, "CAIRN_KEY_LAYOUT=hashed", "CAIRN_BLOB=file:///tmp/x", "CAIRN_DEV=true")
	if perr == nil || !strings.Contains(perr.Error(), "CAIRN_KEY_LAYOUT") {
		t.Fatalf("a bad layout: %v", perr)
	}
}
