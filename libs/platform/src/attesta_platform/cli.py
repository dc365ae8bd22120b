"""The one ``attesta`` command.

- ``attesta run <service>``: start one service process (wiring: ``attesta_<service>.bootstrap``).
- ``attesta <service> <subcommand> ...``: a service's own tools (``attesta_<service>.cli``),
  e.g. ``attesta gateway keys create``, ``attesta evidence verify``, ``attesta classifier backfill``,
  ``attesta retrieval train-reranker``, ``attesta llm model-path``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SERVICES = ("retrieval", "answer", "classifier", "evidence", "gateway", "collector", "llm")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SERVICES:  # a service's own subcommands: its module parses them
        importlib.import_module(f"attesta_{argv[0]}.cli").main(argv[1:])
        return
    parser = argparse.ArgumentParser(
        prog="attesta",
        epilog="service tools: attesta {" + ",".join(SERVICES) + "} --help",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one service process")
    run.add_argument("service", choices=SERVICES)
    args = parser.parse_args(argv)
    importlib.import_module(f"attesta_{args.service}.bootstrap").main()


if __name__ == "__main__":
    main()
