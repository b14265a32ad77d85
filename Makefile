# cairn — make targets. `make run` and `make test` are the two a newcomer
# needs; both work on a fresh machine (Go, gcc, node/npm, apt).

GO        ?= go
GOFLAGS_T ?= -race -count=1
PKGS      ?= ./...
BIN       := bin
# oapi-codegen v2.8.2, pinned as a tool in go.mod (go get -tool …@v2.8.2)
OAPI_CODEGEN ?= $(GO) tool oapi-codegen

include mk/testenv.mk

.PHONY: run build check test test-short bench openapi openapi-check clean

## run: the embedded default — API + reaper + notifications in one process on .cairn/data; ADDR=host:port to listen elsewhere (default 127.0.0.1:8080; CAIRN_* variables apply)
run:
	$(GO) run ./cmd/cairn dev $(if $(ADDR),--addr $(ADDR))

## build: the cairn binary into bin/
build:
	$(GO) build -o $(BIN)/cairn ./cmd/cairn

## check: static checks — gofmt, go vet, go.mod tidy, and the committed OpenAPI documents and Go client up to date
check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then \
	  echo "gofmt: these files are not formatted (run gofmt -w on them):" >&2; echo "$$out" >&2; exit 1; fi; \
	echo "gofmt: ok"
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy and commit" >&2; exit 1; }; \
	echo "go mod tidy: ok"
	@$(MAKE) --no-print-directory openapi-check

## test: every test, MinIO/Azurite integration included (starts what it needs; installing podman or writing /etc/containers/containers.conf needs CAIRN_TESTENV_SYSTEM=1 or CI=true)
test: testenv openapi-check
	$(TESTENV_EVAL) && $(GO) test $(GOFLAGS_T) -timeout 20m $(PKGS)

## test-short: the quick loop — in-process tests only: no containers, no race detector (make test has both); about a minute
test-short:
	$(GO) test -count=1 -short -timeout 5m $(PKGS)

## bench: benchmarks (blob ops per step, CAS rates, wake latency, idle cost), then `cairn bench` on cloud-shaped stores
bench: testenv
	$(TESTENV_EVAL) && $(GO) test -run '^$$' -bench . -benchtime 200x -timeout 30m $(PKGS)
	$(GO) run ./cmd/cairn bench --shape linear --width 10 --runs 20
	$(GO) run ./cmd/cairn bench --store mem:// --shape linear --width 10 --runs 10 --profile s3
	$(GO) run ./cmd/cairn bench --store mem:// --shape fanout --width 200 --runs 2 --workers 16 --profile gcs --scale 0.2

## openapi: regenerate the committed OpenAPI documents from the code, and the Go client (and its overlay) from them
openapi:
	$(GO) run ./cmd/cairn openapi > openapi/openapi.json
	$(GO) run ./cmd/cairn openapi --format yaml > openapi/openapi.yaml
	$(GO) run ./cmd/cairn openapi --downgrade > openapi/openapi-3.0.json
	$(GO) run ./openapi/overlaygen openapi/openapi.json > openapi/client/overlay.yaml
	$(OAPI_CODEGEN) -config openapi/client/oapi-codegen.yaml -o openapi/client/client.gen.go openapi/openapi.json

## openapi-check: fail when the committed OpenAPI documents, the client's overlay or the Go client are stale
openapi-check:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(GO) run ./cmd/cairn openapi > $$tmp/openapi.json && \
	$(GO) run ./cmd/cairn openapi --format yaml > $$tmp/openapi.yaml && \
	$(GO) run ./cmd/cairn openapi --downgrade > $$tmp/openapi-3.0.json && \
	mkdir -p $$tmp/client && $(GO) run ./openapi/overlaygen $$tmp/openapi.json > $$tmp/client/overlay.yaml && \
	$(OAPI_CODEGEN) -config openapi/client/oapi-codegen.yaml -o $$tmp/client/client.gen.go $$tmp/openapi.json && \
	for f in openapi.json openapi.yaml openapi-3.0.json client/overlay.yaml client/client.gen.go; do \
	  if ! cmp -s $$tmp/$$f openapi/$$f; then echo "openapi/$$f is stale: run make openapi and commit" >&2; exit 1; fi; \
	done; echo "openapi: committed spec and Go client are up to date"

## clean: remove build output and local data
clean:
	rm -rf $(BIN) .cairn

# ---- Deployment artifacts (functions/api, functions/reaper) ----
DIST         ?= dist
LAMBDA_ARCHS ?= arm64 amd64
LAMBDA_TAGS  ?= lambda.norpc,cairn_aws
IMAGE        ?= localhost/cairn:dev
IMAGE_TAGS   ?=

.PHONY: lambda image

## lambda: Lambda zips (provided.al2023: one executable named bootstrap) of the API and reaper functions, for arm64 and amd64, into dist/
lambda:
	@set -e; for fn in api reaper; do for arch in $(LAMBDA_ARCHS); do \
	  out=$(DIST)/lambda/$$fn-$$arch; mkdir -p $$out; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags="-s -w" -tags $(LAMBDA_TAGS) -o $$out/bootstrap ./functions/$$fn; \
	  $(GO) run ./infra/aws/lambdazip -o $(DIST)/cairn-$$fn-$$arch.zip $$out/bootstrap; \
	  awk -v z=$(DIST)/cairn-$$fn-$$arch.zip -v b=$$(wc -c <$$out/bootstrap) -v s=$$(wc -c <$(DIST)/cairn-$$fn-$$arch.zip) \
	    'BEGIN { printf "%-30s bootstrap %5.1f MB  zip %5.1f MB\n", z, b/1e6, s/1e6 }'; \
	done; done

## image: the container image (Cloud Run; FROM scratch, CA certificates, tzdata, non-root) as $(IMAGE), with podman (or docker); IMAGE_TAGS=cairn_gcp for Google drivers only
image: testenv
	$(TESTENV_EVAL) && TAGS="$(IMAGE_TAGS)" infra/image/build.sh $(IMAGE)

.PHONY: chaos

## chaos: the long chaos round (DURATION=20m, SEED=n to replay a schedule): cairn serve ×3, a reaper and SDK workers on the file store with NATS and on MinIO with no bus, killed, paused and restarted under load with store faults, then checked (docs/RELIABILITY.md)
DURATION ?= 20m
chaos: testenv
	$(TESTENV_EVAL) && CHAOS_DURATION=$(DURATION) $(if $(SEED),CHAOS_SEED=$(SEED)) CHAOS_KEEP=1 \
	  $(GO) test -count=1 -v -run '^TestChaos$$' -timeout 6h ./chaos

.PHONY: up down

## up: local multi-process cairn — MinIO + NATS + two API instances + the reaper on 127.0.0.1 (Ctrl-C stops all)
up:
	$(GO) run ./infra/local/up

## down: stop what `make up` left running (MinIO started by `make minio`)
down: minio-stop
