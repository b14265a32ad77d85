// Package storetest opens the real stores that tests of other packages
// run against: a directory, and MinIO through testcontainers.
package storetest

import (
	"context"
	"testing"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/file"
	"github.com/cairn-dev/cairn/blob/s3"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

// File returns a bucket in a fresh temporary directory.
func File(t testing.TB) *blob.Bucket {
	t.Helper()
	b, err := file.New(t.TempDir(), file.Options{NoSync: true})
	return opened(t, b, err)
}

// MinIO returns a fresh bucket on the test binary's MinIO container. In
// -short mode it skips the test (no containers); otherwise a missing
// container engine fails it. The package's TestMain must call
// testinfra.Main.
func MinIO(t testing.TB) *blob.Bucket {
	t.Helper()
	ep := testinfra.MinIO(t)
	name := testinfra.NewBucketName(t)
	ep.CreateBucket(t, name)
	b, err := s3.New(context.Background(), s3.Options{
		Bucket: name, Region: ep.Region, Endpoint: ep.Endpoint, UsePathStyle: true,
		AccessKey: ep.AccessKey, SecretKey: ep.SecretKey,
	})
	return opened(t, b, err)
}

// FileSync is File with fsync on every write, as the embedded default
// runs: for benchmarks.
func FileSync(t testing.TB) *blob.Bucket {
	t.Helper()
	b, err := file.New(t.TempDir(), file.Options{})
	return opened(t, b, err)
}

// opened fails the test on err, else closes b when the test ends and
// returns it.
func opened(t testing.TB, b *blob.Bucket, err error) *blob.Bucket {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
