// Package s3 is the blob driver for Amazon S3 and S3-compatible stores
// (MinIO in particular), written directly against aws-sdk-go-v2.
//
// gocloud.dev's s3blob is not used because it discards PutObject's result:
// cairn needs the ETag of every write as the object's version token, and
// compare-and-swap through If-Match on that ETag.
//
// # Operations
//
//   - Get is one GetObject; its ETag is the version.
//   - Stat is one HeadObject.
//   - Put is one PutObject: create-only sends If-None-Match: *, a swap
//     sends If-Match: <etag>; the version returned is the ETag in
//     PutObject's response.
//   - Delete is a HeadObject followed by an unconditional DeleteObject.
//     S3 deletes of a missing key succeed silently, so the HEAD is what
//     lets Delete report blob.ErrNotFound; it costs one extra request, and
//     an object deleted by someone else between the two requests is
//     reported as deleted by this call. Deletes are never conditional
//     (MinIO ignores If-Match on DELETE).
//   - List is ListObjectsV2 with Prefix and MaxKeys; the page token is S3's
//     opaque ContinuationToken.
//
// # The version trailer
//
// An S3 (or MinIO) ETag of a single-part PutObject is the MD5 of the bytes
// stored, so writing identical bytes twice yields the same ETag. A version
// token must change on every successful write (it is a fencing token: a
// writer holding an old token must never succeed against a newer object
// that happens to hold the same bytes, the ABA problem). The driver
// therefore appends a fixed 24-byte trailer to every object it writes:
//
//	content || nonce (16 random bytes) || "cairnv1\n"
//
// and records "x-amz-meta-cairn-trailer: v1" on the object. Get strips and
// checks the trailer, Stat and List report the size without it. Objects in
// the bucket are 24 bytes longer than what cairn wrote: tools reading the
// bucket directly (aws s3 cp, mc cat) see the trailer.
//
// An object without the trailer (written by another tool) is treated as
// foreign: Get returns its raw bytes, and Stat its raw size (it has no
// trailer metadata). List cannot see metadata or bytes, so it reports the
// size of every object of at least 24 bytes minus 24: listed sizes of
// foreign objects are 24 bytes short.
//
// # MinIO and nested keys
//
// MinIO keeps objects in a directory tree and does not support an object
// whose name is also a prefix of other objects: after writing "a" and
// "a/b", GET finds both but listings never show "a/b" (minio/minio#18120,
// "conflicting objects" in MinIO's documentation). AWS S3 has no such
// limit. On MinIO either keep keys from overlapping that way, or open the
// bucket with Options.SuffixKeys (URL parameter suffix_keys=true): every
// object is then stored under its key followed by U+0001, which makes
// overlaps impossible and keeps listing order. Choose once per bucket:
// a suffixing Bucket does not see objects stored without the suffix, and
// the other way round.
//
// # Retries and lost responses
//
// The SDK's standard retryer is kept (3 attempts, no client-side retry
// quota). It never retries 412 PreconditionFailed or 409
// ConditionalRequestConflict, but it does retry a request whose response
// was lost (a connection reset, a 5xx). For a conditional write that is
// dangerous: if the first attempt was applied and its response lost, the
// retry finds its own write in place and fails with 412, and a naive
// driver would report failure for a write that won. The random nonce in
// the trailer makes this detectable. When a create-only or compare-and-swap
// write fails with 412 (or 409) after more than one attempt, the driver
// reads the stored object's last 24 bytes (a ranged GET); if they are this
// write's own trailer, the write was applied and Put returns the stored
// ETag. A 412 on the first attempt, the common case under contention,
// costs no extra request. A residual ambiguity remains: if the earlier
// attempt was applied and another writer replaced the object before the
// read-back, the write is reported as failed (ErrPreconditionFailed, with
// a note in the message). Any other error from a write (a transport
// error after all attempts, a 500) means the outcome is unknown: re-read.
//
// # Timeouts
//
// Unless Options.HTTPClient or Options.Client is given, the driver's HTTP
// client dials with a 2 s timeout, a 5 s TLS handshake timeout and a 15 s
// response-header timeout, and the retryer makes at most 3 attempts, so an
// unreachable endpoint fails within a few seconds. Callers bound whole
// operations with their context.
//
// # URLs
//
//	s3://bucket?region=us-east-1
//	s3://bucket?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1
//
// The host is the bucket; the path must be empty. Query parameters follow
// gocloud.dev's s3blob:
//
//   - region: the AWS region (default: from the AWS config; us-east-1 when
//     endpoint is set and no region is configured).
//   - endpoint: a custom endpoint URL (MinIO, other S3-compatible stores).
//   - use_path_style (or s3ForcePathStyle): "true" for path-style requests
//     (http://host/bucket/key), which MinIO needs.
//   - hostname_immutable: "true" keeps the endpoint's host name as is;
//     with the SDK's BaseEndpoint this is the same as use_path_style.
//   - disable_https: "true" resolves AWS endpoints over plain http.
//   - profile: the shared-config profile to use.
//   - anonymous: "true" sends unsigned requests.
//   - role: an IAM role ARN to assume via STS.
//   - dualstack, fips, accelerate: "true" enables the respective endpoints.
//   - rate_limiter_capacity: enables the SDK's client-side retry quota with
//     this capacity (default: disabled).
//   - request_checksum_calculation, response_checksum_validation:
//     when_supported or when_required (use when_required for stores that
//     reject the SDK's default CRC checksums).
//   - ssetype (AES256, aws:kms, aws:kms:dsse) and kmskeyid: server-side
//     encryption of written objects.
//   - awssdk: accepted for gocloud compatibility; only "v2" (or empty).
//   - suffix_keys: "true" sets Options.SuffixKeys (cairn's own; see above).
//
// Credentials come from the default AWS credential chain (environment,
// shared config, SSO, IMDS, …); URLs never carry keys. Unknown parameters
// are an error.
//
// # As
//
// Bucket.As supports **awss3.Client (the S3 client the driver uses).
package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/internal/cloud"
)

// Trailer layout. See the package documentation.
const (
	nonceSize    = 16
	trailerMagic = "cairnv1\n"
	// TrailerSize is the number of bytes the driver appends to every object
	// it writes.
	TrailerSize = nonceSize + magicSize
	magicSize   = 8

	// metaTrailer is the user-metadata key (x-amz-meta-cairn-trailer) that
	// marks an object written with a trailer, so Stat can report its size.
	metaTrailer      = "cairn-trailer"
	metaTrailerValue = "v1"

	// KeySuffix ends every stored key with Options.SuffixKeys.
	KeySuffix = "\x01"
)

// Default transport and retry settings (used unless the caller supplies its
// own HTTP client or S3 client).
const (
	dialTimeout         = 2 * time.Second
	tlsHandshakeTimeout = 5 * time.Second
	maxAttempts         = 3
	maxBackoff          = 5 * time.Second
)

// Options configure New.
type Options struct {
	// Bucket is the S3 bucket name. Required.
	Bucket string

	// Client, if set, is used as is: the connection fields below (Region,
	// Endpoint, UsePathStyle, credentials, HTTPClient, Profile, Anonymous,
	// RoleARN, ConfigOptions, ClientOptions) must then be empty. Close does
	// not close it.
	Client *awss3.Client

	// Region is the AWS region. Empty: from the AWS config (environment,
	// shared config); us-east-1 if none is configured and Endpoint is set.
	Region string
	// Endpoint is a custom endpoint URL such as "http://127.0.0.1:9000"
	// (MinIO). Empty: AWS's endpoint for the region.
	Endpoint string
	// UsePathStyle sends path-style requests (endpoint/bucket/key) instead
	// of virtual-hosted ones (bucket.endpoint/key). MinIO needs it.
	UsePathStyle bool

	// AccessKey and SecretKey (and optionally SessionToken) are static
	// credentials. Empty: the default AWS credential chain.
	AccessKey    string
	SecretKey    string
	SessionToken string
	// Profile selects a shared-config profile for the default chain.
	Profile string
	// Anonymous sends unsigned requests.
	Anonymous bool
	// RoleARN, if set, is assumed through STS with the credentials
	// otherwise configured.
	RoleARN string

	// HTTPClient replaces the driver's HTTP client (and its timeouts).
	HTTPClient *http.Client

	// ServerSideEncryption and SSEKMSKeyID are sent with every write, for
	// buckets whose policy demands them.
	ServerSideEncryption s3types.ServerSideEncryption
	SSEKMSKeyID          string

	// SuffixKeys stores every object under its key followed by U+0001
	// (KeySuffix), so that a key and keys under it ("a" and "a/b") can
	// coexist on a store that keeps objects in a directory tree. MinIO is
	// one: an object named "a" hides every object under "a/" from listings
	// (GET still finds them; minio/minio#18120, "conflicting objects" in
	// MinIO's documentation), so on MinIO without this option such keys
	// must never overlap. The suffix sorts below every character a valid
	// key may contain, so listing order is kept. Every key in the bucket
	// then ends in an invisible control character, and objects without
	// it are invisible to the Bucket. Choose once per bucket.
	SuffixKeys bool

	// ConfigOptions are applied when loading the AWS config, after the
	// driver's own; ClientOptions are applied to the S3 client's options,
	// after the driver's own (so they may replace the retryer, say).
	ConfigOptions []func(*awsconfig.LoadOptions) error
	ClientOptions []func(*awss3.Options)
}

type driver struct {
	client   *awss3.Client
	bucket   string
	suffix   string // KeySuffix with Options.SuffixKeys, else ""
	sse      s3types.ServerSideEncryption
	kmsKeyID string
}

// New returns a bucket backed by an S3 bucket. It does not contact S3.
func New(ctx context.Context, opts Options) (*blob.Bucket, error) {
	d, err := newDriver(ctx, opts)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(d), nil
}

func newDriver(ctx context.Context, opts Options) (*driver, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	d := &driver{bucket: opts.Bucket, sse: opts.ServerSideEncryption, kmsKeyID: opts.SSEKMSKeyID}
	if opts.SuffixKeys {
		d.suffix = KeySuffix
	}
	if opts.Client != nil {
		d.client = opts.Client
		return d, nil
	}
	cfg, err := loadConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	d.client = awss3.NewFromConfig(cfg, clientOptions(opts)...)
	return d, nil
}

// checkOptions rejects Options that are incomplete or contradict
// themselves, before anything is built from them.
func checkOptions(opts Options) error {
	if opts.Bucket == "" {
		return errors.New("s3: Options.Bucket is required")
	}
	if (opts.AccessKey == "") != (opts.SecretKey == "") {
		return errors.New("s3: set both Options.AccessKey and Options.SecretKey, or neither")
	}
	if opts.Anonymous && opts.AccessKey != "" {
		return errors.New("s3: Options.Anonymous and static credentials are exclusive")
	}
	if opts.ServerSideEncryption == "" && opts.SSEKMSKeyID != "" {
		return errors.New("s3: Options.SSEKMSKeyID needs ServerSideEncryption aws:kms or aws:kms:dsse")
	}
	if opts.Client != nil {
		if opts.Region != "" || opts.Endpoint != "" || opts.UsePathStyle || opts.AccessKey != "" ||
			opts.SessionToken != "" || opts.Profile != "" || opts.Anonymous || opts.RoleARN != "" ||
			opts.HTTPClient != nil || len(opts.ConfigOptions) > 0 || len(opts.ClientOptions) > 0 {
			return errors.New("s3: Options.Client is set: configure the client itself, not the connection fields of Options")
		}
	}
	if opts.Endpoint != "" {
		if _, ok := cloud.ParseHTTPURL(opts.Endpoint); !ok {
			return fmt.Errorf("s3: endpoint %q is not an http(s) URL", opts.Endpoint)
		}
	}
	return nil
}

// loadConfig loads the AWS config for opts: the driver's retryer and HTTP
// client, opts' region, profile and credentials, then opts.ConfigOptions;
// a region of us-east-1 for a custom endpoint that names none; and the
// role to assume, if any.
func loadConfig(ctx context.Context, opts Options) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, configLoadOptions(opts)...)
	if err != nil {
		return cfg, fmt.Errorf("s3: loading AWS config: %w", err)
	}
	if cfg.Region == "" {
		if opts.Endpoint == "" {
			return cfg, errors.New("s3: no region: set Options.Region (URL parameter region=) or configure one (AWS_REGION)")
		}
		cfg.Region = "us-east-1"
	}
	if opts.RoleARN != "" {
		if !strings.HasPrefix(opts.RoleARN, "arn:") {
			return cfg, fmt.Errorf("s3: role %q is not an ARN", opts.RoleARN)
		}
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), opts.RoleARN))
	}
	return cfg, nil
}

// configLoadOptions are the options for loading the AWS config: the
// driver's own, then opts.ConfigOptions.
func configLoadOptions(opts Options) []func(*awsconfig.LoadOptions) error {
	lo := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRetryer(func() aws.Retryer { return newRetryer(0) }),
	}
	if opts.HTTPClient == nil {
		// Passed through the config so that a custom CA bundle
		// (AWS_CA_BUNDLE) applies to it. A caller's client is set on the
		// S3 client (clientOptions), and used as is.
		bc := awshttp.NewBuildableClient().
			WithDialerOptions(func(d *net.Dialer) { d.Timeout = dialTimeout }).
			WithTransportOptions(func(t *http.Transport) {
				t.TLSHandshakeTimeout = tlsHandshakeTimeout
				t.ResponseHeaderTimeout = cloud.ResponseHeaderTimeout
				t.MaxIdleConnsPerHost = 64
			})
		lo = append(lo, awsconfig.WithHTTPClient(bc))
	}
	if opts.Region != "" {
		lo = append(lo, awsconfig.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		lo = append(lo, awsconfig.WithSharedConfigProfile(opts.Profile))
	}
	switch {
	case opts.AccessKey != "":
		lo = append(lo, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(opts.AccessKey, opts.SecretKey, opts.SessionToken)))
	case opts.Anonymous:
		lo = append(lo, awsconfig.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	return append(lo, opts.ConfigOptions...)
}

// clientOptions are the S3 client's options: the driver's own, then
// opts.ClientOptions.
func clientOptions(opts Options) []func(*awss3.Options) {
	co := []func(*awss3.Options){func(o *awss3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = opts.UsePathStyle
		if opts.HTTPClient != nil {
			o.HTTPClient = opts.HTTPClient
		}
		// Ranged reads and objects without checksums would otherwise log a
		// warning on every GET.
		o.DisableLogOutputChecksumValidationSkipped = true
	}}
	return append(co, opts.ClientOptions...)
}

// newRetryer is the SDK's standard retryer with the driver's limits. A
// positive capacity enables the SDK's client-side retry quota.
func newRetryer(capacity uint) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.MaxBackoff = maxBackoff
		o.RateLimiter = ratelimit.None
		if capacity > 0 {
			o.RateLimiter = ratelimit.NewTokenRateLimit(capacity)
		}
	})
}

// ---- trailer ---------------------------------------------------------------

// The magic must be exactly magicSize bytes (a compile-time check).
var _ = [1]struct{}{}[len(trailerMagic)-magicSize]

// seal returns data followed by the trailer carrying nonce.
func seal(data []byte, nonce [nonceSize]byte) []byte {
	out := make([]byte, len(data)+TrailerSize)
	copy(out, data)
	copy(out[len(data):], nonce[:])
	copy(out[len(data)+nonceSize:], trailerMagic)
	return out
}

// unseal splits stored bytes into content and trailer nonce. ok is false
// when stored carries no trailer (a foreign object): data is then stored.
func unseal(stored []byte) (data []byte, nonce [nonceSize]byte, ok bool) {
	n := len(stored)
	if n < TrailerSize || string(stored[n-len(trailerMagic):]) != trailerMagic {
		return stored, nonce, false
	}
	copy(nonce[:], stored[n-TrailerSize:])
	return stored[:n-TrailerSize], nonce, true
}

func newNonce() ([nonceSize]byte, error) {
	var n [nonceSize]byte
	_, err := rand.Read(n[:])
	return n, err
}

// ---- versions ----------------------------------------------------------------

// version turns an ETag into a version token: the ETag without quotes, so
// that tokens from PutObject, GetObject, HeadObject and ListObjectsV2 are
// equal whatever quoting a store uses.
func version(etag *string) blob.Version {
	return blob.Version(strings.Trim(aws.ToString(etag), `"`))
}

// ifMatch is the If-Match header value for v.
func ifMatch(v blob.Version) *string {
	s := string(v)
	if !strings.HasPrefix(s, `"`) && !strings.HasPrefix(s, "W/") {
		s = `"` + s + `"`
	}
	return aws.String(s)
}

// ---- attempt counting ------------------------------------------------------

// countAttempts returns a per-call option that counts the HTTP attempts the
// SDK's retryer makes for the call.
func countAttempts(n *atomic.Int32) func(*awss3.Options) {
	return func(o *awss3.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Insert(middleware.FinalizeMiddlewareFunc("cairnAttemptCounter",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
					middleware.FinalizeOutput, middleware.Metadata, error,
				) {
					n.Add(1)
					return next.HandleFinalize(ctx, in)
				}), "Retry", middleware.After)
		})
	}
}

// ---- driver methods ----------------------------------------------------------

func (d *driver) Get(ctx context.Context, key string) (*blob.Object, error) {
	out, err := d.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &d.bucket, Key: d.stored(key)})
	if err != nil {
		return nil, mapErr(ctx, err)
	}
	defer out.Body.Close()
	var buf bytes.Buffer
	if n := aws.ToInt64(out.ContentLength); n > 0 && n < 1<<31 {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(out.Body); err != nil {
		return nil, mapErr(ctx, fmt.Errorf("reading object body: %w", err))
	}
	data, _, _ := unseal(buf.Bytes())
	return &blob.Object{
		Attributes: blob.Attributes{
			Key:     key,
			Size:    int64(len(data)),
			Version: version(out.ETag),
			ModTime: aws.ToTime(out.LastModified),
		},
		Data: data,
	}, nil
}

func (d *driver) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	out, err := d.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &d.bucket, Key: d.stored(key)})
	if err != nil {
		return blob.Attributes{}, mapErr(ctx, err)
	}
	size := aws.ToInt64(out.ContentLength)
	if hasTrailerMeta(out.Metadata) && size >= TrailerSize {
		size -= TrailerSize
	}
	return blob.Attributes{Key: key, Size: size, Version: version(out.ETag), ModTime: aws.ToTime(out.LastModified)}, nil
}

func hasTrailerMeta(md map[string]string) bool {
	for k, v := range md {
		if strings.EqualFold(k, metaTrailer) {
			return v == metaTrailerValue
		}
	}
	return false
}

func (d *driver) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	nonce, err := newNonce()
	if err != nil {
		return "", fmt.Errorf("s3: drawing a nonce: %w", err)
	}
	body := seal(data, nonce)
	ct := cloud.ContentType(opts.ContentType)
	in := &awss3.PutObjectInput{
		Bucket:        &d.bucket,
		Key:           d.stored(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   &ct,
		Metadata:      map[string]string{metaTrailer: metaTrailerValue},
	}
	if d.sse != "" {
		in.ServerSideEncryption = d.sse
	}
	if d.kmsKeyID != "" {
		in.SSEKMSKeyId = &d.kmsKeyID
	}
	conditional := true
	switch {
	case opts.IfNotExist:
		in.IfNoneMatch = aws.String("*")
	case opts.IfMatch != "":
		in.IfMatch = ifMatch(opts.IfMatch)
	default:
		conditional = false
	}
	var attempts atomic.Int32
	out, err := d.client.PutObject(ctx, in, countAttempts(&attempts))
	if err == nil {
		v := version(out.ETag)
		if v == "" {
			return "", errors.New("s3: PutObject succeeded but returned no ETag")
		}
		return v, nil
	}
	mapped := mapErr(ctx, err)
	if !conditional || attempts.Load() < 2 ||
		!(errors.Is(mapped, blob.ErrPreconditionFailed) || errors.Is(mapped, blob.ErrConflict)) {
		return "", mapped
	}
	// The SDK retried: an earlier attempt may have been applied with its
	// response lost, and this failure may be the retry meeting that very
	// write. The stored trailer tells.
	v, ours, rerr := d.readTrailer(ctx, key, body[len(body)-TrailerSize:])
	switch {
	case rerr != nil:
		return "", fmt.Errorf("s3: outcome unknown: PutObject was retried after an attempt without a response, "+
			"the retry failed (%v), and reading the object back to check for the earlier attempt failed: %w", mapped, rerr)
	case ours:
		return v, nil
	default:
		return "", fmt.Errorf("%w (after %d attempts; the stored object is not this write's, though an earlier "+
			"attempt whose response was lost may have been applied and since replaced)", mapped, attempts.Load())
	}
}

// readTrailer reads the last TrailerSize bytes of the stored object and
// reports its version and whether they equal trailer.
func (d *driver) readTrailer(ctx context.Context, key string, trailer []byte) (blob.Version, bool, error) {
	out, err := d.client.GetObject(ctx, &awss3.GetObjectInput{
		Bucket: &d.bucket,
		Key:    d.stored(key),
		Range:  aws.String(fmt.Sprintf("bytes=-%d", TrailerSize)),
	}, func(o *awss3.Options) {
		// A ranged read cannot be checked against a whole-object checksum.
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	if err != nil {
		mapped := mapErr(ctx, err)
		var ae smithy.APIError
		if errors.Is(mapped, blob.ErrNotFound) || (errors.As(err, &ae) && ae.ErrorCode() == "InvalidRange") {
			return "", false, nil // gone, or empty: not ours
		}
		return "", false, mapped
	}
	defer out.Body.Close()
	tail, err := io.ReadAll(io.LimitReader(out.Body, 2*TrailerSize))
	if err != nil {
		return "", false, mapErr(ctx, err)
	}
	return version(out.ETag), bytes.Equal(tail, trailer), nil
}

func (d *driver) Delete(ctx context.Context, key string) error {
	if _, err := d.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &d.bucket, Key: d.stored(key)}); err != nil {
		return mapErr(ctx, err)
	}
	if _, err := d.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &d.bucket, Key: d.stored(key)}); err != nil {
		return mapErr(ctx, err)
	}
	return nil
}

func (d *driver) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	in := &awss3.ListObjectsV2Input{
		Bucket:  &d.bucket,
		MaxKeys: aws.Int32(int32(opts.PageSize)),
		// Keys may hold characters XML 1.0 cannot carry; ask for them
		// URL-encoded.
		EncodingType: s3types.EncodingTypeUrl,
	}
	if opts.Prefix != "" {
		in.Prefix = &opts.Prefix
	}
	if opts.PageToken != "" {
		in.ContinuationToken = &opts.PageToken
	}
	if opts.StartAfter != "" {
		after := opts.StartAfter + d.suffix // ignored by S3 with a token, which continues after it
		in.StartAfter = &after
	}
	out, err := d.client.ListObjectsV2(ctx, in)
	if err != nil {
		return blob.ListPage{}, mapErr(ctx, err)
	}
	encoded := out.EncodingType == s3types.EncodingTypeUrl
	page := blob.ListPage{Objects: make([]blob.Attributes, 0, len(out.Contents))}
	for _, o := range out.Contents {
		k := aws.ToString(o.Key)
		if encoded {
			dk, err := url.QueryUnescape(k)
			if err != nil {
				return blob.ListPage{}, fmt.Errorf("s3: listing returned a badly encoded key %q: %w", k, err)
			}
			k = dk
		}
		if d.suffix != "" {
			var ok bool
			if k, ok = strings.CutSuffix(k, d.suffix); !ok {
				continue // not stored through a suffixing bucket
			}
		}
		size := aws.ToInt64(o.Size)
		if size >= TrailerSize {
			size -= TrailerSize
		}
		page.Objects = append(page.Objects, blob.Attributes{
			Key:     k,
			Size:    size,
			Version: version(o.ETag),
			ModTime: aws.ToTime(o.LastModified),
		})
	}
	if aws.ToBool(out.IsTruncated) {
		page.NextPageToken = aws.ToString(out.NextContinuationToken)
		if page.NextPageToken == "" {
			return blob.ListPage{}, errors.New("s3: truncated listing without a continuation token")
		}
	}
	return page, nil
}

// stored is the S3 object name of key.
func (d *driver) stored(key string) *string {
	s := key + d.suffix
	return &s
}

// As supports **awss3.Client.
func (d *driver) As(target any) bool {
	switch t := target.(type) {
	case **awss3.Client:
		*t = d.client
		return true
	}
	return false
}

// Close has nothing to release: the SDK's HTTP client offers no way to
// close its idle connections, which time out after 90 s.
func (d *driver) Close() error { return nil }

// ---- errors --------------------------------------------------------------------

// apiError is an S3 error response: code, message, HTTP status and request
// ID. It wraps the SDK's error.
type apiError struct {
	Code      string
	Message   string
	Status    int
	RequestID string
	err       error
}

func (e *apiError) Error() string {
	var b strings.Builder
	b.WriteString("S3 ")
	if e.Code != "" {
		b.WriteString(e.Code)
	} else {
		b.WriteString("error")
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request id %s]", e.RequestID)
	}
	return b.String()
}

func (e *apiError) Unwrap() error { return e.err }

var throttleCodes = map[string]bool{
	"SlowDown": true, "Throttling": true, "ThrottlingException": true, "RequestThrottled": true,
	"TooManyRequests": true, "TooManyRequestsException": true, "RequestLimitExceeded": true,
	"ServiceUnavailable": true, "SlowDownRead": true, "SlowDownWrite": true,
}

// mapErr turns an SDK error into one wrapping the matching blob sentinel,
// keeps context errors errors.Is-able, and describes S3 error responses by
// code and message.
func mapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var status int
	var hs interface{ HTTPStatusCode() int }
	if errors.As(err, &hs) {
		status = hs.HTTPStatusCode()
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		if status == 0 {
			// No response at all: a transport error or a cancelled context.
			return cloud.WithContext(ctx, err)
		}
	}
	e := &apiError{Status: status, err: err}
	if ae != nil {
		e.Code, e.Message = ae.ErrorCode(), ae.ErrorMessage()
	}
	var rid interface{ ServiceRequestID() string }
	if errors.As(err, &rid) {
		e.RequestID = rid.ServiceRequestID()
	}
	var sentinel error
	switch {
	case e.Code == "NoSuchBucket":
		// A missing bucket is a configuration error, not a missing object.
	case e.Code == "NoSuchKey" || e.Code == "NotFound" || status == http.StatusNotFound:
		sentinel = blob.ErrNotFound
	case e.Code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		sentinel = blob.ErrPreconditionFailed
	case e.Code == "ConditionalRequestConflict":
		sentinel = blob.ErrConflict
	case throttleCodes[e.Code] || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		sentinel = blob.ErrThrottled
	}
	if sentinel != nil {
		return fmt.Errorf("%w: %w", sentinel, e)
	}
	return e
}
