#!/usr/bin/env bash
# gotest.sh ARGS...: `go test ARGS...`, its output streamed as usual and
# kept, and on failure a digest at the end: every failing test's lines
# (--- FAIL and what it logged up to the next test), panics and timeouts.
# A CI log that is cut to its last lines then still names what failed;
# the whole output stays in $CAIRN_TEST_LOG (default: a temp file).
set -uo pipefail
log=${CAIRN_TEST_LOG:-$(mktemp -t cairn-test.XXXXXX)}
"${GO:-go}" test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo
  echo "=== go test failed (exit $rc); what failed (full output: $log):"
  awk '
    /^(=== RUN|=== CONT|=== PAUSE|=== NAME|--- PASS|--- SKIP|ok  |PASS$)/ { keep = 0 }
    /^[ \t]*--- FAIL/ || /^panic: / || /^FAIL/ || /test timed out/ || /^fatal error: / || /WARNING: DATA RACE/ { keep = 1; n = 0 }
    keep && n < 40 { print; n++ }
  ' "$log"
fi
exit "$rc"
