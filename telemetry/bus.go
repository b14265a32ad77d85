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
	if h.Changed {
		return "change"
	}
	return "hint"
}

func (b *bus) Publish(ctx context.Context, hints []notify.Hint) error {
	err := b.Bus.Publish(ctx, hints)
	var hs, cs int
	for _, h := range hints {
		if h.Changed {
			cs++
		} else {
			hs++
		}
	}
	if err != nil {
		// The engine serves its own claims from the hints meanwhile;
		// the other instances find the work by their fallback scans.
		b.t.Dropped("hint", "publish_failed", hs)
		b.t.Dropped("change", "publish_failed", cs)
		return err
	}
	b.t.Published("hint", hs)
	b.t.Published("change", cs)
	return nil
}

func (b *bus) Subscribe(fn func(notify.Hint)) (func(), error) {
	return b.Bus.Subscribe(func(h notify.Hint) {
		b.t.Received(kind(h))
		fn(h)
	})
}
