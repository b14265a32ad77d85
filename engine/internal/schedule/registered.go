package schedule

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-dev/cairn/engine/internal/errs"
)

// checkRegistered refuses a schedule of a workflow with no registered
// definition (of version, when it names one), naming the field: every
// tick would fail (a typo, or a worker not started yet: start it first).
func (h Host) checkRegistered(ctx context.Context, workflow, version string) error {
	var nf *errs.NotFoundError
	if _, err := h.Latest(ctx, workflow); errors.As(err, &nf) {
		return &errs.InvalidError{Field: "workflow", Message: fmt.Sprintf("no workflow %q is registered: register it (start its worker) before scheduling it", workflow)}
	} else if err != nil || version == "" {
		return err
	}
	err := h.Defined(ctx, workflow, version)
	if errors.As(err, &nf) {
		return &errs.InvalidError{Field: "version", Message: fmt.Sprintf("workflow %q has no registered version %q", workflow, version)}
	}
	return err
}
