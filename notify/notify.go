package notify

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/cairn-dev/cairn/internal/schemes"
)

// OpenFunc opens a bus for a URL whose scheme it was registered for.
type OpenFunc func(ctx context.Context, u *url.URL) (Bus, error)

var registry = schemes.New[OpenFunc]("notify")

// Register makes a driver available under scheme (case-insensitive). It is
// called from the driver package's init; registering a scheme twice
// panics.
func Register(scheme string, open OpenFunc) {
	if scheme == "" || open == nil {
		panic("notify: Register with an empty scheme or a nil OpenFunc")
	}
	registry.Register(scheme, open)
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string { return registry.Schemes() }

// Open opens the bus named by rawURL, whose scheme selects the driver (see
// the package documentation for the schemes and the semantics every driver
// keeps). The driver's package must be imported (notify/all imports them
// all). The bus is ready when Open returns: a driver that connects does so
// now and reports an unreachable server as an error.
//
// The returned bus is safe for concurrent use. Close it with [Close] after
// the engines using it are closed.
func Open(ctx context.Context, rawURL string) (Bus, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("notify: URL %q has no scheme (registered: %s)", Redact(rawURL), strings.Join(Schemes(), ", "))
	}
	scheme := strings.ToLower(u.Scheme)
	open, ok := registry.Lookup(scheme)
	if !ok {
		return nil, fmt.Errorf("notify: no driver for scheme %q (registered: %s; import github.com/cairn-dev/cairn/notify/all)", scheme, strings.Join(Schemes(), ", "))
	}
	b, err := open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("notify: open %s: %w", Redact(rawURL), err)
	}
	return b, nil
}

// Close closes b if it holds resources (implements io.Closer); other buses
// need no closing.
func Close(b Bus) error {
	if c, ok := b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Redact returns rawURL with any password in it replaced, for messages.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}
