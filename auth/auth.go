// Package auth is the vocabulary of API keys: the scopes a key may hold,
// what each scope grants, and the CAIRN_KEYS form keys are configured in.
// It is a leaf, so that both the configuration (internal/config) and the
// API that enforces the scopes (api) can use it.
package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Scopes a key may hold.
const (
	ScopeWorker  = "worker"  // the five worker calls
	ScopeExecute = "execute" // start, cancel, signal runs
	ScopeRead    = "read"    // read runs, journals, workflows, workers
	ScopeWrite   = "write"   // worker, execute and store, for keys that do all
	ScopeAdmin   = "admin"   // everything, the reaper endpoint included
	ScopeStore   = "store"   // read and write the long-term store
)

var allScopes = []string{ScopeWorker, ScopeExecute, ScopeRead, ScopeWrite, ScopeAdmin, ScopeStore}

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

// Grants reports whether a key's scopes allow an operation's scope:
// write grants worker, execute and store, admin grants everything.
func Grants(have []string, need string) bool {
	for _, s := range have {
		if s == need || s == ScopeAdmin || s == ScopeWrite && (need == ScopeWorker || need == ScopeExecute || need == ScopeStore) {
			return true
		}
	}
	return false
}
