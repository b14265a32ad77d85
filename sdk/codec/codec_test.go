package codec

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEncryptRoundTrip(t *testing.T) {
	ring := mustRing(t, "k1")
	in := json.RawMessage(` { "a" : [1, 2, "ü"], "b": null } `)
	env, err := ring.Encrypt(in)
	if err != nil {
		t.Fatal(err)
	}
	if !IsEncrypted(env) || strings.Contains(string(env), "ü") {
		t.Fatalf("not an encrypted value: %s", env)
	}
	out, err := ring.Decrypt(env)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"a":[1,2,"ü"],"b":null}` {
		t.Fatalf("decrypted %s, want the value compacted", out)
	}
	again, err := ring.Encrypt(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) == string(env) {
		t.Fatal("two encryptions of one value are equal: the nonce is not fresh")
	}
	// Encrypting an encrypted value is the identity.
	if twice, err := ring.Encrypt(env); err != nil || string(twice) != string(env) {
		t.Fatalf("Encrypt(envelope) = %s, %v; want it unchanged", twice, err)
	}
	if _, err := ring.Encrypt(json.RawMessage(`{"a":`)); err == nil {
		t.Fatal("Encrypt of invalid JSON succeeded")
	}
}

func TestRotation(t *testing.T) {
	old := mustRing(t, "k1")
	env, err := old.Encrypt(json.RawMessage(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	rotated := mustRing(t, "k2", "k1")
	if out, err := rotated.Decrypt(env); err != nil || string(out) != `{"n":1}` {
		t.Fatalf("rotated keyring: %s, %v", out, err)
	}
	fresh, _ := rotated.Encrypt(json.RawMessage(`2`))
	if !strings.Contains(string(fresh), `"kid":"k2"`) {
		t.Fatalf("rotated keyring encrypts with %s, want k2 (the first key)", fresh)
	}
	_, err = old.Decrypt(fresh)
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), `"k2"`) {
		t.Fatalf("old keyring on a k2 value: %v, want unknown key naming k2", err)
	}
}

func TestKeyringErrors(t *testing.T) {
	k32 := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for name, data := range map[string]string{
		"empty":        `{"keys":[]}`,
		"not json":     `{"keys":`,
		"short key":    `{"keys":[{"id":"a","key":"AAAA"}]}`,
		"bad base64":   `{"keys":[{"id":"a","key":"***"}]}`,
		"no id":        `{"keys":[{"id":"","key":"` + k32 + `"}]}`,
		"space in id":  `{"keys":[{"id":"a b","key":"` + k32 + `"}]}`,
		"duplicate id": `{"keys":[{"id":"a","key":"` + k32 + `"},{"id":"a","key":"` + k32 + `"}]}`,
		"unknown key":  `{"keys":[{"id":"a","key":"` + k32 + `","secret":"x"}]}`,
	} {
		if _, err := ParseKeyring([]byte(data)); err == nil {
			t.Errorf("%s: ParseKeyring succeeded", name)
		}
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, keyringJSON("k1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := LoadKeyring(path); err != nil || k.KeyIDs()[0] != "k1" {
		t.Fatalf("LoadKeyring: %v", err)
	}
	if _, err := LoadKeyring(path + ".missing"); err == nil {
		t.Fatal("LoadKeyring of a missing file succeeded")
	}
	if _, err := NewKeyring(); err == nil {
		t.Fatal("NewKeyring() succeeded")
	}
}

func TestDecodeDeepKeepsClearBytes(t *testing.T) {
	ring := mustRing(t, "k1")
	in := json.RawMessage(`{"z": 1.50, "a": [ 1e3 ]}`)
	out, err := ring.DecodeDeep(in)
	if err != nil || string(out) != string(in) {
		t.Fatalf("DecodeDeep without envelopes changed %s to %s (%v)", in, out, err)
	}
	env, _ := ring.Encrypt(json.RawMessage(`"s"`))
	out, err = ring.DecodeDeep(json.RawMessage(`{"z":1.50,"e":` + string(env) + `,"a":[1e3]}`))
	if err != nil || string(out) != `{"z":1.50,"e":"s","a":[1e3]}` {
		t.Fatalf("DecodeDeep = %s, %v; want member order and numbers kept", out, err)
	}
}

// Overhead of one encrypted value: the envelope's size less the
// plaintext's (a kid of two characters), about 100 bytes and the
// ciphertext's base64.
func TestEnvelopeOverhead(t *testing.T) {
	ring := mustRing(t, "k2")
	for _, n := range []int{16, 4096} {
		plain := json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
		env, err := ring.Encrypt(plain)
		if err != nil {
			t.Fatal(err)
		}
		if want := 100 + (n+16+2)/3*4 - n; len(env)-n > want+10 {
			t.Errorf("%d bytes grow by %d", n, len(env)-n)
		}
		t.Logf("plaintext %d bytes → envelope %d bytes (+%d, %.0f%%)", n, len(env), len(env)-n, 100*float64(len(env)-n)/float64(n))
	}
}

func benchValue(n int) json.RawMessage {
	return json.RawMessage(`{"data":"` + strings.Repeat("x", n-11) + `"}`)
}

func BenchmarkEncrypt(b *testing.B) {
	for _, n := range []int{64, 4096} {
		b.Run(sizeName(n), func(b *testing.B) {
			ring := mustRing(b, "k2")
			v := benchValue(n)
			b.SetBytes(int64(n))
			for b.Loop() {
				if _, err := ring.Encrypt(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecrypt(b *testing.B) {
	for _, n := range []int{64, 4096} {
		b.Run(sizeName(n), func(b *testing.B) {
			ring := mustRing(b, "k2")
			env, _ := ring.Encrypt(benchValue(n))
			b.SetBytes(int64(n))
			for b.Loop() {
				if _, err := ring.Decrypt(env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeDeep(b *testing.B) {
	ring := mustRing(b, "k2")
	env, _ := ring.Encrypt(benchValue(4096))
	doc := json.RawMessage(`{"a":` + string(env) + `,"b":[1,2,3],"c":` + string(env) + `}`)
	clear := json.RawMessage(`{"a":` + string(benchValue(4096)) + `,"b":[1,2,3]}`)
	b.Run("two-envelopes", func(b *testing.B) {
		for b.Loop() {
			if _, err := ring.DecodeDeep(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("no-envelope-4KiB", func(b *testing.B) {
		for b.Loop() {
			if _, err := ring.DecodeDeep(clear); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func sizeName(n int) string {
	if n >= 1024 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}
