"""Training the grounding gate's pair reader (``attesta answer train-reader``, issue #24).

The reader is the retrieval reranker (a ``CrossEncoder`` that ``attesta retrieval
train-reranker`` trains on each machine) fine-tuned on (question, "title: card sentence") pairs:
positive when the sentence answers the question, negative for other sentences of the same card,
sentences of look-alike cards, and every sentence read for a question the KB cannot answer.

**The recipe** is what the gate artefact pins (``ReaderSpec``), since the weights differ from
machine to machine (the base reranker is trained on each one): this module's ``ReaderConfig``,
the base model's identity (its reranker training config, minus the run's time limit) and the
SHA-256 of the training pairs. The pairs are repository data, not package data
(``services/answer/training_data/pair_reader_pairs.json``, written by
``benchmarks/train_grounding_gate.py --write-reader-pairs`` from generated English questions and
the passages the gate gives the reader on ``rrf_only``; no hand-written, dev or held-out question
is among them): generated development material stays out of the runtime wheel, as the question
generator does. ``scripts/up.sh`` runs the command from a checkout, where it finds them; elsewhere
give ``--pairs``. Training is seeded, on
one thread, for a fixed number of steps (no time budget: a budget would make the model depend
on the machine's load); the output is written to a temporary folder and renamed, with a manifest
recording the recipe and the weights' SHA-256 (``adapters/pair_reader.py`` checks both).

This module runs as a command, never in the service: it imports torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from attesta_answer.adapters.pair_reader import MANIFEST, default_reader_dir, read_manifest, weights_sha256
from attesta_answer.domain.grounding import recipe_sha256

PAIRS = "pair_reader_pairs.json"
BASE_MANIFEST = "attesta_reranker.json"  # what ``attesta retrieval train-reranker`` writes
VERSION_PREFIX = "pr-2026.12"


@dataclass(frozen=True)
class ReaderConfig:
    seed: int = 24
    epochs: int = 2
    batch_size: int = 16
    learning_rate: float = 3e-5
    max_length: int = 96  # tokens of question + passage
    top_n: int = 8  # passages the gate gives the reader per question (``reader_candidates``)
    loss: str = "bce"


def pairs_path() -> Path:
    """The shipped pairs in a checkout (``services/answer/training_data``)."""
    return Path(__file__).resolve().parents[3] / "training_data" / PAIRS


def load_pairs(path: Path | None = None) -> tuple[list[tuple[str, str, float]], str]:
    """The training pairs, in training order, and the SHA-256 of the file's bytes."""
    path = path or pairs_path()
    if not path.is_file():
        raise SystemExit(f"no training pairs at {path}: run from a checkout of the repository, or give --pairs")
    raw = path.read_bytes()
    data = json.loads(raw)
    questions, passages = data["questions"], data["passages"]
    return [(questions[q], passages[p], float(label)) for q, p, label in data["pairs"]], \
        hashlib.sha256(raw).hexdigest()


def base_identity(base: Path) -> dict[str, Any]:
    """What the reader starts from, as a recipe names it: the reranker's training config (its
    time budget left out: a limit of the run, not of the recipe). A base without a reranker
    manifest is named by the SHA-256 of its weights."""
    try:
        manifest = json.loads((base / BASE_MANIFEST).read_text())
    except (OSError, ValueError):
        return {"kind": "weights", "sha256": weights_sha256(base)}
    config = {k: v for k, v in manifest["config"].items() if k != "time_budget_s"}
    return {"kind": "attesta-reranker", "config": config}


def recipe_for(base: Path, config: ReaderConfig, data_sha256: str) -> dict[str, Any]:
    return {"kind": "attesta-pair-reader-recipe/1", "config": asdict(config),
            "base": base_identity(base), "data_sha256": data_sha256}


def wait_for_base(base: Path, wait_s: float) -> None:
    """``scripts/up.sh`` starts this beside the reranker's training: wait for its manifest (the
    reranker's folder is renamed into place complete, manifest included)."""
    deadline = time.monotonic() + wait_s
    while not (base / BASE_MANIFEST).exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"no reranker at {base} after {wait_s:.0f} s: nothing to train the reader from")
        time.sleep(10)


def train(base: Path, out: Path | None = None, config: ReaderConfig = ReaderConfig(),
          threads: int = 1, pairs_file: Path | None = None) -> tuple[Path, dict[str, Any]]:
    """Fine-tune the reader from ``base``; returns its folder (default: the recipe's folder under
    the cache) and manifest."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # torch loads only for this command (see the module docstring).
    import torch
    from sentence_transformers import CrossEncoder

    pairs, data_sha = load_pairs(pairs_file)
    recipe = recipe_for(base, config, data_sha)
    rsha = recipe_sha256(recipe)
    out = out or default_reader_dir(rsha)
    torch.set_num_threads(threads)
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    started = time.monotonic()
    ce = CrossEncoder(str(base), num_labels=1, max_length=config.max_length, device="cpu",
                      activation_fn=torch.nn.Identity(), local_files_only=True)
    model, tok = ce.model, ce.tokenizer
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    lossf = torch.nn.BCEWithLogitsLoss()
    steps, losses = 0, []
    bs = config.batch_size
    for _ in range(config.epochs):
        for i in range(0, len(pairs) - bs + 1, bs):  # the file's order; a short last batch is dropped
            batch = pairs[i:i + bs]
            enc = tok([b[0] for b in batch], [b[1] for b in batch], truncation=True,
                      max_length=config.max_length, padding=True, return_tensors="pt")
            loss = lossf(model(**enc).logits.view(-1), torch.tensor([b[2] for b in batch]))
            loss.backward()
            opt.step()
            opt.zero_grad()
            steps += 1
            losses.append(loss.item())
    model.eval()
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    ce.save(str(tmp))
    sha = weights_sha256(tmp)
    manifest = {"kind": "attesta-pair-reader", "version": f"{VERSION_PREFIX}.{rsha[:8]}",
                "recipe": recipe, "recipe_sha256": rsha, "sha256": sha, "base_folder": str(base),
                "pairs": len(pairs), "positives": int(sum(p[2] for p in pairs)), "steps": steps,
                "final_loss_avg20": round(sum(losses[-20:]) / max(1, len(losses[-20:])), 4),
                "seconds": round(time.monotonic() - started, 1), "torch_threads": torch.get_num_threads(),
                "torch": torch.__version__,
                "licence": "fine-tuned here from the reranker (itself from all-MiniLM-L6-v2, Apache-2.0); "
                           "data: generated questions over the KB's synthetic cards"}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out, manifest


def already_trained(base: Path, out: Path | None, config: ReaderConfig = ReaderConfig(),
                    pairs_file: Path | None = None) -> Path | None:
    """The recipe's folder, when a reader of this recipe is already there."""
    _, data_sha = load_pairs(pairs_file)
    rsha = recipe_sha256(recipe_for(base, config, data_sha))
    folder = out or default_reader_dir(rsha)
    manifest = read_manifest(folder)
    return folder if manifest is not None and manifest.get("recipe_sha256") == rsha else None
