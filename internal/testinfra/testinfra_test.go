package testinfra_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/testinfra"
)

func TestMain(m *testing.M) { testinfra.Main(m) }

var validBucket = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

func TestNewBucketName(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		name := testinfra.NewBucketName(t)
		if !validBucket.MatchString(name) || strings.Contains(name, "--") {
			t.Fatalf("invalid bucket name %q", name)
		}
		if seen[name] {
			t.Fatalf("duplicate bucket name %q", name)
		}
		seen[name] = true
	}
	t.Run("A_Very/Long Subtest Name That Goes On And On And On And On", func(t *testing.T) {
		if name := testinfra.NewBucketName(t); !validBucket.MatchString(name) {
			t.Fatalf("invalid bucket name %q", name)
		}
	})
}

// Proves the whole path: container, bucket, and S3 conditional writes.
func TestMinIOConditionalWrite(t *testing.T) {
	ep := testinfra.MinIO(t)
	if again := testinfra.MinIO(t); again != ep {
		t.Fatal("second MinIO call started another instance")
	}
	if !strings.HasPrefix(ep.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint %q is not on 127.0.0.1", ep.Endpoint)
	}
	bucket := testinfra.NewBucketName(t)
	ep.CreateBucket(t, bucket)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := ep.Client()
	put := func(body, ifNoneMatch, ifMatch string) (*s3.PutObjectOutput, error) {
		in := &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader(body)}
		if ifNoneMatch != "" {
			in.IfNoneMatch = &ifNoneMatch
		}
		if ifMatch != "" {
			in.IfMatch = &ifMatch
		}
		return c.PutObject(ctx, in)
	}
	wantPreconditionFailed := func(err error) {
		t.Helper()
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "PreconditionFailed" {
			t.Fatalf("want PreconditionFailed, got %v", err)
		}
	}

	first, err := put("one", "*", "")
	if err != nil {
		t.Fatalf("create-only put: %v", err)
	}
	_, err = put("two", "*", "")
	wantPreconditionFailed(err)
	_, err = put("two", "", `"0123456789abcdef0123456789abcdef"`)
	wantPreconditionFailed(err)
	if _, err := put("three", "", *first.ETag); err != nil {
		t.Fatalf("compare-and-swap put: %v", err)
	}

	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	if b, _ := io.ReadAll(got.Body); string(b) != "three" {
		t.Fatalf("got %q, want %q", b, "three")
	}
}

func TestAzuriteAnswers(t *testing.T) {
	ep := testinfra.Azurite(t)
	if again := testinfra.Azurite(t); again != ep {
		t.Fatal("second Azurite call started another instance")
	}
	if !strings.HasPrefix(ep.BlobEndpoint, "http://127.0.0.1:") || ep.AccountName != "devstoreaccount1" {
		t.Fatalf("unexpected endpoint %+v", ep)
	}
	resp, err := http.Get(ep.BlobEndpoint + "?comp=list")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Unauthenticated: Azurite refuses, but as Azure Blob would.
	if resp.Header.Get("x-ms-request-id") == "" {
		t.Fatalf("no x-ms-request-id in answer %s %v", resp.Status, resp.Header)
	}
}

// RestartAzurite replaces the instance at the endpoint given (the old one
// stops answering, the new one answers), and a second call with the old
// endpoint returns the new one instead of restarting again.
func TestRestartAzurite(t *testing.T) {
	old := testinfra.Azurite(t)
	next := testinfra.RestartAzurite(t, old)
	if next == old || next.BlobEndpoint == old.BlobEndpoint {
		t.Fatalf("restart returned %+v, want a new endpoint", next)
	}
	if again := testinfra.RestartAzurite(t, old); again != next {
		t.Fatal("a second restart for the same old endpoint started another instance")
	}
	if cur := testinfra.Azurite(t); cur != next {
		t.Fatal("Azurite does not return the restarted instance")
	}
	resp, err := http.Get(next.BlobEndpoint + "?comp=list")
	if err != nil {
		t.Fatalf("the new Azurite: %v", err)
	}
	resp.Body.Close()
	c := &http.Client{Timeout: 2 * time.Second}
	if resp, err := c.Get(old.BlobEndpoint + "?comp=list"); err == nil {
		resp.Body.Close()
		t.Fatal("the old Azurite still answers")
	}
}
