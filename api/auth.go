package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn/auth"
)

// principal is who made a request.
type principal struct{ id string }

type principalKey struct{}

// authenticate finds the key a bearer token belongs to. Every configured
// hash is compared, in constant time, so timing tells nothing about which
// or how many keys exist.
func (a *API) authenticate(header string) (*auth.Key, bool) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || token == "" {
		return nil, false
	}
	sum := sha256.Sum256([]byte(token))
	var found *auth.Key
	for i := range a.keys {
		if subtle.ConstantTimeCompare(sum[:], a.keys[i].Hash[:]) == 1 {
			found = &a.keys[i]
		}
	}
	return found, found != nil
}

// authMiddleware enforces the scope an operation declares in its
// metadata: 401 without a valid key, 403 with a key that lacks the scope.
func (a *API) authMiddleware(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		need, _ := ctx.Operation().Metadata["scope"].(string)
		if need == "" {
			next(ctx)
			return
		}
		if a.devMode {
			noteKey(ctx.Context(), "dev")
			next(huma.WithValue(ctx, principalKey{}, principal{id: "dev"}))
			return
		}
		k, ok := a.authenticate(ctx.Header("Authorization"))
		if !ok {
			ctx.SetHeader("WWW-Authenticate", `Bearer realm="cairn"`)
			huma.WriteErr(api, ctx, http.StatusUnauthorized, "a valid API key is required: Authorization: Bearer <key>")
			return
		}
		if !auth.Grants(k.Scopes, need) {
			huma.WriteErr(api, ctx, http.StatusForbidden, fmt.Sprintf("key %q lacks the %q scope this operation needs", k.ID, need))
			return
		}
		noteKey(ctx.Context(), k.ID)
		next(huma.WithValue(ctx, principalKey{}, principal{id: k.ID}))
	}
}
