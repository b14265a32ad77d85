package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/cairn-dev/cairn/sdk/codec"
)

// payloads shows the values a client encrypted (sdk/codec): decrypted
// with the keyring of --keys ($CAIRN_KEYRING), a file on this machine, or
// else, for people, as <encrypted KID>, and in JSON output as stored.
// The keyring is used here only; it is never sent to the server.
type payloads struct {
	ring *codec.Keyring // nil: no --keys
}

// loadPayloads reads the keyring file at path, if one is given.
func loadPayloads(path string) (*payloads, error) {
	if path == "" {
		return &payloads{}, nil
	}
	ring, err := codec.LoadKeyring(path)
	if err != nil {
		return nil, fmt.Errorf("--keys: %w", err)
	}
	return &payloads{ring: ring}, nil
}

// doc is v for JSON output: with a keyring, every encrypted value in it
// decrypted (members kept in their order); without, v as it is.
func (p *payloads) doc(v any) (any, error) {
	if p == nil || p.ring == nil {
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d, err := p.ring.DecodeDeep(b)
	if err != nil {
		return nil, fmt.Errorf("--keys: %w (without --keys the values print as stored)", err)
	}
	return json.RawMessage(d), nil
}

// text is raw indented for people (prettyJSON), every encrypted value in
// it decrypted with the keyring, or shown as <encrypted KID> (with why,
// when the keyring cannot open it).
func (p *payloads) text(raw json.RawMessage) string {
	if !bytes.Contains(raw, []byte(codec.Marker)) {
		return prettyJSON(raw)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(p.open(v), "", "  ")
	return placeholderRE.ReplaceAllString(string(b), "<$1>")
}

// placeholder is a string that text prints, unquoted, in angle brackets:
// NULs, which a JSON encoding always escapes, mark it.
func placeholder(s string) string { return "\x00" + s + "\x00" }

var placeholderRE = regexp.MustCompile(`"\\u0000([^"]*?)\\u0000"`)

// open replaces the encrypted values in v.
func (p *payloads) open(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if e, ok := x[codec.Marker].(map[string]any); ok && len(x) == 1 {
			kid, _ := e["kid"].(string)
			if p == nil || p.ring == nil {
				return placeholder("encrypted " + kid)
			}
			env, _ := json.Marshal(x)
			plain, err := p.ring.DecodeDeep(env)
			var d any
			if err == nil {
				err = json.Unmarshal(plain, &d)
			}
			switch {
			case err == nil:
				return d
			case errors.Is(err, codec.ErrUnknownKey):
				return placeholder("encrypted " + kid + ": no such key in --keys")
			default:
				return placeholder("encrypted " + kid + ": does not decrypt with --keys")
			}
		}
		for k, e := range x {
			x[k] = p.open(e)
		}
	case []any:
		for i, e := range x {
			x[i] = p.open(e)
		}
	}
	return v
}

// printPayloadJSON is printJSON of pl.doc(v).
func printPayloadJSON(w io.Writer, pl *payloads, v any) error {
	d, err := pl.doc(v)
	if err != nil {
		return err
	}
	return printJSON(w, d)
}
