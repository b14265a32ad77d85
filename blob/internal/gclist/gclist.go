// Package gclist lists a gocloud.dev bucket as a blob.ListPage: the part
// of listing the gcs and azure drivers share. Page tokens are gocloud's,
// base64url-encoded; each driver says how to read an object's version.
package gclist

import (
	"context"
	"encoding/base64"
	"fmt"

	gcblob "gocloud.dev/blob"

	"github.com/cairn-dev/cairn/blob"
)

// List returns one page of the objects under opts.Prefix. version reads
// an object's version token from the driver's own list item (through
// ListObject.As); mapErr maps the store's errors.
func List(ctx context.Context, b *gcblob.Bucket, opts blob.ListOptions,
	version func(*gcblob.ListObject) (blob.Version, error), mapErr func(context.Context, error) error) (blob.ListPage, error) {
	token := gcblob.FirstPageToken
	if opts.PageToken != "" {
		t, err := base64.RawURLEncoding.DecodeString(opts.PageToken)
		if err != nil || len(t) == 0 {
			return blob.ListPage{}, fmt.Errorf("%w: malformed page token", blob.ErrInvalidArgument)
		}
		token = t
	}
	objs, next, err := b.ListPage(ctx, token, opts.PageSize, &gcblob.ListOptions{Prefix: opts.Prefix})
	for err == nil && len(next) > 0 && len(objs) > 0 && objs[len(objs)-1].Key <= opts.StartAfter {
		// Before StartAfter: gocloud cannot start there, so skip pages.
		objs, next, err = b.ListPage(ctx, next, opts.PageSize, &gcblob.ListOptions{Prefix: opts.Prefix})
	}
	if err != nil {
		return blob.ListPage{}, mapErr(ctx, err)
	}
	var page blob.ListPage
	for _, o := range objs {
		if o.IsDir || o.Key <= opts.StartAfter {
			continue
		}
		v, err := version(o)
		if err != nil {
			return blob.ListPage{}, err
		}
		page.Objects = append(page.Objects, blob.Attributes{Key: o.Key, Size: o.Size, Version: v, ModTime: o.ModTime})
	}
	if len(next) > 0 {
		page.NextPageToken = base64.RawURLEncoding.EncodeToString(next)
	}
	return page, nil
}
