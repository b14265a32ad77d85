package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"time"

	"github.com/danielgtaylor/huma/v2"
)

// refuseEmptyAndNull answers 422 for the two ways of sending a value
// that Huma would read as no value at all, though the spec does not
// allow it: a query parameter given empty (`?status=`, read as absent)
// where its schema does not admit "", and a body field set to null (read
// as absent) where its schema is not nullable. Either would otherwise be
// a request the spec calls invalid that the server quietly serves as
// another one, e.g. `?workflow=` listing every run.
func (a *API) refuseEmptyAndNull(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		op := ctx.Operation()
		if loc := emptyQueryParam(api, op, ctx.URL()); loc != "" {
			huma.WriteErr(api, ctx, http.StatusUnprocessableEntity, "validation failed: "+loc+" is empty, which the schema does not allow; leave the parameter out for none",
				&huma.ErrorDetail{Message: "an empty value is not allowed; leave the parameter out", Location: loc, Value: ""})
			return
		}
		if op.RequestBody == nil || op.RequestBody.Content["application/json"] == nil {
			next(ctx)
			return
		}
		// The body is read here, at most one byte over the operation's
		// limit (Huma then answers 413), and replayed to Huma.
		limit := op.MaxBodyBytes
		if limit <= 0 {
			limit = 64 << 10
		}
		_ = ctx.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf, err := io.ReadAll(io.LimitReader(ctx.BodyReader(), limit+1))
		body := &replayContext{humaContext: ctx, r: io.MultiReader(bytes.NewReader(buf), errReader{err})}
		var v any
		if err == nil && int64(len(buf)) <= limit && json.Unmarshal(buf, &v) == nil {
			schema := op.RequestBody.Content["application/json"].Schema
			if path := nullWhereNotNullable(api.OpenAPI().Components.Schemas, schema, v, "body"); path != "" {
				huma.WriteErr(api, ctx, http.StatusUnprocessableEntity, "validation failed: "+path+" is null, which the schema does not allow; leave the field out for none",
					&huma.ErrorDetail{Message: "null is not allowed; leave the field out", Location: path})
				return
			}
		}
		next(body)
	}
}

// emptyQueryParam is the location of the first query parameter of op
// given with an empty value its schema does not admit, or "".
func emptyQueryParam(api huma.API, op *huma.Operation, u url.URL) string {
	q := u.Query()
	for _, p := range op.Parameters {
		if p.In != "query" || p.Schema == nil {
			continue
		}
		vals, ok := q[p.Name]
		if !ok || !slicesContainEmpty(vals) {
			continue
		}
		res := &huma.ValidateResult{}
		huma.Validate(api.OpenAPI().Components.Schemas, p.Schema, huma.NewPathBuffer([]byte("query."+p.Name), 0), huma.ModeWriteToServer, emptyAs(p.Schema), res)
		if len(res.Errors) > 0 {
			return "query." + p.Name
		}
	}
	return ""
}

func slicesContainEmpty(vals []string) bool {
	for _, v := range vals {
		if v == "" {
			return true
		}
	}
	return false
}

// emptyAs is "" as the value Huma would validate for a parameter of
// schema s: a string, or for a number or a boolean a value that is not
// one (an empty value parses as nothing).
func emptyAs(s *huma.Schema) any {
	switch s.Type {
	case huma.TypeString, "":
		return ""
	}
	return struct{}{} // of no JSON type: fails the type check
}

// nullWhereNotNullable is the path of the first null in v where schema
// (resolved through reg) has a type and is not nullable, or "".
func nullWhereNotNullable(reg huma.Registry, schema *huma.Schema, v any, path string) string {
	for schema != nil && schema.Ref != "" {
		schema = reg.SchemaFromRef(schema.Ref)
	}
	if schema == nil {
		return ""
	}
	switch v := v.(type) {
	case nil:
		if schema.Type != "" && !schema.Nullable {
			return path
		}
	case map[string]any:
		for k, fv := range v {
			ps := schema.Properties[k]
			if ps == nil {
				ps, _ = schema.AdditionalProperties.(*huma.Schema)
			}
			if ps == nil {
				continue
			}
			if p := nullWhereNotNullable(reg, ps, fv, path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for i, iv := range v {
			if p := nullWhereNotNullable(reg, schema.Items, iv, path+"["+strconv.Itoa(i)+"]"); p != "" {
				return p
			}
		}
	}
	return ""
}

// replayContext is a huma.Context whose body was read already.
type replayContext struct {
	humaContext
	r io.Reader
}

type humaContext = huma.Context

func (c *replayContext) BodyReader() io.Reader { return c.r }

// errReader fails with err (or ends) once the bytes before it are read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}
