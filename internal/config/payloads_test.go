package config_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/config"
)

func TestPayloadSizes(t *testing.T) {
	for _, c := range []struct {
		env             []string
		inline, payload int
	}{
		{nil, 0, 0}, // the engine's defaults
		{[]string{"CAIRN_PAYLOAD_INLINE_MAX=16384", "CAIRN_MAX_PAYLOAD_BYTES=8388608"}, 16384, 8 << 20},
		{[]string{"CAIRN_PAYLOAD_INLINE_MAX=off"}, -1, 0},
	} {
		cfg, perr := load(t, config.API, append(c.env, "CAIRN_BLOB=file:///tmp/x", "CAIRN_DEV=true")...)
		if perr != nil {
			t.Fatal(perr)
		}
		e := cfg.EngineConfig(nil, nil)
		if e.PayloadInlineMax != c.inline || e.MaxOutputBytes != c.payload {
			t.Errorf("%q: inline %d, payload %d", c.env, e.PayloadInlineMax, e.MaxOutputBytes)
		}
	}
	for _, bad := range []string{"CAIRN_PAYLOAD_INLINE_MAX=64KiB", "CAIRN_PAYLOAD_INLINE_MAX=10", "CAIRN_MAX_PAYLOAD_BYTES=-5"} {
		_, perr := load(t, config.API, bad, "CAIRN_BLOB=file:///tmp/x", "CAIRN_DEV=true")
		if perr == nil || !strings.Contains(perr.Error(), strings.Split(bad, "=")[0]) {
			t.Errorf("%s: %v", bad, perr)
		}
	}
}
