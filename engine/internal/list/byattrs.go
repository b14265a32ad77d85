package list

import (
	"context"
	"errors"
	"strings"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/attrs"
)

// byAttrs is Runs filtered by attributes: the runs the attribute index
// names for the first condition's name (attrs.Candidates), in the
// index's order (by value, then newest first: an equality is newest
// first), each checked against its record — the entry must index what
// the record holds, and the record must satisfy every filter. An entry
// that does not index its record and never will (attrs.Entry.Stale) is
// deleted on the way. The cursor is the last entry examined.
func byAttrs(ctx context.Context, h Host, req Request, token string) ([]Row, string, error) {
	after, ok := strings.CutPrefix(token, AttrMark)
	if token != "" && !ok {
		return nil, "", badCursor()
	}
	if len(req.Attrs) > attrs.MaxFilters {
		return nil, "", cairn.ValidationError{{Field: "attr", Message: "at most 8 conditions"}}
	}
	req.filters = make([]attrs.Filter, len(req.Attrs))
	for i, a := range req.Attrs {
		f, err := attrs.Parse(a)
		if err != nil {
			return nil, "", err
		}
		req.filters[i] = f
	}
	return pages(req, AttrMark, after, func(after string, need int) ([]Row, string, bool, error) {
		es, more, err := attrs.Candidates(ctx, h.Scan, req.filters, after, need)
		if err != nil {
			return nil, "", false, err
		}
		if len(es) > 0 {
			after = es[len(es)-1].Suffix
		}
		rows, err := indexed(ctx, h, req, es)
		return rows, after, more, err
	})
}

// indexed reads the records of the runs es name and returns the rows of
// those whose entry is current and that req keeps, deleting the entries
// that are stale.
func indexed(ctx context.Context, h Host, req Request, es []attrs.Entry) ([]Row, error) {
	rows, found, err := readRows(ctx, len(es), func(ctx context.Context, i int) (Row, error) {
		if !strings.HasPrefix(es[i].Run, req.IDPrefix) {
			return Row{Rev: -1}, nil // not asked for: neither kept nor judged
		}
		row, err := h.Row(ctx, h.Scan.Keys.Run(es[i].Run))
		if errors.Is(err, blob.ErrNotFound) {
			row, err = h.Row(ctx, h.Scan.Keys.OtherRun(es[i].Run))
		}
		return row, err
	})
	if err != nil {
		return nil, err
	}
	var out []Row
	var stale []string
	now := h.Now()
	for i, row := range rows {
		switch {
		case row.Rev < 0:
		case found[i] && es[i].Current(row.Attrs):
			if req.keeps(row) {
				out = append(out, row)
			}
		case es[i].Stale(row.Rev, now, h.Grace):
			stale = append(stale, es[i].Key)
		}
	}
	attrs.Delete(ctx, h.Scan.Bucket, stale) // best effort: the next query tries again
	return out, nil
}
