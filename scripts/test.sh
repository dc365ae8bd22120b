#!/usr/bin/env bash
# Installs the venv, brings up local Kafka/PostgreSQL/Redis (scripts/infra up), and runs pytest
# over the repo with the infrastructure's addresses in the environment.
#   scripts/test.sh [pytest args...]
#   ATTESTA_TEST_INFRA=containers scripts/test.sh [args]   # testcontainers instead (Docker)
# The infrastructure is left running (stop it with `scripts/infra down`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install.sh
if [ "${ATTESTA_TEST_INFRA:-local}" = containers ]; then
  # testcontainers: Kafka, PostgreSQL and Redis from the project's own images (build them with
  # `deploy/build-images.sh kafka postgres redis`), started by the tests' fixtures on a Docker
  # engine, once per pytest process, on 127.0.0.1.
  unset KAFKA_BOOTSTRAP_SERVERS ATTESTA_PG_ADMIN_URL REDIS_URL
  echo "[test] infrastructure from testcontainers (attesta/{kafka,postgres,redis} images)"
else
  scripts/infra up
  # shellcheck disable=SC1091
  . "${ATTESTA_STATE_DIR:-$PWD/.state}/env"
  echo "[test] KAFKA_BOOTSTRAP_SERVERS=$KAFKA_BOOTSTRAP_SERVERS REDIS_URL=$REDIS_URL"
fi

# Lint and type-check first: a tree ruff or mypy rejects fails here, before the long test run.
# mypy checks the files pyproject.toml's [tool.mypy] names; its first run on a machine reads
# torch's, transformers' and chromadb's own hints (~100 s), later runs use .mypy_cache (seconds).
.venv/bin/ruff check .
.venv/bin/mypy

rc=0
.venv/bin/python -m pytest "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "[test] FAIL: pytest collected no tests (exit 5); a run that tests nothing is not a pass" >&2
  exit 1
fi
exit "$rc"
