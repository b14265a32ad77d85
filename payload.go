package cairn

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// PayloadRef names a payload stored by reference: a run's input, a step's
// output, a state value or an event payload larger than the server's
// inline limit is an object of its run, and the run record, the API's
// views and leases hold its reference in its place, a JSON value of
// exactly this form:
//
//	{"$cairn_payload":{"sha256":"<64 hex>","bytes":<n>}}
//
// Clients fetch the value from GET /runs/{run}/payloads/{sha256} (workers:
// GET /steps/{lease}/payloads/{sha256}); the SDKs do it for you. A value a
// client sends that is exactly this form is itself stored by reference, so
// a value is a reference only when the server made it one.
type PayloadRef struct {
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// payloadMarker starts every reference.
const payloadMarker = `{"$cairn_payload":{"sha256":"`

// PayloadMarker is the bytes every reference starts with.
func PayloadMarker() []byte { return []byte(payloadMarker) }

// JSON is the reference's canonical form.
func (p PayloadRef) JSON() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`%s%s","bytes":%d}}`, payloadMarker, p.SHA256, p.Bytes))
}

// AsPayloadRef reports whether raw is a reference, byte for byte in its
// canonical form, and returns it.
func AsPayloadRef(raw json.RawMessage) (PayloadRef, bool) {
	if len(raw) > 160 || !bytes.HasPrefix(raw, []byte(payloadMarker)) {
		return PayloadRef{}, false
	}
	var r struct {
		P *PayloadRef `json:"$cairn_payload"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.P == nil || !ValidSHA256(r.P.SHA256) || r.P.Bytes < 0 {
		return PayloadRef{}, false
	}
	if !bytes.Equal(r.P.JSON(), raw) {
		return PayloadRef{}, false
	}
	return *r.P, true
}

// ValidSHA256 reports whether s is a SHA-256 in lowercase hex.
func ValidSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// IsPayloadRefJSON reports whether raw is a reference to a payload.
func IsPayloadRefJSON(raw json.RawMessage) bool {
	_, ok := AsPayloadRef(raw)
	return ok
}

// CheckSizes bounds what a worker's complete or fail carries: its output,
// and its state patch in all (each value valid JSON), at most max bytes.
func CheckSizes(output json.RawMessage, patch map[string]json.RawMessage, max int) error {
	if len(output) > max {
		return ValidationError{{Field: "output", Message: fmt.Sprintf("%d bytes, over the %d-byte limit", len(output), max)}}
	}
	n := 0
	for k, v := range patch {
		if len(v) == 0 || !json.Valid(v) {
			return ValidationError{{Field: "state_patch." + k, Message: "not valid JSON"}}
		}
		n += len(k) + len(v)
	}
	if n > max {
		return ValidationError{{Field: "state_patch", Message: fmt.Sprintf("%d bytes, over the %d-byte limit", n, max)}}
	}
	return nil
}
