"""``attesta retrieval <subcommand>``: the retrieval service's own tools.

- ``seed-kb``: publish the shipped KB cards to ``kb.cards.v1`` keyed by card id; cards whose
  current version on the topic already has the same content hash are not published again.
- ``train-reranker``: fine-tune the cross-encoder on the train split (cached on disk).
- ``reranker-dir``: print the folder the service loads the reranker from.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from attesta_platform.settings import load_settings
from attesta_retrieval.settings import RetrievalSettings


def _seed(args: argparse.Namespace) -> None:
    # the CLI imports a subcommand's wiring only when it runs (here Kafka and the KB)
    from attesta_retrieval.service_layer.seeding import kafka_options, seed_kb

    summary = asyncio.run(seed_kb(kafka_options(args.settings, args.bootstrap), args.topic,
                                  progress=not args.quiet, prune=args.prune))
    print(json.dumps(summary))


def _train(args: argparse.Namespace) -> None:
    # the CLI imports a subcommand's wiring only when it runs (here the training's retriever)
    from attesta_retrieval.service_layer.reranker_training import (
        TrainingConfig, default_reranker_dir, read_manifest, train)

    overrides = {k: v for k, v in {"max_steps": args.max_steps, "max_length": args.max_length,
                                   "time_budget_s": args.time_budget_s,
                                   "max_queries": args.max_queries,
                                   "calibration_every": args.calibration_every}.items() if v is not None}
    config = TrainingConfig(**overrides)
    out = Path(args.out) if args.out else default_reranker_dir(config)
    if not args.force and read_manifest(out) is not None:
        print(f"reranker already trained for this data and config: {out}", file=sys.stderr)
        print(str(out))
        return
    manifest = train(config, out, progress=not args.quiet)
    print(json.dumps({"steps": manifest["steps"], "seconds": manifest["seconds"],
                      "data": manifest["data"], "final_loss_avg20": manifest["final_loss_avg20"]}),
          file=sys.stderr)
    print(str(out))


def _where(args: argparse.Namespace) -> None:
    # the CLI imports a subcommand's wiring only when it runs (here the service's, about 1 s)
    from attesta_retrieval.bootstrap import resolve_reranker_dir

    print(str(resolve_reranker_dir(load_settings(RetrievalSettings))))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="attesta retrieval")
    sub = parser.add_subparsers(dest="command", required=True)
    seed = sub.add_parser("seed-kb", help="publish the shipped KB cards to the KB topic")
    seed.add_argument("--bootstrap", default=None, help="Kafka (default: KAFKA_BOOTSTRAP_SERVERS)")
    seed.add_argument("--topic", default=None, help="default: ATTESTA_RETRIEVAL_KB_TOPIC or kb.cards.v1")
    seed.add_argument("--prune", action="store_true",
                      help="also retract cards on the topic that the shipped KB no longer has")
    seed.add_argument("--quiet", action="store_true")
    seed.set_defaults(func=_seed)
    tr = sub.add_parser("train-reranker", help="fine-tune the cross-encoder (train split only)")
    tr.add_argument("--out", default=None, help="default: ~/.cache/attesta/reranker/<hash>")
    tr.add_argument("--max-steps", type=int, default=None)
    tr.add_argument("--max-length", type=int, default=None)
    tr.add_argument("--max-queries", type=int, default=None)
    tr.add_argument("--time-budget-s", type=float, default=None)
    tr.add_argument("--calibration-every", type=int, default=None,
                    help="keep every n-th train question for calibration (fewer: a quicker fit)")
    tr.add_argument("--force", action="store_true", help="train even if a cached model exists")
    tr.add_argument("--quiet", action="store_true")
    tr.set_defaults(func=_train)
    wh = sub.add_parser("reranker-dir", help="print where the service looks for the reranker")
    wh.set_defaults(func=_where)
    args = parser.parse_args(argv)
    if args.command == "seed-kb":
        args.settings = load_settings(RetrievalSettings)
        args.topic = args.topic or args.settings.retrieval_kb_topic
    args.func(args)
