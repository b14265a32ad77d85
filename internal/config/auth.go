package config

import (
	"slices"

	"github.com/cairn-dev/cairn/auth"
)

// Auth says who may call the API.
type Auth struct {
	// Keys are the API keys (CAIRN_KEYS).
	Keys []auth.Key
	// Dev turns authentication off (CAIRN_DEV), on a laptop only.
	Dev bool
}

func (a *Auth) parse(r *reader, p Platform) {
	a.Dev = r.boolean(EnvDev)
	if raw := r.str(EnvKeys); raw != "" {
		keys, err := auth.ParseKeys(raw)
		switch {
		case err != nil:
			r.problem(EnvKeys, err.Error())
		case len(keys) == 0:
			r.problem(EnvKeys, "holds no key: want id:scope+scope:sha256hex entries separated by commas")
		default:
			a.Keys = keys
		}
	}
	if a.Dev {
		switch {
		case p.OnCloud():
			r.problem(EnvDev, "dev mode (no authentication) is refused on AWS Lambda and Cloud Run: configure CAIRN_KEYS")
		case len(a.Keys) > 0:
			r.problem(EnvDev, "CAIRN_DEV=true turns authentication off, yet CAIRN_KEYS is set: unset one of them")
		}
	}
}

// require checks that a process of role can authenticate its callers.
func (a *Auth) require(r *reader, role Role, o OIDC) {
	switch role {
	case API:
		if !a.Dev && !r.has(EnvKeys) {
			r.problem(EnvKeys, "required: API keys as id:scope+scope:sha256hex entries separated by commas (the hash is the hex SHA-256 of the secret), or CAIRN_DEV=true on a laptop")
		}
	case ReaperHTTP:
		switch {
		case a.Dev || o.Enabled():
		case !r.has(EnvKeys):
			r.problem(EnvKeys, "the reaper endpoint needs a caller it can authenticate: an admin-scoped key in CAIRN_KEYS, OIDC (CAIRN_OIDC_AUDIENCE and CAIRN_OIDC_EMAILS), or CAIRN_DEV=true on a laptop")
		case len(a.Keys) > 0 && !hasAdmin(a.Keys):
			r.problem(EnvKeys, "no key has the admin scope, which the reaper endpoint needs (or configure OIDC: CAIRN_OIDC_AUDIENCE and CAIRN_OIDC_EMAILS)")
		}
	}
}

func hasAdmin(keys []auth.Key) bool {
	for _, k := range keys {
		if slices.Contains(k.Scopes, auth.ScopeAdmin) {
			return true
		}
	}
	return false
}
