package s3

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/blob"
)

// Scheme is the URL scheme the driver registers: s3://bucket?….
const Scheme = "s3"

func init() {
	blob.Register(Scheme, func(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
		opts, err := OptionsFromURL(u)
		if err != nil {
			return nil, err
		}
		return New(ctx, opts)
	})
}

// OptionsFromURL parses an s3:// URL into Options (see the package
// documentation for the parameters). Unknown parameters are an error.
func OptionsFromURL(u *url.URL) (Options, error) {
	var o Options
	if u.Scheme != Scheme {
		return o, fmt.Errorf("s3: URL scheme %q, want %q", u.Scheme, Scheme)
	}
	if u.User != nil {
		return o, fmt.Errorf("s3: URL carries user info; credentials come from the AWS credential chain, never from the URL")
	}
	if u.Host == "" {
		return o, fmt.Errorf("s3: URL names no bucket (want s3://BUCKET?…)")
	}
	if u.Path != "" && u.Path != "/" {
		return o, fmt.Errorf("s3: URL path %q: an s3 URL names a bucket only (s3://BUCKET?…)", u.Path)
	}
	o.Bucket = u.Host

	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return o, fmt.Errorf("s3: URL query: %w", err)
	}
	params := make([]string, 0, len(q))
	for p := range q {
		params = append(params, p)
	}
	sort.Strings(params) // deterministic errors
	boolParam := func(p, v string) (bool, error) {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("s3: URL parameter %s=%q: want true or false", p, v)
		}
		return b, nil
	}
	for _, p := range params {
		vs := q[p]
		if len(vs) > 1 {
			return o, fmt.Errorf("s3: URL parameter %q given %d times", p, len(vs))
		}
		v := vs[0]
		switch p {
		case "region":
			o.Region = v
		case "endpoint":
			o.Endpoint = v
		case "use_path_style", "s3ForcePathStyle", "hostname_immutable":
			// With the SDK's BaseEndpoint, a host name left as is means
			// path-style addressing.
			b, err := boolParam(p, v)
			if err != nil {
				return o, err
			}
			o.UsePathStyle = o.UsePathStyle || b
		case "disable_https":
			b, err := boolParam(p, v)
			if err != nil {
				return o, err
			}
			o.ClientOptions = append(o.ClientOptions, func(so *awss3.Options) { so.EndpointOptions.DisableHTTPS = b })
		case "profile":
			o.Profile = v
		case "anonymous":
			b, err := boolParam(p, v)
			if err != nil {
				return o, err
			}
			o.Anonymous = b
		case "role":
			if !strings.HasPrefix(v, "arn:") {
				return o, fmt.Errorf("s3: URL parameter role=%q: want an IAM role ARN (arn:…)", v)
			}
			o.RoleARN = v
		case "dualstack":
			b, err := boolParam(p, v)
			if err != nil {
				return o, err
			}
			if b {
				o.ConfigOptions = append(o.ConfigOptions, awsconfig.WithUseDualStackEndpoint(aws.DualStackEndpointStateEnabled))
			}
		case "fips":
			b, err := boolParam(p, v)
			if err != nil {
				return o, err
			}
			if b {
				o.ConfigOptions = append(o.ConfigOptions, awsconfig.WithUseFIPSEndpoint(aws.FIPSEndpointStateEnabled))
			}
		case "accelerate":
			b, err := boolParam(p, v)
			if err != nil {
				return o, err
			}
			o.ClientOptions = append(o.ClientOptions, func(so *awss3.Options) { so.UseAccelerate = b })
		case "rate_limiter_capacity":
			n, err := strconv.ParseUint(v, 10, 31)
			if err != nil {
				return o, fmt.Errorf("s3: URL parameter rate_limiter_capacity=%q: want a non-negative integer", v)
			}
			o.ClientOptions = append(o.ClientOptions, func(so *awss3.Options) { so.Retryer = newRetryer(uint(n)) })
		case "request_checksum_calculation":
			var c aws.RequestChecksumCalculation
			switch v {
			case "when_supported":
				c = aws.RequestChecksumCalculationWhenSupported
			case "when_required":
				c = aws.RequestChecksumCalculationWhenRequired
			default:
				return o, fmt.Errorf("s3: URL parameter %s=%q: want when_supported or when_required", p, v)
			}
			o.ConfigOptions = append(o.ConfigOptions, awsconfig.WithRequestChecksumCalculation(c))
		case "response_checksum_validation":
			var c aws.ResponseChecksumValidation
			switch v {
			case "when_supported":
				c = aws.ResponseChecksumValidationWhenSupported
			case "when_required":
				c = aws.ResponseChecksumValidationWhenRequired
			default:
				return o, fmt.Errorf("s3: URL parameter %s=%q: want when_supported or when_required", p, v)
			}
			o.ConfigOptions = append(o.ConfigOptions, awsconfig.WithResponseChecksumValidation(c))
		case "ssetype":
			var t s3types.ServerSideEncryption
			for _, s := range t.Values() {
				if strings.EqualFold(string(s), v) {
					t = s
				}
			}
			if t == "" {
				return o, fmt.Errorf("s3: URL parameter ssetype=%q: want one of %v", v, t.Values())
			}
			o.ServerSideEncryption = t
		case "suffix_keys":
			b, err := boolParam(p, v)
			if err != nil {
				return o, err
			}
			o.SuffixKeys = b
		case "kmskeyid":
			o.SSEKMSKeyID = v
		case "awssdk":
			if v != "" && v != "v2" && v != "V2" {
				return o, fmt.Errorf("s3: URL parameter awssdk=%q: this driver uses aws-sdk-go-v2 only", v)
			}
		default:
			return o, fmt.Errorf("s3: unknown URL parameter %q (known: %s)", p, strings.Join(knownParams, ", "))
		}
	}
	return o, nil
}

var knownParams = []string{
	"region", "endpoint", "use_path_style", "s3ForcePathStyle", "hostname_immutable", "disable_https",
	"profile", "anonymous", "role", "dualstack", "fips", "accelerate", "rate_limiter_capacity",
	"request_checksum_calculation", "response_checksum_validation", "ssetype", "kmskeyid", "awssdk",
	"suffix_keys",
}
