// Package list pages the newest-first run listing (the engine's ListRuns
// and ListRunRows): its filters, its bounded reads of run records, and
// its cursors over both key layouts — store page tokens of the flat
// listing, and run ids of the merged listing of the sharded one
// (engine/internal/scan).
package list

import (
	"context"
	"errors"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/attrs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/scan"
)

// Request filters and pages a run listing.
type Request struct {
	Workflow string
	Status   cairn.RunStatus
	// Correlation keeps only runs started with this correlation.
	Correlation string
	// IDPrefix keeps only runs whose id starts with it (checked on the
	// key, before the record is read).
	IDPrefix string
	// StartedAfter and StartedBefore keep only runs created at or after,
	// and before, these times (zero: no bound).
	StartedAfter, StartedBefore time.Time
	// Attrs keep only runs whose search attributes satisfy each
	// condition (attrs.Parse); the listing then reads the attribute
	// index of the first one's name (byAttrs).
	Attrs  []string
	Limit  int
	Cursor string

	filters []attrs.Filter
}

// Row is a run in a listing with what the dashboard shows besides the
// API's summary.
type Row struct {
	cairn.RunSummary
	Correlation string
	CostUSD     float64
	Priority    int // the run's priority (the dashboard shows it when non-zero)
	// Attrs and Rev are the record's attributes and revision: an index
	// entry is checked against them.
	Attrs attrs.Set
	Rev   int64
}

// keeps tells whether row passes req's filters.
func (req Request) keeps(row Row) bool {
	return (req.Workflow == "" || row.Workflow == req.Workflow) && (req.Status == "" || row.Status == req.Status) &&
		(req.Correlation == "" || row.Correlation == req.Correlation) &&
		(req.StartedAfter.IsZero() || !row.CreatedAt.Before(req.StartedAfter)) &&
		(req.StartedBefore.IsZero() || row.CreatedAt.Before(req.StartedBefore)) && attrs.MatchAll(req.filters, row.Attrs)
}

// CursorMark marks a run listing cursor of the merged listing: the
// id of the last run the previous page examined. Run ids sort the same in
// every shard, so "after this id" is a position in all of them at once,
// and the cursor stays short however many shards there are. A cursor
// without it is a store page token of the flat listing (from an engine
// before the sharded layout).
const CursorMark = "after:"

// ScanPages bounds the bucket pages one filtered listing reads: a
// filter that matches little ends the page early with a cursor rather
// than reading the whole bucket in one request.
const ScanPages = 16

// reads is how many run records a listing reads at once.
const reads = 8

// AttrMark marks a cursor of a listing by attribute: the suffix of the
// last index entry the previous page examined (attrs.Candidates).
const AttrMark = "attr:"

// Host is what a listing needs of the engine.
type Host struct {
	Scan scan.Lister
	// Row reads the run record at key and returns its row; not found
	// when the run is gone.
	Row func(ctx context.Context, key string) (Row, error)
	// Now and Grace decide when an index entry of a run not found is a
	// leftover (attrs.Entry.Stale).
	Now   func() time.Time
	Grace time.Duration
}

// Runs lists runs newest first, with the next cursor ("" on the last
// page). A filtered listing reads bucket pages until it holds Limit
// matching runs, the listing ends, or it has read ScanPages pages (then
// the page is short and has a cursor). Each bucket page asks for no more
// objects than runs still wanted, so a page never holds more matches than
// fit and its token is where the next page starts.
func Runs(ctx context.Context, h Host, req Request) ([]Row, string, error) {
	if req.Limit <= 0 {
		req.Limit = 50
	}
	if req.Workflow != "" {
		if err := keys.WorkflowName.Check("workflow", req.Workflow); err != nil {
			return nil, "", err
		}
	}
	if req.IDPrefix != "" {
		if err := keys.RunID.Check("id_prefix", req.IDPrefix); err != nil {
			return nil, "", err
		}
	}
	token, err := keys.DecodeCursor("cursor", req.Cursor)
	if err != nil {
		return nil, "", err
	}
	if len(req.Attrs) > 0 {
		return byAttrs(ctx, h, req, token)
	}
	if h.Scan.Keys.Sharded && (token == "" || strings.HasPrefix(token, CursorMark)) {
		return merged(ctx, h, req, strings.TrimPrefix(token, CursorMark))
	}
	var out []Row
	for pages := 0; pages < ScanPages && len(out) < req.Limit; pages++ {
		opts := blob.ListOptions{Prefix: h.Scan.Keys.RunsPrefix(), PageSize: req.Limit - len(out), PageToken: token}
		p, err := h.Scan.List(ctx, opts)
		if err != nil {
			if pages == 0 && token != "" && h.Scan.CursorRefused(ctx, opts, err) {
				return nil, "", badCursor()
			}
			return nil, "", err
		}
		keys := make([]string, len(p.Objects))
		for i, o := range p.Objects {
			keys[i] = o.Key
		}
		rows, err := listed(ctx, h, req, keys)
		if err != nil {
			return nil, "", err
		}
		out = append(out, rows...)
		token = p.NextPageToken
		if token == "" {
			break
		}
	}
	return out, keys.EncodeCursor(token), nil
}

func badCursor() error {
	return cairn.ValidationError{{Field: "cursor", Message: "not a cursor this listing returned"}}
}

// merged is Runs over the sharded layout: newest first across the flat
// listing and the 16 shards, after the run id `after`. The cursor is the
// id of the last run examined, so a page of a filtered listing that
// examined ScanPages batches without filling up is short and has a
// cursor, as with the flat layout.
func merged(ctx context.Context, h Host, req Request, after string) ([]Row, string, error) {
	if after != "" && !keys.RunID.Valid(after) {
		return nil, "", badCursor()
	}
	return pages(req, CursorMark, after, func(after string, need int) ([]Row, string, bool, error) {
		keys, more, err := h.Scan.RunKeys(ctx, after, need)
		if err != nil {
			return nil, "", false, err
		}
		if len(keys) > 0 {
			key := keys[len(keys)-1]
			after = key[strings.LastIndexByte(key, '/')+1:]
		}
		rows, err := listed(ctx, h, req, keys)
		return rows, after, more, err
	})
}

// pages fills a page of at most req.Limit rows from batches, each of
// the rows after a position (and the position after it, and whether more
// may follow), reading at most ScanPages batches; the cursor is mark and
// the last position, when more may follow.
func pages(req Request, mark, after string, batch func(after string, need int) ([]Row, string, bool, error)) ([]Row, string, error) {
	var out []Row
	more := false
	for pages := 0; pages < ScanPages && len(out) < req.Limit; pages++ {
		rows, next, m, err := batch(after, req.Limit-len(out))
		if err != nil {
			return nil, "", err
		}
		out, after, more = append(out, rows...), next, m
		if !more {
			break
		}
	}
	if !more {
		return out, "", nil
	}
	return out, keys.EncodeCursor(mark + after), nil
}

// listed reads the run records a listing page names, reads at a time and
// each through scan.RetryRead, and returns the rows of those req keeps,
// in the page's order; a record deleted since the listing is left out.
func listed(ctx context.Context, h Host, req Request, keys []string) ([]Row, error) {
	rows, found, err := readRows(ctx, len(keys), func(ctx context.Context, i int) (Row, error) {
		if !strings.HasPrefix(keys[i][strings.LastIndexByte(keys[i], '/')+1:], req.IDPrefix) {
			return Row{}, blob.ErrNotFound
		}
		return h.Row(ctx, keys[i])
	})
	if err != nil {
		return nil, err
	}
	var out []Row
	for i, row := range rows {
		if found[i] && req.keeps(row) {
			out = append(out, row)
		}
	}
	return out, nil
}

// readRows reads n rows, reads at a time and each through
// scan.RetryRead; found says which were (not found: left out).
func readRows(ctx context.Context, n int, read func(ctx context.Context, i int) (Row, error)) ([]Row, []bool, error) {
	rows := make([]Row, n)
	found := make([]bool, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(reads)
	for i := range n {
		g.Go(func() error {
			err := scan.RetryRead(gctx, func() (err error) {
				rows[i], err = read(gctx, i)
				return err
			})
			if errors.Is(err, blob.ErrNotFound) {
				return nil
			}
			found[i] = err == nil
			return err
		})
	}
	return rows, found, g.Wait()
}
