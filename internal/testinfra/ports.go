package testinfra

import (
	"net"
	"testing"
)

// FreeAddr returns a 127.0.0.1 address with a port nothing listens on at
// the moment: for a server a test starts, or for an endpoint that must
// not answer.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
