//go:build !cairn_aws

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/cairn-dev/cairn/internal/config"
)

// oidcVerifier checks OIDC ID tokens with google.golang.org/api/idtoken:
// signature (RS256 or ES256) by a key of the set at o.JWKSURL, audience
// and expiry. It then checks what idtoken leaves to its caller: the
// issuer, not-before (a minute of leeway), and that the token names one
// of the allowed service accounts with a verified email. The audience
// alone proves nothing: any Google account can mint a token for any
// audience.
type oidcVerifier struct {
	v   *idtoken.Validator
	o   config.OIDC
	now func() time.Time
}

// newVerifier returns the verifier of o. idtoken fetches Google's key
// sets from fixed URLs; its HTTP client fetches o.JWKSURL instead
// (Google's certificates by default, a test's or an air-gapped issuer's
// otherwise), through base [http.DefaultTransport], and caches the set as
// the response's Cache-Control says.
func newVerifier(ctx context.Context, o config.OIDC, base http.RoundTripper) (verifier, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: jwksTransport{url: o.JWKSURL, base: base}}
	v, err := idtoken.NewValidator(ctx, option.WithHTTPClient(client))
	if err != nil {
		return nil, fmt.Errorf("OIDC: %w", err)
	}
	return &oidcVerifier{v: v, o: o, now: time.Now}, nil
}

// Verify implements verifier.
func (v *oidcVerifier) Verify(ctx context.Context, raw string) (*Identity, error) {
	p, err := v.v.Validate(ctx, raw, v.o.Audience)
	var fetch *url.Error // idtoken returns the HTTP client's errors as they are
	if errors.Is(err, errKeysUnavailable) || errors.As(err, &fetch) {
		return nil, fmt.Errorf("%w: %v", errKeysUnavailable, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errTokenRejected, err)
	}
	if !issuerOK(v.o.Issuer, p.Issuer) {
		return nil, fmt.Errorf("%w: issuer %q", errTokenRejected, p.Issuer)
	}
	if nbf, ok := p.Claims["nbf"].(float64); ok && v.now().Add(time.Minute).Unix() < int64(nbf) {
		return nil, fmt.Errorf("%w: not valid before %v", errTokenRejected, time.Unix(int64(nbf), 0).UTC())
	}
	email, _ := p.Claims["email"].(string)
	verified, _ := p.Claims["email_verified"].(bool)
	if !verified || !slices.ContainsFunc(v.o.Emails, func(e string) bool { return strings.EqualFold(e, email) }) {
		return nil, fmt.Errorf("%w: caller %q is not allowed (verified email: %v)", errTokenRejected, email, verified)
	}
	return &Identity{Email: email, Subject: p.Subject}, nil
}

func issuerOK(want, iss string) bool {
	// Google issues both forms.
	return iss == want || want == "https://accounts.google.com" && iss == "accounts.google.com"
}

// errKeysUnavailable: the key set could not be fetched; the caller may be
// fine, so the answer is a 503, not a 401.
var errKeysUnavailable = errors.New("OIDC signing keys unavailable")

// jwksTransport sends every request (idtoken's fetches of Google's RS256
// and ES256 key sets) to url, and turns a failed fetch (an error, a status
// other than 200, a body that is not JSON or is over 1 MiB) into
// errKeysUnavailable.
type jwksTransport struct {
	url  string
	base http.RoundTripper
}

func (t jwksTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, t.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errKeysUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered HTTP %d", errKeysUnavailable, t.url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20+1))
	if err != nil || len(body) > 1<<20 || !json.Valid(body) {
		return nil, fmt.Errorf("%w: %s did not answer a JSON Web Key Set", errKeysUnavailable, t.url)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
