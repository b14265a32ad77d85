# ---- Python SDK (sdk/python): a virtual environment of pinned packages from PyPI ----
# scripts/python-venv.sh creates it once under ~/.cache/cairn (keyed by the
# pins) and prints its path; the tests download nothing.
PY_VENV = $$(scripts/python-venv.sh)
PYTEST_ARGS ?=

.PHONY: py-deps py-lint py-test py-bench

## py-deps: the Python SDK's virtual environment (pinned tools and dependencies from PyPI, the package editable)
py-deps:
	@scripts/python-venv.sh >/dev/null

## py-lint: ruff and mypy --strict on the Python SDK
py-lint:
	@venv=$(PY_VENV) && cd sdk/python && \
	$$venv/bin/ruff check src tests scripts ../../examples/python && \
	$$venv/bin/mypy --strict src ../../examples/python/triage.py ../../examples/python/triage_function.py

## py-test: the Python SDK's lints and tests (pytest) against a real `cairn dev` built here; Go and TypeScript workers join for the mixed-fleet test
py-test: py-lint ts-deps
	$(GO) build -o $(BIN)/cairn ./cmd/cairn
	$(GO) build -o $(BIN)/cairn-go-worker ./sdk/ts/test/goworker
	$(GO) build -o $(BIN)/cairn-e2e-bench ./bench/e2e
	$(GO) build -o $(BIN)/cairn-py-gocodec ./sdk/python/tests/fleet/gocodec
	cd sdk/ts && node_modules/.bin/tsc -p tsconfig.json
	@venv=$(PY_VENV) && cd sdk/python && \
	CAIRN_BIN=$(CURDIR)/$(BIN)/cairn CAIRN_GO_WORKER=$(CURDIR)/$(BIN)/cairn-go-worker \
	CAIRN_GO_BENCH_WORKER=$(CURDIR)/$(BIN)/cairn-e2e-bench CAIRN_TS_SDK=$(CURDIR)/sdk/ts/dist/index.js \
	CAIRN_GO_CODEC_WORKER=$(CURDIR)/$(BIN)/cairn-py-gocodec \
	$$venv/bin/python -m pytest -p no:cacheprovider $(PYTEST_ARGS)

## py-bench: steps/s of the Python worker against the Go worker (8 slots, no-op steps, 200 five-step runs) on `cairn dev`, each alone on a server of its own
py-bench:
	$(GO) build -o $(BIN)/cairn ./cmd/cairn
	$(GO) build -o $(BIN)/cairn-e2e-bench ./bench/e2e
	@venv=$(PY_VENV) && $$venv/bin/python sdk/python/bench/bench.py --cairn $(BIN)/cairn --go-worker $(BIN)/cairn-e2e-bench
