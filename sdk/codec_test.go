package sdk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/sdk/codec"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// testRing returns a keyring of keys named ids, the first encrypting.
func testRing(t *testing.T, ids ...string) *codec.Keyring {
	t.Helper()
	var keys []codec.Key
	for _, id := range ids {
		s := sha256.Sum256([]byte("sdk codec test " + id))
		keys = append(keys, codec.Key{ID: id, Secret: s[:]})
	}
	k, err := codec.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// bucketEnv is a test server on a file bucket in dir.
func bucketEnv(t *testing.T, copts ...ClientOption) (*env, string) {
	dir := t.TempDir()
	b, err := file.New(dir, file.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	o := fastReap()
	o.Store = b
	return newEnv(t, o, copts...), dir
}

// bucketHolds reports the objects of the bucket in dir whose bytes hold s.
func bucketHolds(t *testing.T, dir, s string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			hits = append(hits, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

type secretIn struct {
	Tenant struct {
		ID string `json:"id"`
	} `json:"tenant"`
	Card  string `json:"card"`
	Large string `json:"large"`
}

// A run of an encrypted workflow whose input (one value large enough to
// go by reference), step outputs, state, event payload and a function's
// operation results are encrypted completes; its worker and its client
// read every value in the clear; and the bucket holds none of them.
func TestCodecRunLeavesNoPlaintextInTheBucket(t *testing.T) {
	ring := testRing(t, "k1")
	e, dir := bucketEnv(t, WithCodec(ring))
	const (
		card, output, state, event, result = "CARD-4242-PLAIN", "OUTPUT-PLAIN", "STATE-PLAIN", "EVENT-PLAIN", "OPRESULT-PLAIN"
		tenant                             = "TENANT-CLEAR"
	)
	large := strings.Repeat("LARGE-PLAIN-", 8000) // ~96 KiB: stored by reference
	wf := Workflow("secret", "1").Encrypted("tenant").
		Task("a", Handle(func(ctx StepContext, in secretIn) (map[string]any, error) {
			if in.Card != card || in.Tenant.ID != tenant || in.Large != large {
				return nil, fmt.Errorf("input not decoded: %q %q %d", in.Card, in.Tenant.ID, len(in.Large))
			}
			if err := ctx.SetState("balance", map[string]string{"v": state}); err != nil {
				return nil, err
			}
			return map[string]any{"note": output}, nil
		})).
		Task("b", Handle(func(ctx StepContext, in struct {
			Prev   map[string]string `json:"prev"`
			Card   string            `json:"card"`
			Tenant string            `json:"tenant"`
		}) (string, error) {
			var bal map[string]string
			if err := ctx.State("balance", &bal); err != nil {
				return "", err
			}
			var a map[string]string
			if err := ctx.Output("a", &a); err != nil {
				return "", err
			}
			if in.Prev["note"] != output || in.Card != card || in.Tenant != tenant || bal["v"] != state || a["note"] != output {
				return "", fmt.Errorf("not decoded: %+v %v %v", in, bal, a)
			}
			return "b saw " + in.Prev["note"], nil
		}), After("a"), Input(map[string]any{"prev": "${steps.a.output}", "card": "${input.card}", "tenant": "${input.tenant.id}"})).
		Wait("approve", "approve", After("b")).
		Function("fn", Durably(func(fc *Durable, in struct {
			Ev map[string]string `json:"ev"`
		}) (string, error) {
			v, err := Step(fc, "look", func(context.Context) (string, error) { return result, nil })
			if err != nil {
				return "", err
			}
			return v + "+" + in.Ev["by"], nil
		}), After("approve"), Input(map[string]any{"ev": "${steps.approve.output}"}))
	serve(t, NewWorker(e.client(t, WithCodec(ring)), WithLogger(quiet())).Register(wf))

	in := map[string]any{"tenant": map[string]string{"id": tenant}, "card": card, "large": large}
	run := start(t, e.c, "secret", StartOptions{Input: in, State: map[string]any{"seed": "SEED-PLAIN"}})
	if _, err := e.c.SendEvent(context.Background(), run.ID, Event{Name: "approve", Payload: map[string]string{"by": event}}); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e.c, run.ID, 30*time.Second)
	if r.Status != RunCompleted {
		t.Fatalf("run %s: %+v", r.Status, r.Error)
	}
	if got := string(r.Step("fn").Output); got != `"`+result+`+`+event+`"` {
		t.Fatalf("function output %s", got)
	}
	var rin secretIn
	if err := json.Unmarshal(r.Input, &rin); err != nil || rin.Card != card || rin.Large != large {
		t.Fatalf("the client read the input %.200s (%v)", r.Input, err)
	}
	if string(r.State["seed"]) != `"SEED-PLAIN"` || !strings.Contains(string(r.State["balance"]), state) {
		t.Fatalf("the client read the state %s", r.State)
	}
	if ops := r.Step("fn").Operations; len(ops) == 0 || string(ops[0].Result) != `"`+result+`"` {
		t.Fatalf("the client read the history %+v", ops)
	}
	// What the server answers without the key is ciphertext.
	raw, err := e.client(t).Get(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !codec.IsEncrypted(raw.Step("a").Output) || !codec.IsEncrypted(raw.State["balance"]) {
		t.Fatalf("a client without the key read %s / %s", raw.Step("a").Output, raw.State["balance"])
	}
	for _, s := range []string{card, output, state, event, result, "SEED-PLAIN", "LARGE-PLAIN"} {
		if hits := bucketHolds(t, dir, s); len(hits) > 0 {
			t.Errorf("%q is in the bucket in the clear: %v", s, hits)
		}
	}
	refs := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "payloads") {
			refs++
		}
		return nil
	})
	if refs == 0 {
		t.Error("no payload stored by reference: the large value was not tested")
	}
	// The search sees what is there: the clear key is.
	if hits := bucketHolds(t, dir, tenant); len(hits) == 0 {
		t.Errorf("the clear key %q is not in the bucket: the search is blind", tenant)
	}
}

// Values written under k1 decode once k2 is added first; new values are
// written under k2. A worker without the key fails the step with class
// codec, naming the key.
func TestCodecRotationAndMissingKey(t *testing.T) {
	k1, rotated, other := testRing(t, "k1"), testRing(t, "k2", "k1"), testRing(t, "k9")
	e, _ := bucketEnv(t)
	wf := Workflow("rot", "1").Encrypted().
		Task("echo", Handle(func(_ StepContext, in map[string]string) (string, error) { return "got " + in["msg"], nil }),
			Retry(RetryPolicy{MaxAttempts: 1}))
	w := NewWorker(e.client(t, WithCodec(rotated)), WithLogger(quiet())).Register(wf)
	stop := serve(t, w)
	old := e.client(t, WithCodec(k1))
	run := start(t, old, "rot", StartOptions{Input: map[string]string{"msg": "hello"}})
	r := waitRun(t, e.client(t, WithCodec(rotated)), run.ID, 30*time.Second)
	if r.Status != RunCompleted || string(r.Output) != `"got hello"` || string(r.Input) != `{"msg":"hello"}` {
		t.Fatalf("rotated: %s %s %s %+v", r.Status, r.Input, r.Output, r.Error)
	}
	raw, _ := e.client(t).Get(context.Background(), run.ID)
	if !strings.Contains(string(raw.Input), `"kid":"k1"`) || !strings.Contains(string(raw.Output), `"kid":"k2"`) {
		t.Fatalf("input %s (want k1), output %s (want k2)", raw.Input, raw.Output)
	}
	// The old keyring cannot read the k2 output, and says which key.
	if _, err := old.Get(context.Background(), run.ID); !errors.Is(err, codec.ErrUnknownKey) || !strings.Contains(err.Error(), `"k2"`) {
		t.Fatalf("reading a k2 value with k1 only: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	serve(t, NewWorker(e.client(t, WithCodec(other)), WithLogger(quiet())).Register(wf))
	run = start(t, old, "rot", StartOptions{Input: map[string]string{"msg": "lost"}})
	r = waitRun(t, e.c, run.ID, 30*time.Second)
	st := r.Step("echo")
	if r.Status != RunFailed || st.Error == nil || st.Error.Class != ClassCodec || !strings.Contains(st.Error.Message, `"k1"`) {
		t.Fatalf("a worker without the key: run %s, step error %+v", r.Status, st.Error)
	}
}

// An encrypted workflow whose template reads inside an encrypted value is
// refused with a 422 naming the template's field; passing values whole
// and reading inside clear keys is accepted.
func TestCodecTemplateRuleRefusedAtRegistration(t *testing.T) {
	e := newEnv(t, sdktest.Options{})
	noop := Handle(func(StepContext, json.RawMessage) (any, error) { return nil, nil })
	bad := Workflow("peek", "1").Encrypted("tenant").
		Task("a", noop).
		Task("b", noop, After("a"), Input(map[string]any{"total": "${steps.a.output.total}"}))
	w := NewWorker(e.client(t), WithLogger(quiet())).Register(bad)
	err := w.Serve(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 422 {
		t.Fatalf("registering a template that reads inside an encrypted value: %v", err)
	}
	if len(ae.Errors) == 0 || !strings.Contains(ae.Errors[0].Location, "steps[1].input") ||
		!strings.Contains(ae.Errors[0].Message, "steps.a.output.total") || !strings.Contains(ae.Errors[0].Message, "encrypted") {
		t.Fatalf("the 422 does not name the field and the expression: %+v", ae.Errors)
	}
	good := Workflow("pass", "1").Encrypted("tenant").
		Task("a", noop, Input(map[string]any{"t": "${input.tenant.id}", "all": "${input}"})).
		Task("b", noop, After("a"), Input(map[string]any{"prev": "${steps.a.output}", "c": "${input.card}"}),
			When("has(steps.a) && input.tenant.vip"))
	serve(t, NewWorker(e.client(t), WithLogger(quiet())).Register(good))
}
