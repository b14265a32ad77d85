package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// Scopes a key may hold.
const (
	ScopeWorker  = "worker"  // the five worker calls
	ScopeExecute = "execute" // start, cancel, signal runs
	ScopeRead    = "read"    // read runs, journals, workflows, workers
	ScopeWrite   = "write"   // worker and execute, for keys that do both
	ScopeAdmin   = "admin"   // everything, the reaper endpoint included
)

var allScopes = []string{ScopeWorker, ScopeExecute, ScopeRead, ScopeWrite, ScopeAdmin}

// Key is an API key as configured: its id, the SHA-256 of its secret (hex)
// and its scopes. The secret itself is never configured or stored.
type Key struct {
	ID     string
	Hash   [32]byte
	Scopes []string
}

// ParseKeys reads keys from "id:scope+scope:sha256hex" entries separated
// by commas or whitespace, as CAIRN_KEYS holds them.
func ParseKeys(s string) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		parts := strings.Split(f, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("key %q: want id:scopes:sha256hex", redactEntry(f))
		}
		k := Key{ID: parts[0]}
		if k.ID == "" || seen[k.ID] {
			return nil, fmt.Errorf("key %q: empty or duplicate id", k.ID)
		}
		seen[k.ID] = true
		for _, sc := range strings.Split(parts[1], "+") {
			if !slices.Contains(allScopes, sc) {
				return nil, fmt.Errorf("key %q: unknown scope %q (want %s)", k.ID, sc, strings.Join(allScopes, ", "))
			}
			k.Scopes = append(k.Scopes, sc)
		}
		h, err := hex.DecodeString(parts[2])
		if err != nil || len(h) != 32 {
			return nil, fmt.Errorf("key %q: the hash must be 64 hex digits (SHA-256 of the secret)", k.ID)
		}
		copy(k.Hash[:], h)
		keys = append(keys, k)
	}
	return keys, nil
}

func redactEntry(f string) string {
	if i := strings.Index(f, ":"); i >= 0 {
		return f[:i] + ":…"
	}
	return "…"
}

// HashSecret returns the hex SHA-256 of a key secret, the form CAIRN_KEYS
// holds.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// grants reports whether a key's scopes allow an operation's scope:
// write grants worker and execute, admin grants everything.
func grants(have []string, need string) bool {
	for _, s := range have {
		if s == need || s == ScopeAdmin || s == ScopeWrite && (need == ScopeWorker || need == ScopeExecute) {
			return true
		}
	}
	return false
}

// principal is who made a request.
type principal struct{ id string }

type principalKey struct{}

// authenticate finds the key a bearer token belongs to. Every configured
// hash is compared, in constant time, so timing tells nothing about which
// or how many keys exist.
func (a *API) authenticate(header string) (*Key, bool) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || token == "" {
		return nil, false
	}
	sum := sha256.Sum256([]byte(token))
	var found *Key
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
		if !grants(k.Scopes, need) {
			huma.WriteErr(api, ctx, http.StatusForbidden, fmt.Sprintf("key %q lacks the %q scope this operation needs", k.ID, need))
			return
		}
		noteKey(ctx.Context(), k.ID)
		next(huma.WithValue(ctx, principalKey{}, principal{id: k.ID}))
	}
}
