"""``attesta run <service>``: start one service process (its wiring is ``attesta_<service>.bootstrap``)."""

from __future__ import annotations

import argparse
import importlib

SERVICES = ("retrieval", "answer", "gateway")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="attesta")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one service process")
    run.add_argument("service", choices=SERVICES)
    args = parser.parse_args(argv)
    importlib.import_module(f"attesta_{args.service}.bootstrap").main()


if __name__ == "__main__":
    main()
