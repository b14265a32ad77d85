# cairn — make targets. `make run` and `make test` are the two a newcomer
# needs; both work on a fresh machine (Go, gcc, node/npm, apt).

GO        ?= go
GOFLAGS_T ?= -race -count=1
PKGS      ?= ./...
BIN       := bin
# oapi-codegen v2.8.2, pinned as a tool in go.mod (go get -tool …@v2.8.2)
OAPI_CODEGEN ?= $(GO) tool oapi-codegen

include mk/testenv.mk
include mk/python.mk
include mk/fuzz.mk

# UNTIL_CTRL_C runs a command that runs until Ctrl-C so that make ends
# quietly then, not with "*** Error" or "*** Interrupt": the recipe's
# shell outlives the Ctrl-C (a trap, which its command does not inherit)
# and takes the command's exit status 130 (stopped by Ctrl-C) as success.
# The long-running targets run a built binary, not `go run`, which exits
# 1 whenever its program was interrupted.
UNTIL_CTRL_C = trap : INT; $(1) || { st=$$?; [ $$st -eq 130 ] || exit $$st; }

.PHONY: run build check test test-short bench scale bench-e2e bench-compare openapi openapi-check clean

## run: the embedded default — API + reaper + notifications in one process on .cairn/data; ADDR=host:port to listen elsewhere (default 127.0.0.1:8080; CAIRN_* variables apply)
run:
	$(GO) build -o $(BIN)/cairn ./cmd/cairn
	$(call UNTIL_CTRL_C,$(BIN)/cairn dev $(if $(ADDR),--addr $(ADDR)))

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

## test: every test, MinIO/Azurite integration included, and the spec fuzz (fuzz-spec-quick) (starts what it needs; installing podman or writing /etc/containers/containers.conf needs CAIRN_TESTENV_SYSTEM=1 or CI=true)
test: testenv openapi-check lint-openapi ts-test py-test fuzz-spec-quick
	$(TESTENV_EVAL) && GO=$(GO) scripts/gotest.sh $(GOFLAGS_T) -timeout 30m $(PKGS)

## test-short: the quick loop — in-process tests only: no containers, no race detector (make test has both); about a minute
test-short:
	$(GO) test -count=1 -short -timeout 5m $(PKGS)

## bench: benchmarks (blob ops per step, CAS rates, wake latency, idle cost), then `cairn bench` on cloud-shaped stores
bench: testenv
	$(TESTENV_EVAL) && $(GO) test -run '^$$' -bench . -benchtime 200x -timeout 30m $(PKGS)
	$(GO) run ./cmd/cairn bench --shape linear --width 10 --runs 20
	$(GO) run ./cmd/cairn bench --store mem:// --shape linear --width 10 --runs 10 --profile s3
	$(GO) run ./cmd/cairn bench --store mem:// --shape fanout --width 200 --runs 2 --workers 16 --profile gcs --scale 0.2
	$(MAKE) --no-print-directory bench-e2e
	$(GO) run ./bench/scale --quiet --scenario burst  --layout flat    --steps-per-sec 1000 --burst-runs 10000 --warm 20m --scale 50 --speed 4 --fleet 4
	$(GO) run ./bench/scale --quiet --scenario burst  --layout sharded --steps-per-sec 1000 --burst-runs 10000 --warm 20m --scale 50 --speed 4 --fleet 4
	$(GO) run ./bench/scale --quiet --scenario fanout --fanout 1000 --scale 1 --speed 2
	$(GO) run ./bench/scale --quiet --scenario idle   --idle-workers 500 --scale 1 --speed 1 --duration 2m

## scale: the real engine on the simulated S3/GCS store (bench/scale, docs/SCALE.md) at full size: steady 10,000 steps/s, a 100,000-run burst in a minute with today's (flat) and the sharded key layout, a 10,000-wide fan-out, 5,000 idle workers; steady load ramped linearly (faster than the stores split) and at each store's own pace (--double-every); about two hours on 2 cores; summaries appended to bench/scale-results.txt
SCALE_OUT  ?= bench/scale-results.txt
scale:
	$(GO) build -o $(BIN)/cairn-scale ./bench/scale
	$(BIN)/cairn-scale --scenario burst  --model s3  --layout flat    --warm 60m --fleet 20 --out $(SCALE_OUT)
	$(BIN)/cairn-scale --scenario burst  --model s3  --layout sharded --warm 60m --fleet 20 --out $(SCALE_OUT)
	$(BIN)/cairn-scale --scenario steady --model s3  --layout sharded --fleet 20 --out $(SCALE_OUT)
	$(BIN)/cairn-scale --scenario steady --model s3  --layout sharded --fleet 20 --double-every 10m --ramp-from 500 --out $(SCALE_OUT)
	$(BIN)/cairn-scale --scenario steady --model gcs --layout sharded --fleet 20 --duration 80m --out $(SCALE_OUT)
	$(BIN)/cairn-scale --scenario steady --model gcs --layout sharded --fleet 20 --double-every 20m --ramp-from 140 --out $(SCALE_OUT)
	$(BIN)/cairn-scale --scenario fanout --model s3  --layout sharded --scale 1 --speed 2 --out $(SCALE_OUT)
	$(BIN)/cairn-scale --scenario idle   --model s3  --layout sharded --scale 1 --speed 1 --duration 3m --out $(SCALE_OUT)

## bench-e2e: the HTTP end-to-end benchmark — `cairn serve` and an SDK worker as separate processes, the Go SDK client; file store, MinIO (scripts/testenv.sh minio), S3/GCS profiles; one line per workload, appended to bench/results.txt
BENCH_TARGETS ?= file,minio,s3,gcs
BENCH_SCALE   ?= 1
bench-e2e:
	scripts/testenv.sh minio
	$(GO) build -o $(BIN)/cairn ./cmd/cairn
	$(GO) build -o $(BIN)/cairn-e2e-bench ./bench/e2e
	$(BIN)/cairn-e2e-bench --cairn $(BIN)/cairn --targets $(BENCH_TARGETS) --scale $(BENCH_SCALE) --out bench/results.txt

## bench-compare: one sitting of cairn and a Temporal dev server: bench/e2e's workloads on the file store and MinIO, then on a Temporal dev server (temporal CLI built from the Go module proxy once; bench/compare, a module of its own), the load sampled throughout, and the ratios (bench/ratios); appended to bench/results.txt; never part of make test
TEMPORAL_CLI ?= github.com/temporalio/cli/cmd/temporal@v1.5.1
COMPARE_TARGETS ?= file,minio
bench-compare:
	scripts/testenv.sh minio
	test -x $(BIN)/temporal || GOFLAGS=-mod=mod GOBIN=$(abspath $(BIN)) $(GO) install $(TEMPORAL_CLI)
	$(GO) build -o $(BIN)/cairn ./cmd/cairn
	$(GO) build -o $(BIN)/cairn-e2e-bench ./bench/e2e
	BIN=$(BIN) BENCH_TARGETS=$(COMPARE_TARGETS) OUT=bench/results.txt scripts/bench-compare.sh

## openapi: regenerate the committed OpenAPI documents from the code, and the Go client (and its overlay), the TypeScript schema and the Python client from them
openapi:
	$(GO) run ./openapi/specgen > openapi/openapi.json
	$(GO) run ./openapi/specgen --format yaml > openapi/openapi.yaml
	$(GO) run ./openapi/specgen --downgrade > openapi/openapi-3.0.json
	$(GO) run ./openapi/overlaygen openapi/openapi.json > openapi/client/overlay.yaml
	$(OAPI_CODEGEN) -config openapi/client/oapi-codegen.yaml -o openapi/client/client.gen.go openapi/openapi.json
	$(MAKE) --no-print-directory ts-deps
	$(TS_SCHEMA) -o sdk/ts/src/schema.gen.ts
	node sdk/ts/scripts/gen-kinds.mjs openapi/openapi.json > sdk/ts/src/kinds.gen.ts
	scripts/python-gen.sh

## openapi-check: fail when the committed OpenAPI documents, the client's overlay, the Go client or the TypeScript and Python generated code are stale
openapi-check:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(GO) run ./openapi/specgen > $$tmp/openapi.json && \
	$(GO) run ./openapi/specgen --format yaml > $$tmp/openapi.yaml && \
	$(GO) run ./openapi/specgen --downgrade > $$tmp/openapi-3.0.json && \
	mkdir -p $$tmp/client && $(GO) run ./openapi/overlaygen $$tmp/openapi.json > $$tmp/client/overlay.yaml && \
	$(OAPI_CODEGEN) -config openapi/client/oapi-codegen.yaml -o $$tmp/client/client.gen.go $$tmp/openapi.json && \
	for f in openapi.json openapi.yaml openapi-3.0.json client/overlay.yaml client/client.gen.go; do \
	  if ! cmp -s $$tmp/$$f openapi/$$f; then echo "openapi/$$f is stale: run make openapi and commit" >&2; exit 1; fi; \
	done && $(MAKE) --no-print-directory ts-deps && $(TS_SCHEMA) -o $$tmp/schema.gen.ts && \
	if ! cmp -s $$tmp/schema.gen.ts sdk/ts/src/schema.gen.ts; then echo "sdk/ts/src/schema.gen.ts is stale: run make openapi and commit" >&2; exit 1; fi; \
	node sdk/ts/scripts/gen-kinds.mjs openapi/openapi.json > $$tmp/kinds.gen.ts && \
	if ! cmp -s $$tmp/kinds.gen.ts sdk/ts/src/kinds.gen.ts; then echo "sdk/ts/src/kinds.gen.ts is stale: run make openapi and commit" >&2; exit 1; fi; \
	scripts/python-gen.sh $$tmp/py && \
	for f in _api _kinds.py; do \
	  if ! diff -r -q -x __pycache__ $$tmp/py/$$f sdk/python/src/cairn/$$f >/dev/null; then echo "sdk/python/src/cairn/$$f is stale: run make openapi and commit" >&2; exit 1; fi; \
	done; \
	echo "openapi: committed spec, Go client, TypeScript schema and Python client are up to date"

# ---- TypeScript SDK (sdk/ts) and the spec linter: node/npm, packages from the npm registry ----
# The TypeScript types of the spec, by openapi-typescript (a devDependency of sdk/ts).
TS_SCHEMA = sdk/ts/node_modules/.bin/openapi-typescript openapi/openapi.json --redocly openapi/redocly.yaml
export REDOCLY_TELEMETRY = off
export REDOCLY_SUPPRESS_UPDATE_NOTICE = true

.PHONY: ts-deps ts-test lint-openapi

## ts-deps: npm ci in sdk/ts (the locked TypeScript toolchain, openapi-typescript, Redocly CLI) when package-lock.json changed
ts-deps: sdk/ts/node_modules/.ci-stamp
sdk/ts/node_modules/.ci-stamp: sdk/ts/package-lock.json sdk/ts/package.json
	cd sdk/ts && npm ci --no-audit --no-fund
	touch $@

## lint-openapi: lint the committed OpenAPI 3.1 document with Redocly CLI (openapi/redocly.yaml: zero errors, zero warnings)
lint-openapi: ts-deps
	sdk/ts/node_modules/.bin/redocly lint --config openapi/redocly.yaml --max-problems 50 openapi/openapi.json

## ts-test: the TypeScript SDK's tests (node --test) against a real `cairn dev` built here; a Go worker joins for the mixed-fleet test, and Go progress helpers (a NATS server, a step, a client) for the progress test across two instances
ts-test: ts-deps
	$(GO) build -o $(BIN)/cairn ./cmd/cairn
	$(GO) build -o $(BIN)/cairn-go-worker ./sdk/ts/test/goworker
	$(GO) build -o $(BIN)/cairn-progress-fleet ./sdk/ts/test/progressfleet
	cd sdk/ts && CAIRN_BIN=$(CURDIR)/$(BIN)/cairn CAIRN_GO_WORKER=$(CURDIR)/$(BIN)/cairn-go-worker CAIRN_PROGRESS_FLEET=$(CURDIR)/$(BIN)/cairn-progress-fleet npm test
	sdk/ts/node_modules/.bin/tsc -p examples/ts/tsconfig.check.json

## clean: remove build output and local data
clean:
	rm -rf $(BIN) .cairn

# ---- Deployment artifacts (functions/api, functions/reaper; the dashboard function is functions/api) ----
DIST         ?= dist
LAMBDA_ARCHS ?= arm64 amd64
# Lambda builds: AWS drivers only (cairn_aws; cairn_lambda leaves out the
# NATS bus, whose subscription a frozen environment cannot hold: 0.8 MB,
# and the benchmark hooks, blob counting, fault profiles and pprof: 0.56 MB),
# OTLP over HTTP only (lambda.norpc), no HTTP/2 in net/http (nethttpomithttp2: S3, SQS and the Runtime API speak
# HTTP/1.1; 0.5 MB), and no dashboard in the API function (cairn_noui: its
# template reflection keeps every exported method linked, ≈ 10 MB).
LAMBDA_TAGS  ?= lambda.norpc,cairn_aws,cairn_lambda,nethttpomithttp2,cairn_noui
# The dashboard function: functions/api with the dashboard, serving /ui/
# and /docs on AWS (infra/aws/template.yaml routes them to it).
LAMBDA_DASHBOARD_TAGS ?= lambda.norpc,cairn_aws,cairn_lambda,nethttpomithttp2
IMAGE        ?= localhost/cairn:dev
IMAGE_TAGS   ?=

.PHONY: lambda image

## lambda: Lambda zips (provided.al2023: one executable named bootstrap) of the API, reaper and dashboard functions, for arm64 and amd64, into dist/
lambda:
	@set -e; for spec in api:api:$(LAMBDA_TAGS) reaper:reaper:$(LAMBDA_TAGS) dashboard:api:$(LAMBDA_DASHBOARD_TAGS); do \
	  fn=$${spec%%:*}; pkg=$${spec#*:}; tags=$${pkg#*:}; pkg=$${pkg%%:*}; \
	  for arch in $(LAMBDA_ARCHS); do \
	  out=$(DIST)/lambda/$$fn-$$arch; mkdir -p $$out; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags="-s -w" -tags $$tags -o $$out/bootstrap ./functions/$$pkg; \
	  $(GO) run ./infra/aws/lambdazip -o $(DIST)/cairn-$$fn-$$arch.zip $$out/bootstrap; \
	  awk -v z=$(DIST)/cairn-$$fn-$$arch.zip -v b=$$(wc -c <$$out/bootstrap) -v s=$$(wc -c <$(DIST)/cairn-$$fn-$$arch.zip) \
	    'BEGIN { printf "%-33s bootstrap %5.1f MB  zip %5.1f MB\n", z, b/1e6, s/1e6 }'; \
	done; done

## image: the container image (Cloud Run; FROM scratch, CA certificates, tzdata, non-root) as $(IMAGE), with podman (or docker); IMAGE_TAGS=cairn_gcp for Google drivers only
image: testenv
	$(TESTENV_EVAL) && TAGS="$(IMAGE_TAGS)" infra/image/build.sh $(IMAGE)

.PHONY: chaos

## chaos: the long chaos round (DURATION=20m, SEED=n to replay a schedule): cairn serve ×3, a reaper, Go and TypeScript SDK workers on the file store with no bus, on MinIO with NATS and on MinIO with no bus, killed, paused and restarted (MinIO too) under load with store faults, then checked (docs/RELIABILITY.md)
DURATION ?= 20m
chaos: testenv ts-deps
	$(TESTENV_EVAL) && CHAOS_DURATION=$(DURATION) $(if $(SEED),CHAOS_SEED=$(SEED)) CHAOS_KEEP=1 \
	  $(GO) test -tags chaos -count=1 -v -run '^TestChaos$$' -timeout 6h ./chaos

.PHONY: up down

## up: local multi-process cairn — MinIO + NATS + two API instances + the reaper on 127.0.0.1 (Ctrl-C stops all)
up:
	$(GO) build -o $(BIN)/cairn-up ./infra/local/up
	$(call UNTIL_CTRL_C,$(BIN)/cairn-up)

## down: stop what `make up` left running (MinIO started by `make minio`)
down: minio-stop

.PHONY: vendor-docs

## vendor-docs: the /docs page's assets (Stoplight Elements) from npm into ui/docs/, checked against the sha384 Huma pins; committed, embedded in the binary
vendor-docs:
	scripts/vendor-docs.sh
