// Package sqs is an AWS SQS notification bus built on gocloud.dev's
// awssnssqs driver, registered as "awssqs" with notify.Open. The URL is
// gocloud's:
//
//	awssqs://sqs.us-east-2.amazonaws.com/123456789012/cairn-hints?region=us-east-2
//
// The host and path, prefixed with https://, are the queue URL; the query
// takes gocloud's AWS parameters (region, endpoint, profile, anonymous,
// role, fips, dualstack, ...; see gocloud.dev/aws.V2ConfigFromURLParams)
// and its subscription parameters (raw, nacklazy, snstopicarn, waittime),
// plus:
//
//   - waittime: the ReceiveMessage long poll [20s here, where gocloud's
//     default is short polling]; waittime=0s short-polls every 250ms
//   - protocol=query: speak SQS's older awsQuery protocol instead of
//     AWS JSON (SQS accepts both; emulators such as goaws only the first)
//   - max_message_bytes: split batches above this size
//     [notify.DefaultMaxMessageBytes, below SQS's 256 KiB]
//   - publish_timeout: bounds a Publish whose context has no deadline [10s]
//
// # Queue semantics
//
// An SQS queue hands each message to ONE receiver. Every engine instance
// subscribes to the same queue, so the hints of a message are consumed by
// one instance: its hub serves them to a waiting claim that matches. When
// that instance has no matching claim, nothing else is woken; the work is
// found by the other instances' fallback scans and the reaper's
// re-announcement, within the engine's fallback bound (see package
// notify). A message is acknowledged (deleted) once its hints have been
// handed to the subscriber's fn; one that is received but not acknowledged
// (the instance died, or stopped with it prefetched) comes back after the
// queue's visibility timeout, a duplicate the bucket makes harmless. Keep
// the visibility timeout short (30s is SQS's default) and set a
// retention period of minutes, not days: an old hint is worthless.
//
// Credentials come from the usual AWS chain (environment, shared config,
// the Lambda role).
package sqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/pubsub"
	"gocloud.dev/pubsub/awssnssqs"
	"gocloud.dev/pubsub/batcher"

	"github.com/cairn-dev/cairn/api/engine"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/internal/gcbus"
)

// Scheme is gocloud's SQS scheme, which this package registers.
const Scheme = awssnssqs.SQSScheme

func init() {
	notify.Register(Scheme, func(ctx context.Context, u *url.URL) (engine.Bus, error) { return OpenURL(ctx, u) })
}

// Options tune a Bus. Zero fields take the defaults in brackets.
type Options struct {
	// MaxMessageBytes caps one message [notify.DefaultMaxMessageBytes].
	MaxMessageBytes int
	// WaitTime is the ReceiveMessage long poll; negative short-polls
	// [20s].
	WaitTime time.Duration
	// PublishTimeout bounds a Publish whose context has no deadline
	// [10s].
	PublishTimeout time.Duration
	// Subscription passes gocloud's other subscription options (Raw,
	// NackLazy, SNSTopicARN); its WaitTime is ignored.
	Subscription awssnssqs.SubscriptionOptions
	// Logger receives receive errors and undecodable messages
	// [slog.Default()].
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = notify.DefaultMaxMessageBytes
	}
	if o.WaitTime == 0 {
		o.WaitTime = 20 * time.Second
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Bus is an SQS notification bus.
type Bus struct {
	client *sqs.Client
	qURL   string
	gc     *gcbus.Bus
}

// New returns a bus on the queue at queueURL (https://...), through
// client.
func New(client *sqs.Client, queueURL string, opts Options) *Bus {
	opts.setDefaults()
	topic := awssnssqs.OpenSQSTopic(context.Background(), client, queueURL, &awssnssqs.TopicOptions{
		// Hints are JSON, valid UTF-8: never base64 (no extra attribute).
		BodyBase64Encoding: awssnssqs.Never,
		// SendMessageBatch also caps the sum of its messages.
		BatcherOptions: batcher.Options{MaxBatchByteSize: opts.MaxMessageBytes},
	})
	so := opts.Subscription
	so.WaitTime = max(opts.WaitTime, 0)
	return &Bus{client: client, qURL: queueURL, gc: &gcbus.Bus{
		Name:  "sqs",
		Topic: topic,
		OpenSubscription: func() (*pubsub.Subscription, error) {
			return awssnssqs.OpenSubscription(context.Background(), client, queueURL, &so), nil
		},
		MaxMessageBytes: opts.MaxMessageBytes,
		PublishTimeout:  opts.PublishTimeout,
		Logger:          opts.Logger.With("queue", queueURL),
	}}
}

// OpenURL opens a bus from an awssqs URL as described in the package
// documentation.
func OpenURL(ctx context.Context, u *url.URL) (*Bus, error) {
	var opts Options
	q := u.Query()
	query := false
	for k, vs := range q {
		v := vs[0]
		var err error
		switch k {
		case "protocol":
			switch v {
			case "query":
				query = true
			case "json", "":
			default:
				err = fmt.Errorf("want query or json, not %q", v)
			}
		case "max_message_bytes":
			opts.MaxMessageBytes, err = strconv.Atoi(v)
		case "publish_timeout":
			opts.PublishTimeout, err = time.ParseDuration(v)
		case "waittime":
			opts.WaitTime, err = time.ParseDuration(v)
			if err == nil && opts.WaitTime == 0 {
				opts.WaitTime = -1
			}
		case "raw":
			opts.Subscription.Raw, err = strconv.ParseBool(v)
		case "nacklazy":
			opts.Subscription.NackLazy, err = strconv.ParseBool(v)
		case "snstopicarn":
			opts.Subscription.SNSTopicARN = v
		default:
			continue // an AWS parameter, checked below
		}
		if err != nil {
			return nil, fmt.Errorf("sqs: query parameter %s: %w", k, err)
		}
		q.Del(k)
	}
	if u.Host == "" {
		return nil, errors.New("sqs: URL has no queue host")
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sqs: %w", err)
	}
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if query {
			o.Protocol = awsquery.New(schemas.AmazonSQS)
		}
	})
	return New(client, "https://"+path.Join(u.Host, u.Path), opts), nil
}

// Client returns the bus's SQS client.
func (b *Bus) Client() *sqs.Client { return b.client }

// QueueURL returns the queue's URL.
func (b *Bus) QueueURL() string { return b.qURL }

// Publish sends hints as one JSON batch message (several above the size
// limit, sent together). It returns when SQS has accepted them, or with
// the context's error.
func (b *Bus) Publish(ctx context.Context, hints []engine.Hint) error {
	return b.gc.Publish(ctx, hints)
}

// Subscribe receives messages from the queue and hands their hints to fn,
// acknowledging each message after, until stop. Each message goes to one
// subscriber of the queue (one instance), not to all. A receive error
// (the queue unreachable, credentials expired) is logged and receiving
// resumes after a backoff of up to 30s.
func (b *Bus) Subscribe(fn func(engine.Hint)) (stop func(), err error) {
	return b.gc.Subscribe(fn)
}

// Close flushes and stops the publishing side. Stop subscriptions first.
func (b *Bus) Close() error { return b.gc.Close() }
