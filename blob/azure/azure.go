// Package azure is the blob driver for Azure Blob Storage (block blobs),
// built on gocloud.dev/blob/azureblob and the azblob SDK
// (github.com/Azure/azure-sdk-for-go/sdk/storage/azblob).
//
// # Versions and conditions
//
// A version token is the blob's ETag in its HTTP header form, quotes
// included ("0x8DC…"; listings report it unquoted and are quoted to match).
// Azure gives every write a new ETag, even of identical bytes.
//
// Writes do not go through gocloud. gocloud's azureblob writer uploads with
// UploadStream and discards its response, so the new ETag of a write
// cannot be had from it; reading it back afterwards (GetProperties) would
// race with the next writer and could return someone else's version, which
// breaks fencing. So Put uploads with the SDK directly: one Put Blob request
// (blockblob.Client.Upload) on the container client gocloud's bucket wraps,
// with the condition in AccessConditions and the ETag taken from that
// request's response:
//
//   - create-only: If-None-Match: * (what gocloud's IfNotExist sends);
//   - compare-and-swap: If-Match: <etag> (what gocloud's BeforeWrite +
//     As(**azblob.UploadStreamOptions) would set).
//
// A single Put Blob holds up to 5000 MiB, far above what cairn stores. Blob
// names are escaped exactly as gocloud's azureblob escapes them (see
// escapeKey), so objects written here read back through gocloud and the
// reverse. Get, Stat, List and Delete go through gocloud; the ETag of a read
// comes from the same response as its data (Reader.As), of a listing from
// container.BlobItem (ListObject.As). Deletes are unconditional.
//
// # Errors
//
// 412 ConditionNotMet and 409 BlobAlreadyExists → blob.ErrPreconditionFailed;
// 404 BlobNotFound → blob.ErrNotFound (a missing container is not reported
// as a missing object); 429 and 503 → blob.ErrThrottled. Context
// cancellation and deadlines stay errors.Is-able.
//
// Retries: a client this package makes retries at most Options.MaxRetries
// times (default 2) with a short backoff, so an unreachable endpoint fails
// within seconds. A conditional write retried after a lost response can
// fail with ErrPreconditionFailed although the first attempt succeeded:
// such a refusal also carries blob.ErrRetriedWrite (the driver counts a
// write's attempts); re-read and re-decide.
//
// # URLs
//
// The driver registers the scheme "azblob" and reads its URLs as gocloud's
// azureblob does:
//
//	azblob://CONTAINER
//	azblob://CONTAINER?protocol=http&domain=127.0.0.1:10000   (Azurite)
//
// Query parameters (gocloud's names): domain, protocol (http or https),
// cdn, localemu, storage_account. When the domain starts with "127.0.0.1"
// or "localhost", or localemu=true, the service URL is path-style
// (http://127.0.0.1:10000/ACCOUNT), as Azurite wants. Defaults and
// credentials come from the environment, as in gocloud:
// AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (shared key),
// AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_CONNECTION_STRING (or
// AZURE_STORAGEBLOB_CONNECTIONSTRING), else azidentity's
// DefaultAzureCredential; AZURE_STORAGE_DOMAIN, AZURE_STORAGE_PROTOCOL,
// AZURE_STORAGE_IS_CDN and AZURE_STORAGE_IS_LOCAL_EMULATOR set defaults for
// the parameters above. With a SAS token in the environment a URL cannot
// point the client at another endpoint.
//
// # As
//
// Bucket.As accepts **container.Client (the azblob container client) and
// **gocloud.dev/blob.Bucket (the gocloud bucket over it).
package azure

import (
	"bytes"
	"context"
	"crypto/md5"
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

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/internal/cloud"
	"github.com/cairn-dev/cairn/blob/internal/gclist"
)

// Scheme is the URL scheme the driver registers.
const Scheme = "azblob"

func init() {
	blob.Register(Scheme, OpenURL)
}

// Options configure New. Credentials are chosen in this order: Client,
// AccountName+AccountKey (shared key), ConnectionString, Credential, a SAS
// token in ServiceURL's query (no credential), else azidentity's
// DefaultAzureCredential.
type Options struct {
	// Container is the name of an existing container. Required.
	Container string
	// ServiceURL is the account's blob endpoint, such as
	// "https://ACCOUNT.blob.core.windows.net" or, for Azurite,
	// "http://127.0.0.1:10000/devstoreaccount1"; it may carry a SAS token as
	// its query. Empty means "https://AccountName.blob.core.windows.net".
	// Ignored with ConnectionString.
	ServiceURL string
	// AccountName and AccountKey select shared-key authentication.
	AccountName string
	AccountKey  string
	// ConnectionString is an Azure Storage connection string.
	ConnectionString string
	// Credential is an Entra ID token credential.
	Credential azcore.TokenCredential
	// Client, if set, is the container client to use; the caller owns its
	// configuration (retries included). The other fields are then ignored.
	Client *container.Client
	// MaxRetries bounds the retries of one request after the first try. 0
	// means 2; negative means none.
	MaxRetries int
}

// New opens an Azure Blob container.
func New(ctx context.Context, opts Options) (*blob.Bucket, error) {
	c := opts.Client
	if c == nil {
		var err error
		if c, err = newClient(opts); err != nil {
			return nil, fmt.Errorf("azure: %w", err)
		}
	}
	b, err := azureblob.OpenBucket(ctx, c, nil)
	if err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	return blob.NewBucket(&driver{b: b, c: c}), nil
}

func clientOptions(maxRetries int) *container.ClientOptions {
	switch {
	case maxRetries == 0:
		maxRetries = 2
	case maxRetries < 0:
		maxRetries = -1
	}
	o := &container.ClientOptions{}
	o.Transport = cloud.HTTPClient()
	// A try timeout: azcore has none by default, so an endpoint that
	// accepts a request and never answers (seen of Azurite on a loaded
	// CI machine) held the caller until its context ended, and a caller
	// without a deadline for ever. A minute is twice the longest API
	// request (engine.DefaultMaxRequestTime) for objects of kilobytes.
	o.Retry = policy.RetryOptions{
		TryTimeout:    time.Minute,
		MaxRetries:    int32(maxRetries),
		RetryDelay:    200 * time.Millisecond,
		MaxRetryDelay: 2 * time.Second,
	}
	o.Telemetry = policy.TelemetryOptions{ApplicationID: "cairn"}
	o.PerRetryPolicies = []policy.Policy{countAttempts{}}
	return o
}

// attemptsKey is the context key of a write's attempt counter.
type attemptsKey struct{}

// countAttempts counts the attempts of a request whose context carries a
// counter (Put's conditional writes).
type countAttempts struct{}

func (countAttempts) Do(req *policy.Request) (*http.Response, error) {
	if n, ok := req.Raw().Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	return req.Next()
}

func newClient(opts Options) (*container.Client, error) {
	if opts.Container == "" {
		return nil, errors.New("Options.Container is required")
	}
	co := clientOptions(opts.MaxRetries)
	if opts.ConnectionString != "" {
		return container.NewClientFromConnectionString(opts.ConnectionString, opts.Container, co)
	}
	svc := opts.ServiceURL
	if svc == "" {
		if opts.AccountName == "" {
			return nil, errors.New("Options.ServiceURL or Options.AccountName is required")
		}
		svc = "https://" + opts.AccountName + ".blob.core.windows.net"
	}
	su, ok := cloud.ParseHTTPURL(svc)
	if !ok {
		return nil, fmt.Errorf("invalid service URL %q", svc)
	}
	cu := *su
	cu.Path = strings.TrimSuffix(su.Path, "/") + "/" + opts.Container
	cu.RawPath = ""
	containerURL := cu.String()
	switch {
	case opts.AccountName != "" && opts.AccountKey != "":
		cred, err := container.NewSharedKeyCredential(opts.AccountName, opts.AccountKey)
		if err != nil {
			return nil, err
		}
		return container.NewClientWithSharedKeyCredential(containerURL, cred, co)
	case opts.Credential != nil:
		return container.NewClient(containerURL, opts.Credential, co)
	case su.RawQuery != "":
		return container.NewClientWithNoCredential(containerURL, co)
	default:
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, fmt.Errorf("azidentity.NewDefaultAzureCredential: %w", err)
		}
		return container.NewClient(containerURL, cred, co)
	}
}

// OpenURL opens a container from an azblob:// URL; see the package
// documentation. blob.OpenBucket calls it for the "azblob" scheme.
func OpenURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	if err := cloud.CheckBucketURL(u, "azure", Scheme, "container", "azblob://CONTAINER"); err != nil {
		return nil, err
	}
	env := azureblob.NewDefaultServiceURLOptions()
	so, err := withOverrides(*env, u.Query())
	if err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	svc, err := azureblob.NewServiceURL(&so)
	if err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	if env.SASToken != "" {
		// The SAS token rides on the service URL: never send it elsewhere.
		def, err := azureblob.NewServiceURL(env)
		if err != nil {
			return nil, fmt.Errorf("azure: %w", err)
		}
		if !sameOrigin(string(def), string(svc)) {
			return nil, errors.New("azure: a bucket URL cannot change the service endpoint when AZURE_STORAGE_SAS_TOKEN is set")
		}
	}
	opts := Options{Container: u.Host, ServiceURL: string(svc)}
	account, key := os.Getenv("AZURE_STORAGE_ACCOUNT"), os.Getenv("AZURE_STORAGE_KEY")
	cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if cs == "" {
		cs = os.Getenv("AZURE_STORAGEBLOB_CONNECTIONSTRING")
	}
	switch {
	case account != "" && key != "":
		// The key belongs to AZURE_STORAGE_ACCOUNT, whatever the URL says.
		opts.AccountName, opts.AccountKey = account, key
	case env.SASToken != "":
		// svc carries the token; no credential.
	case cs != "":
		opts.ConnectionString = cs
	}
	return New(ctx, opts)
}

// withOverrides applies a URL's query to service URL options, with
// gocloud's parameter names.
func withOverrides(o azureblob.ServiceURLOptions, q url.Values) (azureblob.ServiceURLOptions, error) {
	for k, vs := range q {
		if len(vs) != 1 {
			return o, fmt.Errorf("query parameter %q given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "domain":
			o.StorageDomain = v
		case "protocol":
			o.Protocol = v
		case "cdn", "localemu":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return o, fmt.Errorf("invalid value %q for query parameter %q", v, k)
			}
			if k == "cdn" {
				o.IsCDN = b
			} else {
				o.IsLocalEmulator = b
			}
		case "storage_account":
			o.AccountName = v
		default:
			return o, fmt.Errorf("unknown query parameter %q (supported: domain, protocol, cdn, localemu, storage_account)", k)
		}
	}
	return o, nil
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

type driver struct {
	b *gcblob.Bucket
	c *container.Client
}

func etag(e *azcore.ETag) (blob.Version, error) {
	if e == nil || *e == "" {
		return "", errors.New("azure: the store reported no ETag")
	}
	return quoted(string(*e)), nil
}

// quoted returns an ETag in its header form. Azure's response headers
// quote ETags ("0x8D…"), its listings do not (0x8D…); versions always
// carry the quotes, so that one object has one token whichever call
// reported it, and If-Match gets the form the service compares.
func quoted(e string) blob.Version {
	if strings.HasPrefix(e, `"`) || strings.HasPrefix(e, `W/"`) {
		return blob.Version(e)
	}
	return blob.Version(`"` + e + `"`)
}

func (d *driver) Get(ctx context.Context, key string) (*blob.Object, error) {
	r, err := d.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, mapErr(ctx, err)
	}
	defer r.Close()
	var resp azblobblob.DownloadStreamResponse
	if !r.As(&resp) {
		return nil, errors.New("azure: gocloud reader does not expose the download response")
	}
	v, err := etag(resp.ETag)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, mapErr(ctx, err)
	}
	return &blob.Object{
		Attributes: blob.Attributes{Key: key, Size: int64(len(data)), Version: v, ModTime: r.ModTime()},
		Data:       data,
	}, nil
}

func (d *driver) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	a, err := d.b.Attributes(ctx, key)
	if err != nil {
		return blob.Attributes{}, mapErr(ctx, err)
	}
	if a.ETag == "" {
		return blob.Attributes{}, errors.New("azure: the store reported no ETag")
	}
	return blob.Attributes{Key: key, Size: a.Size, Version: quoted(a.ETag), ModTime: a.ModTime}, nil
}

func (d *driver) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	var cond *azblobblob.ModifiedAccessConditions
	switch {
	case opts.IfNotExist:
		star := azcore.ETagAny
		cond = &azblobblob.ModifiedAccessConditions{IfNoneMatch: &star}
	case opts.IfMatch != "":
		m := azcore.ETag(opts.IfMatch)
		if m == azcore.ETagAny {
			// "*" would match every existing blob; no blob's version is "*".
			return "", fmt.Errorf("%w: version %q is not an ETag", blob.ErrPreconditionFailed, opts.IfMatch)
		}
		cond = &azblobblob.ModifiedAccessConditions{IfMatch: &m}
	}
	ct := cloud.ContentType(opts.ContentType)
	sum := md5.Sum(data)
	uo := &blockblob.UploadOptions{
		HTTPHeaders: &azblobblob.HTTPHeaders{BlobContentType: &ct, BlobContentMD5: sum[:]},
		// The service checks the body against this MD5.
		TransactionalValidation: azblobblob.TransferValidationTypeMD5(sum[:]),
	}
	if cond != nil {
		uo.AccessConditions = &azblobblob.AccessConditions{ModifiedAccessConditions: cond}
	}
	var attempts atomic.Int32
	if cond != nil {
		ctx = context.WithValue(ctx, attemptsKey{}, &attempts)
	}
	resp, err := d.c.NewBlockBlobClient(escapeKey(key)).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), uo)
	if err != nil {
		return "", cloud.RetriedWrite(mapErr(ctx, err), attempts.Load())
	}
	return etag(resp.ETag)
}

func (d *driver) Delete(ctx context.Context, key string) error {
	return mapErr(ctx, d.b.Delete(ctx, key))
}

func (d *driver) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	return gclist.List(ctx, d.b, opts, func(o *gcblob.ListObject) (blob.Version, error) {
		var item container.BlobItem
		if !o.As(&item) || item.Properties == nil {
			return "", errors.New("azure: gocloud list object does not expose container.BlobItem")
		}
		return etag(item.Properties.ETag)
	}, mapErr)
}

func (d *driver) As(target any) bool {
	switch t := target.(type) {
	case **container.Client:
		*t = d.c
	case **gcblob.Bucket:
		*t = d.b
	default:
		return false
	}
	return true
}

func (d *driver) Close() error { return d.b.Close() }

// mapErr turns a gocloud/azblob error into one wrapping blob's sentinel
// errors, keeping the original in the chain.
func mapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		code := bloberror.Code(re.ErrorCode)
		switch {
		case re.StatusCode == http.StatusPreconditionFailed,
			code == bloberror.ConditionNotMet,
			code == bloberror.BlobAlreadyExists:
			return fmt.Errorf("%w: %w", blob.ErrPreconditionFailed, err)
		case code == bloberror.BlobNotFound,
			re.StatusCode == http.StatusNotFound && code != bloberror.ContainerNotFound:
			return fmt.Errorf("%w: %w", blob.ErrNotFound, err)
		case re.StatusCode == http.StatusTooManyRequests,
			re.StatusCode == http.StatusServiceUnavailable:
			return fmt.Errorf("%w: %w", blob.ErrThrottled, err)
		}
	}
	return cloud.WithContext(ctx, err)
}

// escapeKey escapes a blob key exactly as gocloud.dev/blob/azureblob
// (v0.47) does for full keys, so that blobs written directly with the SDK
// are the ones gocloud reads, lists and deletes. It is a copy of
// azureblob.escapeKey(key, false) with gocloud's internal/escape.HexEscape:
// ASCII 0-31, '"', '#', '%', '?', '\\' and 127 become "__0x<hex>__", as do
// a trailing "/", the "/" of "../", and the start of anything that already
// reads as such an escape. TestEscapeKeyMatchesGocloud checks it against
// gocloud.
func escapeKey(key string) string {
	r := []rune(key)
	var out []rune
	for i, c := range r {
		esc := false
		switch {
		case c == '\\', c < 32, c == '"', c == '#', c == '%', c == '?', c == 127:
			esc = true
		case i == len(key)-1 && c == '/': // gocloud compares a rune index with a byte length; kept as is
			esc = true
		case i > 1 && c == '/' && r[i-1] == '.' && r[i-2] == '.':
			esc = true
		case isEscapeSequence(r, i):
			esc = true
		}
		if esc && out == nil {
			out = append(make([]rune, 0, len(r)+14), r[:i]...)
		}
		switch {
		case esc:
			out = append(out, []rune(fmt.Sprintf("__%#x__", c))...)
		case out != nil:
			out = append(out, c)
		}
	}
	if out == nil {
		return key
	}
	return string(out)
}

// isEscapeSequence reports whether r[i:] starts with "__0x<hex>__" that
// parses as an int32, as gocloud's internal/escape does.
func isEscapeSequence(r []rune, i int) bool {
	if i+4 > len(r) || string(r[i:i+4]) != "__0x" {
		return false
	}
	j := i + 4
	start := j
	for j < len(r) && r[j] != '_' {
		j++
	}
	if j+1 >= len(r) || r[j+1] != '_' {
		return false
	}
	_, err := strconv.ParseInt(string(r[start:j]), 16, 32)
	return err == nil
}
