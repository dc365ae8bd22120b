#!/usr/bin/env bash
# Brings the whole (current) system up on 127.0.0.1 and runs its main job: installs the venv,
# starts Kafka/PostgreSQL/Redis, starts retrieval, answer and gateway as separate processes,
# asks one question through POST /v1/chat and prints the answer with the topics' offsets.
# Services keep running (logs and pids in .state/services); stop them with `scripts/up.sh down`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
state="${ATTESTA_STATE_DIR:-$PWD/.state}"
run="$state/services"
mkdir -p "$run"
port="${ATTESTA_HTTP_PORT:-8080}"

stop_services() {
  for f in "$run"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null && grep -q attesta_platform.cli "/proc/$pid/cmdline" 2>/dev/null; then
      kill -TERM "$pid" && echo "[up] stopped $(basename "$f" .pid) (pid $pid)"
    fi
    rm -f "$f"
  done
}
if [ "${1:-}" = down ]; then stop_services; exit 0; fi

scripts/install.sh
scripts/infra up
# shellcheck disable=SC1091
. "$state/env"
stop_services
for svc in retrieval answer gateway; do
  ATTESTA_HTTP_PORT="$port" nohup .venv/bin/python -m attesta_platform.cli run "$svc" \
    >"$run/$svc.log" 2>&1 &
  echo $! >"$run/$svc.pid"
  echo "[up] $svc started (pid $!, log $run/$svc.log)"
done
for _ in $(seq 1 300); do
  curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fs "http://127.0.0.1:$port/readyz" >/dev/null || { echo "[up] gateway not ready; see $run/gateway.log"; tail -20 "$run/gateway.log"; exit 1; }
echo "[up] gateway ready on http://127.0.0.1:$port"
echo "[up] main job: one chat question through Kafka"
.venv/bin/python - "$port" <<'PY'
import asyncio, json, sys
import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition
import os

TOPICS = ["chat.requested.v1", "retrieval.completed.v1", "chat.answered.v1"]

async def offsets():
    c = AIOKafkaConsumer(bootstrap_servers=os.environ["KAFKA_BOOTSTRAP_SERVERS"])
    await c.start()
    try:
        n = int(os.environ.get("ATTESTA_KAFKA_PARTITIONS", "3"))  # services create topics with n
        parts = [TopicPartition(t, p) for t in TOPICS for p in range(n)]
        ends = await c.end_offsets(parts)
        return {t: sum(v for k, v in ends.items() if k.topic == t) for t in TOPICS}
    finally:
        await c.stop()

before = asyncio.run(offsets())
r = httpx.post(f"http://127.0.0.1:{sys.argv[1]}/v1/chat",
               json={"question": "What is the usual adult dose of Velnorex?"}, timeout=60)
after = asyncio.run(offsets())
print(f"POST /v1/chat -> HTTP {r.status_code}")
print(json.dumps(r.json(), indent=2)[:1500])
for t in TOPICS:
    print(f"  {t}: end offset {before[t]} -> {after[t]}")
PY
echo "[up] services are running; stop them with: scripts/up.sh down && scripts/infra down"
