"""Answer building with the offline generator, and enrichment cost per citation.

    .venv/bin/python benchmarks/answer_building.py [--queries 300] [--repeat 3]

Contexts: the top 5 cards that BM25 (bm25s, in this script) retrieves from the shipped KB for
each labelled question (dev + test splits), with reranker logits 2.5, 1.5, ... so the full
path's enrichment (score included) runs. Every number is measured in one run, side by side:

1. answer building (``build_answer``: link-free cards, offline draft, URL firewall,
   reconciliation, enrichment) p50/p99, against a floor: the walking skeleton's v0 extractor
   (one sentence with the most shared words, no reconciliation or enrichment);
2. enrichment (``_enrich``) per citation in microseconds, against the cost of serializing that
   citation to JSON (what every reply pays anyway);
3. answer quality floor: share of answers whose lead sentence comes from a card labelled as
   answering the question (grade 2), and share of ``no_context`` replies.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time

import bm25s

from attesta_answer.domain.citations import _enrich
from attesta_answer.domain.extractive import OfflineGenerator
from attesta_answer.service_layer.answering import build_answer
from attesta_contracts.chat import ChunkScores, ContextChunk, HybridPath, RetrievalCompleted
from attesta_kb.dataset import load_cards, load_queries


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def skeleton_v0(question: str, chunks: list[ContextChunk]) -> tuple[str, list[tuple[str, str]]]:
    """The floor: the walking skeleton's extractor, as it was before issue #5."""
    q = {w.lower() for w in _WORD.findall(question) if len(w) > 2}
    best = None
    for chunk in chunks[:3]:
        for sentence in _SENTENCE.split(chunk.text):
            overlap = len(q & {w.lower() for w in _WORD.findall(sentence)})
            if overlap and (best is None or overlap > best[0]):
                best = (overlap, sentence.strip(), chunk.card_id)
    if best is None:
        return "", []
    return best[1], [(best[2], best[1])]


def contexts(n_queries: int) -> list[tuple[dict, RetrievalCompleted]]:
    cards = load_cards()
    corpus = [f"{c['title']} {c['text']}" for c in cards]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    queries = (load_queries("dev") + load_queries("test"))[:n_queries]
    out = []
    for i, q in enumerate(queries):
        ids, _ = retriever.retrieve(bm25s.tokenize([q["question"]], stopwords="en", show_progress=False),
                                    k=5, show_progress=False)
        chunks = [ContextChunk(id=cards[j]["card_id"], card_id=cards[j]["card_id"],
                               title=cards[j]["title"], text=cards[j]["text"], source=cards[j]["source"],
                               metadata=cards[j]["metadata"],
                               scores=ChunkScores(rerank_logit=2.5 - rank, rrf=1 / (61 + rank)))
                  for rank, j in enumerate(ids[0])]
        out.append((q, RetrievalCompleted(request_id=f"bench-{i}", question=q["question"],
                                          chunks=chunks, hybrid_path=HybridPath.FULL)))
    return out


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    data = contexts(args.queries)
    generator = OfflineGenerator()
    generator.warm_up()
    for _, r in data[:20]:  # warm caches (stemmer, TLD table) outside the measurement
        await build_answer(r, generator)

    build_ms, floor_ms, enrich_us, dump_us = [], [], [], []
    grade2 = no_context = 0
    replies = []
    # Pass 1: answer building and the floor, nothing else in the loop.
    for rep in range(args.repeat):
        for q, r in data:
            started = time.perf_counter()
            built = await build_answer(r, generator)
            build_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            skeleton_v0(r.question, r.chunks)
            floor_ms.append((time.perf_counter() - started) * 1000)
            if rep == 0:
                replies.append((r, built.reply))
                if built.reply.status == "no_context":
                    no_context += 1
                elif q["relevant"].get(built.reply.citations[0].card_id) == 2:
                    grade2 += 1
    # Pass 2: enrichment of each reply's citations (stripped of their enrichment first), and
    # serializing the same citations, for scale.
    loops = 50
    for r, reply in replies:
        if not reply.citations:
            continue
        bare = [c.model_copy(update=dict.fromkeys(
            ("source_url", "source_license", "retrieved_score"))) for c in reply.citations]
        started = time.perf_counter()
        for _ in range(loops):
            _enrich(bare, r.chunks, r.hybrid_path)
        enrich_us.append((time.perf_counter() - started) / (loops * len(bare)) * 1e6)
        started = time.perf_counter()
        for _ in range(loops):
            for c in reply.citations:
                c.model_dump_json()
        dump_us.append((time.perf_counter() - started) / (loops * len(bare)) * 1e6)

    n = len(data)
    print(f"questions: {n} (dev+test, BM25 top-5 contexts), repeats: {args.repeat}, "
          f"python {sys.version.split()[0]}")
    print("answer building (offline generator, everything included), ms:")
    print(f"  p50 {pct(build_ms, 50):.3f}  p90 {pct(build_ms, 90):.3f}  p99 {pct(build_ms, 99):.3f}  "
          f"mean {statistics.fmean(build_ms):.3f}")
    print("floor: walking-skeleton v0 extractor (no firewall/reconcile/enrich), ms:")
    print(f"  p50 {pct(floor_ms, 50):.3f}  p99 {pct(floor_ms, 99):.3f}  "
          f"-> ratio p50 {pct(build_ms, 50) / pct(floor_ms, 50):.1f}x, p99 {pct(build_ms, 99) / pct(floor_ms, 99):.1f}x")
    print("enrichment (_enrich) per citation, microseconds (full path: url + licence + score):")
    print(f"  p50 {pct(enrich_us, 50):.2f}  p99 {pct(enrich_us, 99):.2f}  "
          f"vs serializing that citation to JSON p50 {pct(dump_us, 50):.2f} "
          f"-> ratio {pct(enrich_us, 50) / pct(dump_us, 50):.1f}x")
    print(f"quality floor: lead sentence from a grade-2 card {grade2}/{n} = {grade2 / n:.1%}; "
          f"no_context {no_context}/{n} = {no_context / n:.1%}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
