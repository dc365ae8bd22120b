"""The LLM path measured against a real model on 127.0.0.1, next to the offline defaults (#14 item 6, #18).

    .venv/bin/attesta run llm &          # the local model on 127.0.0.1:8086 (scripts/up.sh starts it too)
    .venv/bin/python benchmarks/llm_path.py judge  [--base-url http://127.0.0.1:8086/v1] [--files heldout3_never_tune.json]
    .venv/bin/python benchmarks/llm_path.py answer [--base-url http://127.0.0.1:8086/v1] [--every 11]

The model server (`attesta run llm`, docs/local-llm.md) is installed by scripts/install.sh; wait
for its /readyz (ATTESTA_HEALTH_PORT) or its llama.cpp /health before measuring.

``judge``: the classifier's held-out files, heuristic first, then the LLM judge (``LLMJudge``:
the real prompt, the JSON schema as ``response_format``, every verdict validated against its
claims and fact ids, up to three attempts) where the offline judge is used in production; the
same tables as ``classifier_accuracy.py --heldout``, and the model's time per judged pair.

``answer``: the assistant's held-out questions (``benchmarks/data/assistant_heldout.json``),
every ``--every``-th one (the model is slow on a shared 2-core machine), retrieval on the
``rrf_only`` path, then ``build_answer`` with the offline generator and with the LLM generator
on the same cards: answered / false answers / first citation relevant / citations dropped by
reconciliation / latency. Results go to ``benchmarks/results/llm_path_<what>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _config(args):
    from attesta_platform.llm import LLMConfig

    return LLMConfig(base_url=args.base_url, model=args.model, api_key="local", timeout_s=args.timeout_s)


def run_judge(args) -> dict:
    from classifier_accuracy import evaluate_heldout, report_heldout

    from attesta_classifier.adapters.judges import LLMJudge
    from attesta_platform.llm import ChatCompletionsClient

    class Traced(LLMJudge):  # one line per judged pair, so a slow run shows where it is
        async def judge(self, *, run, brand, facts):
            t0 = time.perf_counter()
            try:
                d = await super().judge(run=run, brand=brand, facts=facts)
                print(f"{run.run_id}: {d.citation_class.value} in {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
                return d
            except Exception as exc:
                print(f"{run.run_id}: no verdict in {time.perf_counter() - t0:.0f} s: {str(exc)[:200]}",
                      file=sys.stderr, flush=True)
                raise

    out: dict = {"model": args.model, "base_url": args.base_url, "every": args.every, "files": {}}
    for name in args.files:
        judge = Traced(ChatCompletionsClient(_config(args)), verdict_attempts=args.attempts, backoff_s=0.0)
        started = time.perf_counter()
        ev = asyncio.run(evaluate_heldout(name, judge=judge, every=args.every))
        wall = time.perf_counter() - started
        times = [r["judge_s"] for r in ev["results"] if "judge_s" in r]
        table = report_heldout(ev)
        timing = (f"{len(times)} pairs sent to the LLM judge in {wall:.0f} s; per pair p50 "
                  f"{statistics.median(times):.1f} s, max {max(times):.1f} s" if times else "no pair judged")
        print(f"## {name}\n\n{table}\n\n{timing}\n", flush=True)
        out["files"][name] = {"table": table, "timing": timing,
                              "results": [{k: r[k] for k in ("id", "label", "lang", "pred", "by", "reason")}
                                          for r in ev["results"]]}
    return out


async def _answers(args) -> dict:
    from attesta_answer.adapters.llm_generator import LLMGenerator
    from attesta_answer.domain.extractive import OfflineGenerator
    from attesta_answer.service_layer.answering import build_answer
    from attesta_contracts.chat import HybridPath, RetrievalCompleted
    from attesta_kb import load_cards
    from attesta_retrieval.adapters.embedder import Embedder
    from attesta_retrieval.service_layer.evidence import SentenceEvidence
    from attesta_retrieval.service_layer.offline import build_index
    from attesta_retrieval.service_layer.retrieval import HybridRetriever, RerankerSlot, RetrievalConfig

    questions = json.loads((ROOT / "benchmarks" / "data" / "assistant_heldout.json").read_text())["questions"]
    questions = questions[:: args.every]
    index, _ = build_index(load_cards(), Path(args.state_dir), Embedder())
    evidence = SentenceEvidence(index.embedder)
    evidence.warm(list(index.cards.values()))
    retriever = HybridRetriever(index, RerankerSlot(), RetrievalConfig(), evidence=evidence)
    offline = OfflineGenerator()
    offline.warm_up()
    llm = LLMGenerator(_config(args), budget_s=args.timeout_s)
    rows = []
    for q in questions:
        out = await retriever.retrieve(q["question"], 10, force_path=HybridPath.RRF_ONLY)
        completed = RetrievalCompleted(request_id=q["id"], question=q["question"], top_k=5, chunks=out.chunks[:5],
                                       hybrid_path=out.hybrid_path, path_reason=out.path_reason,
                                       timings_ms=out.timings_ms)
        row = {"id": q["id"], "style": q["style"], "relevant": q["relevant"]}
        for name, gen in (("offline", offline), ("llm", llm)):
            t0 = time.perf_counter()
            built = await build_answer(completed, gen)
            reply = built.reply
            row[name] = {"status": str(reply.status), "answer": reply.answer, "error": reply.error,
                         "cited": [c.card_id for c in reply.citations], "dropped": len(built.dropped),
                         "s": time.perf_counter() - t0}
        print(json.dumps({k: row[k] for k in ("id", "style")} | {
            n: {k: row[n][k] for k in ("status", "cited", "dropped", "s")} for n in ("offline", "llm")}),
            file=sys.stderr, flush=True)
        rows.append(row)
    await llm.aclose()
    return {"model": args.model, "every": args.every, "rows": rows, "summary": summarise(rows)}


def summarise(rows: list[dict]) -> dict:
    out = {}
    for name in ("offline", "llm"):
        answerable = [r for r in rows if r["relevant"]]
        unanswerable = [r for r in rows if not r["relevant"]]
        answered = [r for r in answerable if r[name]["status"] == "answered"]
        first_ok = [r for r in answered if r["relevant"].get(r[name]["cited"][0], 0) > 0]
        secs = sorted(r[name]["s"] for r in rows)
        out[name] = {
            "answered": f"{len(answered)}/{len(answerable)}",
            "false_answers": f"{sum(r[name]['status'] == 'answered' for r in unanswerable)}/{len(unanswerable)}",
            "first_citation_relevant": f"{len(first_ok)}/{len(answered)}",
            "failed": sum(r[name]["status"] == "failed" for r in rows),
            "citations_dropped_by_reconciliation": sum(r[name]["dropped"] for r in rows),
            "answers_with_a_dropped_citation": sum(r[name]["dropped"] > 0 for r in rows),
            "latency_s_p50": round(statistics.median(secs), 2),
            "latency_s_max": round(secs[-1], 2),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["judge", "answer"])
    parser.add_argument("--base-url", default=os.environ.get("ATTESTA_LLM_LOCAL_URL", "http://127.0.0.1:8086/v1"))
    parser.add_argument("--model", default="local")
    parser.add_argument("--timeout-s", type=float, default=600.0,
                        help="per request: the model is slow on a shared CPU (the service's budgets are lower)")
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--files", nargs="+", default=["heldout3_never_tune.json"])
    parser.add_argument("--every", type=int, default=1,
                        help="every n-th case / held-out question only (the model is slow on a shared CPU)")
    parser.add_argument("--state-dir", default=str(ROOT / ".state" / "llm-path"))
    parser.add_argument("--label", default="")
    args = parser.parse_args(argv)
    if args.what == "judge":
        result = run_judge(args)
    else:
        result = asyncio.run(_answers(args))
        print(json.dumps(result["summary"], indent=1))
    result["load_average"] = os.getloadavg()
    out = ROOT / "benchmarks" / "results" / f"llm_path_{args.what}{'_' + args.label if args.label else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, ensure_ascii=False, default=str) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
