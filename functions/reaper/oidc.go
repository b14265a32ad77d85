package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// KeySource hands out the issuer's signing keys (a JSON Web Key Set).
// refresh asks for a fresh copy: the token names a key id the cached set
// does not have (the issuer rotated its keys).
type KeySource interface {
	Keys(ctx context.Context, refresh bool) (*jose.JSONWebKeySet, error)
}

// StaticKeys is a fixed key set (tests, or an air-gapped deployment).
type StaticKeys struct{ Set jose.JSONWebKeySet }

// Keys implements KeySource.
func (s *StaticKeys) Keys(context.Context, bool) (*jose.JSONWebKeySet, error) {
	return &s.Set, nil
}

// RemoteKeys fetches a JWKS over HTTPS (Google's is
// https://www.googleapis.com/oauth2/v3/certs) and caches it for an hour;
// an unknown key id refetches it, at most once per MinRefresh.
type RemoteKeys struct {
	URL        string
	Client     *http.Client  // [a client with a 5 s timeout]
	MaxAge     time.Duration // [1h]
	MinRefresh time.Duration // [30s]

	mu      sync.Mutex
	set     *jose.JSONWebKeySet
	fetched time.Time
}

// Keys implements KeySource.
func (r *RemoteKeys) Keys(ctx context.Context, refresh bool) (*jose.JSONWebKeySet, error) {
	maxAge, minRefresh := r.MaxAge, r.MinRefresh
	if maxAge <= 0 {
		maxAge = time.Hour
	}
	if minRefresh <= 0 {
		minRefresh = 30 * time.Second
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	age := time.Since(r.fetched)
	if r.set != nil && age < maxAge && (!refresh || age < minRefresh) {
		return r.set, nil
	}
	set, err := r.fetch(ctx)
	if err != nil {
		if r.set != nil {
			return r.set, nil // keep serving the keys we have
		}
		return nil, err
	}
	r.set, r.fetched = set, time.Now()
	return set, nil
}

func (r *RemoteKeys) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	c := r.Client
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching OIDC keys: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching OIDC keys from %s: HTTP %d", r.URL, resp.StatusCode)
	}
	var set jose.JSONWebKeySet
	if err := decodeJSON(resp.Body, 1<<20, &set); err != nil {
		return nil, fmt.Errorf("OIDC keys from %s: %w", r.URL, err)
	}
	return &set, nil
}

// Verifier checks OIDC ID tokens: signature by one of the issuer's keys
// (RS256 or ES256), issuer, audience, expiry (required) and not-before
// with a minute of leeway, and that the token names one of the allowed
// service accounts with a verified email. The audience alone proves
// nothing: any Google account can mint a token for any audience.
type Verifier struct {
	Issuer   string // https://accounts.google.com also accepts accounts.google.com
	Audience string
	Emails   []string
	Keys     KeySource
	Now      func() time.Time // [time.Now]
}

// Identity is what a verified token says about its caller.
type Identity struct {
	Email   string
	Subject string
}

type emailClaims struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
}

var errTokenRejected = errors.New("token rejected")

// Verify checks a compact JWS token.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Identity, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
	if err != nil {
		return nil, fmt.Errorf("%w: not a signed JWT: %v", errTokenRejected, err)
	}
	if len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: want one signature", errTokenRejected)
	}
	kid := tok.Headers[0].KeyID
	set, err := v.Keys.Keys(ctx, false)
	if err != nil {
		return nil, err
	}
	keys := set.Key(kid)
	if len(keys) == 0 {
		if set, err = v.Keys.Keys(ctx, true); err != nil {
			return nil, err
		}
		keys = set.Key(kid)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: unknown signing key %q", errTokenRejected, kid)
	}
	var std jwt.Claims
	var ec emailClaims
	verified := false
	for _, k := range keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if err := tok.Claims(k.Key, &std, &ec); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, fmt.Errorf("%w: bad signature", errTokenRejected)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	if std.Expiry == nil {
		return nil, fmt.Errorf("%w: no expiry", errTokenRejected)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{AnyAudience: jwt.Audience{v.Audience}, Time: now()}, time.Minute); err != nil {
		return nil, fmt.Errorf("%w: %v", errTokenRejected, err)
	}
	if !v.issuerOK(std.Issuer) {
		return nil, fmt.Errorf("%w: issuer %q", errTokenRejected, std.Issuer)
	}
	if !ec.EmailVerified || !slices.ContainsFunc(v.Emails, func(e string) bool { return strings.EqualFold(e, ec.Email) }) {
		return nil, fmt.Errorf("%w: caller %q is not allowed (verified email: %v)", errTokenRejected, ec.Email, ec.EmailVerified)
	}
	return &Identity{Email: ec.Email, Subject: std.Subject}, nil
}

func (v *Verifier) issuerOK(iss string) bool {
	if iss == v.Issuer {
		return true
	}
	// Google issues both forms.
	return v.Issuer == "https://accounts.google.com" && iss == "accounts.google.com"
}

// looksLikeJWT tells an ID token (three base64url parts) from an API key.
func looksLikeJWT(s string) bool {
	return strings.Count(s, ".") == 2 && strings.HasPrefix(s, "eyJ")
}
