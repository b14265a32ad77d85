package payload

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

func TestPutReadResolve(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	k := keys.Layout{Prefix: "p/"}
	s := New(b, k, 8, 1<<20)
	small, big := json.RawMessage(`"a"`), json.RawMessage(`"`+strings.Repeat("x", 20)+`"`)
	if got, err := s.Externalize(ctx, "r", small); err != nil || string(got) != string(small) {
		t.Fatalf("small value: %s, %v; want it inline", got, err)
	}
	ref, err := s.Externalize(ctx, "r", big)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := cairn.AsPayloadRef(ref)
	if !ok || r.Bytes != len(big) {
		t.Fatalf("big value: %s; want a reference to %d bytes", ref, len(big))
	}
	// A second store of the same content changes nothing.
	if again, err := s.Put(ctx, "r", big); err != nil || string(again) != string(ref) {
		t.Fatalf("second put: %s, %v", again, err)
	}
	// Read from the bucket, not the cache: the hash is checked.
	cold := New(b, k, 8, 0)
	if got, err := cold.Resolve(ctx, "r", ref, NewBudget(100)); err != nil || string(got) != string(big) {
		t.Fatalf("resolve: %s, %v", got, err)
	}
	var tooBig *TooLargeError
	if _, err := cold.Resolve(ctx, "r", ref, NewBudget(len(big)-1)); !errors.As(err, &tooBig) {
		t.Fatalf("over budget: %v; want TooLargeError", err)
	}
	if _, err := b.Put(ctx, k.Payload("r", r.SHA256), []byte(`"forged"`), blob.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var internal *errs.InternalError
	if _, err := cold.Read(ctx, "r", r.SHA256, false); !errors.As(err, &internal) {
		t.Fatalf("forged content: %v; want InternalError", err)
	}
	if _, err := cold.Read(ctx, "r", strings.Repeat("0", 64), false); !errs.IsNotFound(err) {
		t.Fatalf("missing payload: %v; want NotFoundError", err)
	}
	if err := s.DeleteRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, "r", r.SHA256, true); !errs.IsNotFound(err) {
		t.Fatalf("after DeleteRun: %v; want NotFoundError (and nothing cached)", err)
	}
}

func TestLooksLikeRefIsStoredByReference(t *testing.T) {
	s := New(mem.New(), keys.Layout{}, -1, 0)
	for _, v := range []string{`{"$cairn_payload":1}`, ` {"\u0024cairn_payload":{}}`} {
		if !s.ByReference(json.RawMessage(v)) {
			t.Errorf("%s: want by reference", v)
		}
	}
	for _, v := range []string{`{"a":1,"$cairn_payload":1}`, `["$cairn_payload"]`, strings.Repeat(" ", 1<<20)} {
		if s.ByReference(json.RawMessage(v)) {
			t.Errorf("%.40s: want inline (no size limit)", v)
		}
	}
}
