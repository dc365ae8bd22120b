"""JSON Schema snapshots of every topic's wire shape (``Envelope[<Payload>]``).

The snapshots under ``libs/contracts/schemas/<topic-name>.json`` are committed: they are what
consumers code against. Regenerate them after a deliberate contract change and review the diff::

    python -m attesta_contracts.schemas --write   # regenerate the committed snapshots
    python -m attesta_contracts.schemas --check   # exit 1 if they differ from the code

Schemas are generated in pydantic's *validation* mode: that is the shape a consumer parses
(serialization mode reflects our serializers, e.g. ``Citation`` dropping unset fields, and is not
what an independent consumer validates against).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any

from attesta_contracts.envelope import Envelope
from attesta_contracts.topics import Topic, all_topics

# libs/contracts/schemas (this file is libs/contracts/src/attesta_contracts/schemas.py).
SNAPSHOT_DIR = Path(__file__).resolve().parents[2] / "schemas"


def envelope_schema(topic: Topic) -> dict[str, Any]:
    """The JSON Schema (validation mode) of the envelope carrying ``topic``'s payload."""
    # name-defined: mypy reads Envelope[...] as a type, and the payload class is a runtime value.
    return Envelope[topic.payload].model_json_schema(mode="validation")  # type: ignore[name-defined]


def render(schema: dict[str, Any]) -> str:
    """The canonical snapshot text: sorted keys, indent 2, trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def snapshot_path(topic: Topic, directory: Path | str = SNAPSHOT_DIR) -> Path:
    return Path(directory) / f"{topic.name}.json"


def current_snapshots() -> dict[str, str]:
    """``{file name: snapshot text}`` for every registered topic, as the code defines it."""
    return {f"{t.name}.json": render(envelope_schema(t)) for t in all_topics().values()}


def load_snapshot(topic: Topic, directory: Path | str = SNAPSHOT_DIR) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(snapshot_path(topic, directory).read_text(encoding="utf-8"))
    return schema


def write_snapshots(directory: Path | str = SNAPSHOT_DIR) -> list[Path]:
    """Write every topic's snapshot into ``directory``; return the paths written.
    Stale ``*.json`` files for topics no longer registered are removed."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    wanted = current_snapshots()
    written = []
    for name, text in wanted.items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    for stale in directory.glob("*.json"):
        if stale.name not in wanted:
            stale.unlink()
    return written


def check_snapshots(directory: Path | str = SNAPSHOT_DIR) -> list[str]:
    """Differences between the committed snapshots and the code, as readable lines
    (empty when they match)."""
    directory = Path(directory)
    wanted = current_snapshots()
    problems: list[str] = []
    for name, text in wanted.items():
        path = directory / name
        if not path.exists():
            problems.append(f"missing snapshot: {path}")
            continue
        committed = path.read_text(encoding="utf-8")
        if committed != text:
            diff = list(
                difflib.unified_diff(
                    committed.splitlines(), text.splitlines(),
                    fromfile=f"committed/{name}", tofile=f"code/{name}", lineterm="", n=1,
                )
            )
            changed = sum(1 for d in diff if d[:1] in "+-" and d[:3] not in ("+++", "---"))
            problems.append(f"out of date: {path} ({changed} changed lines)")
            problems.extend("    " + d for d in diff[:60])
            if len(diff) > 60:
                problems.append(f"    ... {len(diff) - 60} more diff lines")
    if directory.exists():
        for extra in sorted(directory.glob("*.json")):
            if extra.name not in wanted:
                problems.append(f"snapshot for an unregistered topic: {extra}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attesta_contracts.schemas", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate the snapshots")
    mode.add_argument("--check", action="store_true", help="exit 1 if snapshots are out of date")
    parser.add_argument("--dir", type=Path, default=SNAPSHOT_DIR, help="snapshot directory")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_snapshots(args.dir):
            print(f"wrote {path}")
        return 0
    problems = check_snapshots(args.dir)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(
            f"\n{sum(1 for p in problems if not p.startswith('    '))} snapshot problem(s); "
            "if the change is deliberate run `python -m attesta_contracts.schemas --write` "
            "and review the diff (breaking changes need a new topic version).",
            file=sys.stderr,
        )
        return 1
    print(f"{len(all_topics())} schema snapshots up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
