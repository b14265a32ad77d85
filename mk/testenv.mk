# mk/testenv.mk — test services for `make test` (included by the Makefile).
# scripts/testenv.sh does the work; see its header.
#
#   make testenv     container engine + MinIO image + Azurite + Chromium, ready for tests
#                    (system changes — apt: podman, chromium; /etc/containers — only with
#                    CAIRN_TESTENV_SYSTEM=1 or CI=true; see the script)
#   make minio       MinIO for manual use on 127.0.0.1:9000 (minioadmin/minioadmin)
#   make minio-stop  stop it
#
# A recipe that runs tests needing the services prefixes them with
# $(TESTENV_EVAL), e.g.:  $(TESTENV_EVAL) && go test -race ./...

TESTENV      := scripts/testenv.sh
# (assigned first, so that a failing testenv.sh fails the recipe: a bare
# eval "$(…)" of a failed command succeeds)
TESTENV_EVAL  = testenv_=$$($(TESTENV) env) && eval "$$testenv_"

.PHONY: testenv minio minio-stop

testenv:
	$(TESTENV) ensure

minio:
	$(TESTENV) minio

minio-stop:
	$(TESTENV) minio-stop
