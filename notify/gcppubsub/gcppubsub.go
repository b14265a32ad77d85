// Package gcppubsub is a Google Cloud Pub/Sub notification bus built on
// gocloud.dev's gcppubsub driver, registered as "gcppubsub" with
// notify.Open:
//
//	gcppubsub://projects/PROJECT/topics/TOPIC?subscription=SUB
//
// Hints are published on the topic and received from the subscription
// (a short name in the same project, or projects/P/subscriptions/S). Every
// engine instance uses the same subscription: queue semantics, each
// message reaches ONE instance (see below). A bus without a subscription
// only publishes (Subscribe fails).
//
// Query parameters:
//
//   - subscription: the subscription to receive from
//   - max_message_bytes: split batches above this size
//     [notify.DefaultMaxMessageBytes; Pub/Sub allows 10 MB]
//   - publish_timeout: bounds a Publish whose context has no deadline [10s]
//
// Credentials are Application Default Credentials. When the
// PUBSUB_EMULATOR_HOST environment variable is set (as with gocloud and
// Google's clients), the bus talks to that emulator without credentials
// or TLS.
//
// # Queue semantics
//
// A Pub/Sub subscription hands each message to one of its pullers. The
// hints of a message are consumed by that one instance: its hub serves
// them to a waiting claim that matches; when it has none, the other
// instances' fallback scans and the reaper's re-announcement find the
// work, within the engine's fallback bound (see package notify). A
// message is acknowledged once its hints have been handed to the
// subscriber's fn; one that is not (the instance died) is redelivered
// after the subscription's ack deadline, a duplicate the bucket makes
// harmless. Create the subscription with a short message retention (10
// minutes, the minimum): an old hint is worthless.
package gcppubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"gocloud.dev/gcp"
	"gocloud.dev/pubsub"
	gcgcp "gocloud.dev/pubsub/gcppubsub"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/internal/busurl"
	"github.com/cairn-dev/cairn/notify/internal/gcbus"
)

// Scheme is gocloud's Pub/Sub scheme, which this package registers.
const Scheme = gcgcp.Scheme

func init() {
	notify.Register(Scheme, func(ctx context.Context, u *url.URL) (notify.Bus, error) { return OpenURL(ctx, u) })
}

var (
	topicPathRE = regexp.MustCompile(`^projects/[^/]+/topics/[^/]+$`)
	subPathRE   = regexp.MustCompile(`^projects/[^/]+/subscriptions/[^/]+$`)
)

// Options tune a Bus. Zero fields take the defaults in brackets.
type Options struct {
	// Subscription is the path (projects/P/subscriptions/S) to receive
	// from; empty makes a publish-only bus.
	Subscription string
	// MaxMessageBytes caps one message [notify.DefaultMaxMessageBytes].
	MaxMessageBytes int
	// PublishTimeout bounds a Publish whose context has no deadline
	// [10s].
	PublishTimeout time.Duration
	// Logger receives receive errors and undecodable messages
	// [slog.Default()].
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = notify.DefaultMaxMessageBytes
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Bus is a Pub/Sub notification bus.
type Bus struct {
	topicPath, subPath string
	gc                 *gcbus.Bus
}

// New returns a bus publishing on topicPath (projects/P/topics/T) over
// conn, which the caller keeps owning (Close does not close it).
func New(ctx context.Context, conn *grpc.ClientConn, topicPath string, opts Options) (*Bus, error) {
	opts.setDefaults()
	if !topicPathRE.MatchString(topicPath) {
		return nil, fmt.Errorf("gcppubsub: topic %q is not projects/P/topics/T", topicPath)
	}
	if opts.Subscription != "" && !subPathRE.MatchString(opts.Subscription) {
		return nil, fmt.Errorf("gcppubsub: subscription %q is not projects/P/subscriptions/S", opts.Subscription)
	}
	pc, err := gcgcp.PublisherClient(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("gcppubsub: %w", err)
	}
	// The clients only wrap conn (closing them would close it): nothing to
	// close but the conn, which the caller owns.
	sc, err := gcgcp.SubscriberClient(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("gcppubsub: %w", err)
	}
	topic, err := gcgcp.OpenTopicByPath(pc, topicPath, nil)
	if err != nil {
		return nil, fmt.Errorf("gcppubsub: %w", err)
	}
	b := &Bus{topicPath: topicPath, subPath: opts.Subscription}
	b.gc = &gcbus.Bus{
		Name:  "gcppubsub",
		Topic: topic,
		OpenSubscription: func() (*pubsub.Subscription, error) {
			if b.subPath == "" {
				return nil, errors.New("no subscription configured (a publish-only bus)")
			}
			return gcgcp.OpenSubscriptionByPath(sc, b.subPath, nil)
		},
		MaxMessageBytes: opts.MaxMessageBytes,
		PublishTimeout:  opts.PublishTimeout,
		Logger:          opts.Logger.With("topic", topicPath, "subscription", opts.Subscription),
	}
	return b, nil
}

// OpenURL opens a bus from a gcppubsub URL as described in the package
// documentation. The bus owns its connection.
func OpenURL(ctx context.Context, u *url.URL) (*Bus, error) {
	topicPath := strings.TrimPrefix(path.Join(u.Host, u.Path), "/")
	if !topicPathRE.MatchString(topicPath) {
		return nil, fmt.Errorf("gcppubsub: URL path %q is not projects/P/topics/T", topicPath)
	}
	project := strings.Split(topicPath, "/")[1]
	var opts Options
	err := busurl.Params{
		"subscription": func(v string) error {
			opts.Subscription = v
			if !strings.Contains(v, "/") {
				opts.Subscription = "projects/" + project + "/subscriptions/" + v
			}
			return nil
		},
		"max_message_bytes": busurl.Int(&opts.MaxMessageBytes),
		"publish_timeout":   busurl.Duration(&opts.PublishTimeout),
	}.Set("gcppubsub", u.Query())
	if err != nil {
		return nil, err
	}
	conn, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	b, err := New(ctx, conn, topicPath, opts)
	if err != nil {
		conn.Close()
		return nil, err
	}
	b.gc.OnClose = conn.Close
	return b, nil
}

// dial connects to PUBSUB_EMULATOR_HOST when set, else to Google with
// Application Default Credentials.
func dial(ctx context.Context) (*grpc.ClientConn, error) {
	if host := os.Getenv("PUBSUB_EMULATOR_HOST"); host != "" {
		conn, err := grpc.NewClient(host, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("gcppubsub: emulator %s: %w", host, err)
		}
		return conn, nil
	}
	creds, err := gcp.DefaultCredentials(ctx)
	if err != nil {
		return nil, fmt.Errorf("gcppubsub: credentials: %w", err)
	}
	conn, _, err := gcgcp.Dial(ctx, creds.TokenSource)
	if err != nil {
		return nil, fmt.Errorf("gcppubsub: dial: %w", err)
	}
	return conn, nil
}

// TopicPath returns the topic's path.
func (b *Bus) TopicPath() string { return b.topicPath }

// SubscriptionPath returns the subscription's path ("" when publish-only).
func (b *Bus) SubscriptionPath() string { return b.subPath }

// Publish sends hints as one JSON batch message (several above the size
// limit, sent together). It returns when Pub/Sub has accepted them, or
// with the context's error.
func (b *Bus) Publish(ctx context.Context, hints []notify.Hint) error {
	return b.gc.Publish(ctx, hints)
}

// Subscribe pulls messages from the subscription and hands their hints to
// fn, acknowledging each message after, until stop. Each message goes to
// one puller of the subscription (one instance), not to all. A receive
// error is logged and pulling resumes after a backoff of up to 30s.
func (b *Bus) Subscribe(fn func(notify.Hint)) (stop func(), err error) {
	return b.gc.Subscribe(fn)
}

// Close flushes and stops the publishing side, and closes the connection
// if OpenURL made it. Stop subscriptions first.
func (b *Bus) Close() error { return b.gc.Close() }
