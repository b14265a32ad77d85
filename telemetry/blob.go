package telemetry

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-dev/cairn/blob"
)

// WrapBucket returns b instrumented with t: every request is counted by
// op, billing class and result (the live cost meter), and, inside a
// traced request, recorded as a child span with its op class and the
// key's prefix (never the full key: it names runs and steps, which the
// span's parent carries already). With a nil t it returns b itself.
func WrapBucket(b *blob.Bucket, t *T) *blob.Bucket {
	if t == nil {
		return b
	}
	return blob.NewBucket(&blobDriver{next: b.Driver(), t: t})
}

type blobDriver struct {
	next blob.Driver
	t    *T
}

// keyPrefix is a key's first two segments ("runs/", "leases/<run>/" is
// cut to "leases/"): what kind of object, not which.
func keyPrefix(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i+1]
	}
	return key
}

func (d *blobDriver) begin(ctx context.Context, op, class, key string) (context.Context, func(error)) {
	start := time.Now()
	var sp trace.Span
	if d.t.tracer != nil && trace.SpanFromContext(ctx).IsRecording() {
		ctx, sp = d.t.tracer.Start(ctx, "blob "+op, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("cairn.blob.op", op), attribute.String("cairn.blob.class", class),
				attribute.String("cairn.blob.prefix", keyPrefix(key))))
	}
	return ctx, func(err error) {
		result := "ok"
		switch {
		case err == nil:
		case errors.Is(err, blob.ErrNotFound):
			result = "not_found"
		case errors.Is(err, blob.ErrPreconditionFailed):
			result = "precondition_failed"
		default:
			result = "error"
		}
		if sp != nil {
			sp.SetAttributes(attribute.String("cairn.blob.result", result))
			if result == "error" {
				sp.SetStatus(codes.Error, err.Error())
			}
			sp.End()
		}
		if m := d.t.m; m != nil {
			m.blobRequests.Add(bg, 1, metric.WithAttributes(attribute.String("op", op), attribute.String("class", class), attribute.String("result", result)))
			m.blobDuration.Record(bg, time.Since(start).Seconds(), metric.WithAttributes(attribute.String("op", op)))
		}
	}
}

func (d *blobDriver) Get(ctx context.Context, key string) (*blob.Object, error) {
	ctx, end := d.begin(ctx, "get", "get", key)
	o, err := d.next.Get(ctx, key)
	end(err)
	return o, err
}

func (d *blobDriver) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	ctx, end := d.begin(ctx, "head", "get", key)
	a, err := d.next.Stat(ctx, key)
	end(err)
	return a, err
}

func (d *blobDriver) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	op := "put"
	switch {
	case opts.IfNotExist:
		op = "create"
	case opts.IfMatch != "":
		op = "swap"
	}
	ctx, end := d.begin(ctx, op, "put", key)
	v, err := d.next.Put(ctx, key, data, opts)
	end(err)
	return v, err
}

func (d *blobDriver) Delete(ctx context.Context, key string) error {
	ctx, end := d.begin(ctx, "delete", "free", key)
	err := d.next.Delete(ctx, key)
	end(err)
	return err
}

func (d *blobDriver) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	ctx, end := d.begin(ctx, "list", "put", opts.Prefix)
	p, err := d.next.List(ctx, opts)
	end(err)
	return p, err
}

func (d *blobDriver) As(target any) bool { return d.next.As(target) }

func (d *blobDriver) Close() error { return d.next.Close() }
