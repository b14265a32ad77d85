// Command chaosworker is the chaos suite's worker process: an SDK worker
// serving the chaos workflows (see package chaos). The suite builds it and
// runs several, killing and pausing them.
package main

import (
	"os"

	"github.com/cairn-dev/cairn/chaos"
)

func main() { os.Exit(chaos.WorkerMain()) }
