package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Defaults of the reaper section: Google's OIDC issuer and its keys.
const (
	DefaultOIDCIssuer  = "https://accounts.google.com"
	DefaultOIDCJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"
)

// OIDC configures OIDC ID-token authentication of the reaper endpoint
// (role ReaperHTTP); the other roles ignore it.
type OIDC struct {
	Audience string
	Emails   []string
	Issuer   string
	JWKSURL  string
}

// Enabled reports whether OIDC tokens are accepted.
func (o OIDC) Enabled() bool { return o.Audience != "" }

var oidcVars = []string{EnvOIDCAudience, EnvOIDCEmails, EnvOIDCIssuer, EnvOIDCJWKSURL}

func (o *OIDC) parse(r *reader, role Role) {
	*o = OIDC{Audience: r.str(EnvOIDCAudience), Issuer: DefaultOIDCIssuer, JWKSURL: DefaultOIDCJWKSURL}
	if v := r.str(EnvOIDCEmails); v != "" {
		for _, e := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
			if !strings.Contains(e, "@") {
				r.problem(EnvOIDCEmails, fmt.Sprintf("%q is not an email address (a service account's email is expected)", e))
				continue
			}
			o.Emails = append(o.Emails, e)
		}
	}
	if v := r.str(EnvOIDCIssuer); v != "" {
		o.Issuer = v
	}
	if v := r.str(EnvOIDCJWKSURL); v != "" {
		if u, err := url.Parse(v); err != nil || u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) || u.Host == "" {
			r.problem(EnvOIDCJWKSURL, fmt.Sprintf("%q: want an https:// URL of a JSON Web Key Set", v))
		} else {
			o.JWKSURL = v
		}
	}
	if role != ReaperHTTP {
		for _, v := range oidcVars {
			if _, ok := r.lookup(v); ok {
				r.warn(fmt.Sprintf("%s is set but the %s does not read it", v, role))
			}
		}
		*o = OIDC{}
		return
	}
	if o.Audience != "" && len(o.Emails) == 0 {
		r.problem(EnvOIDCEmails, "required with CAIRN_OIDC_AUDIENCE: any Google account can mint an ID token for any audience, so the service accounts allowed to call the reaper must be named")
	}
	if o.Audience == "" && len(o.Emails) > 0 {
		r.problem(EnvOIDCAudience, "required with CAIRN_OIDC_EMAILS: the audience the tokens are minted for (the reaper's URL)")
	}
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}
