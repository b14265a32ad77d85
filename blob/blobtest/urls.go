package blobtest

import (
	"context"
	"testing"

	"github.com/cairn-dev/cairn/blob"
)

// The helpers below are for a driver's tests of its URL opener.

// OpenURL opens url with blob.OpenBucket, failing the test on an error.
// The bucket is closed when the test ends.
func OpenURL(t *testing.T, url string) *blob.Bucket {
	t.Helper()
	b, err := blob.OpenBucket(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// SeesVersion opens url as OpenURL does and fails the test unless key
// reads back there at version v: another way to open a bucket reaches the
// same objects.
func SeesVersion(t *testing.T, url, key string, v blob.Version) {
	t.Helper()
	if o, err := OpenURL(t, url).Get(context.Background(), key); err != nil || o.Version != v {
		t.Fatalf("%s: Get(%q) = %+v, %v; want version %q", url, key, o, err, v)
	}
}

// RoundTrip creates key holding data in b and reads it back. It fails the
// test unless Get returns data at the version Create returned, and returns
// that version.
func RoundTrip(t *testing.T, b *blob.Bucket, key, data string) blob.Version {
	t.Helper()
	ctx := context.Background()
	v, err := b.Create(ctx, key, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if o, err := b.Get(ctx, key); err != nil || string(o.Data) != data || o.Version != v {
		t.Fatalf("Get = %+v, %v; want %q at version %q", o, err, data, v)
	}
	return v
}

// RefusesURLs checks that blob.OpenBucket refuses each of urls.
func RefusesURLs(t *testing.T, urls ...string) {
	t.Helper()
	for _, u := range urls {
		if b, err := blob.OpenBucket(context.Background(), u); err == nil {
			b.Close()
			t.Errorf("OpenBucket(%q) succeeded, want an error", u)
		}
	}
}
