package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/codec/codectest"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// TestGoldenEncrypted: values a client encrypted print as <encrypted
// KID> for people and as stored in JSON; with --keys (or $CAIRN_KEYRING)
// they print decrypted, in every view; a keyring without the value's key
// says so; testdata/runs_encrypted.golden.
func TestGoldenEncrypted(t *testing.T) {
	n := &normalizer{ids: map[string]string{}}

	dir := t.TempDir()
	ring := codectest.New(t)
	full := filepath.Join(dir, "keyring.json")
	old := filepath.Join(dir, "old.json")
	for p, s := range map[string]string{full: ring.JSON, old: ring.OldJSON} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	seal := ring.Seal

	vault := sdk.Workflow("vault", "1").
		Task("charge", sdk.Handle(func(ctx sdk.StepContext, in json.RawMessage) (map[string]any, error) {
			if err := ctx.SetState("customer", seal("ana@example.com")); err != nil {
				return nil, err
			}
			return map[string]any{"status": "charged", "receipt": seal(map[string]string{"receipt": "r-123"})}, nil
		})).
		Wait("approve", "approved", sdk.After("charge"))
	srv, c := serving(t, sdktest.Options{}, []sdk.WorkerOption{sdk.WithName("vault-worker")}, vault)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.Start(ctx, "vault", sdk.StartOptions{Input: seal(map[string]string{"card": "4242 4242 4242 4242"})})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "the run waiting for approved", func() (bool, string) {
		got, err := c.Get(ctx, r.ID)
		if err != nil {
			return false, err.Error()
		}
		s := got.Step("approve")
		return s != nil && s.Status == "waiting", fmt.Sprintf("%+v", s)
	})
	if _, err := c.SendEvent(ctx, r.ID, sdk.Event{Name: "approved", Payload: seal(map[string]string{"by": "bruno"})}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Wait(ctx, r.ID); err != nil || got.Status != sdk.RunCompleted {
		t.Fatalf("run: %+v %v", got, err)
	}

	// The random parts of an encrypted value, and the temporary directory.
	// The whole string: the output was normalized already (n.run), and a
	// random nonce may hold what looks like a duration ("12s…" → "<dur>…").
	cipherRE := regexp.MustCompile(`("(nonce|ct)":\s*)"[^"]*"`)
	norm := func(s string) string {
		s = strings.ReplaceAll(s, dir, "<dir>")
		return cipherRE.ReplaceAllString(s, `$1"<$2>"`)
	}
	var b strings.Builder
	for _, args := range [][]string{
		{"runs", "get", r.ID},
		{"runs", "get", r.ID, "--keys", full},
		{"runs", "get", r.ID, "--keys", old},
		{"runs", "get", r.ID, "-o", "json"},
		{"runs", "get", r.ID, "-o", "json", "--keys", full},
		{"runs", "get", r.ID, "-o", "json", "--keys", old},
		{"runs", "input", r.ID, "charge"},
		{"runs", "input", r.ID, "charge", "--keys", full},
		{"runs", "journal", r.ID, "-o", "jsonl"},
		{"runs", "journal", r.ID, "-o", "jsonl", "--keys", full},
		{"runs", "get", r.ID, "--keys", filepath.Join(dir, "missing.json")},
	} {
		b.WriteString(norm(n.run(t, srv.URL, args...)))
	}
	// $CAIRN_KEYRING, for watch (of the ended run): its output decrypted.
	t.Setenv("CAIRN_KEYRING", full)
	b.WriteString("$ CAIRN_KEYRING=<dir>/keyring.json\n")
	b.WriteString(norm(n.run(t, srv.URL, "runs", "watch", r.ID)))
	got := b.String()
	golden(t, "runs_encrypted", got)

	// Whatever the golden holds: no plaintext without a key, none of
	// the keys printed anywhere.
	for _, k := range ring.Secrets() {
		if strings.Contains(got, k) {
			t.Fatal("a key was printed")
		}
	}
	first := strings.Split(got, "$ cairn runs get <run-1> --keys")[0]
	if strings.Contains(first, "4242") || strings.Contains(first, "r-123") || !strings.Contains(first, "<encrypted k2>") {
		t.Fatalf("without a keyring:\n%s", first)
	}
	if !strings.Contains(got, `"card": "4242 4242 4242 4242"`) {
		t.Fatalf("never decrypted:\n%s", got)
	}
}
