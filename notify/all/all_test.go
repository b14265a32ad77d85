package all_test

import (
	"slices"
	"testing"

	"github.com/cairn-dev/cairn/notify"
	_ "github.com/cairn-dev/cairn/notify/all"
)

func TestSchemes(t *testing.T) {
	want := []string{"awssqs", "faults", "faulty", "gcppubsub", "mem", "nats"}
	if got := notify.Schemes(); !slices.Equal(got, want) {
		t.Fatalf("schemes %v, want %v", got, want)
	}
}
