package testinfra

import (
	"net"
	"strconv"
	"testing"
)

// FreeAddr returns a 127.0.0.1 address with a port nothing listens on at
// the moment: for a server a test starts, or for an endpoint that must
// not answer.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// FreePort returns a port of 127.0.0.1 nothing listens on at the moment.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
