package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
)

func TestDevEnviron(t *testing.T) {
	env, err := devEnviron([]string{"HOME=/h"}, "/data")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := lookup(env, "CAIRN_BLOB"); v != "file:///data" {
		t.Errorf("default store %q", v)
	}
	env, _ = devEnviron([]string{"CAIRN_BLOB=mem://"}, "/data")
	if v, _ := lookup(env, "CAIRN_BLOB"); v != "mem://" {
		t.Errorf("CAIRN_BLOB lost: %q", v)
	}
	for _, tc := range []struct {
		env []string
		dev bool
	}{
		{nil, true},
		{[]string{"CAIRN_KEYS=w:worker:abc"}, false},
		{[]string{"CAIRN_KEYS= "}, true},
		{[]string{"CAIRN_DEV=false"}, false},
		{[]string{"CAIRN_KEYS=w:worker:abc", "CAIRN_KEYS="}, true}, // --keys "" is not given; the last entry counts
	} {
		v, _ := lookup(devMode(tc.env), "CAIRN_DEV")
		if (v == "true") != tc.dev {
			t.Errorf("%q: CAIRN_DEV=%q, want dev %v", tc.env, v, tc.dev)
		}
	}
}

// syncBuffer is a log sink safe for concurrent writers and readers.
type syncBuffer = testutil.SyncBuffer

// TestDevReadsTheEnvironment: cairn dev goes through internal/config, so
// the CAIRN_* variables apply (here a bad one stops it, and a store and a
// log level take effect), flags on top.
func TestDevReadsTheEnvironment(t *testing.T) {
	t.Setenv("CAIRN_LOG_LEVEL", "loud")
	root := newRootCmd()
	root.SetArgs([]string{"dev", "--addr", "127.0.0.1:0"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	err := root.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "CAIRN_LOG_LEVEL") {
		t.Fatalf("got %v, want CAIRN_LOG_LEVEL refused", err)
	}

	t.Setenv("CAIRN_LOG_LEVEL", "debug")
	t.Setenv("CAIRN_BLOB", "mem://")
	root = newRootCmd()
	root.SetArgs([]string{"dev", "--addr", "127.0.0.1:0", "--reap-every", "10ms"})
	var out, logs syncBuffer
	root.SetOut(&out)
	root.SetErr(&logs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	re := regexp.MustCompile(`API on (http://\S+/v1/api)`)
	var base string
	testutil.Eventually(t, 10*time.Second, "cairn dev's banner", func() (bool, string) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("dev stopped: %v\n%s", err, logs.String())
		default:
		}
		return base != "", out.String() + "\n" + logs.String()
	})
	if base == "" {
		t.Fatalf("no banner:\n%s\n%s", out.String(), logs.String())
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("dev stopped with %v", err)
	}
	if !strings.Contains(out.String(), "store mem://") {
		t.Errorf("banner:\n%s", out.String())
	}
	// debug: the reaper's routine passes show.
	if l := logs.String(); !strings.Contains(l, "level=DEBUG") || !strings.Contains(l, "DEV MODE") {
		t.Errorf("logs:\n%s", l)
	}
}
