package keys

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
)

// LeaseToken is what a lease id encodes: which lease object to read, and
// the proof that the caller was handed that lease. Nothing in it is
// believed until the lease object confirms it: the object's worker,
// claim time and nonce must match (Matches). Workflow, version and
// delivery come from the lease object and the run record, never from the
// id.
type LeaseToken struct {
	Run       string `json:"r"`
	Step      string `json:"s"`
	Attempt   int    `json:"n"`
	Worker    string `json:"w"`
	ClaimedAt int64  `json:"t"`
	Nonce     string `json:"k"`

	Raw string `json:"-"` // the id as the caller sent it (for error messages)
}

// ID is the token's lease id.
func (t LeaseToken) ID() string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Matches reports whether a stored lease is the one the token names:
// same run, step and attempt, same worker, same claim, same nonce
// (compared in constant time).
func (t LeaseToken) Matches(run, step string, attempt int, worker string, claimedAt time.Time, nonce string) bool {
	ok := subtle.ConstantTimeCompare([]byte(t.Nonce), []byte(nonce)) == 1
	return ok && nonce != "" && worker == t.Worker && claimedAt.UnixMilli() == t.ClaimedAt &&
		run == t.Run && step == t.Step && attempt == t.Attempt
}

// NewNonce returns 128 random bits, base64url: a lease's secret.
func NewNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("engine: no randomness: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ErrBadLease: a lease id that does not decode to a token.
var ErrBadLease = errors.New("malformed lease id")

// ParseLease decodes a lease id, bounded in size, and checks each field's
// form (not its truth: see Matches).
func ParseLease(id string) (LeaseToken, error) {
	var t LeaseToken
	if len(id) > 2048 {
		return t, ErrBadLease
	}
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(b) > 1024 {
		return t, ErrBadLease
	}
	if err := json.Unmarshal(b, &t); err != nil || t.Attempt < 1 || t.Attempt > 999_999 || len(t.Nonce) != 22 ||
		!RunID.Valid(t.Run) || !ValidStep(t.Step) || !WorkerID.Valid(t.Worker) {
		return t, ErrBadLease
	}
	t.Raw = id
	return t, nil
}

// ItemID is the virtual step id of a map step's item i ("step.i").
func ItemID(step string, i int) string { return step + "." + strconv.Itoa(i) }

// SplitItem splits a map item's virtual step id into the map step and
// the index.
func SplitItem(id string) (string, int, bool) {
	base, idx, ok := strings.Cut(id, ".")
	if !ok {
		return id, 0, false
	}
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 || n >= cairn.MaxMapItems || strconv.Itoa(n) != idx {
		return id, 0, false
	}
	return base, n, true
}

// ValidStep accepts step ids and map item ids (lease ids name either).
func ValidStep(id string) bool {
	base, _, ok := SplitItem(id)
	if ok {
		return StepID.Valid(base)
	}
	return StepID.Valid(id)
}
