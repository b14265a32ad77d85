# cairn — make targets. `make run` and `make test` are the two a newcomer
# needs; both work on a fresh machine (Go, gcc, node/npm, apt).

GO        ?= go
GOFLAGS_T ?= -race -count=1
PKGS      ?= ./...
BIN       := bin

include mk/testenv.mk

.PHONY: run build test test-short bench openapi openapi-check clean

## run: the embedded default — API + reaper + notifications in one process on .cairn/data
run:
	$(GO) run ./cmd/cairn dev

## build: the cairn binary into bin/
build:
	$(GO) build -o $(BIN)/cairn ./cmd/cairn

## test: every test, MinIO/Azurite integration included (starts what it needs)
test: testenv openapi-check
	$(TESTENV_EVAL) && $(GO) test $(GOFLAGS_T) -timeout 20m $(PKGS)

## test-short: unit and in-process tests only, no containers
test-short:
	$(GO) test $(GOFLAGS_T) -short -timeout 5m $(PKGS)

## bench: benchmarks (blob ops per step, CAS rates, wake latency, idle cost)
bench: testenv
	$(TESTENV_EVAL) && $(GO) test -run '^$$' -bench . -benchtime 200x -timeout 30m $(PKGS)

## openapi: regenerate the committed OpenAPI documents from the code
openapi:
	$(GO) run ./cmd/cairn openapi > openapi/openapi.json
	$(GO) run ./cmd/cairn openapi --format yaml > openapi/openapi.yaml
	$(GO) run ./cmd/cairn openapi --downgrade > openapi/openapi-3.0.json

## openapi-check: fail when the committed OpenAPI documents are stale
openapi-check:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(GO) run ./cmd/cairn openapi > $$tmp/openapi.json && \
	$(GO) run ./cmd/cairn openapi --format yaml > $$tmp/openapi.yaml && \
	$(GO) run ./cmd/cairn openapi --downgrade > $$tmp/openapi-3.0.json && \
	for f in openapi.json openapi.yaml openapi-3.0.json; do \
	  if ! cmp -s $$tmp/$$f openapi/$$f; then echo "openapi/$$f is stale: run make openapi and commit" >&2; exit 1; fi; \
	done; echo "openapi: committed spec is up to date"

## clean: remove build output and local data
clean:
	rm -rf $(BIN) .cairn
