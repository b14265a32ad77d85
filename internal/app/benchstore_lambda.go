//go:build cairn_lambda

package app

import (
	"fmt"
	"net/http"

	"github.com/cairn-dev/cairn/blob"
)

// Lambda builds leave the benchmark hooks out (benchstore.go): the
// benchmark runs `cairn serve`, never a function, and the hooks would link
// the blob counting and fault wrappers and net/http/pprof (0.56 MB) into a
// binary whose size is its cold start. A hook set anyway is refused, not
// ignored.
type benchHooks struct{}

func benchWrap(b *blob.Bucket) (*blob.Bucket, *benchHooks, error) {
	if k := benchEnvSet(); k != "" {
		return nil, nil, fmt.Errorf("%s: the benchmark hooks are not in Lambda builds (tag cairn_lambda)", k)
	}
	return b, nil, nil
}

func (*benchHooks) handler(next http.Handler) http.Handler { return next }
