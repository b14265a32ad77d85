package cairn

import (
	"strings"
	"time"
)

// Limits of a step's result cache (engine/resultcache).
const (
	// DefaultCacheTTL is a cache's ttl when unset.
	DefaultCacheTTL = 24 * time.Hour
	// MaxCacheTTL is the longest ttl.
	MaxCacheTTL = 30 * 24 * time.Hour
	// MaxCacheKeyBytes caps a rendered cache key (as JSON).
	MaxCacheKeyBytes = 4096
)

// StepCache is a task step's result cache: an attempt whose key has a
// fresh entry is completed from it, without a worker.
type StepCache struct {
	Key string   `json:"key,omitempty" maxLength:"2000" doc:"A CEL expression (bare or as ${expr}) over the step's rendered input, as input: steps of this workflow and step id whose keys render to the same value share an entry. Empty: the whole input."`
	TTL Duration `json:"ttl,omitempty" doc:"How long an entry is fresh after it was written (default 24h, at most 720h)."`
}

// EffectiveTTL is the cache's ttl, its default when unset.
func (c *StepCache) EffectiveTTL() time.Duration {
	if c.TTL <= 0 {
		return DefaultCacheTTL
	}
	return c.TTL.D()
}

// CacheHit says where a step's output came from when it was completed
// from the result cache: the attempt that computed it.
type CacheHit struct {
	Run       string    `json:"run" doc:"The run whose attempt computed the output."`
	Attempt   int       `json:"attempt" doc:"That attempt's number."`
	WrittenAt time.Time `json:"written_at" doc:"When the entry was written."`
}

func checkCache(s *Step, add func(field, format string, args ...any)) {
	c := s.Cache
	if c == nil {
		return
	}
	if len(c.Key) > 2000 {
		add(".cache.key", "at most 2000 bytes")
	} else if c.Key != "" && strings.TrimSpace(c.Key) == "" {
		add(".cache.key", "empty expression")
	}
	if c.TTL < 0 || c.TTL.D() > MaxCacheTTL {
		add(".cache.ttl", "must be between 0 (the default %v) and %v", DefaultCacheTTL, MaxCacheTTL)
	}
}

// CacheInvalidation is the answer of a result cache invalidation.
type CacheInvalidation struct {
	Deleted int `json:"deleted" doc:"Entries deleted."`
}
