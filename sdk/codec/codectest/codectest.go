// Package codectest makes keyrings for tests of encrypted values.
package codectest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/cairn-dev/cairn/sdk/codec"
)

// Keyring is a test keyring of two random keys: k2, the newest, which
// encrypts, and k1.
type Keyring struct {
	*codec.Keyring
	// JSON is the keyring's file form; OldJSON a keyring of k1 alone (one
	// without the key that encrypts).
	JSON, OldJSON string
	secrets       []string
	t             testing.TB
}

// Secrets returns the keys' secrets in base64 (k2's, then k1's): what no
// log, page or request may show.
func (k *Keyring) Secrets() []string { return k.secrets }

// New returns a new test keyring.
func New(t testing.TB) *Keyring {
	t.Helper()
	var k2, k1 [32]byte
	_, _ = rand.Read(k2[:])
	_, _ = rand.Read(k1[:])
	b64 := base64.StdEncoding.EncodeToString
	k := &Keyring{
		JSON:    `{"keys":[{"id":"k2","key":"` + b64(k2[:]) + `"},{"id":"k1","key":"` + b64(k1[:]) + `"}]}`,
		OldJSON: `{"keys":[{"id":"k1","key":"` + b64(k1[:]) + `"}]}`,
		secrets: []string{b64(k2[:]), b64(k1[:])},
		t:       t,
	}
	ring, err := codec.ParseKeyring([]byte(k.JSON))
	if err != nil {
		t.Fatal(err)
	}
	k.Keyring = ring
	return k
}

// Seal returns v's JSON encrypted with k2, failing the test on an error.
func (k *Keyring) Seal(v any) json.RawMessage {
	k.t.Helper()
	b, err := json.Marshal(v)
	if err == nil {
		var e json.RawMessage
		if e, err = k.Encrypt(b); err == nil {
			return e
		}
	}
	k.t.Fatal(err)
	return nil
}
