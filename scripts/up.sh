#!/usr/bin/env bash
# Brings the whole system up on 127.0.0.1 and runs its main job.
#
#   scripts/up.sh          install, start Kafka/PostgreSQL/Redis, migrate, seed the KB, start every
#                          service, then the demo (below); the reranker trains in the background
#                          the first time (cached) and retrieval switches from rrf_only to full
#                          when it is ready
#   scripts/up.sh down     stop the services this script started (infra: `scripts/infra down`)
#
# Main job (scripts/demo.py): a chat question through the gateway -> Kafka -> retrieval (full
# hybrid path) -> answer (enriched citations) -> gateway, with topic offsets before/after; the
# answer's run classified by the classifier; the answer's exact bytes confirmed in the public
# evidence log with an inclusion proof, checked by the offline verifier; then the collector
# asks two engines (our assistant and a local fake engine) a prompt set on a schedule; and one
# alert rule's test alert is delivered to a signed-webhook receiver the demo runs on 127.0.0.1
# (a test alert: the demo's answers are all from today, so no closed week holds a real change).
# Services keep running (logs and pids in .state/services).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
state="${ATTESTA_STATE_DIR:-$PWD/.state}"
run="$state/services"
mkdir -p "$run"
A=".venv/bin/attesta"
say() { printf '[up] %s\n' "$*"; }

ours() { kill -0 "$1" 2>/dev/null && grep -qa -e attesta -e attesta_kb_tools.sites "/proc/$1/cmdline" 2>/dev/null; }
stop_services() {
  local pids=() f pid
  for f in "$run"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    if ours "$pid"; then kill -TERM "$pid" && pids+=("$pid") && say "stopping $(basename "$f" .pid) (pid $pid)"; fi
    rm -f "$f"
  done
  # SIGTERM drains in-flight work; a process still loading its models (retrieval) can take a
  # while to notice, so wait for all of them, and only then force what is left.
  for _ in $(seq 1 60); do
    local left=()
    for pid in "${pids[@]}"; do ours "$pid" && left+=("$pid"); done
    pids=("${left[@]}")
    [ "${#pids[@]}" -eq 0 ] && return 0
    sleep 0.5
  done
  for pid in "${pids[@]}"; do say "pid $pid ignored SIGTERM for 30 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; done
}
if [ "${1:-}" = down ]; then stop_services; exit 0; fi

scripts/install.sh
scripts/infra up
# shellcheck disable=SC1091
. "$state/env"
stop_services

# Development secrets, made once per state folder (production refuses weak or missing ones).
[ -s "$state/internal-token" ] || .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(48))' >"$state/internal-token"
export ATTESTA_INTERNAL_TOKEN="$(cat "$state/internal-token")"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export ATTESTA_HTTP_PORT="${ATTESTA_HTTP_PORT:-8080}"
export ATTESTA_STATIC_DIR="${ATTESTA_STATIC_DIR:-$PWD/frontend}"  # the web app (chat + /verify)
# Questions in Portuguese and Spanish: the multilingual dense side (built once in the background,
# cached in ~/.cache/attesta/multilingual, shared by every clone); ATTESTA_RETRIEVAL_MULTILINGUAL=false
# leaves it out.
export ATTESTA_RETRIEVAL_MULTILINGUAL="${ATTESTA_RETRIEVAL_MULTILINGUAL:-true}"
sites_port="${ATTESTA_SITES_PORT:-8090}"
# The demo's fake OpenAI-compatible engine (scripts/demo.py starts it on this port).
export ATTESTA_DEMO_ENGINE_PORT="${ATTESTA_DEMO_ENGINE_PORT:-8095}"
# The outbound policy's operator allow-list, for every service: the demo brand sites and the
# fake engine are served on loopback; those two address:port pairs only, no other local port.
export ATTESTA_FETCH_ALLOW="127.0.0.1:$sites_port,127.0.0.1:$ATTESTA_DEMO_ENGINE_PORT"
# The demo's alert receiver (scripts/demo.py step 6, a signed-webhook receiver on this port):
# the classifier's alert channels may reach it (ATTESTA_ALERT_ALLOW, the alerts' own allow-list),
# no other service may.
export ATTESTA_DEMO_ALERT_PORT="${ATTESTA_DEMO_ALERT_PORT:-8096}"
export ATTESTA_ALERT_ALLOW="127.0.0.1:$ATTESTA_DEMO_ALERT_PORT"

say "migrations (gateway, classifier, evidence, collector)"
$A gateway migrate
$A classifier migrate
$A evidence migrate
$A collector migrate
[ -s "${ATTESTA_EVIDENCE_SIGNING_KEY_FILE:-.state/evidence/log-signing-key.pem}" ] || $A evidence keygen

say "KB: publishing the verified cards to kb.cards.v1 (unchanged cards are skipped downstream)"
$A retrieval seed-kb
start() { # name command...
  local name="$1"; shift
  nohup "$@" >"$run/$name.log" 2>&1 &
  echo $! >"$run/$name.pid"
  say "$name started (pid $!, log $run/$name.log)"
}
# The reranker trains once (cached) in the background, at low priority: nobody waits for it.
# Until its folder appears retrieval answers on rrf_only (the reply's label says so), then it
# loads the model and answers on full. Progress: the training log (a progress bar per step).
reranker_dir="$($A retrieval reranker-dir)"
if [ -e "$reranker_dir/attesta_reranker.json" ] || [ -n "${ATTESTA_RERANKER_DIR:-}" ]; then
  say "reranker: cached ($reranker_dir)"
else
  start reranker-training nice -n 10 $A retrieval train-reranker
  say "reranker: training in the background -> $reranker_dir (until then retrieval serves rrf_only)"
fi
# The grounding gate's pair reader trains from that reranker once it is there (cached per recipe:
# a second run returns at once), nice'd, seeded, on one thread; the answer service's gate uses it
# from the moment its folder appears (docs/answer-quality.md, "Gate pair reader shipped").
start reader-training nice -n 10 $A answer train-reader --base "$reranker_dir" --wait 7200
# The local LLM (llama.cpp in `attesta run llm`, docs/local-llm.md): started, never waited for
# (it loads in seconds, assembles its model file once on the first run); ATTESTA_LOCAL_LLM=0
# leaves it out. With it the classifier's judge is the combined one (exact checks, then the model
# for the claims they cannot decide, docs/classifier-judge.md), without it the exact checks
# alone; the answer generator stays offline unless switched on (ATTESTA_ANSWER_GENERATOR=openai).
if [ "${ATTESTA_LOCAL_LLM:-1}" != 0 ]; then
  export ATTESTA_JUDGE="${ATTESTA_JUDGE:-combined}" ATTESTA_LLM_CONSTRAINT="${ATTESTA_LLM_CONSTRAINT:-gbnf}"
  export ATTESTA_LLM_LOCAL_URL="http://127.0.0.1:${ATTESTA_LLM_LOCAL_PORT:-8086}/v1"
  llm_model=qwen2.5-coder-1.5b-instruct-q4_k_m  # the name the judge records as "which model"
  if [ -z "${ATTESTA_LLM_BASE_URL:-}" ]; then
    export ATTESTA_LLM_BASE_URL="$ATTESTA_LLM_LOCAL_URL" ATTESTA_LLM_MODEL="${ATTESTA_LLM_MODEL:-$llm_model}"
  fi
  if [ -z "${ATTESTA_ANSWER_LLM_BASE_URL:-}" ]; then
    export ATTESTA_ANSWER_LLM_BASE_URL="$ATTESTA_LLM_LOCAL_URL" ATTESTA_ANSWER_LLM_MODEL="${ATTESTA_ANSWER_LLM_MODEL:-$llm_model}"
  fi
  ATTESTA_HEALTH_PORT=8087 start llm $A run llm
fi
start sites .venv/bin/python -m attesta_kb_tools.sites --port "$sites_port"
start classifier $A run classifier
start evidence $A run evidence
start collector $A run collector
ATTESTA_HEALTH_PORT=8083 start retrieval $A run retrieval
ATTESTA_HEALTH_PORT=8084 start answer $A run answer
start gateway $A run gateway

wait_ready() { # name url seconds
  local name="$1" url="$2" secs="$3"
  for _ in $(seq 1 $((secs * 5))); do
    curl -fs "$url" >/dev/null 2>&1 && { say "$name ready ($url)"; return 0; }
    kill -0 "$(cat "$run/$name.pid")" 2>/dev/null || { say "$name exited; last log lines:"; tail -30 "$run/$name.log"; exit 1; }
    sleep 0.2
  done
  say "$name not ready after ${secs}s; last log lines:"; tail -30 "$run/$name.log"; exit 1
}
wait_ready classifier http://127.0.0.1:8081/readyz 120
wait_ready evidence http://127.0.0.1:8082/readyz 120
wait_ready collector http://127.0.0.1:8085/readyz 120
wait_ready retrieval http://127.0.0.1:8083/readyz 900   # first start embeds the whole KB
wait_ready answer http://127.0.0.1:8084/readyz 120
wait_ready gateway "http://127.0.0.1:$ATTESTA_HTTP_PORT/readyz" 120

say "demo brands and their ground truth, fetched from the local brand sites"
$A classifier seed-demo --sites-base "http://127.0.0.1:$sites_port" --workspace demo --refresh
if [ ! -s "$state/demo-api-key" ]; then
  $A gateway keys create --workspace demo --name demo | tail -1 >"$state/demo-api-key"
fi
say "demo API key (workspace demo) in $state/demo-api-key"

say "main job"
.venv/bin/python scripts/demo.py --gateway "http://127.0.0.1:$ATTESTA_HTTP_PORT" \
  --api-key "$(cat "$state/demo-api-key")"
say "web app: http://127.0.0.1:$ATTESTA_HTTP_PORT/ (chat) and /verify"
if [ "${ATTESTA_LOCAL_LLM:-1}" != 0 ]; then
  if curl -fs http://127.0.0.1:8087/readyz >/dev/null 2>&1; then say "local LLM ready: $ATTESTA_LLM_LOCAL_URL"
  else say "local LLM not ready yet (http://127.0.0.1:8087/readyz; log $run/llm.log)"; fi
fi
say "services are running; stop them with: scripts/up.sh down && scripts/infra down"
