#!/usr/bin/env bash
# One sitting of cairn against a Temporal dev server (make bench-compare):
# bench/e2e's workloads on cairn's targets, then the same workloads on the
# Temporal dev server (bench/compare), the machine's load sampled every 5 s
# throughout, and the ratios (bench/ratios). Everything is appended to $OUT.
# Expects bin/cairn, bin/cairn-e2e-bench and bin/temporal (the Makefile
# builds them) and MinIO when a target needs it (scripts/testenv.sh minio).
set -euo pipefail
BIN=$(cd "${BIN:-bin}" && pwd)
TARGETS=${BENCH_TARGETS:-file,minio}
OUT=$(realpath -m "${OUT:-bench/results.txt}")
tmp=$(mktemp -d)
sampler=
cleanup() { [[ -n $sampler ]] && kill "$sampler" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
( while :; do cut -d' ' -f1 /proc/loadavg >>"$tmp/load"; sleep 5; done ) &
sampler=$!
echo "# $(date -u +%FT%TZ) one sitting: cairn ($TARGETS) then a Temporal dev server, $(nproc) CPUs, $(git rev-parse --short HEAD)" | tee -a "$OUT"
"$BIN/cairn-e2e-bench" --cairn "$BIN/cairn" --targets "$TARGETS" --workloads linear,ceiling,fanout,single --out "$tmp/cairn.txt"
(cd bench/compare && GOFLAGS=-mod=mod go run . --temporal "$BIN/temporal" --out "$tmp/temporal.txt")
cat "$tmp/cairn.txt" "$tmp/temporal.txt" >>"$OUT"
go run ./bench/ratios --load "$tmp/load" "$tmp/cairn.txt" "$tmp/temporal.txt" | tee -a "$OUT"
