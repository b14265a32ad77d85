package main

import (
	"regexp"
	"testing"

	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// versionRE matches the store's versions as the CLI prints them (opaque,
// different from one run of the test to the next): base64url of 8
// characters or more after "version " or two blanks.
var versionRE = regexp.MustCompile(`(version |  )[A-Za-z0-9_-]{8,}\b`)

// cairn store: write (a condition refused, then met), read, list by
// prefix, delete; the transcript is a golden file.
func TestGoldenStore(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	n := &normalizer{ids: map[string]string{}}
	s := n.run(t, srv.URL, "store", "put", "memory", "user:42", `{"tone":"formal"}`, "--if-absent")
	s += n.run(t, srv.URL, "store", "put", "memory", "user:42", `{"tone":"casual"}`, "--if-absent")
	s += n.run(t, srv.URL, "store", "put", "memory", "user:7", `[1,2,3]`)
	s += n.run(t, srv.URL, "store", "put", "memory", "other", `true`)
	s += n.run(t, srv.URL, "store", "get", "memory", "user:42")
	s += n.run(t, srv.URL, "store", "list", "memory", "--prefix", "user:")
	s += n.run(t, srv.URL, "store", "delete", "memory", "user:42")
	s += n.run(t, srv.URL, "store", "get", "memory", "user:42")
	s += n.run(t, srv.URL, "store", "put", "memory", "bad/key", `1`)
	golden(t, "store", versionRE.ReplaceAllString(s, "$1<version>"))
}
