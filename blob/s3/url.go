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
	if err := checkBucketURL(u); err != nil {
		return o, err
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
	for _, p := range params {
		vs := q[p]
		if len(vs) > 1 {
			return o, fmt.Errorf("s3: URL parameter %q given %d times", p, len(vs))
		}
		set, ok := urlParams[p]
		if !ok {
			return o, fmt.Errorf("s3: unknown URL parameter %q (known: %s)", p, strings.Join(knownParams, ", "))
		}
		if err := set(&o, p, vs[0]); err != nil {
			return o, err
		}
	}
	return o, nil
}

// checkBucketURL holds u to the form s3://BUCKET?…: the s3 scheme, a
// bucket, and no user info or path.
func checkBucketURL(u *url.URL) error {
	if u.Scheme != Scheme {
		return fmt.Errorf("s3: URL scheme %q, want %q", u.Scheme, Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("s3: URL carries user info; credentials come from the AWS credential chain, never from the URL")
	}
	if u.Host == "" {
		return fmt.Errorf("s3: URL names no bucket (want s3://BUCKET?…)")
	}
	if u.Path != "" && u.Path != "/" {
		return fmt.Errorf("s3: URL path %q: an s3 URL names a bucket only (s3://BUCKET?…)", u.Path)
	}
	return nil
}

// A urlParam sets its part of Options from its value v in an s3:// URL;
// p is the parameter's name, for errors.
type urlParam func(o *Options, p, v string) error

// urlParams is the table of the s3:// URL parameters, by name; knownParams
// lists the same names, in the order the error for an unknown one gives.
var urlParams = map[string]urlParam{
	"region":   stringParam(func(o *Options, v string) { o.Region = v }),
	"endpoint": stringParam(func(o *Options, v string) { o.Endpoint = v }),
	// With the SDK's BaseEndpoint, a host name left as is means path-style
	// addressing.
	"use_path_style":     boolParam(setPathStyle),
	"s3ForcePathStyle":   boolParam(setPathStyle),
	"hostname_immutable": boolParam(setPathStyle),
	"disable_https": boolParam(func(o *Options, b bool) {
		o.ClientOptions = append(o.ClientOptions, func(so *awss3.Options) { so.EndpointOptions.DisableHTTPS = b })
	}),
	"profile":   stringParam(func(o *Options, v string) { o.Profile = v }),
	"anonymous": boolParam(func(o *Options, b bool) { o.Anonymous = b }),
	"role": func(o *Options, _, v string) error {
		if !strings.HasPrefix(v, "arn:") {
			return fmt.Errorf("s3: URL parameter role=%q: want an IAM role ARN (arn:…)", v)
		}
		o.RoleARN = v
		return nil
	},
	"dualstack": boolParam(func(o *Options, b bool) {
		if b {
			o.ConfigOptions = append(o.ConfigOptions, awsconfig.WithUseDualStackEndpoint(aws.DualStackEndpointStateEnabled))
		}
	}),
	"fips": boolParam(func(o *Options, b bool) {
		if b {
			o.ConfigOptions = append(o.ConfigOptions, awsconfig.WithUseFIPSEndpoint(aws.FIPSEndpointStateEnabled))
		}
	}),
	"accelerate": boolParam(func(o *Options, b bool) {
		o.ClientOptions = append(o.ClientOptions, func(so *awss3.Options) { so.UseAccelerate = b })
	}),
	"rate_limiter_capacity": func(o *Options, _, v string) error {
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil {
			return fmt.Errorf("s3: URL parameter rate_limiter_capacity=%q: want a non-negative integer", v)
		}
		o.ClientOptions = append(o.ClientOptions, func(so *awss3.Options) { so.Retryer = newRetryer(uint(n)) })
		return nil
	},
	"request_checksum_calculation": whenParam(aws.RequestChecksumCalculationWhenSupported, aws.RequestChecksumCalculationWhenRequired,
		func(o *Options, c aws.RequestChecksumCalculation) {
			o.ConfigOptions = append(o.ConfigOptions, awsconfig.WithRequestChecksumCalculation(c))
		}),
	"response_checksum_validation": whenParam(aws.ResponseChecksumValidationWhenSupported, aws.ResponseChecksumValidationWhenRequired,
		func(o *Options, c aws.ResponseChecksumValidation) {
			o.ConfigOptions = append(o.ConfigOptions, awsconfig.WithResponseChecksumValidation(c))
		}),
	"ssetype": func(o *Options, _, v string) error {
		var t s3types.ServerSideEncryption
		for _, s := range t.Values() {
			if strings.EqualFold(string(s), v) {
				t = s
			}
		}
		if t == "" {
			return fmt.Errorf("s3: URL parameter ssetype=%q: want one of %v", v, t.Values())
		}
		o.ServerSideEncryption = t
		return nil
	},
	"suffix_keys": boolParam(func(o *Options, b bool) { o.SuffixKeys = b }),
	"kmskeyid":    stringParam(func(o *Options, v string) { o.SSEKMSKeyID = v }),
	"awssdk": func(_ *Options, _, v string) error {
		if v != "" && v != "v2" && v != "V2" {
			return fmt.Errorf("s3: URL parameter awssdk=%q: this driver uses aws-sdk-go-v2 only", v)
		}
		return nil
	},
}

// setPathStyle turns path-style addressing on if b; any of its three
// parameters set to true turns it on.
func setPathStyle(o *Options, b bool) { o.UsePathStyle = o.UsePathStyle || b }

// stringParam is a parameter whose value is taken as given.
func stringParam(set func(o *Options, v string)) urlParam {
	return func(o *Options, _, v string) error {
		set(o, v)
		return nil
	}
}

// boolParam is a parameter whose value is true or false.
func boolParam(set func(o *Options, b bool)) urlParam {
	return func(o *Options, p, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("s3: URL parameter %s=%q: want true or false", p, v)
		}
		set(o, b)
		return nil
	}
}

// whenParam is a checksum parameter whose value is when_supported or
// when_required, the SDK's supported and required respectively.
func whenParam[T any](supported, required T, set func(o *Options, c T)) urlParam {
	return func(o *Options, p, v string) error {
		switch v {
		case "when_supported":
			set(o, supported)
		case "when_required":
			set(o, required)
		default:
			return fmt.Errorf("s3: URL parameter %s=%q: want when_supported or when_required", p, v)
		}
		return nil
	}
}

var knownParams = []string{
	"region", "endpoint", "use_path_style", "s3ForcePathStyle", "hostname_immutable", "disable_https",
	"profile", "anonymous", "role", "dualstack", "fips", "accelerate", "rate_limiter_capacity",
	"request_checksum_calculation", "response_checksum_validation", "ssetype", "kmskeyid", "awssdk",
	"suffix_keys",
}
