// Package cloud holds what the cloud drivers (s3, gcs, azure) share
// beyond listing: the form of a URL that names one bucket, and a failed
// call's error that shows the end of its context.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/url"
)

// CheckBucketURL holds u to the form scheme://NAME: the driver's scheme,
// a name, and no path. driver prefixes the errors ("gcs"); noun and form
// name what the URL names in them ("bucket", "gs://BUCKET").
func CheckBucketURL(u *url.URL, driver, scheme, noun, form string) error {
	if u.Scheme != scheme {
		return fmt.Errorf("%s: URL scheme %q, want %q", driver, u.Scheme, scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("%s: URL names no %s (want %s)", driver, noun, form)
	}
	if u.Path != "" && u.Path != "/" {
		return fmt.Errorf("%s: URL path %q not supported (want %s)", driver, u.Path, form)
	}
	return nil
}

// WithContext returns err with ctx's error in its chain when the context
// ended during the call and err does not say so already.
func WithContext(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}
