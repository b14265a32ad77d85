package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// reader collects problems and warnings while reading variables.
type reader struct {
	env      map[string]string
	problems []Problem
	warnings []string
}

func (r *reader) lookup(k string) (string, bool) {
	v, ok := r.env[k]
	return v, ok
}

// has reports whether k is set to something other than blanks.
func (r *reader) has(k string) bool { return strings.TrimSpace(r.env[k]) != "" }

func (r *reader) str(k string) string { return strings.TrimSpace(r.env[k]) }

func (r *reader) problem(k, msg string) {
	r.problems = append(r.problems, Problem{Var: k, Message: msg})
}

func (r *reader) warn(msg string) { r.warnings = append(r.warnings, msg) }

func (r *reader) boolean(k string) bool {
	v := r.str(k)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.problem(k, fmt.Sprintf("%q: want true or false", v))
	}
	return b
}

// duration parses a Go duration in [min, max]; def when unset.
func (r *reader) duration(k string, def, min, max time.Duration) time.Duration {
	v := r.str(k)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		if n, nerr := strconv.Atoi(v); nerr == nil {
			r.problem(k, fmt.Sprintf("%q has no unit: write %ds for seconds (Go duration syntax: 500ms, 30s, 5m)", v, n))
		} else {
			r.problem(k, fmt.Sprintf("%q: want a duration such as 500ms, 30s or 5m", v))
		}
		return 0
	}
	if d < min || d > max {
		r.problem(k, fmt.Sprintf("%v is out of range: want %v to %v", d, min, max))
		return 0
	}
	return d
}

// checkURL checks that a store URL parses and that this build has a driver
// for its scheme.
func (r *reader) checkURL(k, raw string, schemes []string, what string) {
	u, err := url.Parse(raw)
	if err != nil {
		r.problem(k, fmt.Sprintf("not a URL: %v", redactErr(err, raw)))
		return
	}
	if u.Scheme == "" {
		r.problem(k, fmt.Sprintf("no scheme: want a %s URL such as %s", what, examples(what)))
		return
	}
	if !slices.Contains(schemes, strings.ToLower(u.Scheme)) {
		r.problem(k, fmt.Sprintf("scheme %q: this build has no %s driver for it (built with: %s)", u.Scheme, what, strings.Join(schemes, ", ")))
	}
}

func examples(what string) string {
	if what == "bucket" {
		return "s3://bucket?region=us-east-1 or gs://bucket"
	}
	return "awssqs://sqs.REGION.amazonaws.com/ACCOUNT/QUEUE?region=REGION or nats://127.0.0.1:4222"
}

func redactErr(err error, raw string) string {
	// url.Parse errors quote the URL, which may carry a password.
	return strings.ReplaceAll(err.Error(), raw, "<URL>")
}
