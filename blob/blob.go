// Package blob is cairn's conditional-write object store: the only state
// cairn keeps.
//
// A Bucket is a small portable type over a Driver. It offers what a
// workflow engine needs from object storage and nothing more: read an
// object together with its version token, write it create-only or as a
// compare-and-swap against a token, delete it, and list keys by prefix.
//
// Version tokens (an S3 or Azure ETag, a GCS generation, a counter for the
// embedded drivers) are opaque and change on every successful write, even
// when the bytes written are identical. That makes a token a fencing token:
// a writer holding a stale token can never overwrite a newer version.
//
// Drivers live in sub-packages (mem, file, s3, gcs, azure) and register URL
// schemes with this package, so a Bucket can be opened from a URL:
//
//	b, err := blob.OpenBucket(ctx, "file:///var/lib/cairn")
//
// Every driver passes the conformance suite in blob/blobtest.
package blob

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Version is an opaque token naming one version of one object. The zero
// value means "no version" and is never returned for an existing object.
type Version string

// Attributes describe one stored object.
type Attributes struct {
	// Key is the object's full key.
	Key string
	// Size is the length of the object's content in bytes.
	Size int64
	// Version is the token of the version described.
	Version Version
	// ModTime is when this version was written, as the store reports it.
	ModTime time.Time
}

// Object is an object's content together with its attributes.
type Object struct {
	Attributes
	// Data is the object's content.
	Data []byte
}

// WriteOptions select how a write is conditioned. At most one of IfNotExist
// and IfMatch may be set; neither means an unconditional write.
type WriteOptions struct {
	// IfNotExist makes the write create-only: it fails with
	// ErrPreconditionFailed when the key already exists.
	IfNotExist bool
	// IfMatch makes the write a compare-and-swap: it fails with
	// ErrPreconditionFailed unless the object's current version is IfMatch
	// (and with ErrNotFound or ErrPreconditionFailed when it does not exist).
	IfMatch Version
	// ContentType is stored with the object when the driver supports it.
	// The default is "application/octet-stream".
	ContentType string
}

// ListOptions select a page of a listing.
type ListOptions struct {
	// Prefix restricts the listing to keys that start with it.
	Prefix string
	// PageSize is the maximum number of objects in one page; 0 means the
	// driver's default (at most 1000).
	PageSize int
	// PageToken continues a listing where an earlier page ended. Empty
	// starts at the beginning.
	PageToken string
	// StartAfter starts the listing after this key: only keys greater
	// than it are listed (S3's StartAfter). With a PageToken it still
	// holds. A driver whose store cannot start there (gcs, azure: through
	// gocloud) lists from the prefix and skips, at the cost of the pages
	// before it.
	StartAfter string
}

// ListPage is one page of a listing, in ascending key order.
type ListPage struct {
	// Objects are the objects of this page, sorted by key.
	Objects []Attributes
	// NextPageToken continues the listing; empty when this is the last page.
	NextPageToken string
}

// Driver is what a storage backend implements. Drivers return errors that
// wrap one of this package's sentinel errors (ErrNotFound,
// ErrPreconditionFailed, ErrConflict, ErrThrottled) where one applies;
// Bucket adds the operation and key.
//
// Driver methods are called with already validated arguments: keys are
// valid (see ValidateKey), at most one write condition is set, and the
// context was not done when Bucket made the call, so drivers do not check
// it on entry. A driver that waits or loops before it reaches the store (a
// lock, a directory walk, injected latency) checks it again there.
type Driver interface {
	// Get reads an object's content and attributes.
	Get(ctx context.Context, key string) (*Object, error)
	// Stat reads an object's attributes.
	Stat(ctx context.Context, key string) (Attributes, error)
	// Put writes an object under the given condition and returns the new
	// version token.
	Put(ctx context.Context, key string, data []byte, opts WriteOptions) (Version, error)
	// Delete removes an object unconditionally. Deleting a missing object
	// returns ErrNotFound.
	Delete(ctx context.Context, key string) error
	// List returns a page of objects whose keys start with opts.Prefix.
	List(ctx context.Context, opts ListOptions) (ListPage, error)
	// As sets target to a driver-specific type and reports whether it
	// could; see Bucket.As.
	As(target any) bool
	// Close releases the driver's resources.
	Close() error
}

// Sentinel errors. Every error returned by a Bucket that has one of these
// causes wraps it, so errors.Is works.
var (
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("object not found")
	// ErrPreconditionFailed: a create-only write found the key taken, or a
	// compare-and-swap found another version. Re-read and re-decide.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrConflict: the store refused a conditional write because another
	// write to the same key was in progress (S3's 409
	// ConditionalRequestConflict). Nothing was written; re-read and retry.
	ErrConflict = errors.New("conflicting concurrent write")
	// ErrThrottled: the store refused for rate (GCS 429, S3 503 SlowDown).
	// Nothing was written; back off and retry.
	ErrThrottled = errors.New("throttled by the store")
	// ErrInvalidArgument: the call itself is malformed (a bad key, two
	// conditions at once).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrClosed: the bucket has been closed.
	ErrClosed = errors.New("bucket closed")
	// ErrRetriedWrite accompanies ErrPreconditionFailed (or ErrConflict)
	// when the driver retried the conditional write after an attempt
	// without an answer: that attempt may have been applied, and the
	// refusal may be the retry meeting this very write. A caller that can
	// recognise its own bytes (a nonce) should read the object back.
	ErrRetriedWrite = errors.New("refused after a retried attempt (an earlier attempt may have been applied)")
)

// Error is the error a Bucket returns: which operation on which key failed,
// and why.
type Error struct {
	// Op is the operation: "get", "stat", "create", "swap", "put",
	// "delete" or "list".
	Op string
	// Key is the object key, or the prefix for "list".
	Key string
	// Err is the cause; it wraps a sentinel error where one applies.
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("blob: %s %q: %v", e.Op, e.Key, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether err is a transient refusal after which
// nothing was written (ErrConflict or ErrThrottled): the caller may re-read
// and try again after a backoff.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrThrottled)
}

// MaxKeyLength is the longest key accepted, in bytes (S3's limit).
const MaxKeyLength = 1024

// ValidateKey reports whether key is usable on every driver: non-empty
// valid UTF-8 of at most MaxKeyLength bytes, without NUL or other control
// characters, and whose "/"-separated segments are neither empty nor "."
// nor ".." (so no leading, trailing or doubled "/").
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	case len(key) > MaxKeyLength:
		return fmt.Errorf("%w: key longer than %d bytes", ErrInvalidArgument, MaxKeyLength)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key is not valid UTF-8", ErrInvalidArgument)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: key contains control character %U", ErrInvalidArgument, r)
		}
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" {
			return fmt.Errorf("%w: key has an empty segment (leading, trailing or doubled \"/\")", ErrInvalidArgument)
		}
		if seg == "." || seg == ".." {
			return fmt.Errorf("%w: key has a %q segment", ErrInvalidArgument, seg)
		}
	}
	return nil
}
