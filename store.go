package cairn

import (
	"encoding/json"
	"time"
)

// The long-term store: a key-value store for application data that
// outlives runs (per-user memory, learned facts, counters), kept in the
// bucket beside the runs. Namespaces and keys are tokens. Writes are not
// part of any run's history: a retried step writes again, so write values
// derived from the step (or guard the write with if_version).

// Patterns and limits of the store's names.
const (
	StoreNamespacePattern = `^[A-Za-z0-9][A-Za-z0-9_.-]*$`
	StoreKeyPattern       = `^[A-Za-z0-9][A-Za-z0-9_.:@=+-]*$`
	MaxStoreNamespaceLen  = 128
	MaxStoreKeyLen        = 256
)

// StoreEntry is a key's value and its version.
type StoreEntry struct {
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value,omitempty" doc:"The value (absent in the answer to a write)."`
	Version   string          `json:"version" doc:"Opaque version of the value: pass it as if_version to write or delete only that value."`
	UpdatedAt time.Time       `json:"updated_at"`
}

// StorePutRequest writes a key. IfVersion writes only over that version
// of the value; IfAbsent only when the key has no value; neither: always.
type StorePutRequest struct {
	Value     json.RawMessage `json:"value" doc:"Any JSON value."`
	IfVersion string          `json:"if_version,omitempty" maxLength:"512" pattern:"^[A-Za-z0-9_-]*$" doc:"Write only over this version (from a read or a write); another version is a 409."`
	IfAbsent  bool            `json:"if_absent,omitempty" doc:"Write only when the key has no value; a value is a 409."`
}

// StoreKeyInfo is a key in a listing.
type StoreKeyInfo struct {
	Key       string    `json:"key"`
	Version   string    `json:"version"`
	Size      int64     `json:"size" doc:"The value's size in bytes."`
	UpdatedAt time.Time `json:"updated_at"`
}

// StorePage is a page of a namespace's keys in key order.
type StorePage struct {
	Keys       []StoreKeyInfo `json:"keys" nullable:"false"`
	NextCursor string         `json:"next_cursor,omitempty"`
}
