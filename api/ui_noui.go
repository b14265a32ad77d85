//go:build cairn_noui

package api

import "net/http"

// mountUI, in a build without the dashboard (the cairn_noui tag: make
// lambda's API function), answers the dashboard's paths with a problem
// that says where it is served instead, so that a reader who opens / on
// this function learns why there is no page.
func (a *API) mountUI() {
	gone := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, problem(http.StatusNotFound, "this build of the API has no dashboard (built with the cairn_noui tag, as make lambda builds the API function); "+
			"on AWS the dashboard function serves /ui/ and /docs through the HTTP API (docs/DEPLOY.md); the operations are under "+BasePath+", described at /openapi.json"))
	})
	for _, p := range []string{"GET /{$}", "GET /ui/", "GET /docs", "GET /docs/", "GET /favicon.ico"} {
		a.mux.Handle(p, gone)
	}
}
