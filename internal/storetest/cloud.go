package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/azure"
	"github.com/cairn-dev/cairn/blob/gcs"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

// GCS returns a fresh bucket on the test binary's fake-gcs-server (a
// child process, testinfra.FakeGCS), opened through the gcs driver (the
// real cloud.google.com/go/storage client over HTTP, generation
// preconditions and all). The package's TestMain must call testinfra.Main.
func GCS(t testing.TB) *blob.Bucket {
	t.Helper()
	url := testinfra.FakeGCS(t)
	name := testinfra.NewBucketName(t)
	testinfra.CreateGCSBucket(t, url, name)
	b, err := gcs.New(context.Background(), gcs.Options{Bucket: name, Endpoint: url})
	return opened(t, b, err)
}

// Azure returns a fresh container on the test binary's Azurite, opened
// through the azure driver. Like MinIO it skips under -short and fails
// when Azurite is not installed; the package's TestMain must call
// testinfra.Main.
func Azure(t testing.TB) *blob.Bucket {
	t.Helper()
	ep := testinfra.Azurite(t)
	name := testinfra.NewBucketName(t)
	c := ep.ContainerClient(t, name)
	var err error
	// A loaded machine can stall Azurite (one Node process for the whole
	// test binary) past one 30-second try: try three times, and take a
	// container a timed-out try did create.
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err = c.Create(ctx, nil)
		cancel()
		if err == nil || bloberror.HasCode(err, bloberror.ContainerAlreadyExists) && attempt > 1 {
			break
		}
		if attempt == 3 {
			t.Fatalf("storetest: create container %s (3 tries): %v", name, err)
		}
		t.Logf("storetest: create container %s, try %d: %v; trying again", name, attempt, err)
		if errors.Is(err, context.DeadlineExceeded) {
			// No answer in 30 s: Azurite hung (seen late in CI's engine
			// suite); a new one takes the rest of the binary's tests.
			ep = testinfra.RestartAzurite(t, ep)
			c = ep.ContainerClient(t, name)
		}
	}
	b, err := azure.New(context.Background(), azure.Options{
		Container: name, ServiceURL: ep.BlobEndpoint, AccountName: ep.AccountName, AccountKey: ep.AccountKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		// Azurite keeps every container of the test binary in one
		// in-memory database: what hundreds of tests leave behind (the
		// concurrency tests write thousands of objects) is heap its
		// garbage collector walks while the later tests wait. CI saw a
		// create time out right after TestConcurrencyNoOverGrant/azure,
		// 800 s into the engine suite. Best effort.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.Delete(ctx, nil); err != nil {
			t.Logf("storetest: delete container %s: %v", name, err)
		}
	})
	return b
}
