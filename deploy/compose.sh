#!/usr/bin/env bash
# The compose stack on the local engine, end to end:
#   deploy/compose.sh up       # build images (cached layers reused), `up -d`, wait until every
#                              # service is healthy and the one-shot jobs exited 0
#   deploy/compose.sh demo     # the main job (scripts/demo.py) inside the stack's network
#   deploy/compose.sh reranker # train the reranker into its volume (retrieval then switches from
#                              # rrf_only to the full path by itself); `up` does not wait for it
#   deploy/compose.sh down     # remove the stack and its volumes
#   deploy/compose.sh ps|logs [service]
# Env: ATTESTA_COMPOSE_PROJECT (default attesta), ATTESTA_COMPOSE_HTTP_PORT (gateway, default
# 8080 on 127.0.0.1), ATTESTA_COMPOSE_SUBNET, ATTESTA_SKIP_BUILD=1, ATTESTA_COMPOSE_TIMEOUT_S.
# Compose: Debian's docker-compose 1.29 (it works with Debian's engine 20.10 here); set
# ATTESTA_COMPOSE="docker compose" for the v2 plugin where one is installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export ATTESTA_COMPOSE_PROJECT="${ATTESTA_COMPOSE_PROJECT:-attesta}"
read -r -a COMPOSE <<<"${ATTESTA_COMPOSE:-docker-compose}"
COMPOSE+=(-p "$ATTESTA_COMPOSE_PROJECT" -f docker-compose.yml)
DOCKER="${DOCKER:-/usr/bin/docker}"; [ -x "$DOCKER" ] || DOCKER=docker
say() { printf '[compose] %s\n' "$*"; }
ONESHOT=(migrate seed)
LONG=(kafka postgres redis chroma sites retrieval answer classifier evidence collector gateway)

wait_healthy() {
  local t0=$SECONDS limit="${ATTESTA_COMPOSE_TIMEOUT_S:-2400}" pending s id st
  while :; do
    pending=()
    for s in "${ONESHOT[@]}"; do
      id=$("${COMPOSE[@]}" ps -q "$s" 2>/dev/null || true)
      [ -n "$id" ] || { pending+=("$s(not created)"); continue; }
      st=$("$DOCKER" inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$id")
      case "$st" in
        "exited 0") ;;
        exited*) say "$s failed ($st); its last log lines:"; "${COMPOSE[@]}" logs --tail=40 "$s"; return 1 ;;
        *) pending+=("$s($st)") ;;
      esac
    done
    for s in "${LONG[@]}"; do
      id=$("${COMPOSE[@]}" ps -q "$s" 2>/dev/null || true)
      [ -n "$id" ] || { pending+=("$s(not created)"); continue; }
      st=$("$DOCKER" inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$id")
      [ "$st" = healthy ] || pending+=("$s($st)")
    done
    if [ "${#pending[@]}" -eq 0 ]; then say "all healthy, one-shot jobs done: $((SECONDS - t0))s"; return 0; fi
    if [ $((SECONDS - t0)) -gt "$limit" ]; then
      say "not healthy after ${limit}s: ${pending[*]}"; "${COMPOSE[@]}" ps; return 1
    fi
    [ $(((SECONDS - t0) % 60)) -lt 5 ] && say "waiting ($((SECONDS - t0))s): ${pending[*]}"
    sleep 5
  done
}

case "${1:-}" in
  up)
    [ "${ATTESTA_SKIP_BUILD:-0}" = 1 ] || deploy/build-images.sh
    t0=$SECONDS
    # Each service waits for its dependencies' health (depends_on); `up -d` returns at once.
    "${COMPOSE[@]}" up -d
    wait_healthy
    say "compose up to healthy: $((SECONDS - t0))s"
    "${COMPOSE[@]}" logs seed | grep -E 'demo API key' || true
    say "gateway and web app: http://127.0.0.1:${ATTESTA_COMPOSE_HTTP_PORT:-8080}/"
    ;;
  wait) wait_healthy ;;
  demo) "${COMPOSE[@]}" run --rm -T --no-deps demo ;;
  reranker) "${COMPOSE[@]}" --profile reranker run --rm -T --no-deps reranker ;;
  down) "${COMPOSE[@]}" --profile demo --profile reranker down -v --remove-orphans ;;
  ps) "${COMPOSE[@]}" ps ;;
  logs) shift; "${COMPOSE[@]}" logs --tail=200 "$@" ;;
  *) echo "usage: deploy/compose.sh up|wait|demo|reranker|down|ps|logs [service]" >&2; exit 2 ;;
esac
