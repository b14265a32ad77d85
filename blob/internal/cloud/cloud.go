// Package cloud holds what the cloud drivers (s3, gcs, azure) share
// beyond listing: the form of a URL that names one bucket or an endpoint,
// an HTTP client that fails fast on an endpoint that does not answer, a
// write's default content type, and a failed call's error that shows the
// end of its context or a retry that met the write.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/cairn-dev/cairn/blob"
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

// ParseHTTPURL parses s as an http or https URL with a host; ok is false
// for anything else.
func ParseHTTPURL(s string) (u *url.URL, ok bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, false
	}
	return u, true
}

// ResponseHeaderTimeout bounds how long a try waits for the answer's
// headers once its request is written, on the transports this module
// makes (S3's default client and HTTPClient's: Azure, a GCS emulator): an
// endpoint that accepts a request and never answers (seen of Azurite on a
// loaded machine) fails that try and the client retries, instead of
// waiting out the whole try (a minute on Azure). The store's processing of
// one object of this engine's sizes takes milliseconds; 15 s is for a
// store under strain. A variable for tests.
var ResponseHeaderTimeout = 15 * time.Second

// HTTPClient returns a client on its own transport with a dial timeout
// and ResponseHeaderTimeout: an endpoint that does not answer fails fast
// rather than holding the call until its context ends.
func HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = ResponseHeaderTimeout
	return &http.Client{Transport: tr}
}

// ContentType is the content type a write stores: ct, or by default
// application/octet-stream.
func ContentType(ct string) string {
	if ct == "" {
		return "application/octet-stream"
	}
	return ct
}

// RetriedWrite returns a conditional write's error, mapped to blob's
// sentinels, with blob.ErrRetriedWrite in its chain when the write was
// refused after tries attempts, two or more: the retry may have met the
// write's own earlier attempt, applied with its response lost.
func RetriedWrite(mapped error, tries int32) error {
	if tries >= 2 && errors.Is(mapped, blob.ErrPreconditionFailed) {
		return fmt.Errorf("%w: %w", blob.ErrRetriedWrite, mapped)
	}
	return mapped
}

// WithContext returns err with ctx's error in its chain when the context
// ended during the call and err does not say so already.
func WithContext(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}
