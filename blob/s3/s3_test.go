package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/blobtest"
	"github.com/cairn-dev/cairn/internal/testinfra"
)

func TestMain(m *testing.M) { testinfra.Main(m) }

func testCtx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// minioOptions returns Options for a fresh bucket on the test MinIO.
func minioOptions(t testing.TB) Options {
	t.Helper()
	ep := testinfra.MinIO(t)
	name := testinfra.NewBucketName(t)
	ep.CreateBucket(t, name)
	return Options{
		Bucket:       name,
		Region:       ep.Region,
		Endpoint:     ep.Endpoint,
		UsePathStyle: true,
		AccessKey:    ep.AccessKey,
		SecretKey:    ep.SecretKey,
	}
}

func open(t testing.TB, o Options) *blob.Bucket {
	t.Helper()
	b, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformance(t *testing.T) {
	unreachable := func(t *testing.T) *blob.Bucket {
		return open(t, Options{
			Bucket: "unreachable", Region: "us-east-1", UsePathStyle: true,
			Endpoint:  "http://" + testinfra.FreeAddr(t),
			AccessKey: "x", SecretKey: "y",
		})
	}
	// MinIO cannot list an object and objects under its name (see the
	// package documentation): plain keys run the suite without such pairs,
	// SuffixKeys with them.
	t.Run("Plain", func(t *testing.T) {
		blobtest.Run(t, blobtest.Harness{
			Open:            func(t *testing.T) *blob.Bucket { return open(t, minioOptions(t)) },
			OpenUnreachable: unreachable,
			NoNestedKeys:    true,
		})
	})
	t.Run("SuffixKeys", func(t *testing.T) {
		blobtest.Run(t, blobtest.Harness{
			Open: func(t *testing.T) *blob.Bucket {
				o := minioOptions(t)
				o.SuffixKeys = true
				return open(t, o)
			},
			OpenUnreachable: unreachable,
		})
	})
}

// TestListPlain lists plain keys with prefixes, pages and odd characters.
func TestListPlain(t *testing.T) {
	c := testCtx(t)
	b := open(t, minioOptions(t))
	defer b.Close()
	names := []string{"a", "b/1", "b/2", "b/3", "ba", "c", "b c", "b-x", "with space", "per%cent", "q?uery#frag", "ünï", "x+y"}
	want := map[string]blob.Version{}
	for _, n := range names {
		v, err := b.Create(c, "l/"+n, []byte(n))
		if err != nil {
			t.Fatal(err)
		}
		want["l/"+n] = v
	}
	if _, err := b.Create(c, "l-sibling", nil); err != nil {
		t.Fatal(err)
	}
	sorted := append([]string(nil), names...)
	slices.Sort(sorted)
	var paged []string
	opts := blob.ListOptions{Prefix: "l/", PageSize: 2}
	for pages := 0; ; pages++ {
		p, err := b.List(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Objects) > 2 || pages > 20 {
			t.Fatalf("page %d has %d objects", pages, len(p.Objects))
		}
		for _, a := range p.Objects {
			n := strings.TrimPrefix(a.Key, "l/")
			if a.Version != want[a.Key] || a.Size != int64(len(n)) {
				t.Fatalf("listed %+v, want version %q size %d", a, want[a.Key], len(n))
			}
			paged = append(paged, n)
		}
		if p.NextPageToken == "" {
			break
		}
		opts.PageToken = p.NextPageToken
	}
	if fmt.Sprint(paged) != fmt.Sprint(sorted) {
		t.Fatalf("paged listing %q, want %q", paged, sorted)
	}
	all, err := b.ListAll(c, "l/b")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 { // b c, b-x, b/1, b/2, b/3, ba
		t.Fatalf("prefix l/b listed %v", all)
	}
}

func TestSuffixKeys(t *testing.T) {
	c := testCtx(t)
	o := minioOptions(t)
	o.SuffixKeys = true
	b := open(t, o)
	defer b.Close()
	var client *awss3.Client
	b.As(&client)
	if _, err := b.Create(c, "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(c, "a/b", []byte("y")); err != nil {
		t.Fatal(err)
	}
	// Stored under the suffixed names.
	for _, k := range []string{"a\x01", "a/b\x01"} {
		if _, err := client.HeadObject(c, &awss3.HeadObjectInput{Bucket: &o.Bucket, Key: aws.String(k)}); err != nil {
			t.Fatalf("stored object %q: %v", k, err)
		}
	}
	// An object without the suffix is invisible.
	if _, err := client.PutObject(c, &awss3.PutObjectInput{Bucket: &o.Bucket, Key: aws.String("a-foreign"), Body: strings.NewReader("z")}); err != nil {
		t.Fatal(err)
	}
	all, err := b.ListAll(c, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(keys(all)); got != "[a a/b]" {
		t.Fatalf("listed %s", got)
	}
	if _, err := b.Get(c, "a-foreign"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Get of an unsuffixed object: %v", err)
	}
	if err := b.Delete(c, "a"); err != nil {
		t.Fatal(err)
	}
	if all, _ := b.ListAll(c, ""); fmt.Sprint(keys(all)) != "[a/b]" {
		t.Fatalf("after delete listed %v", keys(all))
	}
}

func keys(as []blob.Attributes) []string {
	var ks []string
	for _, a := range as {
		ks = append(ks, a.Key)
	}
	return ks
}

func BenchmarkSwapContended(b *testing.B) {
	blobtest.BenchmarkSwapContended(b, open(b, minioOptions(b)))
}

func BenchmarkCreateDistinct(b *testing.B) {
	blobtest.BenchmarkCreateDistinct(b, open(b, minioOptions(b)))
}

// ---- trailer ---------------------------------------------------------------

func TestTrailerEncoding(t *testing.T) {
	if TrailerSize != 24 || len(trailerMagic) != magicSize {
		t.Fatalf("TrailerSize = %d, magic %d bytes", TrailerSize, len(trailerMagic))
	}
	nonce := [nonceSize]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, data := range [][]byte{
		{},
		[]byte("x"),
		[]byte(`{"hello":"world"}`),
		[]byte("ends with the magic cairnv1\n"), // content may end like a trailer
		bytes.Repeat([]byte{0xff}, 1000),
	} {
		sealed := seal(data, nonce)
		if len(sealed) != len(data)+TrailerSize {
			t.Fatalf("sealed %d bytes into %d", len(data), len(sealed))
		}
		if !bytes.HasSuffix(sealed, []byte(trailerMagic)) || !bytes.Equal(sealed[len(data):len(data)+nonceSize], nonce[:]) {
			t.Fatalf("bad trailer layout: %q", sealed[len(data):])
		}
		got, gotNonce, ok := unseal(sealed)
		if !ok || !bytes.Equal(got, data) || gotNonce != nonce {
			t.Fatalf("unseal(seal(%q)) = %q, %x, %v", data, got, gotNonce, ok)
		}
	}
	// Foreign objects: returned raw.
	for _, raw := range []string{"", "short", strings.Repeat("z", 100), "cairnv1\n", strings.Repeat("a", 15) + "cairnv1\n"} {
		got, _, ok := unseal([]byte(raw))
		if ok != (len(raw) >= TrailerSize && strings.HasSuffix(raw, trailerMagic)) || (!ok && string(got) != raw) {
			t.Fatalf("unseal(%q) = %q, %v", raw, got, ok)
		}
	}
	// Two seals of the same content differ (fresh nonces).
	n1, _ := newNonce()
	n2, _ := newNonce()
	if bytes.Equal(seal([]byte("same"), n1), seal([]byte("same"), n2)) {
		t.Fatal("two nonces gave identical stored bytes")
	}
}

func TestTrailerInBucket(t *testing.T) {
	c := testCtx(t)
	o := minioOptions(t)
	b := open(t, o)
	defer b.Close()
	var client *awss3.Client
	if !b.As(&client) {
		t.Fatal("As(**awss3.Client) = false")
	}
	var wrong *http.Client
	if b.As(&wrong) {
		t.Fatal("As(**http.Client) = true")
	}

	// What cairn writes carries the trailer and the metadata marker.
	v, err := b.Create(c, "ours", []byte("content"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.GetObject(c, &awss3.GetObjectInput{Bucket: &o.Bucket, Key: aws.String("ours")})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(raw.Body)
	raw.Body.Close()
	if len(stored) != len("content")+TrailerSize || !bytes.HasPrefix(stored, []byte("content")) || !bytes.HasSuffix(stored, []byte(trailerMagic)) {
		t.Fatalf("stored bytes %q", stored)
	}
	if !hasTrailerMeta(raw.Metadata) || version(raw.ETag) != v {
		t.Fatalf("stored metadata %v etag %q, want marker and %q", raw.Metadata, aws.ToString(raw.ETag), v)
	}

	// A foreign object (no trailer) reads back raw.
	for key, data := range map[string]string{"foreign-short": "tiny", "foreign-long": strings.Repeat("f", 40)} {
		if _, err := client.PutObject(c, &awss3.PutObjectInput{Bucket: &o.Bucket, Key: aws.String(key), Body: strings.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
		got, err := b.Get(c, key)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Data) != data || got.Size != int64(len(data)) {
			t.Fatalf("foreign %s: Get = %q size %d", key, got.Data, got.Size)
		}
		a, err := b.Stat(c, key)
		if err != nil {
			t.Fatal(err)
		}
		if a.Size != int64(len(data)) || a.Version != got.Version {
			t.Fatalf("foreign %s: Stat = %+v", key, a)
		}
		// A foreign object can be swapped like any other; it gains a trailer.
		nv, err := b.Swap(c, key, []byte("now ours"), got.Version)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := b.Get(c, key); string(got.Data) != "now ours" || got.Version != nv {
			t.Fatalf("after swap of a foreign object: %q@%q", got.Data, got.Version)
		}
	}

	// Keys that URL-encoded listings must round-trip.
	keys := []string{"enc/a+b", "enc/a b", "enc/100%", "enc/é", "enc/\u00a0nbsp", "enc/\uffff"}
	for _, k := range keys {
		if _, err := b.Create(c, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := b.ListAll(c, "enc/")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, a := range all {
		got[a.Key] = a.Size
	}
	for _, k := range keys {
		if got[k] != int64(len(k)) {
			t.Fatalf("listing %q: got keys/sizes %v", k, got)
		}
	}
}

// ---- lost responses ----------------------------------------------------------

// dropFirstPut performs the first PUT it is armed for, then hides the
// response from the SDK behind a connection-reset error, so the SDK retries
// a request that was in fact applied.
type dropFirstPut struct {
	base  http.RoundTripper
	armed atomic.Bool

	mu       sync.Mutex
	requests []string // "METHOD status" of every request that got a response
}

func (d *dropFirstPut) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.requests = append(d.requests, r.Method+" "+resp.Status[:3])
	d.mu.Unlock()
	if r.Method == http.MethodPut && d.armed.CompareAndSwap(true, false) {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("read tcp 127.0.0.1: connection reset by peer (injected: response dropped)")
	}
	return resp, nil
}

func (d *dropFirstPut) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.requests
	d.requests = nil
	return r
}

func TestLostResponseOfConditionalWrite(t *testing.T) {
	c := testCtx(t)
	rt := &dropFirstPut{base: http.DefaultTransport.(*http.Transport).Clone()}
	o := minioOptions(t)
	o.HTTPClient = &http.Client{Transport: rt}
	b := open(t, o)
	defer b.Close()
	const k = "lost"

	// Create: the first PUT is applied, its response lost; the retry meets
	// the driver's own object and gets 412; the driver finds its nonce.
	rt.armed.Store(true)
	v1, err := b.Create(c, k, []byte("one"))
	if err != nil {
		t.Fatalf("create whose response was lost: %v", err)
	}
	if got := rt.take(); strings.Join(got, ",") != "PUT 200,PUT 412,GET 206" {
		t.Fatalf("requests %v, want the applied PUT, the retried PUT failing with 412, and a ranged GET", got)
	}
	if a, err := b.Stat(c, k); err != nil || a.Version != v1 {
		t.Fatalf("Stat = %+v, %v; want version %q", a, err, v1)
	}
	rt.take()

	// Swap: same story with If-Match.
	rt.armed.Store(true)
	v2, err := b.Swap(c, k, []byte("one"), v1) // identical bytes on purpose
	if err != nil {
		t.Fatalf("swap whose response was lost: %v", err)
	}
	if got := rt.take(); strings.Join(got, ",") != "PUT 200,PUT 412,GET 206" {
		t.Fatalf("requests %v, want the applied PUT, the retried PUT failing with 412, and a ranged GET", got)
	}
	if v2 == v1 || v2 == "" {
		t.Fatalf("swap returned %q after %q", v2, v1)
	}
	if obj, err := b.Get(c, k); err != nil || obj.Version != v2 || string(obj.Data) != "one" {
		t.Fatalf("Get = %+v, %v; want one@%q", obj, err, v2)
	}
	rt.take()

	// A plain 412 (no retry) costs no read-back.
	if _, err := b.Create(c, k, []byte("two")); !errors.Is(err, blob.ErrPreconditionFailed) {
		t.Fatalf("create of an existing key: %v", err)
	}
	if got := rt.take(); strings.Join(got, ",") != "PUT 412" {
		t.Fatalf("requests %v for a refused create, want one PUT", got)
	}

	// A retried write that really lost: another writer's object is in place
	// when the retry comes; the driver must report the precondition failure.
	k2 := "lost-race"
	if _, err := b.Create(c, k2, []byte("base")); err != nil {
		t.Fatal(err)
	}
	obj, _ := b.Get(c, k2)
	// Someone else swaps first; then our stale swap's first attempt gets a
	// 412 whose response is dropped, so the SDK retries, gets 412 again, and
	// the read-back finds a foreign nonce.
	if _, err := b.Swap(c, k2, []byte("theirs"), obj.Version); err != nil {
		t.Fatal(err)
	}
	rt.take()
	rt.armed.Store(true)
	_, err = b.Swap(c, k2, []byte("mine"), obj.Version)
	if !errors.Is(err, blob.ErrPreconditionFailed) {
		t.Fatalf("retried stale swap: %v, want precondition failed", err)
	}
	if got := rt.take(); strings.Join(got, ",") != "PUT 412,PUT 412,GET 206" {
		t.Fatalf("requests %v", got)
	}
	if got, _ := b.Get(c, k2); string(got.Data) != "theirs" {
		t.Fatalf("stored %q", got.Data)
	}
}

// ---- errors --------------------------------------------------------------------

func respErr(status int, code string) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code, Message: "msg of " + code},
		},
		RequestID: "REQ1",
	}}
}

func TestErrorMapping(t *testing.T) {
	bg := context.Background()
	for _, tc := range []struct {
		err  error
		want error
	}{
		{respErr(404, "NoSuchKey"), blob.ErrNotFound},
		{respErr(404, "NotFound"), blob.ErrNotFound},
		{respErr(412, "PreconditionFailed"), blob.ErrPreconditionFailed},
		{respErr(409, "ConditionalRequestConflict"), blob.ErrConflict},
		{respErr(503, "SlowDown"), blob.ErrThrottled},
		{respErr(429, "TooManyRequests"), blob.ErrThrottled},
		{respErr(503, "ServiceUnavailable"), blob.ErrThrottled},
		{respErr(404, "NoSuchBucket"), nil},
		{respErr(403, "AccessDenied"), nil},
		{respErr(409, "OperationAborted"), nil},
		{respErr(500, "InternalError"), nil},
	} {
		got := mapErr(bg, tc.err)
		for _, s := range []error{blob.ErrNotFound, blob.ErrPreconditionFailed, blob.ErrConflict, blob.ErrThrottled} {
			if errors.Is(got, s) != (s == tc.want) {
				t.Errorf("mapErr(%v) = %v: errors.Is(%v) = %v", tc.err, got, s, errors.Is(got, s))
			}
		}
		msg := got.Error()
		if !strings.Contains(msg, "msg of ") || !strings.Contains(msg, "REQ1") {
			t.Errorf("mapped error %q lacks the S3 message or request id", msg)
		}
		var oe *smithy.OperationError
		if !errors.As(got, &oe) {
			t.Errorf("mapped error %q does not wrap the SDK error", msg)
		}
	}
	// Context errors stay recognisable, even when the SDK hides them.
	cc, cancel := context.WithCancel(bg)
	cancel()
	if err := mapErr(cc, errors.New("transport gave up")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	dc, cancel2 := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel2()
	if err := mapErr(dc, errors.New("transport gave up")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expired context: %v", err)
	}
}

func TestMissingBucketIsNotMissingObject(t *testing.T) {
	o := minioOptions(t)
	o.Bucket = testinfra.NewBucketName(t) // never created
	b := open(t, o)
	defer b.Close()
	_, err := b.Get(testCtx(t), "k")
	if err == nil || errors.Is(err, blob.ErrNotFound) || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Fatalf("Get from a missing bucket: %v, want NoSuchBucket and not ErrNotFound", err)
	}
}

// ---- options and URLs ----------------------------------------------------------

func TestNewOptions(t *testing.T) {
	bg := context.Background()
	isolateAWSConfig(t)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no bucket", Options{}, "Bucket is required"},
		{"half credentials", Options{Bucket: "b", AccessKey: "a"}, "both"},
		{"client and endpoint", Options{Bucket: "b", Client: awss3.New(awss3.Options{}), Endpoint: "http://x"}, "Client is set"},
		{"bad endpoint", Options{Bucket: "b", Endpoint: "127.0.0.1:9000"}, "not an http(s) URL"},
		{"no region", Options{Bucket: "b"}, "no region"},
		{"kms without sse", Options{Bucket: "b", Region: "us-east-1", SSEKMSKeyID: "k"}, "SSEKMSKeyID"},
	} {
		_, err := New(bg, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	// An existing client is used as is.
	cl := awss3.New(awss3.Options{Region: "eu-west-1"})
	b, err := New(bg, Options{Bucket: "b", Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	var got *awss3.Client
	if !b.As(&got) || got != cl {
		t.Fatal("As did not return the given client")
	}
	// Endpoint without region: us-east-1.
	b, err = New(bg, Options{Bucket: "b", Endpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	b.As(&got)
	if r := got.Options().Region; r != "us-east-1" {
		t.Fatalf("region %q", r)
	}
}

// isolateAWSConfig keeps the developer's ~/.aws and AWS_* variables out of
// a test.
func isolateAWSConfig(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func TestOptionsFromURL(t *testing.T) {
	parse := func(raw string) (Options, error) {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return OptionsFromURL(u)
	}
	o, err := parse("s3://my-bucket?region=eu-west-1&endpoint=http://127.0.0.1:9000&use_path_style=true&profile=p&ssetype=aws:kms&kmskeyid=key1&request_checksum_calculation=when_required&response_checksum_validation=when_supported&rate_limiter_capacity=100&disable_https=false&dualstack=false&fips=false&accelerate=false&awssdk=v2&anonymous=false")
	if err != nil {
		t.Fatal(err)
	}
	if o.Bucket != "my-bucket" || o.Region != "eu-west-1" || o.Endpoint != "http://127.0.0.1:9000" || !o.UsePathStyle ||
		o.Profile != "p" || o.ServerSideEncryption != s3types.ServerSideEncryptionAwsKms || o.SSEKMSKeyID != "key1" ||
		len(o.ConfigOptions) != 2 || len(o.ClientOptions) != 3 {
		t.Fatalf("parsed %+v", o)
	}
	for raw, want := range map[string]func(Options) bool{
		"s3://b":                                  func(o Options) bool { return o.Bucket == "b" && !o.UsePathStyle },
		"s3://b/":                                 func(o Options) bool { return o.Bucket == "b" },
		"s3://b?hostname_immutable=true":          func(o Options) bool { return o.UsePathStyle },
		"s3://b?s3ForcePathStyle=1":               func(o Options) bool { return o.UsePathStyle },
		"s3://b?anonymous=true":                   func(o Options) bool { return o.Anonymous },
		"s3://b?role=arn:aws:iam::1:role/r":       func(o Options) bool { return o.RoleARN == "arn:aws:iam::1:role/r" },
		"s3://b?ssetype=aes256":                   func(o Options) bool { return o.ServerSideEncryption == s3types.ServerSideEncryptionAes256 },
		"s3://b?fips=true&dualstack=true":         func(o Options) bool { return len(o.ConfigOptions) == 2 },
		"s3://b?endpoint=https%3A%2F%2Fminio.lan": func(o Options) bool { return o.Endpoint == "https://minio.lan" },
	} {
		o, err := parse(raw)
		if err != nil || !want(o) {
			t.Errorf("%s: %+v, %v", raw, o, err)
		}
	}
	for raw, want := range map[string]string{
		"s3://b?bogus=1":                        `unknown URL parameter "bogus"`,
		"s3://b?Region=x":                       `unknown URL parameter "Region"`,
		"s3://b?use_path_style=yes":             "use_path_style",
		"s3://b?region=a&region=b":              "given 2 times",
		"s3://b?ssetype=rot13":                  "ssetype",
		"s3://b?role=admin":                     "ARN",
		"s3://b?rate_limiter_capacity=-1":       "rate_limiter_capacity",
		"s3://b?request_checksum_calculation=x": "when_required",
		"s3://b?awssdk=v1":                      "aws-sdk-go-v2",
		"s3://b/prefix":                         "names a bucket only",
		"s3://user:pw@b":                        "credentials",
		"s3:///?region=x":                       "no bucket",
		"s3://b?region=%zz":                     "query",
	} {
		_, err := parse(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", raw, err, want)
		}
	}

	// Through blob.OpenBucket: errors name the URL (password redacted by
	// blob) and the parameter.
	_, err = blob.OpenBucket(context.Background(), "s3://b?endpoint=http://127.0.0.1:9&colour=blue")
	if err == nil || !strings.Contains(err.Error(), `"colour"`) {
		t.Fatalf("OpenBucket with an unknown parameter: %v", err)
	}

	// The list the unknown-parameter error gives is the table's names.
	known, table := slices.Sorted(slices.Values(knownParams)), slices.Sorted(maps.Keys(urlParams))
	if !slices.Equal(known, table) {
		t.Errorf("knownParams %v, URL parameters %v", known, table)
	}
}

func TestOpenBucketURL(t *testing.T) {
	ep := testinfra.MinIO(t)
	name := testinfra.NewBucketName(t)
	ep.CreateBucket(t, name)
	isolateAWSConfig(t)
	// Credentials through the default chain (environment).
	t.Setenv("AWS_ACCESS_KEY_ID", ep.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", ep.SecretKey)
	b := blobtest.OpenURL(t, "s3://"+name+"?endpoint="+url.QueryEscape(ep.Endpoint)+"&region="+ep.Region+"&use_path_style=true")
	blobtest.RoundTrip(t, b, "via/url", "hi")
}
