package azure_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	gcblob "gocloud.dev/blob"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/azure"
	"github.com/cairn-dev/cairn/blob/blobtest"
	"github.com/cairn-dev/cairn/blob/internal/cloud"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

func TestMain(m *testing.M) { testinfra.Main(m) }

// newContainer creates a fresh container on Azurite and returns its name.
func newContainer(t testing.TB, ep *testinfra.AzuriteEndpoint) string {
	t.Helper()
	name := testinfra.NewBucketName(t)
	c := ep.ContainerClient(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	return name
}

func open(t testing.TB, ep *testinfra.AzuriteEndpoint) *blob.Bucket {
	t.Helper()
	b, err := azure.New(context.Background(), azure.Options{
		Container:   newContainer(t, ep),
		ServiceURL:  ep.BlobEndpoint,
		AccountName: ep.AccountName,
		AccountKey:  ep.AccountKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openUnreachable(t testing.TB) *blob.Bucket {
	b, err := azure.New(context.Background(), azure.Options{
		Container:   "unreachable",
		ServiceURL:  "http://" + testinfra.FreeAddr(t) + "/" + testinfra.AzuriteAccountName,
		AccountName: testinfra.AzuriteAccountName,
		AccountKey:  testinfra.AzuriteAccountKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformance(t *testing.T) {
	ep := testinfra.Azurite(t)
	blobtest.Run(t, blobtest.Harness{
		Open:            func(t *testing.T) *blob.Bucket { return open(t, ep) },
		OpenUnreachable: func(t *testing.T) *blob.Bucket { return openUnreachable(t) },
		// Not an ETag in its header form, or "*" (which matches any blob).
		MalformedVersions:  []blob.Version{"*", "123", `"0x0"`},
		MalformedPageToken: "!!not base64",
	})
}

func TestURLOpener(t *testing.T) {
	ep := testinfra.Azurite(t)
	name := newContainer(t, ep)
	host := strings.TrimPrefix(strings.TrimSuffix(ep.BlobEndpoint, "/"+ep.AccountName), "http://")

	t.Setenv("AZURE_STORAGE_ACCOUNT", ep.AccountName)
	t.Setenv("AZURE_STORAGE_KEY", ep.AccountKey)
	b := blobtest.OpenURL(t, "azblob://"+name+"?protocol=http&domain="+host)
	v := blobtest.RoundTrip(t, b, "k", "via url")
	var cc *container.Client
	var gb *gcblob.Bucket
	if !b.As(&cc) || cc == nil || !b.As(&gb) || gb == nil {
		t.Fatal("As does not expose *container.Client and *gocloud blob.Bucket")
	}
	if want := ep.BlobEndpoint + "/" + name; cc.URL() != want {
		t.Fatalf("container URL %q, want %q", cc.URL(), want)
	}

	// localemu=true with a non-loopback-looking domain still goes path-style;
	// storage_account overrides the account in the service URL.
	blobtest.SeesVersion(t, "azblob://"+name+"?protocol=http&localemu=true&storage_account="+ep.AccountName+"&domain="+host, "k", v)

	// A connection string, as gocloud reads it, when no account key is set.
	t.Setenv("AZURE_STORAGE_KEY", "")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", ep.ConnectionString())
	blobtest.SeesVersion(t, "azblob://"+name, "k", v)

	blobtest.RefusesURLs(t,
		"azblob://"+name+"?region=x",
		"azblob://"+name+"?protocol=ftp&domain="+host,
		"azblob://"+name+"?cdn=maybe",
		"azblob://"+name+"/sub/path",
		"azblob:///nocontainer",
	)
}

// TestEscapeKeyMatchesGocloud: Put writes with the SDK directly, so its
// blob names must be the ones gocloud's azureblob uses for the same keys.
// Write each key through gocloud, then read it through the driver (which
// reads through gocloud) after overwriting it through the driver: if the
// escaping differed, the driver's write would land on another blob name.
func TestEscapeKeyMatchesGocloud(t *testing.T) {
	ep := testinfra.Azurite(t)
	b := open(t, ep)
	defer b.Close()
	var gb *gcblob.Bucket
	if !b.As(&gb) {
		t.Fatal("no gocloud bucket")
	}
	ctx := context.Background()
	keys := []string{
		"plain", "q?uery#frag", "per%cent", `back\slash`, `dq"uote`, "a../b", "x/a../y..", "__0x41__",
		"a__0x2f__b", "__0x__", "__0xzz__", "__0x-1__", "ünï/cødé", "trail_", "~tmp", "with space", "__0x", "_0x41__",
	}
	for _, k := range keys {
		if err := gb.WriteAll(ctx, k, []byte("gocloud"), nil); err != nil {
			t.Fatalf("gocloud write %q: %v", k, err)
		}
		if _, err := b.Put(ctx, k, []byte("driver"), blob.WriteOptions{}); err != nil {
			t.Fatalf("driver write %q: %v", k, err)
		}
		got, err := gb.ReadAll(ctx, k)
		if err != nil || string(got) != "driver" {
			t.Errorf("key %q: gocloud reads %q, %v after the driver's write: escaping differs", k, got, err)
		}
	}
	all, err := b.ListAll(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(keys) {
		t.Fatalf("listed %d blobs for %d keys: the driver and gocloud wrote different names", len(all), len(keys))
	}
}

func TestMissingContainerIsNotMissingObject(t *testing.T) {
	ep := testinfra.Azurite(t)
	b, err := azure.New(context.Background(), azure.Options{
		Container: "no-such-container", ServiceURL: ep.BlobEndpoint,
		AccountName: ep.AccountName, AccountKey: ep.AccountKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Stat(context.Background(), "k")
	if err == nil || errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat in a missing container: %v, want an error other than ErrNotFound", err)
	}
	t.Logf("missing container: %v", err)
}

func TestUnreachableWriteIsFast(t *testing.T) {
	b := openUnreachable(t)
	defer b.Close()
	start := time.Now()
	_, err := b.Create(context.Background(), "k", []byte("x"))
	if err == nil || errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Create to a closed port: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

// TestSilentEndpointFailsATry: an endpoint that accepts requests and never
// answers (seen of Azurite on a loaded machine) fails each try after the
// transport's response-header timeout, and the client retries, instead
// of holding the call for the whole try (a minute) or until its context
// ends.
func TestSilentEndpointFailsATry(t *testing.T) {
	defer func(d time.Duration) { cloud.ResponseHeaderTimeout = d }(cloud.ResponseHeaderTimeout)
	cloud.ResponseHeaderTimeout = 300 * time.Millisecond
	var tries atomic.Int64
	silent := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tries.Add(1)
		<-silent
	}))
	defer srv.Close()
	defer close(silent)
	b, err := azure.New(context.Background(), azure.Options{
		Container:   "silent",
		ServiceURL:  srv.URL + "/" + testinfra.AzuriteAccountName,
		AccountName: testinfra.AzuriteAccountName,
		AccountKey:  testinfra.AzuriteAccountKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = b.Get(ctx, "k")
	took := time.Since(start)
	if err == nil || ctx.Err() != nil || took > 20*time.Second {
		t.Fatalf("a read from an endpoint that never answers: %v after %v (%d tries); want each try to fail after %v", err, took, tries.Load(), cloud.ResponseHeaderTimeout)
	}
	if n := tries.Load(); n != 3 {
		t.Fatalf("%d tries, want 3 (the default 2 retries)", n)
	}
	t.Logf("failed after %v, %d tries: %v", took.Round(time.Millisecond), tries.Load(), err)
}
