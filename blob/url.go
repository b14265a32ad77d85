package blob

import (
	"context"
	"fmt"
	"net/url"

	"github.com/cairn-dev/cairn/internal/schemes"
)

// Opener opens a bucket from a parsed URL. Drivers register one per scheme.
type Opener func(ctx context.Context, u *url.URL) (*Bucket, error)

var openers = schemes.New[Opener]("blob")

// Register makes a URL scheme openable by OpenBucket. Drivers call it from
// init; registering a scheme twice panics.
func Register(scheme string, o Opener) { openers.Register(scheme, o) }

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string { return openers.Schemes() }

// OpenBucket opens the bucket a URL names, through the driver registered
// for its scheme. The driver packages document their URL forms, which
// follow gocloud.dev's where they can: mem://, file:///path,
// s3://bucket?region=…&endpoint=…, gs://bucket, azblob://container.
// Import the driver packages to register them (cairn's binaries link
// theirs through internal/config/drivers, chosen by build tag).
func OpenBucket(ctx context.Context, rawURL string) (*Bucket, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("blob: open %q: %w", rawURL, err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("blob: open %q: no scheme (want one of %v)", rawURL, Schemes())
	}
	o, ok := openers.Lookup(u.Scheme)
	if !ok || o == nil {
		return nil, fmt.Errorf("blob: open %q: unknown scheme %q (registered: %v)", rawURL, u.Scheme, Schemes())
	}
	b, err := o(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("blob: open %q: %w", redact(u), err)
	}
	return b, nil
}

// redact hides a password in a URL for error messages.
func redact(u *url.URL) string {
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			c := *u
			c.User = url.UserPassword(u.User.Username(), "xxxxx")
			return c.String()
		}
	}
	return u.String()
}
