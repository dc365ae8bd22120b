"""``attesta answer <subcommand>``: the answer service's own tools (no Kafka needed).

- ``attesta answer try "question" [--cards ID ...] [--path full|rrf_only|dense_only|none]``:
  build one answer offline over cards of the shipped KB and print the reply JSON exactly as
  ``chat.answered.v1`` would carry it. Without ``--cards``, the 5 best BM25 matches are used.
  Logits 2.5, 1.5, ... stand in for the reranker on the full path.
- ``attesta answer strip-links "text"``: what the LLM–URL firewall leaves of a text.
- ``attesta answer train-reader --base RERANKER_DIR [--wait S] [--out DIR] [--pairs FILE]``: train the grounding
  gate's pair reader from the reranker (``attesta_answer.training.pair_reader``; seeded, one
  thread; cached per recipe, a second run does nothing). ``scripts/up.sh`` runs it in the
  background after the reranker; the service picks it up when it appears.
- ``attesta answer reader-dir``: where the service looks for the reader the shipped gate pins.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

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


def _train_reader(args: argparse.Namespace) -> None:
    # The training module (torch) loads only for this subcommand.
    from attesta_answer.training.pair_reader import already_trained, train, wait_for_base

    if args.wait:
        wait_for_base(args.base, args.wait)
    done = None if args.force else already_trained(args.base, args.out, pairs_file=args.pairs)
    if done is not None:
        print(f"pair reader already trained for this recipe: {done}", file=sys.stderr)
        print(str(done))
        return
    out, manifest = train(args.base, args.out, threads=args.threads, pairs_file=args.pairs)
    print(json.dumps({k: manifest[k] for k in ("version", "recipe_sha256", "sha256", "steps", "seconds",
                                                "final_loss_avg20")}), file=sys.stderr)
    print(str(out))


def _reader_dir() -> None:
    # The gate's artefact and settings load only for this subcommand.
    from attesta_answer.adapters.gate_artefact import load_gate
    from attesta_answer.adapters.pair_reader import default_reader_dir
    from attesta_answer.settings import AnswerSettings
    from attesta_platform.settings import load_settings

    settings = load_settings(AnswerSettings)
    spec = load_gate(settings.answer_gate_path).reader_spec
    if spec is None:
        raise SystemExit("the gate artefact names no pair reader")
    print(str(settings.answer_reader_dir or default_reader_dir(spec.recipe_sha256)))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="attesta answer")
    sub = parser.add_subparsers(dest="command", required=True)
    try_cmd = sub.add_parser("try", help="build one answer offline over KB cards; print the reply")
    try_cmd.add_argument("question")
    try_cmd.add_argument("--cards", nargs="+", metavar="CARD_ID")
    try_cmd.add_argument("--path", choices=[*(p.value for p in HybridPath), "none"], default="full")
    strip = sub.add_parser("strip-links", help="apply the LLM–URL firewall to a text")
    strip.add_argument("text")
    tr = sub.add_parser("train-reader", help="train the gate's pair reader from the reranker (cached)")
    tr.add_argument("--base", required=True, type=Path, help="the reranker's folder (attesta retrieval reranker-dir)")
    tr.add_argument("--out", type=Path, default=None, help="default: ~/.cache/attesta/pair-reader/<recipe>")
    tr.add_argument("--wait", type=float, default=0.0, metavar="S",
                    help="wait up to S seconds for the reranker to be trained")
    tr.add_argument("--threads", type=int, default=1)
    tr.add_argument("--pairs", type=Path, default=None,
                    help="the training pairs (default: services/answer/training_data/ of this checkout)")
    tr.add_argument("--force", action="store_true", help="train even if this recipe's reader exists")
    sub.add_parser("reader-dir", help="print where the service looks for the gate's pair reader")
    args = parser.parse_args(argv)

    if args.command == "train-reader":
        _train_reader(args)
        return
    if args.command == "reader-dir":
        _reader_dir()
        return

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
