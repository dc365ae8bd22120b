"""``attesta answer <subcommand>``: the answer service's own tools (no Kafka needed).

- ``attesta answer try "question" [--cards ID ...] [--path full|rrf_only|dense_only|none]``:
  build one answer offline over cards of the shipped KB and print the reply JSON exactly as
  ``chat.answered.v1`` would carry it. Without ``--cards``, the 5 best BM25 matches are used.
  Logits 2.5, 1.5, ... stand in for the reranker on the full path.
- ``attesta answer strip-links "text"``: what the LLM–URL firewall leaves of a text.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from attesta_contracts.chat import ChunkScores, ContextChunk, HybridPath, RetrievalCompleted


def _kb_chunks(question: str, card_ids: list[str] | None) -> list[ContextChunk]:
    # The KB's cards (and BM25 below) load only for ``try``, not for every ``attesta`` command.
    from attesta_kb.dataset import load_cards

    cards = load_cards()
    if card_ids:
        by_id = {c["card_id"]: c for c in cards}
        missing = [cid for cid in card_ids if cid not in by_id]
        if missing:
            raise SystemExit(f"unknown card id(s): {', '.join(missing)}")
        chosen = [by_id[cid] for cid in card_ids]
    else:
        import bm25s  # only when no card ids are given

        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize([f"{c['title']} {c['text']}" for c in cards],
                                       stopwords="en", show_progress=False), show_progress=False)
        ids, _ = retriever.retrieve(bm25s.tokenize([question], stopwords="en", show_progress=False),
                                    k=5, show_progress=False)
        chosen = [cards[j] for j in ids[0]]
    return [ContextChunk(id=c["card_id"], card_id=c["card_id"], title=c["title"], text=c["text"],
                         source=c.get("source"), metadata=c.get("metadata"),
                         scores=ChunkScores(rerank_logit=2.5 - rank))
            for rank, c in enumerate(chosen)]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="attesta answer")
    sub = parser.add_subparsers(dest="command", required=True)
    try_cmd = sub.add_parser("try", help="build one answer offline over KB cards; print the reply")
    try_cmd.add_argument("question")
    try_cmd.add_argument("--cards", nargs="+", metavar="CARD_ID")
    try_cmd.add_argument("--path", choices=[*(p.value for p in HybridPath), "none"], default="full")
    strip = sub.add_parser("strip-links", help="apply the LLM–URL firewall to a text")
    strip.add_argument("text")
    args = parser.parse_args(argv)

    if args.command == "strip-links":
        # Each subcommand imports what it runs when it is chosen (``attesta`` loads this module).
        from attesta_answer.domain.firewall import strip_links

        print(strip_links(args.text))
        return

    # ``try`` builds the service's bus (and the offline generator) only when it is chosen.
    from attesta_answer.bootstrap import build_bus
    from attesta_answer.domain.commands import BuildAnswer
    from attesta_answer.domain.extractive import OfflineGenerator

    retrieval = RetrievalCompleted(
        request_id="cli", question=args.question, chunks=_kb_chunks(args.question, args.cards),
        hybrid_path=None if args.path == "none" else HybridPath(args.path))
    built = asyncio.run(build_bus(OfflineGenerator()).handle(BuildAnswer(retrieval)))
    json.dump(built.reply.model_dump(mode="json"), sys.stdout, indent=2, ensure_ascii=False)
    print()
    for drop in built.dropped:
        print(f"dropped ({drop.reason.value}): {drop.card_id} {drop.span!r}", file=sys.stderr)
