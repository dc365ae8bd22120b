"""Training the cross-encoder reranker (``attesta retrieval train-reranker``).

A sentence-transformers ``CrossEncoder`` initialised from the bundled all-MiniLM-L6-v2 folder
(its one-logit head starts random) is fine-tuned with binary cross-entropy on
(question, card) pairs:

- every TRAIN-split question with its relevant cards (grade 2 -> 1.0, grade 1 -> 0.5);
- questions generated from templates for the cards the train questions point to;
- for every question, hard negatives: the top BM25 cards that are not relevant.

The dev and test splits are never read here. Seeds are fixed; the output folder is keyed by a
hash of the data and the config, so a second run finds it cached and does nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

MANIFEST = "attesta_reranker.json"


@dataclass(frozen=True)
class TrainingConfig:
    seed: int = 13
    max_length: int = 128
    batch_size: int = 16
    epochs: int = 1
    learning_rate: float = 1e-4
    warmup_ratio: float = 0.1
    hard_negatives: int = 3
    random_negatives: int = 1
    generated_per_card: int = 1
    max_steps: int | None = 200  # ~3 min on 2 idle cores at max_length 128 (x5 when shared)
    time_budget_s: float | None = None  # stop early (recorded in the manifest) when set
    max_queries: int | None = None  # small runs (tests)


def cache_root() -> Path:
    return Path(os.environ.get("ATTESTA_CACHE_DIR", Path.home() / ".cache" / "attesta"))


def fingerprint(config: TrainingConfig) -> str:
    from importlib import resources

    data = resources.files("attesta_kb.data")
    h = hashlib.sha256()
    h.update(json.dumps(asdict(config), sort_keys=True).encode())
    for name in ("cards.jsonl", "queries.jsonl"):
        h.update(data.joinpath(name).read_bytes())
    h.update(b"train-reranker/v2")  # bump when build_pairs changes
    return h.hexdigest()[:16]


def default_reranker_dir(config: TrainingConfig | None = None) -> Path:
    return cache_root() / "reranker" / fingerprint(config or TrainingConfig())


# Search-box style on purpose: the labelled questions are natural sentences, so a generated
# one never repeats a dev or test question word for word.
_TEMPLATES = {
    "medicine": ["{s} usual adult dose", "{s} indication", "{s} maker approval year",
                 "{s} side effects", "{s} contraindications"],
    "condition": ["{s} diagnosis criteria", "{s} symptoms", "{s} prevalence", "{s} treatment"],
    "procedure": ["{s} what it treats", "{s} recovery time", "{s} success rate"],
    "brand": ["{s} company overview", "{s} headquarters chief executive"],
    "product": ["{s} product overview", "{s} indication"],
}


def generated_questions(card: dict, n: int, rng: random.Random) -> list[str]:
    meta = card.get("metadata") if isinstance(card.get("metadata"), dict) else {}
    subject = str(meta.get("subject") or card["title"])
    templates = _TEMPLATES.get(str(meta.get("kind")), ["What is {s}?"])
    return [t.format(s=subject) for t in rng.sample(templates, min(n, len(templates)))]


def build_pairs(config: TrainingConfig) -> tuple[list[tuple[str, str, float]], dict]:
    """(question, passage, label) pairs from the train split only, shuffled with the seed."""
    from attesta_kb import load_cards, load_queries
    from attesta_retrieval.adapters.sparse import SparseIndex

    rng = random.Random(config.seed)
    cards = {c["card_id"]: c for c in load_cards()}
    passage = {cid: f"{c['title']}\n{c['text']}" for cid, c in cards.items()}
    sparse = SparseIndex(None)
    sparse.rebuild(list(passage.items()))
    queries = load_queries("train")
    if config.max_queries is not None:
        queries = queries[:config.max_queries]
    items: list[tuple[str, dict[str, int]]] = [(q["question"], q["relevant"]) for q in queries]
    train_cards = sorted({cid for q in queries for cid, g in q["relevant"].items() if g == 2})
    for cid in train_cards:
        for question in generated_questions(cards[cid], config.generated_per_card, rng):
            items.append((question, {cid: 2}))
    all_ids = sorted(cards)
    pairs: list[tuple[str, str, float]] = []
    for question, relevant in items:
        for cid, grade in relevant.items():
            if cid in passage:
                pairs.append((question, passage[cid], 1.0 if grade >= 2 else 0.5))
        hard = [cid for cid, _ in sparse.search(question, 30) if cid not in relevant]
        negatives = hard[:config.hard_negatives]
        while len(negatives) < config.hard_negatives + config.random_negatives:
            cid = rng.choice(all_ids)
            if cid not in relevant and cid not in negatives:
                negatives.append(cid)
        pairs.extend((question, passage[cid], 0.0) for cid in negatives)
    rng.shuffle(pairs)
    stats = {"train_questions": len(queries), "generated_questions": len(items) - len(queries),
             "pairs": len(pairs), "positives": sum(1 for p in pairs if p[2] > 0)}
    return pairs, stats


def train(config: TrainingConfig, out_dir: Path, base_model: Path | None = None,
          progress: bool = True) -> dict:
    """Fine-tune and save a CrossEncoder to ``out_dir`` (written to a temp dir, then renamed,
    so a half-written model is never picked up). Returns the manifest."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from sentence_transformers import CrossEncoder
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    from attesta_retrieval.adapters.embedder import default_embedder_path

    started = time.monotonic()
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    pairs, stats = build_pairs(config)
    base = base_model or default_embedder_path()
    model = CrossEncoder(str(base), num_labels=1, max_length=config.max_length, device="cpu",
                         activation_fn=torch.nn.Identity(), local_files_only=True)
    net, tok = model.model, model.tokenizer
    steps_per_epoch = (len(pairs) + config.batch_size - 1) // config.batch_size
    total = steps_per_epoch * config.epochs
    if config.max_steps is not None:
        total = min(total, config.max_steps)
    opt = torch.optim.AdamW(net.parameters(), lr=config.learning_rate)
    sched = get_linear_schedule_with_warmup(opt, int(total * config.warmup_ratio), total)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    net.train()
    step, stopped_early, losses = 0, False, []
    bar = tqdm(total=total, desc="train-reranker", unit="step", disable=not progress)
    while step < total:
        for start in range(0, len(pairs), config.batch_size):
            if step >= total:
                break
            if config.time_budget_s is not None and time.monotonic() - started > config.time_budget_s:
                stopped_early = True
                break
            batch = pairs[start:start + config.batch_size]
            feats = tok([q for q, _, _ in batch], [p for _, p, _ in batch], padding=True,
                        truncation="longest_first", max_length=config.max_length,
                        return_tensors="pt")
            logits = net(**feats).logits.view(-1)
            loss = loss_fn(logits, torch.tensor([lab for _, _, lab in batch], dtype=torch.float32))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            losses.append(loss.item())
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
        if stopped_early:
            break
    bar.close()
    net.eval()
    tmp = out_dir.with_name(out_dir.name + f".tmp-{os.getpid()}")
    model.save(str(tmp))
    manifest = {
        "config": asdict(config), "fingerprint": fingerprint(config), "base_model": str(base),
        "data": stats, "steps": step, "stopped_early_by_time_budget": stopped_early,
        "final_loss_avg20": round(sum(losses[-20:]) / max(1, len(losses[-20:])), 4),
        "seconds": round(time.monotonic() - started, 1), "torch_threads": torch.get_num_threads(),
        "splits_used": ["train"],
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    if out_dir.exists():
        import shutil

        shutil.rmtree(out_dir)
    tmp.rename(out_dir)
    return manifest


def read_manifest(model_dir: Path) -> dict | None:
    try:
        return json.loads((model_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
