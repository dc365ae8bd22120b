#!/bin/sh
# venv-install VENV [PACKAGE|./PATH ...]: in an image build, creates VENV (Debian's python3) if it
# is missing and installs the packages with their declared dependencies, pinned by the runtime
# lock, from the host's wheelhouse only (no index). deploy/build-images.sh puts this script, uv
# (the version scripts/install.sh pins), the lock and the wheelhouse's address (it serves
# deploy/.wheelhouse on the host's 127.0.0.1; builds run with --network host) in deploy/.build,
# which each RUN bind-mounts at /build: none of them lands in a layer, and no pip, compiler or
# index is in any image. Downloaded wheels stay in the builds' uv cache mount, not in layers.
# Bytecode is compiled here: the runtime runs with PYTHONDONTWRITEBYTECODE, and torch imported
# without it costs every start of a service or a one-shot job seconds of CPU.
set -eu
venv=$1; shift
cd /src 2>/dev/null || cd /
export UV_CACHE_DIR=/root/.cache/uv UV_LINK_MODE=copy UV_NO_PROGRESS=1 UV_PYTHON_DOWNLOADS=never
[ -x "$venv/bin/python" ] || /build/uv venv --quiet --python /usr/bin/python3 "$venv"
exec /build/uv pip install --quiet --python "$venv/bin/python" --no-index --find-links "$(cat /build/wheels-url)" \
  --constraint /build/runtime.txt --compile-bytecode "$@"
