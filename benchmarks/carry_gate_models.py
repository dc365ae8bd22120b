"""Carry some of a grounding gate's models from an earlier artefact into a new one.

The keep rule of the held-out looks (docs/answer-quality.md) can keep a refit for one path and
not for another: e.g. gate 2026.12.e689d482 gained on the `full` path on the 2026-12-05d split
but lost on `rrf_only`, whose models its refit had changed. This writes the new artefact with the
named groups' models taken from the earlier one, exactly as they decided there (features added
since get weight 0: mean 0, scale 1), records them under ``training.carried`` and gives the result
its own version and content sha256, as ``train_grounding_gate.py`` does.

    .venv/bin/python benchmarks/carry_gate_models.py --new NEW.json --before OLD.json \\
        --groups en/fused,other/fused --out services/answer/src/attesta_answer/grounding_gate.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

from attesta_answer.adapters.gate_artefact import load_gate
from attesta_answer.domain.grounding import GateModel, content_sha256

VERSION_PREFIX = "2026.12"  # as train_grounding_gate.py


def carried(before: dict[str, Any], features: list[str], group: str) -> dict[str, Any]:
    names, m = before["features"], before["models"][group]
    if features[:len(names)] != names:
        raise SystemExit(f"{before['version']}: its features are not a prefix of the new artefact's")
    pad = len(features) - len(names)
    return {"intercept": m["intercept"], "coef": [*m["coef"], *[0.0] * pad],
            "mean": [*m["mean"], *[0.0] * pad], "scale": [*m["scale"], *[1.0] * pad],
            "threshold": m["threshold"]}


def carry(new: dict[str, Any], before: dict[str, Any], groups: list[str]) -> dict[str, Any]:
    out = json.loads(json.dumps(new))
    out.pop("sha256", None)
    for group in groups:
        out["models"][group] = carried(before, out["features"], group)
        out["training"].setdefault("carried", {})[group] = before["version"]
        out["training"]["rows"][group] = 0
    t = out["training"]
    reader = out.get("pair_reader")
    numbers = json.dumps([out["feature_spec"], out["features"], t["c"], t["c_full"], t["target_false_answers"],
                          reader and reader["recipe_sha256"],
                          {k: [v[key] for key in ("intercept", "coef", "mean", "scale", "threshold")]
                           for k, v in sorted(out["models"].items())}, out["idf"]["kb_sha256"]])
    out["version"] = f"{VERSION_PREFIX}.{hashlib.sha256(numbers.encode()).hexdigest()[:8]}"
    out["sha256"] = content_sha256(out)
    GateModel.from_dict(out)  # the service must accept what is written
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--new", type=Path, required=True)
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--groups", required=True, help="comma-separated, e.g. en/fused,other/fused")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    new, before = (json.loads(p.read_text(encoding="utf-8")) for p in (args.new, args.before))
    out = carry(new, before, [g for g in args.groups.split(",") if g])
    args.out.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    load_gate(args.out)
    print(f"{out['version']} (from {new['version']}, {args.groups} carried from {before['version']})")


if __name__ == "__main__":
    main()
