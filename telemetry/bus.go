package telemetry

import (
	"context"

	"github.com/cairn-dev/cairn/notify"
)

// WrapBus returns b counting what it publishes and receives (work hints
// and run-change notices). With a nil t, or no metrics, it returns b.
func WrapBus(b notify.Bus, t *T) notify.Bus {
	if b == nil || t == nil || t.m == nil {
		return b
	}
	return &bus{Bus: b, t: t}
}

type bus struct {
	notify.Bus
	t *T
}

func kind(h notify.Hint) string {
	switch h.Kind() {
	case notify.KindChanged:
		return "change"
	case notify.KindRegistered:
		return "registration"
	}
	return "hint"
}

func (b *bus) Publish(ctx context.Context, hints []notify.Hint) error {
	err := b.Bus.Publish(ctx, hints)
	n := map[string]int{}
	for _, h := range hints {
		n[kind(h)]++
	}
	for _, k := range []string{"hint", "change", "registration"} {
		if err != nil {
			// The engine serves its own claims from the hints meanwhile;
			// the other instances find the work by their fallback scans
			// (and a registration by their LatestTTL).
			b.t.Dropped(k, "publish_failed", n[k])
		} else {
			b.t.Published(k, n[k])
		}
	}
	return err
}

func (b *bus) Subscribe(fn func(notify.Hint)) (func(), error) {
	return b.Bus.Subscribe(func(h notify.Hint) {
		b.t.Received(kind(h))
		fn(h)
	})
}
