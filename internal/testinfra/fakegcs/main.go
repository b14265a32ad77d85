// Command fakegcs serves fake-gcs-server's in-memory GCS JSON API on
// 127.0.0.1 for tests (testinfra.FakeGCS builds and starts it): a process
// of its own, built without the race detector, so that a suite under -race
// does not also run the emulator under it. It prints its URL on the first
// line of stdout and exits when stdin closes (its parent ended).
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

func main() {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakegcs:", err)
		os.Exit(1)
	}
	fmt.Println(srv.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Stop()
}
