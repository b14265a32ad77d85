// Package gcs is the blob driver for Google Cloud Storage, built on
// gocloud.dev/blob/gcsblob and cloud.google.com/go/storage.
//
// # Versions and conditions
//
// A version token is the object's generation, as a decimal string. GCS
// gives every write a new generation, even of identical bytes, and a
// deleted-then-recreated object a new one too.
//
//   - Create-only writes use gocloud's WriterOptions.IfNotExist, which gcsblob
//     sends as ifGenerationMatch=0.
//   - Compare-and-swap writes reach the *storage.ObjectHandle through
//     WriterOptions.BeforeWrite and As, and swap in
//     handle.If(storage.Conditions{GenerationMatch: g}): ifGenerationMatch=g.
//   - The new generation after a write: gocloud's blob.Writer does not return
//     it, so BeforeWrite also captures the *storage.Writer gcsblob writes
//     through, and Put reads Writer.Attrs().Generation after Close. That is
//     the generation the server assigned to this very write (taken from its
//     upload response), never a later one, so every write still goes through
//     gocloud and no second request or separate client is needed.
//   - Reads take the generation from the same response as the data
//     (Reader.As(**storage.Reader), then .Attrs.Generation); Stat and List
//     from storage.ObjectAttrs through As.
//
// Deletes are unconditional. A malformed version token (not a positive
// decimal generation) can never be an object's current version, so a Swap
// with one fails with blob.ErrPreconditionFailed without a request.
//
// # Errors
//
// 412 → blob.ErrPreconditionFailed; 404 → blob.ErrNotFound; 429 →
// blob.ErrThrottled (GCS allows about one write per second to one object
// name). Context cancellation and deadlines stay errors.Is-able. A 403 is
// not turned into ErrNotFound (gocloud does that): a permission problem must
// never look like a missing object.
//
// Retries: a client this package creates tries an idempotent call (reads,
// lists, create-only and compare-and-swap writes) at most
// Options.MaxAttempts times with a short backoff, so an unreachable
// endpoint fails within seconds instead of retrying until the context ends.
// (The storage client ignores WithMaxAttempts for uploads, so each write
// also gets a counting retry predicate on its object handle.) Unconditional
// writes and deletes are not retried, by the storage client's policy. A
// conditional write retried after a lost response can fail with
// ErrPreconditionFailed although the first attempt succeeded: re-read and
// re-decide, as after any precondition failure.
//
// # URLs
//
// The driver registers the scheme "gs", following gocloud's form:
//
//	gs://BUCKET
//	gs://BUCKET?anonymous=true
//	gs://BUCKET?endpoint=http://127.0.0.1:4443
//
// Credentials are Application Default Credentials, as for gocloud. Query
// parameters:
//
//   - anonymous=true (or gocloud's access_id=-): an unauthenticated client.
//   - endpoint=URL: a GCS-compatible JSON API such as fake-gcs-server (the
//     URL up to, not including, "/storage/v1"); implies no authentication
//     and JSON-API reads (with which the storage client reports no
//     modification time, so Get's ModTime is zero there; Stat's is set).
//     This parameter is cairn's; gocloud itself only honours the environment
//     variable below.
//   - universe_domain=DOMAIN: as in gocloud.
//
// Like gocloud and the storage client, the driver honours the environment
// variable STORAGE_EMULATOR_HOST (host:port or a URL) when no endpoint is
// given: requests then go to that emulator, unauthenticated.
//
// # As
//
// Bucket.As accepts **gocloud.dev/blob.Bucket (the gocloud bucket behind the
// driver) and **storage.Client.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/internal/cloud"
	"github.com/cairn-dev/cairn/blob/internal/gclist"
)

// Scheme is the URL scheme the driver registers.
const Scheme = "gs"

func init() {
	blob.Register(Scheme, OpenURL)
}

// Options configure New.
type Options struct {
	// Bucket is the name of an existing GCS bucket. Required.
	Bucket string
	// Endpoint is the base URL of a GCS-compatible JSON API, such as an
	// emulator ("http://127.0.0.1:4443"); requests go to Endpoint +
	// "/storage/v1/", unauthenticated. Empty means Google Cloud Storage, or
	// the emulator that STORAGE_EMULATOR_HOST names.
	Endpoint string
	// Anonymous makes an unauthenticated client (for public buckets).
	Anonymous bool
	// UniverseDomain selects a universe other than googleapis.com.
	UniverseDomain string
	// ClientOptions are passed to storage.NewClient after the driver's own.
	ClientOptions []option.ClientOption
	// Client, if set, is used instead of a client the driver makes; the
	// caller owns it (Close leaves it open) and its retry settings. Endpoint,
	// Anonymous, UniverseDomain, ClientOptions and MaxAttempts are then
	// ignored.
	Client *storage.Client
	// MaxAttempts bounds the tries of one retryable call, the first
	// included. 0 means 3.
	MaxAttempts int
}

// New opens a GCS bucket.
func New(ctx context.Context, opts Options) (*blob.Bucket, error) {
	if opts.Bucket == "" {
		return nil, errors.New("gcs: Options.Bucket is required")
	}
	client, owned, attempts := opts.Client, false, 0
	if client == nil {
		attempts = opts.MaxAttempts
		if attempts <= 0 {
			attempts = 3
		}
		c, err := newClient(ctx, opts.Endpoint, opts.Anonymous, opts.UniverseDomain, opts.ClientOptions, attempts)
		if err != nil {
			return nil, fmt.Errorf("gcs: %w", err)
		}
		client, owned = c, true
	}
	b, err := gcsblob.OpenBucket(ctx, nil, opts.Bucket, &gcsblob.Options{Client: client})
	if err != nil {
		if owned {
			client.Close()
		}
		return nil, fmt.Errorf("gcs: %w", err)
	}
	return blob.NewBucket(&driver{b: b, client: client, owned: owned, attempts: attempts}), nil
}

func newClient(ctx context.Context, endpoint string, anonymous bool, universe string, extra []option.ClientOption, attempts int) (*storage.Client, error) {
	var copts []option.ClientOption
	if endpoint == "" {
		if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
			endpoint = h
			if !strings.Contains(endpoint, "://") {
				endpoint = "http://" + endpoint
			}
		}
	}
	if endpoint != "" {
		u, ok := cloud.ParseHTTPURL(endpoint)
		if !ok {
			return nil, fmt.Errorf("invalid endpoint %q: want http(s)://host[:port]", endpoint)
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/storage/v1/"
		copts = append(copts,
			option.WithEndpoint(u.String()),
			option.WithoutAuthentication(),
			option.WithHTTPClient(cloud.HTTPClient()),
			// Emulators serve the JSON API; XML reads would go to a
			// path-style URL that, e.g., fake-gcs-server only answers on
			// its configured public host.
			storage.WithJSONReads(),
		)
	} else if anonymous {
		copts = append(copts, option.WithoutAuthentication())
	}
	if universe != "" {
		copts = append(copts, option.WithUniverseDomain(universe))
	}
	copts = append(copts, extra...)
	c, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, err
	}
	c.SetRetry(
		storage.WithMaxAttempts(attempts),
		storage.WithBackoff(gax.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}),
	)
	return c, nil
}

// OpenURL opens a bucket from a gs:// URL; see the package documentation.
// blob.OpenBucket calls it for the "gs" scheme.
func OpenURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	if err := cloud.CheckBucketURL(u, "gcs", Scheme, "bucket", "gs://BUCKET"); err != nil {
		return nil, err
	}
	opts := Options{Bucket: u.Host}
	for k, vs := range u.Query() {
		if len(vs) != 1 {
			return nil, fmt.Errorf("gcs: query parameter %q given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "anonymous":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("gcs: invalid value %q for query parameter \"anonymous\"", v)
			}
			opts.Anonymous = b
		case "access_id":
			if v != "-" {
				return nil, fmt.Errorf("gcs: query parameter access_id=%q: only \"-\" (anonymous) is supported", v)
			}
			opts.Anonymous = true
		case "endpoint":
			opts.Endpoint = v
		case "universe_domain":
			opts.UniverseDomain = v
		default:
			return nil, fmt.Errorf("gcs: unknown query parameter %q (supported: anonymous, access_id, endpoint, universe_domain)", k)
		}
	}
	return New(ctx, opts)
}

type driver struct {
	b        *gcblob.Bucket
	client   *storage.Client
	owned    bool
	attempts int // tries per write; 0 leaves a caller's client alone
}

func version(gen int64) blob.Version { return blob.Version(strconv.FormatInt(gen, 10)) }

func (d *driver) Get(ctx context.Context, key string) (*blob.Object, error) {
	r, err := d.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, mapErr(ctx, err)
	}
	defer r.Close()
	var sr *storage.Reader
	if !r.As(&sr) {
		return nil, errors.New("gcs: gocloud reader does not expose *storage.Reader")
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, mapErr(ctx, err)
	}
	if sr.Attrs.Generation == 0 {
		return nil, errors.New("gcs: the store reported no generation for the object read")
	}
	mod := r.ModTime()
	return &blob.Object{
		Attributes: blob.Attributes{Key: key, Size: int64(len(data)), Version: version(sr.Attrs.Generation), ModTime: mod},
		Data:       data,
	}, nil
}

func (d *driver) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	a, err := d.b.Attributes(ctx, key)
	if err != nil {
		return blob.Attributes{}, mapErr(ctx, err)
	}
	var oa storage.ObjectAttrs
	if !a.As(&oa) {
		return blob.Attributes{}, errors.New("gcs: gocloud attributes do not expose storage.ObjectAttrs")
	}
	return blob.Attributes{Key: key, Size: a.Size, Version: version(oa.Generation), ModTime: a.ModTime}, nil
}

func (d *driver) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	var match int64
	if opts.IfMatch != "" {
		g, err := strconv.ParseInt(string(opts.IfMatch), 10, 64)
		if err != nil || g <= 0 {
			// Never a current generation; and GenerationMatch 0 would
			// silently mean "no condition".
			return "", fmt.Errorf("%w: version %q is not a GCS generation", blob.ErrPreconditionFailed, opts.IfMatch)
		}
		match = g
	}
	ct := cloud.ContentType(opts.ContentType)
	var w *storage.Writer
	var n atomic.Int32 // the attempts' failures the retry predicate saw
	wopts := &gcblob.WriterOptions{
		ContentType: ct,
		IfNotExist:  opts.IfNotExist, // gcsblob: ifGenerationMatch=0
		BufferSize:  bufferSize(len(data)),
		BeforeWrite: func(as func(any) bool) error {
			// The handle must be taken before the writer is made.
			var h **storage.ObjectHandle
			if !as(&h) {
				return errors.New("gcs: gcsblob did not expose the object handle")
			}
			if match != 0 {
				*h = (*h).If(storage.Conditions{GenerationMatch: match})
			}
			// Uploads ignore the client's WithMaxAttempts and retry until
			// the context ends; bound them by counting (and count anyway:
			// a refusal after a retry is reported as ErrRetriedWrite).
			*h = (*h).Retryer(storage.WithErrorFunc(func(err error) bool {
				k := n.Add(1)
				return (d.attempts <= 0 || k < int32(d.attempts)) && storage.ShouldRetry(err)
			}))
			if !as(&w) {
				return errors.New("gcs: gcsblob did not expose its *storage.Writer")
			}
			return nil
		},
	}
	if err := d.b.WriteAll(ctx, key, data, wopts); err != nil {
		mapped := mapErr(ctx, err)
		if opts.IfNotExist || match != 0 {
			return "", cloud.RetriedWrite(mapped, n.Load())
		}
		return "", mapped
	}
	if w == nil {
		return "", errors.New("gcs: BeforeWrite was not called")
	}
	a := w.Attrs()
	if a == nil || a.Generation == 0 {
		return "", errors.New("gcs: the store did not report the new generation")
	}
	return version(a.Generation), nil
}

// bufferSize sizes the storage.Writer's chunk buffer to the data (the
// default is 16 MiB per write), so that a small write allocates little and
// still goes in one retryable request.
func bufferSize(n int) int {
	const unit = 256 << 10 // the storage client rounds to 256 KiB
	if n >= googleapi.DefaultUploadChunkSize {
		return 0 // gcsblob's default
	}
	return (n/unit + 1) * unit
}

func (d *driver) Delete(ctx context.Context, key string) error {
	return mapErr(ctx, d.b.Delete(ctx, key))
}

func (d *driver) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	return gclist.List(ctx, d.b, opts, func(o *gcblob.ListObject) (blob.Version, error) {
		var oa storage.ObjectAttrs
		if !o.As(&oa) {
			return "", errors.New("gcs: gocloud list object does not expose storage.ObjectAttrs")
		}
		return version(oa.Generation), nil
	}, mapErr)
}

func (d *driver) As(target any) bool {
	switch t := target.(type) {
	case **gcblob.Bucket:
		*t = d.b
	case **storage.Client:
		*t = d.client
	default:
		return false
	}
	return true
}

func (d *driver) Close() error {
	err := d.b.Close()
	if d.owned {
		if cerr := d.client.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// mapErr turns a gocloud/GCS error into one wrapping blob's sentinel
// errors, keeping the original in the chain.
func mapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		switch gerr.Code {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %w", blob.ErrNotFound, err)
		case http.StatusPreconditionFailed:
			return fmt.Errorf("%w: %w", blob.ErrPreconditionFailed, err)
		case http.StatusTooManyRequests:
			return fmt.Errorf("%w: %w", blob.ErrThrottled, err)
		}
	}
	if errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("%w: %w", blob.ErrNotFound, err)
	}
	// The context ended during the call: make sure that shows.
	return cloud.WithContext(ctx, err)
}
