package hub

import (
	"context"
	"log/slog"
	"time"

	"github.com/cairn-dev/cairn/notify"
)

// Announce publishes hints on bus when there is one (every instance, the
// caller's included, hears them), else hands each to local (the caller's
// own receiver). When the bus refuses them, they go to local too: a lost
// hint costs latency, not work (the fallback scan and the reaper find the
// step), and this instance's claims are served meanwhile.
func Announce(bus notify.Bus, hints []notify.Hint, local func(notify.Hint), log *slog.Logger) {
	if bus == nil {
		for _, h := range hints {
			local(h)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := bus.Publish(ctx, hints); err != nil {
		log.Warn("publishing work notifications failed; falling back to the bucket", "err", err, "hints", len(hints))
		for _, h := range hints {
			local(h)
		}
	}
}
