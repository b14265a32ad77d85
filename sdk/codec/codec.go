// Package codec encrypts JSON values on the client so that the cairn
// server and its bucket never see them in the clear.
//
// An encrypted value is the JSON object
//
//	{"$cairn_encrypted":{"v":1,"alg":"A256GCM","kid":"k2","nonce":"…","ct":"…"}}
//
// whose plaintext is the UTF-8 JSON encoding of the value, sealed with
// AES-256-GCM under the key kid names: nonce is the 12-byte nonce and ct
// the ciphertext followed by the 16-byte tag, both in standard base64;
// the additional data is the ASCII bytes "cairn-codec-v1:" followed by
// the kid, so a value cannot be relabelled with another key's id.
//
// A Keyring holds the keys: the first encrypts, every one decrypts. To
// rotate, put a new key first and keep the old ones while values written
// with them may still be read. The Go, TypeScript and Python SDKs and the
// dashboard implement the same format; testdata/vectors.json holds the
// vectors they all check.
//
// The package uses the standard library only.
package codec

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Marker is the one key of an encrypted value's object.
const Marker = "$cairn_encrypted"

// Version, Algorithm and AADPrefix are the format's fixed parts.
const (
	Version   = 1
	Algorithm = "A256GCM"
	AADPrefix = "cairn-codec-v1:"
)

const (
	keySize   = 32
	nonceSize = 12
	tagSize   = 16
	maxKIDLen = 128
)

// The errors Decrypt and DecodeDeep wrap, for errors.Is.
var (
	// ErrUnknownKey: the value names a key id the keyring does not hold.
	ErrUnknownKey = errors.New("codec: unknown key id")
	// ErrAuth: the value does not open under its key (wrong key, or the
	// value, its nonce or its kid was changed).
	ErrAuth = errors.New("codec: value does not decrypt")
	// ErrMalformed: not an encrypted value of this format (bad JSON,
	// version, algorithm, base64 or lengths).
	ErrMalformed = errors.New("codec: malformed encrypted value")
)

// Key is one key of a keyring: its id, written into every value it
// encrypts, and its 32-byte AES-256 secret.
type Key struct {
	ID     string
	Secret []byte
}

type entry struct {
	id   string
	aead cipher.AEAD
}

// Keyring encrypts with its first key and decrypts with any of its keys.
// It is safe for concurrent use.
type Keyring struct {
	keys []entry
	byID map[string]cipher.AEAD
	rand io.Reader
}

// NewKeyring returns a keyring of keys, the first of which encrypts. It
// needs at least one key; ids must be 1 to 128 printable ASCII characters
// without spaces, and distinct; secrets 32 bytes.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("codec: a keyring needs at least one key")
	}
	k := &Keyring{byID: make(map[string]cipher.AEAD, len(keys)), rand: rand.Reader}
	for i, key := range keys {
		if err := checkKID(key.ID); err != nil {
			return nil, fmt.Errorf("codec: key %d: %w", i, err)
		}
		if _, dup := k.byID[key.ID]; dup {
			return nil, fmt.Errorf("codec: key id %q appears twice", key.ID)
		}
		if len(key.Secret) != keySize {
			return nil, fmt.Errorf("codec: key %q is %d bytes, want %d (AES-256)", key.ID, len(key.Secret), keySize)
		}
		block, err := aes.NewCipher(bytes.Clone(key.Secret))
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: %w", key.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: %w", key.ID, err)
		}
		k.keys = append(k.keys, entry{id: key.ID, aead: aead})
		k.byID[key.ID] = aead
	}
	return k, nil
}

func checkKID(id string) error {
	if id == "" || len(id) > maxKIDLen {
		return fmt.Errorf("key id %q must be 1 to %d characters", id, maxKIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("key id %q: only printable ASCII without spaces", id)
		}
	}
	return nil
}

// keyringFile is a keyring's JSON form.
type keyringFile struct {
	Keys []struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	} `json:"keys"`
}

// ParseKeyring reads a keyring's JSON form,
// {"keys":[{"id":"k2","key":"<base64 of 32 bytes>"},{"id":"k1",…}]},
// newest key first.
func ParseKeyring(data []byte) (*Keyring, error) {
	var f keyringFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("codec: keyring: %w", err)
	}
	keys := make([]Key, 0, len(f.Keys))
	for i, fk := range f.Keys {
		secret, err := base64.StdEncoding.DecodeString(fk.Key)
		if err != nil {
			return nil, fmt.Errorf("codec: keyring: key %d (%q): not standard base64: %w", i, fk.ID, err)
		}
		keys = append(keys, Key{ID: fk.ID, Secret: secret})
	}
	return NewKeyring(keys...)
}

// LoadKeyring reads a keyring file (ParseKeyring's form).
func LoadKeyring(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("codec: %w", err)
	}
	return ParseKeyring(data)
}

// KeyIDs returns the keyring's key ids, the encrypting one first.
func (k *Keyring) KeyIDs() []string {
	ids := make([]string, len(k.keys))
	for i, e := range k.keys {
		ids[i] = e.id
	}
	return ids
}

// envelope is the object under Marker.
type envelope struct {
	V     int    `json:"v"`
	Alg   string `json:"alg"`
	KID   string `json:"kid"`
	Nonce string `json:"nonce"`
	CT    string `json:"ct"`
}

type wrapped struct {
	Enc envelope `json:"$cairn_encrypted"`
}

// Encrypt returns v, a JSON value, encrypted with the keyring's first key
// under a fresh random nonce. The plaintext is v compacted (insignificant
// whitespace removed). A value that already is an encrypted value is
// returned as it is, so encrypting twice is encrypting once.
func (k *Keyring) Encrypt(v json.RawMessage) (json.RawMessage, error) {
	if IsEncrypted(v) {
		return v, nil
	}
	var plain bytes.Buffer
	if err := json.Compact(&plain, v); err != nil {
		return nil, fmt.Errorf("codec: encrypt: not a JSON value: %w", err)
	}
	nonce := make([]byte, nonceSize)
	if _, err := io.ReadFull(k.rand, nonce); err != nil {
		return nil, fmt.Errorf("codec: encrypt: nonce: %w", err)
	}
	return k.seal(k.keys[0], nonce, plain.Bytes()), nil
}

// seal encrypts plain with e under nonce into an encrypted value.
func (k *Keyring) seal(e entry, nonce, plain []byte) json.RawMessage {
	ct := e.aead.Seal(nil, nonce, plain, aad(e.id))
	out, err := json.Marshal(wrapped{Enc: envelope{
		V: Version, Alg: Algorithm, KID: e.id,
		Nonce: base64.StdEncoding.EncodeToString(nonce),
		CT:    base64.StdEncoding.EncodeToString(ct),
	}})
	if err != nil { // strings and an int: cannot fail
		panic(err)
	}
	return out
}

func aad(kid string) []byte { return []byte(AADPrefix + kid) }

// Decrypt returns the value an encrypted value holds. Its errors wrap
// ErrUnknownKey (and name the kid), ErrAuth or ErrMalformed.
func (k *Keyring) Decrypt(env json.RawMessage) (json.RawMessage, error) {
	var w map[string]json.RawMessage
	if err := json.Unmarshal(env, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	raw, ok := w[Marker]
	if !ok || len(w) != 1 {
		return nil, fmt.Errorf("%w: not an object whose one key is %q", ErrMalformed, Marker)
	}
	var e envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if e.V != Version {
		return nil, fmt.Errorf("%w: version %d, this codec reads %d", ErrMalformed, e.V, Version)
	}
	if e.Alg != Algorithm {
		return nil, fmt.Errorf("%w: algorithm %q, this codec reads %q", ErrMalformed, e.Alg, Algorithm)
	}
	aead, ok := k.byID[e.KID]
	if !ok {
		return nil, fmt.Errorf("%w %q (the keyring holds %q)", ErrUnknownKey, e.KID, k.KeyIDs())
	}
	nonce, err := base64.StdEncoding.DecodeString(e.Nonce)
	if err != nil {
		return nil, fmt.Errorf("%w: nonce: %v", ErrMalformed, err)
	}
	if len(nonce) != nonceSize {
		return nil, fmt.Errorf("%w: nonce is %d bytes, want %d", ErrMalformed, len(nonce), nonceSize)
	}
	ct, err := base64.StdEncoding.DecodeString(e.CT)
	if err != nil {
		return nil, fmt.Errorf("%w: ct: %v", ErrMalformed, err)
	}
	if len(ct) < tagSize {
		return nil, fmt.Errorf("%w: ct is %d bytes, shorter than the %d-byte tag", ErrMalformed, len(ct), tagSize)
	}
	plain, err := aead.Open(nil, nonce, ct, aad(e.KID))
	if err != nil {
		return nil, fmt.Errorf("%w with key %q (wrong key, or the value was changed)", ErrAuth, e.KID)
	}
	if !json.Valid(plain) {
		return nil, fmt.Errorf("%w: plaintext is not JSON", ErrMalformed)
	}
	return plain, nil
}

// IsEncrypted reports whether v is an encrypted value: an object whose
// one key is "$cairn_encrypted" and whose value is an object.
func IsEncrypted(v json.RawMessage) bool {
	t := bytes.TrimSpace(v)
	if len(t) < len(Marker)+4 || t[0] != '{' || !bytes.Contains(t, []byte(Marker)) {
		return false
	}
	var w map[string]json.RawMessage
	if json.Unmarshal(t, &w) != nil || len(w) != 1 {
		return false
	}
	raw, ok := w[Marker]
	raw = bytes.TrimSpace(raw)
	return ok && len(raw) > 0 && raw[0] == '{'
}

// DecodeDeep returns v with every encrypted value anywhere inside it (v
// itself, an object's member, an array's element, at any depth, and inside
// decrypted values) replaced by its plaintext. Everything else is kept
// byte for byte, object members in their order. A value without the
// marker is returned as it is, without parsing.
func (k *Keyring) DecodeDeep(v json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(v, []byte(Marker)) {
		return v, nil
	}
	return k.decodeDeep(v, 0)
}

// maxDepth bounds DecodeDeep's recursion (and so plaintexts holding
// encrypted values holding …).
const maxDepth = 1000

func (k *Keyring) decodeDeep(v json.RawMessage, depth int) (json.RawMessage, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested more than %d deep", ErrMalformed, maxDepth)
	}
	if !bytes.Contains(v, []byte(Marker)) {
		return v, nil
	}
	t := bytes.TrimSpace(v)
	switch {
	case len(t) > 0 && t[0] == '{':
		if IsEncrypted(t) {
			plain, err := k.Decrypt(t)
			if err != nil {
				return nil, err
			}
			return k.decodeDeep(plain, depth+1)
		}
		return k.decodeObject(t, depth)
	case len(t) > 0 && t[0] == '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(t, &elems); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for i, el := range elems {
			d, err := k.decodeDeep(el, depth+1)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(d)
		}
		b.WriteByte(']')
		return b.Bytes(), nil
	default: // a string that merely mentions the marker
		return v, nil
	}
}

// decodeObject decodes the members of an object that is not itself an
// encrypted value, keeping their order.
func (k *Keyring) decodeObject(t json.RawMessage, depth int) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(t))
	if _, err := dec.Token(); err != nil { // {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; dec.More(); i++ {
		var key string
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		key, _ = tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		d, err := k.decodeDeep(val, depth+1)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(key)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(d)
	}
	if _, err := dec.Token(); err != nil { // }
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
