package blob_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-dev/cairn/blob"
)

// calls is a Driver that records that it was called and does nothing.
type calls struct{ n int }

func (d *calls) Get(context.Context, string) (*blob.Object, error) {
	d.n++
	return &blob.Object{}, nil
}

func (d *calls) Stat(context.Context, string) (blob.Attributes, error) {
	d.n++
	return blob.Attributes{}, nil
}

func (d *calls) Put(context.Context, string, []byte, blob.WriteOptions) (blob.Version, error) {
	d.n++
	return "1", nil
}

func (d *calls) Delete(context.Context, string) error {
	d.n++
	return nil
}

func (d *calls) List(context.Context, blob.ListOptions) (blob.ListPage, error) {
	d.n++
	return blob.ListPage{}, nil
}

func (d *calls) As(any) bool  { return false }
func (d *calls) Close() error { return nil }

// A call whose context is already done fails in the Bucket, as a
// *blob.Error naming the operation, and never reaches the driver.
func TestDoneContextNeverReachesTheDriver(t *testing.T) {
	d := &calls{}
	b := blob.NewBucket(d)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for op, call := range map[string]func() error{
		"get":    func() error { _, err := b.Get(ctx, "k"); return err },
		"stat":   func() error { _, err := b.Stat(ctx, "k"); return err },
		"create": func() error { _, err := b.Create(ctx, "k", nil); return err },
		"swap":   func() error { _, err := b.Swap(ctx, "k", nil, "1"); return err },
		"put":    func() error { _, err := b.Put(ctx, "k", nil, blob.WriteOptions{}); return err },
		"delete": func() error { return b.Delete(ctx, "k") },
		"list":   func() error { _, err := b.List(ctx, blob.ListOptions{Prefix: "k"}); return err },
	} {
		err := call()
		var be *blob.Error
		if !errors.Is(err, context.Canceled) || !errors.As(err, &be) || be.Op != op || be.Key != "k" {
			t.Errorf("%s with a cancelled context: %v, want a *blob.Error{Op: %q, Key: \"k\"} wrapping context.Canceled", op, err, op)
		}
	}
	if d.n != 0 {
		t.Fatalf("the driver was called %d times with a done context", d.n)
	}
	// Argument errors still come first.
	if _, err := b.Get(ctx, ""); !errors.Is(err, blob.ErrInvalidArgument) {
		t.Fatalf("Get of an empty key with a cancelled context: %v, want ErrInvalidArgument", err)
	}
	if _, err := b.Get(context.Background(), "k"); err != nil || d.n != 1 {
		t.Fatalf("a live call: %v, %d driver calls", err, d.n)
	}
}
