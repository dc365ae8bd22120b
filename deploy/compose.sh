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
# 8080 on 127.0.0.1), ATTESTA_COMPOSE_SUBNET, ATTESTA_SKIP_BUILD=1, ATTESTA_COMPOSE_TIMEOUT_S,
# ATTESTA_COMPOSE_KAFKA=cluster (three Kafka nodes, replication factor 3, min.insync.replicas=2;
# give every command of one stack the same value).
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
case "${ATTESTA_COMPOSE_KAFKA:-single}" in
  single) ;;
  cluster)
    export ATTESTA_COMPOSE_KAFKA_VOTERS=1@kafka:9093,2@kafka-2:9093,3@kafka-3:9093 \
      ATTESTA_COMPOSE_KAFKA_BOOTSTRAP=kafka:9092,kafka-2:9092,kafka-3:9092 \
      ATTESTA_COMPOSE_KAFKA_REPLICAS=3 ATTESTA_COMPOSE_KAFKA_VOLUME=kafka-1-data \
      ATTESTA_COMPOSE_KAFKA_HEAP="${ATTESTA_COMPOSE_KAFKA_HEAP:-384m}"
    COMPOSE+=(--profile cluster)
    LONG+=(kafka-2 kafka-3)
    ;;
  *) echo "ATTESTA_COMPOSE_KAFKA must be single or cluster" >&2; exit 2 ;;
esac

# One docker call per poll (not a docker-compose start per service: that cost seconds of CPU
# each time, on a machine busy starting the stack). Prints "service status exit-code health".
states() {
  "$DOCKER" ps -aq --filter "label=com.docker.compose.project=$ATTESTA_COMPOSE_PROJECT" \
    --filter label=com.docker.compose.oneoff=False \
  | xargs -r "$DOCKER" inspect -f '{{index .Config.Labels "com.docker.compose.service"}} {{.State.Status}} {{.State.ExitCode}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}'
}

wait_healthy() {
  local t0=$SECONDS limit="${ATTESTA_COMPOSE_TIMEOUT_S:-2400}" said=0 s svc status code health
  local -A st
  while :; do
    st=()
    while read -r svc status code health; do st[$svc]="$status $code $health"; done < <(states)
    pending=()
    for s in "${ONESHOT[@]}"; do
      read -r status code health <<<"${st[$s]:-none 0 none}"
      case "$status $code" in
        "exited 0") ;;
        exited*) say "$s failed (exit $code); its last log lines:"; "${COMPOSE[@]}" logs --tail=40 "$s"; return 1 ;;
        *) pending+=("$s($status)") ;;
      esac
    done
    for s in "${LONG[@]}"; do
      read -r status code health <<<"${st[$s]:-none 0 none}"
      [ "$health" = healthy ] || pending+=("$s($status/$health)")
    done
    if [ "${#pending[@]}" -eq 0 ]; then say "all healthy, one-shot jobs done: $((SECONDS - t0))s"; return 0; fi
    if [ $((SECONDS - t0)) -gt "$limit" ]; then
      say "not healthy after ${limit}s: ${pending[*]}"; "${COMPOSE[@]}" ps; return 1
    fi
    if [ $((SECONDS - said)) -ge 60 ]; then say "waiting ($((SECONDS - t0))s): ${pending[*]}"; said=$SECONDS; fi
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
  down) "${COMPOSE[@]}" --profile demo --profile reranker --profile llm --profile cluster down -v --remove-orphans ;;
  ps) "${COMPOSE[@]}" ps ;;
  logs) shift; "${COMPOSE[@]}" logs --tail=200 "$@" ;;
  *) echo "usage: deploy/compose.sh up|wait|demo|reranker|down|ps|logs [service]" >&2; exit 2 ;;
esac
