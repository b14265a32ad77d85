package sdk

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// Cache gives a task step a result cache: an attempt whose key has an
// entry younger than ttl (0: 24h, at most 30 days) is completed from it
// without a worker, and its step view and journal say cached; a miss runs
// the step and its output becomes the entry. key is a CEL expression over
// the step's rendered input, as input ("input.url"; "" for the whole
// input). Outputs over 64 KiB (or stored by reference) are not cached.
func Cache(key string, ttl time.Duration) StepOption {
	return takes("cache", func(s *cairn.Step) { s.Cache = &cairn.StepCache{Key: key, TTL: cairn.Duration(ttl)} })
}

// InvalidateCache deletes every result cache entry of a workflow's step
// and returns how many it deleted: their next attempts run on a worker.
func (c *Client) InvalidateCache(ctx context.Context, workflow, step string) (int, error) {
	return c.invalidateCache(ctx, workflow, step, nil)
}

// InvalidateCacheKey deletes the entry of one key of a workflow's step:
// key is the key's value (what the step's cache key renders to), encoded
// as JSON here. It returns 1 when there was one, else 0.
func (c *Client) InvalidateCacheKey(ctx context.Context, workflow, step string, key any) (int, error) {
	b, err := json.Marshal(key)
	if err != nil {
		return 0, err
	}
	s := string(b)
	return c.invalidateCache(ctx, workflow, step, &s)
}

func (c *Client) invalidateCache(ctx context.Context, workflow, step string, key *string) (int, error) {
	res, err := decodeView[cairn.CacheInvalidation](c)(c.api.InvalidateCache(ctx, workflow, step, &client.InvalidateCacheParams{Key: key}))
	if err != nil {
		return 0, err
	}
	return res.Deleted, nil
}
