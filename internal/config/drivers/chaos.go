//go:build cairn_chaos

package drivers

// The chaos suite's builds (-tags cairn_chaos) can open faults:// URLs:
// a real store with seeded injected faults.
import _ "github.com/cairn-dev/cairn/blob/faults/faultsurl"
