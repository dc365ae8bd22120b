"""Training the cross-encoder reranker (``attesta retrieval train-reranker``).

A sentence-transformers ``CrossEncoder`` initialised from the bundled all-MiniLM-L6-v2 folder
(its one-logit head starts random) is fine-tuned on groups of (question, card) pairs:

- the questions: every TRAIN-split question, plus search-box questions generated from
  templates for the cards the train questions point to (every card about that subject counts
  as relevant to a generated one);
- the candidates: the service's own dense + BM25 + RRF ranking of each question over the KB,
  i.e. exactly the list the reranker reorders when serving. Its top cards that are not
  relevant are the hard negatives, and they include the look-alike names (Velnorex /
  Velnorax) that BM25 alone never returns;
- a group per question and step: its relevant cards, then hard negatives drawn from the top
  ``negative_pool`` candidates; each card is read as the service reads it when reranking
  (``domain.passages.rerank_passage``: the title and the text window closest to the question);
- the loss: ListNet (softmax cross-entropy against gains 2^grade - 1) for the order, plus
  binary cross-entropy (grade 2 -> 1.0, grade 1 -> 0.5, negative -> 0.0) so that
  sigmoid(logit) stays a probability: the answer service displays it as a 0-100 score.

The dev and test splits are never read here. Seeds are fixed; the output folder is keyed by a
hash of the data and the config, so a second run finds it cached and does nothing.
"""

from __future__ import annotations

import asyncio
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
    questions_per_step: int = 4
    group_size: int = 8  # pairs scored together per question: its relevant cards + hard negatives
    negative_pool: int = 10  # hard negatives come from this many top fused candidates
    learning_rate: float = 1e-4
    warmup_ratio: float = 0.1
    bce_weight: float = 1.0
    generated_per_card: int = 1
    max_steps: int | None = 300  # ~8 min on 2 idle cores at max_length 128
    time_budget_s: float | None = None  # stop early (recorded in the manifest) when set
    max_queries: int | None = None  # small runs (tests)


@dataclass(frozen=True)
class TrainingItem:
    question: str
    grades: dict[str, int]  # relevant card id -> grade (1 or 2)
    candidates: tuple[str, ...]  # the service's fused ranking for the question, best first
    generated: bool


def cache_root() -> Path:
    return Path(os.environ.get("ATTESTA_CACHE_DIR", Path.home() / ".cache" / "attesta"))


def _kb_digest() -> str:
    from importlib import resources

    data = resources.files("attesta_kb.data")
    h = hashlib.sha256()
    for name in ("cards.jsonl", "queries.jsonl"):
        h.update(data.joinpath(name).read_bytes())
    return h.hexdigest()


def fingerprint(config: TrainingConfig) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(asdict(config), sort_keys=True).encode())
    h.update(_kb_digest().encode())
    h.update(b"train-reranker/v3")  # bump when the data or the loss changes
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


def _subject(card: dict) -> str:
    meta = card.get("metadata") if isinstance(card.get("metadata"), dict) else {}
    return str(meta.get("subject") or card["title"])


def generated_questions(card: dict, n: int, rng: random.Random) -> list[str]:
    meta = card.get("metadata") if isinstance(card.get("metadata"), dict) else {}
    templates = _TEMPLATES.get(str(meta.get("kind")), ["What is {s}?"])
    return [t.format(s=_subject(card)) for t in rng.sample(templates, min(n, len(templates)))]


def fused_candidates(questions: list[str], depth: int = 20, progress: bool = True) -> list[list[str]]:
    """The service's own ``rrf_only`` ranking (card ids, best first) of each question over the
    shipped KB. The index lives under the cache folder, keyed by the KB, so only the first run
    embeds the cards."""
    from attesta_contracts.chat import HybridPath
    from attesta_kb import load_cards
    from attesta_retrieval.adapters.embedder import Embedder
    from attesta_retrieval.service_layer.offline import build_index
    from attesta_retrieval.service_layer.retrieval import (
        HybridRetriever, RerankerSlot, RetrievalConfig)

    state = cache_root() / "reranker-index" / _kb_digest()[:16]
    index, _ = build_index(load_cards(), state, Embedder(), progress=progress)
    retriever = HybridRetriever(index, RerankerSlot(), RetrievalConfig())

    async def rank_all() -> list[list[str]]:
        out = []
        for question in questions:
            outcome = await retriever.retrieve(question, depth, force_path=HybridPath.RRF_ONLY)
            out.append([h.card_id for h in outcome.hits[:depth]])
        return out

    return asyncio.run(rank_all())


def training_items(config: TrainingConfig, progress: bool = True) -> tuple[list[TrainingItem], dict]:
    """Every training question with its grades and fused candidates, from the train split only."""
    from attesta_kb import load_cards, load_queries

    rng = random.Random(config.seed)
    cards = {c["card_id"]: c for c in load_cards()}
    by_subject: dict[str, list[str]] = {}
    for cid, card in cards.items():
        by_subject.setdefault(_subject(card), []).append(cid)
    queries = load_queries("train")
    if config.max_queries is not None:
        queries = queries[:config.max_queries]
    asked: list[tuple[str, dict[str, int], bool]] = [
        (q["question"], {c: g for c, g in q["relevant"].items() if c in cards and g > 0}, False)
        for q in queries]
    for cid in sorted({c for q in queries for c, g in q["relevant"].items() if g == 2 and c in cards}):
        for question in generated_questions(cards[cid], config.generated_per_card, rng):
            asked.append((question, {c: 2 for c in by_subject[_subject(cards[cid])]}, True))
    ranked = fused_candidates([q for q, _, _ in asked], depth=max(20, config.negative_pool),
                              progress=progress)
    items = [TrainingItem(q, grades, tuple(cands), gen)
             for (q, grades, gen), cands in zip(asked, ranked, strict=True) if grades]
    stats = {"train_questions": len(queries), "generated_questions": len(items) - len(queries),
             "items": len(items),
             "hard_negatives_available": sum(
                 sum(1 for c in it.candidates[:config.negative_pool] if c not in it.grades)
                 for it in items)}
    return items, stats


def sample_group(item: TrainingItem, config: TrainingConfig, rng: random.Random,
                 all_ids: list[str]) -> list[tuple[str, int]]:
    """(card id, grade) pairs scored together: up to half the group relevant (best grade
    first), the rest hard negatives from the top fused candidates, topped up at random when
    fusion found too few."""
    relevant = sorted(item.grades, key=lambda c: (-item.grades[c], c))[:max(1, config.group_size // 2)]
    pool = [c for c in item.candidates[:config.negative_pool] if c not in item.grades]
    want = config.group_size - len(relevant)
    negatives = rng.sample(pool, min(want, len(pool)))
    while len(negatives) < want:
        cid = rng.choice(all_ids)
        if cid not in item.grades and cid not in negatives:
            negatives.append(cid)
    return [(c, item.grades[c]) for c in relevant] + [(c, 0) for c in negatives]


def train(config: TrainingConfig, out_dir: Path, base_model: Path | None = None,
          progress: bool = True) -> dict:
    """Fine-tune and save a CrossEncoder to ``out_dir`` (written to a temp dir, then renamed,
    so a half-written model is never picked up). Returns the manifest."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from sentence_transformers import CrossEncoder
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    from attesta_kb import load_cards
    from attesta_retrieval.adapters.embedder import default_embedder_path
    from attesta_retrieval.domain.passages import rerank_passage

    started = time.monotonic()
    rng = random.Random(config.seed)
    torch.manual_seed(config.seed)
    items, stats = training_items(config, progress=progress)
    stats["candidates_seconds"] = round(time.monotonic() - started, 1)
    cards = {c["card_id"]: c for c in load_cards()}
    all_ids = sorted(cards)
    base = base_model or default_embedder_path()
    model = CrossEncoder(str(base), num_labels=1, max_length=config.max_length, device="cpu",
                         activation_fn=torch.nn.Identity(), local_files_only=True)
    net, tok = model.model, model.tokenizer
    per_epoch = (len(items) + config.questions_per_step - 1) // config.questions_per_step
    total = per_epoch if config.max_steps is None else config.max_steps
    opt = torch.optim.AdamW(net.parameters(), lr=config.learning_rate)
    sched = get_linear_schedule_with_warmup(opt, int(total * config.warmup_ratio), total)
    bce = torch.nn.BCEWithLogitsLoss()
    net.train()
    step, stopped_early, losses, order = 0, False, [], []
    bar = tqdm(total=total, desc="train-reranker", unit="step", disable=not progress)
    while step < total:
        if config.time_budget_s is not None and time.monotonic() - started > config.time_budget_s:
            stopped_early = True
            break
        if len(order) < config.questions_per_step:  # next epoch, in a seeded order
            epoch = list(range(len(items)))
            rng.shuffle(epoch)
            order += epoch
        picked = [items[order.pop()] for _ in range(config.questions_per_step)]
        groups = [sample_group(item, config, rng, all_ids) for item in picked]
        feats = tok([item.question for item, group in zip(picked, groups) for _ in group],
                    [rerank_passage(item.question, cards[cid]["title"], cards[cid]["text"])
                     for item, group in zip(picked, groups) for cid, _ in group], padding=True,
                    truncation="longest_first", max_length=config.max_length, return_tensors="pt")
        logits = net(**feats).logits.view(len(groups), config.group_size)
        grades = torch.tensor([[g for _, g in group] for group in groups], dtype=torch.float32)
        gains = 2 ** grades - 1
        listnet = -(gains / gains.sum(1, keepdim=True) * torch.log_softmax(logits, 1)).sum(1).mean()
        labels = torch.where(grades >= 2, 1.0, torch.where(grades >= 1, 0.5, 0.0))
        loss = listnet + config.bce_weight * bce(logits, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
        step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
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
