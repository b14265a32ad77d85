package s3

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/blobtest"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

// TestSSEHeaders: a bucket opened with ssetype (and kmskeyid) sends
// them with every write, as PutObject's x-amz-server-side-encryption
// headers, and sends none without them.
func TestSSEHeaders(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			mu.Lock()
			got = append(got, r.Header.Clone())
			mu.Unlock()
		}
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
	}))
	defer srv.Close()
	isolateAWSConfig(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	for _, tc := range []struct {
		query, sse, kms string
	}{
		{"", "", ""},
		{"&ssetype=AES256", "AES256", ""},
		{"&ssetype=aws:kms", "aws:kms", ""},
		{"&ssetype=aws:kms&kmskeyid=" + url.QueryEscape("arn:aws:kms:eu-west-1:111122223333:key/k1"), "aws:kms", "arn:aws:kms:eu-west-1:111122223333:key/k1"},
		{"&ssetype=aws:kms:dsse&kmskeyid=k2", "aws:kms:dsse", "k2"},
	} {
		got = nil
		b, err := blob.OpenBucket(context.Background(), "s3://b?region=us-east-1&use_path_style=true&endpoint="+url.QueryEscape(srv.URL)+tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Create(context.Background(), "k", []byte("v")); err != nil {
			t.Fatalf("%q: %v", tc.query, err)
		}
		b.Close()
		mu.Lock()
		if len(got) != 1 {
			t.Fatalf("%q: %d PUTs", tc.query, len(got))
		}
		h := got[0]
		mu.Unlock()
		if s, k := h.Get("X-Amz-Server-Side-Encryption"), h.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"); s != tc.sse || k != tc.kms {
			t.Errorf("%q: sent sse %q, kms key %q; want %q, %q", tc.query, s, k, tc.sse, tc.kms)
		}
	}
}

// sseOptions returns Options for a fresh bucket on the MinIO that holds a
// KMS key (testinfra.MinIOSSE), with the encryption sse and kms.
func sseOptions(t testing.TB, sse s3types.ServerSideEncryption, kms string) (Options, *testinfra.MinIOEndpoint) {
	t.Helper()
	ep := testinfra.MinIOSSE(t)
	name := testinfra.NewBucketName(t)
	ep.CreateBucket(t, name)
	return Options{
		Bucket: name, Region: ep.Region, Endpoint: ep.Endpoint, UsePathStyle: true,
		AccessKey: ep.AccessKey, SecretKey: ep.SecretKey,
		ServerSideEncryption: sse, SSEKMSKeyID: kms,
	}, ep
}

// headSSE is how the store says the object under the bucket's key k is
// encrypted: HeadObject's x-amz-server-side-encryption and KMS key id.
func headSSE(t *testing.T, ep *testinfra.MinIOEndpoint, o Options, k string) (s3types.ServerSideEncryption, string) {
	t.Helper()
	if o.SuffixKeys {
		k += KeySuffix
	}
	out, err := ep.Client().HeadObject(context.Background(), &awss3.HeadObjectInput{Bucket: &o.Bucket, Key: &k})
	if err != nil {
		t.Fatal(err)
	}
	return out.ServerSideEncryption, aws.ToString(out.SSEKMSKeyId)
}

// TestServerSideEncryptionMinIO writes through the driver to a MinIO
// that encrypts: objects written with ssetype=AES256 (SSE-S3) or
// ssetype=aws:kms with a key id (SSE-KMS), and objects written without
// either to a bucket whose default encryption is SSE-S3, are reported
// encrypted by HeadObject; reads give back what was written; and the
// conformance suite (conditional creates and swaps among it) holds on
// such buckets.
func TestServerSideEncryptionMinIO(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		sse  s3types.ServerSideEncryption
		kms  string
	}{
		{"SSE-S3", s3types.ServerSideEncryptionAes256, ""},
		{"SSE-KMS", s3types.ServerSideEncryptionAwsKms, testinfra.MinIOKMSKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, ep := sseOptions(t, tc.sse, tc.kms)
			b := open(t, o)
			defer b.Close()
			v := blobtest.RoundTrip(t, b, "runs/r1", `{"secret":"s"}`)
			if _, err := b.Swap(ctx, "runs/r1", []byte(`{"secret":"t"}`), v); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Swap(ctx, "runs/r1", []byte(`{"secret":"u"}`), v); err == nil {
				t.Fatal("a swap against the old version succeeded on an encrypted bucket")
			}
			sse, kms := headSSE(t, ep, o, "runs/r1")
			if sse != tc.sse || (tc.kms != "" && kms != tc.kms && kms != "arn:aws:kms:"+tc.kms) {
				t.Fatalf("HeadObject says %q key %q, want %q key %q", sse, kms, tc.sse, tc.kms)
			}
			got, err := b.Get(ctx, "runs/r1")
			if err != nil || string(got.Data) != `{"secret":"t"}` {
				t.Fatalf("read back %+v, %v", got, err)
			}
		})
	}

	t.Run("BucketDefault", func(t *testing.T) {
		o, ep := sseOptions(t, "", "")
		if _, err := ep.Client().PutBucketEncryption(ctx, &awss3.PutBucketEncryptionInput{
			Bucket: &o.Bucket,
			ServerSideEncryptionConfiguration: &s3types.ServerSideEncryptionConfiguration{Rules: []s3types.ServerSideEncryptionRule{{
				ApplyServerSideEncryptionByDefault: &s3types.ServerSideEncryptionByDefault{SSEAlgorithm: s3types.ServerSideEncryptionAes256},
			}}},
		}); err != nil {
			t.Fatal(err)
		}
		b := open(t, o)
		defer b.Close()
		blobtest.RoundTrip(t, b, "runs/r1", "plain")
		if sse, _ := headSSE(t, ep, o, "runs/r1"); sse != s3types.ServerSideEncryptionAes256 {
			t.Fatalf("HeadObject says %q, want the bucket default AES256", sse)
		}
	})

	t.Run("Conformance", func(t *testing.T) {
		blobtest.Run(t, blobtest.Harness{
			Open: func(t *testing.T) *blob.Bucket {
				o, _ := sseOptions(t, s3types.ServerSideEncryptionAwsKms, testinfra.MinIOKMSKey)
				o.SuffixKeys = true
				return open(t, o)
			},
		})
	})
}
