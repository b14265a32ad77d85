package progress

import (
	"context"
	"log/slog"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/notify"
)

// Lease is how Hand proves the lease a progress message comes with.
type Lease struct {
	// Cached reports whether this instance holds the lease in its cache
	// (which proves it).
	Cached func() bool
	// Live reads the lease and reports whether it is active.
	Live func(ctx context.Context) (bool, error)
}

// Hand hands a step's progress message p (its run, step, attempt and
// value), which comes with lease (its id), to its run's watchers: on this
// instance at once, on the others over bus (nil: none). It writes
// nothing. The lease is proven from the lease cache when this instance
// holds it, else by one read per lease and instance; a message over the
// lease's rate is a *RateError.
func (h *Hub) Hand(ctx context.Context, bus notify.Bus, log *slog.Logger, lease string, p notify.Progress, proof Lease) error {
	if len(p.Value) > MaxValueBytes {
		return &errs.InvalidError{Field: "value", Message: "over the progress limit of 16 KiB"}
	}
	proven, err := h.Admit(lease)
	if err != nil {
		return err
	}
	if cached := proof.Cached(); !cached && !proven {
		if live, err := proof.Live(ctx); err != nil {
			return err
		} else if !live {
			h.Forget(lease)
			return errs.Reject(cairn.ReasonFenced, "lease of attempt %d of step %s has ended", p.Attempt, p.Step)
		}
		h.Prove(lease)
	}
	p.At = h.now()
	p = h.Accepted(p)
	if bus != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := bus.Publish(ctx, []notify.Hint{notify.ProgressNotice(p)}); err != nil {
			log.Debug("publishing progress failed; only this instance's watchers saw it", "err", err)
		}
	}
	return nil
}
