# ---- The API fuzzed from its spec: schemathesis, in a virtual environment of pinned packages from PyPI ----
# scripts/spec-fuzz/venv.sh creates it once under ~/.cache/cairn (keyed by
# the pins) and prints its path; scripts/spec-fuzz/run.py starts `cairn dev`
# and `cairn serve` with a key and fuzzes each (see its header).
SPEC_FUZZ_VENV = $$(scripts/spec-fuzz/venv.sh)
SPEC_FUZZ_SEED ?= 1

.PHONY: fuzz-spec fuzz-spec-quick

## fuzz-spec-quick: the spec fuzz that make test runs — every operation of the spec with generated bodies, parameters and headers, then stateful sequences through its links, against cairn dev and cairn serve with a key; fixed seed, 10 examples per operation and phase (about a minute)
fuzz-spec-quick:
	$(GO) build -o $(BIN)/cairn ./cmd/cairn
	@venv=$(SPEC_FUZZ_VENV) && $$venv/bin/python scripts/spec-fuzz/run.py --cairn $(BIN)/cairn --seed $(SPEC_FUZZ_SEED) --examples 10

## fuzz-spec: the longer spec fuzz — 200 examples per operation and phase (SPEC_FUZZ_EXAMPLES), SPEC_FUZZ_SEED=n for another seed
SPEC_FUZZ_EXAMPLES ?= 200
fuzz-spec:
	$(GO) build -o $(BIN)/cairn ./cmd/cairn
	@venv=$(SPEC_FUZZ_VENV) && $$venv/bin/python scripts/spec-fuzz/run.py --cairn $(BIN)/cairn --seed $(SPEC_FUZZ_SEED) --examples $(SPEC_FUZZ_EXAMPLES)
