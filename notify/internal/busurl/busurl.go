// Package busurl reads the query of a bus URL the way every driver's
// OpenURL does: a table of the parameters the driver takes, each one's
// first value, and errors that name the driver and the parameter.
package busurl

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Params are the query parameters a driver takes: each one's setter,
// given the parameter's value.
type Params map[string]func(v string) error

// Set calls the setter of each of q's parameters with its first value.
// It fails, naming driver and the parameter, on a parameter p has no
// setter for, or with the error of a setter.
func (p Params) Set(driver string, q url.Values) error {
	for k := range q {
		if _, ok := p[k]; !ok {
			return fmt.Errorf("%s: unknown query parameter %q", driver, k)
		}
	}
	_, err := p.SetKnown(driver, q)
	return err
}

// SetKnown is Set for the parameters p has a setter for; it returns the
// others, for a driver that passes them on.
func (p Params) SetKnown(driver string, q url.Values) (rest url.Values, err error) {
	rest = url.Values{}
	for k, vs := range q {
		set, ok := p[k]
		if !ok {
			rest[k] = vs
			continue
		}
		if err := set(vs[0]); err != nil {
			return nil, fmt.Errorf("%s: query parameter %s: %w", driver, k, err)
		}
	}
	return rest, nil
}

// String sets *s to the value.
func String(s *string) func(string) error {
	return func(v string) error { *s = v; return nil }
}

// Int sets *n to the value, a decimal integer.
func Int(n *int) func(string) error {
	return func(v string) (err error) { *n, err = strconv.Atoi(v); return err }
}

// Bool sets *b to the value, as strconv.ParseBool reads it.
func Bool(b *bool) func(string) error {
	return func(v string) (err error) { *b, err = strconv.ParseBool(v); return err }
}

// Duration sets *d to the value, as time.ParseDuration reads it.
func Duration(d *time.Duration) func(string) error {
	return func(v string) (err error) { *d, err = time.ParseDuration(v); return err }
}
