"""The main job of `scripts/up.sh`, against the running system through the gateway only.

1. A chat question: POST /v1/chat. The topics' end offsets before and after show it went through
   Kafka; the answer carries enriched citations (source URL, licence, and a 0-100 score on the
   `full` hybrid path).
2. The answer became a run: the classifier's verdict per tracked brand (GET /v1/runs/{id}).
3. The answer's exact bytes are public evidence: GET /v1/public/evidence/{sha256} with its
   inclusion proof, a byte-for-byte check, and the offline verifier (public key only).
4. An external engine's run (POST /v1/runs with an Idempotency-Key) that links a brand's site,
   classified STRONG.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import uuid

import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

TOPICS = ["chat.requested.v1", "retrieval.completed.v1", "chat.answered.v1", "runs.recorded.v1",
          "evidence.recorded.v1", "classification.recorded.v1"]
QUESTION = "What is the usual adult dose of Velnorex?"


async def end_offsets() -> dict[str, int]:
    bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics(TOPICS)
    finally:
        await admin.close()
    parts = [TopicPartition(d["topic"], p["partition"]) for d in described
             for p in d.get("partitions", [])]
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await c.start()
    try:
        ends = await c.end_offsets(parts)
        return {t: sum(v for k, v in ends.items() if k.topic == t) for t in TOPICS}
    finally:
        await c.stop()


def poll(fn, what: str, timeout_s: float = 180.0):
    deadline = time.monotonic() + timeout_s
    while True:
        result = fn()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            sys.exit(f"[demo] FAILED: {what} not ready within {timeout_s:g} s")
        time.sleep(0.5)


def show_run(http: httpx.Client, run_id: str) -> dict:
    def classified():
        r = http.get(f"/v1/runs/{run_id}")
        if r.status_code != 200:
            return None
        view = r.json()
        return view if view["brands"] and all(b["status"] != "pending" for b in view["brands"]) else None

    view = poll(classified, f"classification of run {run_id}")
    for b in view["brands"]:
        how = b.get("decided_by") or "-"
        model = f" by {b['judge_model']}" if b.get("judge_model") else ""
        print(f"    {b['brand_id']:<10} {b['status']:<10} {b.get('citation_class') or '-':<13} "
              f"{how}{model}")
    return view


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gateway", default="http://127.0.0.1:8080")
    ap.add_argument("--api-key", required=True)
    args = ap.parse_args()
    public = httpx.Client(base_url=args.gateway, timeout=60)
    private = httpx.Client(base_url=args.gateway, timeout=60,
                           headers={"authorization": f"Bearer {args.api_key}"})

    print(f"[demo] 1. POST /v1/chat {QUESTION!r}")
    before = asyncio.run(end_offsets())
    r = public.post("/v1/chat", json={"question": QUESTION})
    after = asyncio.run(end_offsets())
    if r.status_code != 200:
        sys.exit(f"[demo] FAILED: /v1/chat -> HTTP {r.status_code}: {r.text}")
    reply = r.json()
    print(f"  HTTP 200, hybrid path {reply.get('hybrid_path')!r}, generator {reply['generator']!r}")
    print(f"  answer: {reply['answer']}")
    for c in reply["citations"]:
        print(f"  cites {c['card_id']}: score={c.get('retrieved_score', '(absent)')} "
              f"licence={c.get('source_license', '(absent)')} url={c.get('source_url', '(absent)')}")
    for t in TOPICS[:3]:
        print(f"  {t}: end offset {before[t]} -> {after[t]}")

    run_id, sha = reply.get("run_id"), reply.get("answer_sha256")
    if run_id:
        print(f"[demo] 2. our own answer as run {run_id}: classes per tracked brand")
        show_run(private, run_id)

    print(f"[demo] 3. public evidence for the answer's bytes (sha256 {sha})")
    ev = poll(lambda: (lambda x: x.json() if x.status_code == 200 and x.json().get("inclusion")
                       else None)(public.get(f"/v1/public/evidence/{sha}")), "evidence record")
    print(f"  GET /v1/public/evidence/{sha[:12]}...: {ev['size_bytes']} bytes, leaf "
          f"{ev['inclusion']['leaf_index']} of tree size {ev['tree_head']['tree_size']}")
    chk = public.post(f"/v1/public/evidence/{sha}/check", json={"content": reply["answer"]}).json()
    print(f"  POST .../check with the answer text -> match={chk.get('match')}")
    # The verifier trusts nothing the server says: only the public key, which the operator
    # publishes out of band (here: the file `attesta evidence keygen` wrote next to the key).
    pem = os.environ.get("ATTESTA_EVIDENCE_SIGNING_KEY_FILE",
                         ".state/evidence/log-signing-key.pem") + ".pub"
    verify = subprocess.run(
        [sys.executable, "-m", "attesta_platform.cli", "evidence", "verify", "inclusion",
         "--base-url", args.gateway, "--public-key", pem, "--content", reply["answer"]],
        capture_output=True, text=True)
    print(f"  attesta evidence verify inclusion -> exit {verify.returncode}: "
          f"{(verify.stdout or verify.stderr).strip().splitlines()[-1] if (verify.stdout or verify.stderr).strip() else ''}")
    if verify.returncode != 0:
        sys.exit("[demo] FAILED: the offline verifier did not accept the proof")

    print("[demo] 4. an external engine's run (POST /v1/runs, Idempotency-Key)")
    body = {"engine": "demo-engine", "model": "demo-model",
            "prompt": "Which companies make migraine medicines?",
            "answer": "Lumora Therapeutics (https://lumora.example/products) makes Velnorex.",
            "brand_ids": ["lumora"]}
    ik = str(uuid.uuid4())
    first = private.post("/v1/runs", json=body, headers={"idempotency-key": ik})
    again = private.post("/v1/runs", json=body, headers={"idempotency-key": ik})
    if first.status_code != 202:
        sys.exit(f"[demo] FAILED: POST /v1/runs -> HTTP {first.status_code}: {first.text}")
    print(f"  HTTP {first.status_code} run {first.json()['run_id']}; replay with the same key -> "
          f"HTTP {again.status_code}, same body: {again.json() == first.json()}")
    show_run(private, first.json()["run_id"])
    print("[demo] done. Try it yourself:")
    print(f"  curl -s {args.gateway}/v1/public/evidence/{sha}")
    print(f"  curl -s -X POST {args.gateway}/v1/public/evidence/{sha}/check "
          f"-H 'content-type: application/json' -d {json.dumps(json.dumps({'content': reply['answer']}))}")


if __name__ == "__main__":
    main()
