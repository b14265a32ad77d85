package notify

import (
	"encoding/json"
	"errors"
	"fmt"
)

// DefaultMaxMessageBytes is the size every driver keeps a message under
// unless told otherwise: below SQS's historical 256 KiB limit (which also
// caps the sum of a SendMessageBatch), with room for attributes. A hint
// takes about 150 bytes, so one message carries over 1,500 hints.
const DefaultMaxMessageBytes = 248 << 10

// FormatVersion is the version of the message format that Encode writes
// and Decode reads.
const FormatVersion = 1

// ErrHintTooLarge is returned (wrapped) by Encode for a hint that does not
// fit in a message on its own; the other hints are still encoded.
var ErrHintTooLarge = errors.New("notify: hint larger than the message limit")

type wireBatch struct {
	V     int    `json:"v"`
	Hints []Hint `json:"hints"`
}

var (
	batchPrefix = []byte(`{"v":1,"hints":[`)
	batchSuffix = []byte(`]}`)
)

// Encode packs hints into as few messages as fit under maxBytes (no limit
// when maxBytes <= 0): compact JSON, {"v":1,"hints":[...]}, hints in their
// order. A hint too large for any message is left out and reported as an
// error wrapping ErrHintTooLarge, next to the messages of the others. No
// hints give no messages.
func Encode(hints []Hint, maxBytes int) ([][]byte, error) {
	var (
		out  [][]byte
		cur  []byte
		errs []error
	)
	overhead := len(batchPrefix) + len(batchSuffix)
	flush := func() {
		if cur != nil {
			out = append(out, append(cur, batchSuffix...))
			cur = nil
		}
	}
	for _, h := range hints {
		b, err := json.Marshal(h)
		if err != nil {
			errs = append(errs, fmt.Errorf("notify: encode hint %s/%s: %w", h.Run, h.Step, err))
			continue
		}
		if maxBytes > 0 && overhead+len(b) > maxBytes {
			errs = append(errs, fmt.Errorf("%w: %s/%s is %d bytes, limit %d", ErrHintTooLarge, h.Run, h.Step, overhead+len(b), maxBytes))
			continue
		}
		if cur != nil && maxBytes > 0 && len(cur)+1+len(b)+len(batchSuffix) > maxBytes {
			flush()
		}
		if cur == nil {
			cur = append(make([]byte, 0, 256), batchPrefix...)
		} else {
			cur = append(cur, ',')
		}
		cur = append(cur, b...)
	}
	flush()
	return out, errors.Join(errs...)
}

// Decode reads one message written by Encode.
func Decode(msg []byte) ([]Hint, error) {
	var w wireBatch
	if err := json.Unmarshal(msg, &w); err != nil {
		return nil, fmt.Errorf("notify: decode message: %w", err)
	}
	if w.V != FormatVersion {
		return nil, fmt.Errorf("notify: message format version %d, want %d", w.V, FormatVersion)
	}
	return w.Hints, nil
}
