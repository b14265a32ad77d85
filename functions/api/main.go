// Command api is cairn's API function: the Huma API of package api over an
// engine on the bucket named by CAIRN_BLOB. It holds no state between
// requests; run as many instances as the platform likes.
//
// One binary, three homes:
//
//   - AWS Lambda (AWS_LAMBDA_RUNTIME_API is set): it serves Function URL and
//     API Gateway HTTP API events (payload format 2.0) through
//     aws-lambda-go-api-proxy's httpadapter. The invocation's deadline
//     becomes the request context's deadline, and the engine answers a
//     held claim 500 ms before it, so a long poll never times the function
//     out. Build it with -tags lambda.norpc into an executable named
//     bootstrap (make lambda).
//   - Cloud Run, or any host: a plain HTTP server on CAIRN_HOST:PORT. On
//     SIGTERM (Cloud Run gives 10 s) it drains: held claims answer at once
//     (empty), then the server stops accepting and waits for requests in
//     flight, at most 8 s.
//   - A laptop: the same, CAIRN_HOST defaults to 127.0.0.1.
//
// Configuration is environment variables only: see internal/config. The
// code path is internal/app.API, which `cairn serve` and `cairn dev` run
// too.
package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/cairn-dev/cairn/internal/app"
	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
)

func main() {
	app.Main(func(ctx context.Context) error { return run(ctx, os.Environ(), os.Stderr) })
}

// run is the API function with the configuration in environ. It reports
// what it returns: a bad configuration on stderr, the rest in the log.
func run(ctx context.Context, environ []string, stderr io.Writer) error {
	return app.Run(config.API, environ, stderr, "cairn api", func(cfg *config.Config, log *slog.Logger) error {
		return app.API(ctx, cfg, log, app.APIOptions{})
	})
}
