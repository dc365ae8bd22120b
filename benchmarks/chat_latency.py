"""Chat latency through the running gateway, per hybrid path, next to the models' own time.

    .venv/bin/python benchmarks/chat_latency.py --api-key "$(cat .state/demo-api-key)" \
        [--gateway http://127.0.0.1:8080] [--requests 60] [--label after]

Against a running system (``scripts/up.sh``): POST /v1/chat with the demo API key, one question
at a time (the held-out questions' wording, cycled; only their text is used), and for each reply
the wall time seen by the client, the path the reply is labelled with, and the services' own
timings from the reply (``timings_ms``): the models' time is retrieval's question embedding +
cross-encoder + sentence evidence (``retrieval.embed`` + ``retrieval.rerank`` +
``retrieval.evidence``); the rest is Kafka hops, fusion, answering and the gateway.

Results are grouped by the reply's path label (``rrf_only`` while the reranker is not loaded,
``full`` once it is) and appended to ``benchmarks/results/chat_latency.jsonl`` with the load
average, so the docs can put the runs side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
MODEL_KEYS = ("retrieval.embed", "retrieval.rerank", "retrieval.evidence")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else 0.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gateway", default="http://127.0.0.1:8080")
    ap.add_argument("--api-key", required=True)
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--label", default="after")
    args = ap.parse_args(argv)
    questions = [q["question"] for q in json.loads(
        (ROOT / "benchmarks" / "data" / "assistant_heldout.json").read_text())["questions"]]
    client = httpx.Client(base_url=args.gateway, timeout=120,
                          headers={"authorization": f"Bearer {args.api_key}"})
    load_before = os.getloadavg()[0]
    per_path: dict[str, dict[str, list[float]]] = {}
    for i in range(args.requests):
        question = questions[i % len(questions)]
        t0 = time.perf_counter()
        r = client.post("/v1/chat", json={"question": question})
        wall = (time.perf_counter() - t0) * 1000
        if r.status_code != 200:
            sys.exit(f"/v1/chat -> HTTP {r.status_code}: {r.text[:300]}")
        reply = r.json()
        timings = reply.get("timings_ms") or {}
        got = per_path.setdefault(str(reply.get("hybrid_path")), {"wall": [], "models": [], "retrieval": []})
        got["wall"].append(wall)
        got["models"].append(sum(float(timings.get(k, 0.0)) for k in MODEL_KEYS))
        got["retrieval"].append(float(timings.get("retrieval.total", 0.0)))
    result = {"label": args.label, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "load_average": round((load_before + os.getloadavg()[0]) / 2, 1), "paths": {}}
    for path, got in per_path.items():
        result["paths"][path] = {
            "n": len(got["wall"]),
            **{f"{name}_ms_p{q}": round(pct(got[name], q), 1)
               for name in ("wall", "models", "retrieval") for q in (50, 95)}}
        row = result["paths"][path]
        print(f"{args.label} {path:<9} n={row['n']:<4} chat p50/p95 {row['wall_ms_p50']:.0f}/"
              f"{row['wall_ms_p95']:.0f} ms | retrieval {row['retrieval_ms_p50']:.0f}/"
              f"{row['retrieval_ms_p95']:.0f} ms | models' own {row['models_ms_p50']:.0f}/"
              f"{row['models_ms_p95']:.0f} ms | load average {result['load_average']}")
    out = ROOT / "benchmarks" / "results" / "chat_latency.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
