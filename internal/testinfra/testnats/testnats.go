// Package testnats runs embedded NATS servers for tests: the bus of the
// nats driver's own tests, and of the end-to-end and chaos suites. It is
// apart from testinfra so that only the tests that use NATS link the
// server.
package testnats

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start runs an embedded NATS server on 127.0.0.1 (a random port when
// port is -1) until the test ends.
func Start(t testing.TB, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// URL starts a server on a random port and returns its client URL.
func URL(t testing.TB) string {
	t.Helper()
	return Start(t, -1).ClientURL()
}
