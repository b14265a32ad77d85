package schedule

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-dev/cairn/engine/internal/errs"
)

// A schedule of a workflow, or of a pinned version, that is not
// registered is refused naming the field; a store failure is returned
// as is.
func TestCheckRegistered(t *testing.T) {
	ctx := context.Background()
	down := errors.New("store down")
	h := Host{
		Latest: func(_ context.Context, workflow string) (string, error) {
			switch workflow {
			case "w":
				return "2", nil
			case "flaky":
				return "", down
			}
			return "", &errs.NotFoundError{What: "workflow", ID: workflow}
		},
		Defined: func(_ context.Context, _, version string) error {
			if version == "2" {
				return nil
			}
			return &errs.NotFoundError{What: "version", ID: version}
		},
	}
	for _, tc := range []struct{ workflow, version, field string }{
		{"w", "", ""}, {"w", "2", ""}, {"w", "1", "version"}, {"nope", "", "workflow"}, {"nope", "2", "workflow"},
	} {
		err := h.checkRegistered(ctx, tc.workflow, tc.version)
		var invalid *errs.InvalidError
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &invalid) || invalid.Field != tc.field) {
			t.Errorf("%s@%s: %v; want refused on %q (none: accepted)", tc.workflow, tc.version, err, tc.field)
		}
	}
	if err := h.checkRegistered(ctx, "flaky", ""); !errors.Is(err, down) {
		t.Errorf("a store failure: %v; want it returned", err)
	}
}
