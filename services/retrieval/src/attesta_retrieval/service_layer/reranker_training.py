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
  sigmoid(logit) stays a probability: the answer service displays it as a 0-100 score;
- styles (``domain.question_styles``): each train question is also asked misspelled, as two or
  three keywords, or inside a rambling paragraph; reverse lookups read a card's own unique
  facts back into a question ("a serum hemorin above ... points to which disorder?"); look-alike
  pairs become comparison questions (both cards relevant), and a relevant card's look-alike is
  always among its negatives;
- calibration: every ``calibration_every``-th train question (with its restyled copies) is
  kept out of training; after training, a temperature and a bias are fitted on its fused top
  candidates (logistic regression of "relevant" on the logit) and folded into the model's last
  layer, so the logit the service serves is the calibrated one and ADR-0024's
  ``round(100 * sigmoid(logit))`` stays honest.

The dev and test splits are never read here. Seeds are fixed; the output folder is keyed by a
hash of the data and the config, so a second run finds it cached and does nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import shutil
import time
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NotRequired, TypedDict

from attesta_contracts.chat import HybridPath
from attesta_kb import load_cards, load_queries
from attesta_retrieval.adapters.embedder import Embedder, default_embedder_path
from attesta_retrieval.domain.model import card_metadata
from attesta_retrieval.domain.passages import rerank_passage
from attesta_retrieval.domain.question_styles import (
    keywords,
    look_alikes,
    rambling,
    reverse_lookups,
    with_typos,
)
from attesta_retrieval.service_layer.offline import build_index
from attesta_retrieval.service_layer.retrieval import (
    HybridRetriever,
    RerankerSlot,
    RetrievalConfig,
)

if TYPE_CHECKING:  # torch and sentence-transformers load when training starts, not at import
    import torch
    from sentence_transformers import CrossEncoder

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
    styled: bool = True  # restyled train questions, reverse lookups, comparisons (see above)
    reverse_lookups: int = 400  # at most this many reverse-lookup questions (seeded sample)
    comparisons: int = 100  # at most this many look-alike comparison questions
    calibration_every: int = 7  # every n-th train question is kept for calibration (0: none)
    max_steps: int | None = 400  # ~11 min on 2 idle cores at max_length 128
    time_budget_s: float | None = None  # stop early (recorded in the manifest) when set
    max_queries: int | None = None  # small runs (tests)


@dataclass(frozen=True)
class TrainingItem:
    question: str
    grades: dict[str, int]  # relevant card id -> grade (1 or 2)
    candidates: tuple[str, ...]  # the service's fused ranking for the question, best first
    generated: bool
    style: str = "template"  # template / generated / typo / keywords / rambling / reverse / comparison
    calibration: bool = False  # kept out of training, used to fit the temperature and bias
    forced_negatives: tuple[str, ...] = ()  # look-alikes of the relevant cards: always negatives


class Asked(NamedTuple):
    """A training question before its candidates are ranked."""

    question: str
    grades: dict[str, int]  # relevant card id -> grade (1 or 2)
    style: str
    calibration: bool


class TrainingStats(TypedDict):
    train_questions: int
    generated_questions: int
    items: int
    training_items: int
    calibration_items: int
    styles: dict[str, int]
    hard_negatives_available: int
    candidates_seconds: NotRequired[float]  # added once the candidates are ranked


class Calibration(TypedDict):
    temperature: float | None
    scale: float
    bias: float
    pairs: int
    questions: int
    ece_before: float
    ece_after_in_sample: float


class RerankerManifest(TypedDict):
    """``attesta_reranker.json`` beside the model: how it was trained, from what."""

    config: dict[str, Any]  # TrainingConfig as a dict
    fingerprint: str
    base_model: str
    data: TrainingStats
    steps: int
    stopped_early_by_time_budget: bool
    final_loss_avg20: float
    seconds: float
    torch_threads: int
    splits_used: list[str]
    calibration: Calibration | None


def cache_root() -> Path:
    return Path(os.environ.get("ATTESTA_CACHE_DIR", Path.home() / ".cache" / "attesta"))


def _kb_digest() -> str:
    data = resources.files("attesta_kb.data")
    h = hashlib.sha256()
    for name in ("cards.jsonl", "queries.jsonl"):
        h.update(data.joinpath(name).read_bytes())
    return h.hexdigest()


def fingerprint(config: TrainingConfig) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(asdict(config), sort_keys=True).encode())
    h.update(_kb_digest().encode())
    h.update(b"train-reranker/v4")  # bump when the data or the loss changes
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


def _subject(card: dict[str, Any]) -> str:
    meta = card_metadata(card)
    return str(meta.get("subject") or card["title"])


def generated_questions(card: dict[str, Any], n: int, rng: random.Random) -> list[str]:
    meta = card_metadata(card)
    templates = _TEMPLATES.get(str(meta.get("kind")), ["What is {s}?"])
    return [t.format(s=_subject(card)) for t in rng.sample(templates, min(n, len(templates)))]


def fused_candidates(questions: list[str], depth: int = 20, progress: bool = True) -> list[list[str]]:
    """The service's own ``rrf_only`` ranking (card ids, best first) of each question over the
    shipped KB. The index lives under the cache folder, keyed by the KB, so only the first run
    embeds the cards."""
    state = cache_root() / "reranker-index" / _kb_digest()[:16]
    index, _ = build_index(load_cards(), state, Embedder(), progress=progress)
    retriever = HybridRetriever(index, RerankerSlot(), RetrievalConfig())

    async def rank_all() -> list[list[str]]:
        out: list[list[str]] = []
        for question in questions:
            outcome = await retriever.retrieve(question, depth, force_path=HybridPath.RRF_ONLY)
            out.append([h.card_id for h in outcome.hits[:depth]])
        return out

    return asyncio.run(rank_all())


_KEYWORD_STOP = frozenset("""a an and are as at be by can could did do does for from has have how i
if in is it its me my of on or should the their them this to was what when which who why will with
would you your usual usually normal typical mix up always i'm what's""".split())


def _styled(asked: list[Asked], cards: dict[str, dict[str, Any]],
            by_subject: dict[str, list[str]], config: TrainingConfig,
            rng: random.Random) -> list[Asked]:
    """Restyled copies of the train questions (a copy stays on its original's side of the
    calibration split), reverse lookups and look-alike comparisons."""
    names = sorted({_subject(c) for c in cards.values()} | {
        str(card_metadata(c)["generic_name"]) for c in cards.values()
        if card_metadata(c).get("generic_name")})
    out: list[Asked] = []
    for question, grades, style, calib in asked:
        if style != "template":
            continue
        typo = with_typos(question, names, rng)
        if typo is not None:
            out.append(Asked(typo, grades, "typo", calib))
        pick = rng.random()
        if pick < 0.35:
            out.append(Asked(keywords(question, _KEYWORD_STOP, rng), grades, "keywords", calib))
        elif pick < 0.7:
            out.append(Asked(rambling(question, rng), grades, "rambling", calib))
    # A small run (``max_queries``: tests, smoke runs) stays small on every side.
    cap = config.max_queries if config.max_queries is not None else len(cards)
    reverse = reverse_lookups(cards.values())
    for i, (question, cid) in enumerate(rng.sample(reverse, min(config.reverse_lookups, cap, len(reverse)))):
        calib = config.calibration_every > 0 and i % config.calibration_every == 0
        out.append(Asked(question, {cid: 2}, "reverse", calib))
    pairs = look_alikes(cards.values())
    twins = sorted(pairs.items())
    for i, (a, b) in enumerate(rng.sample(twins, min(config.comparisons, cap, len(twins)))):
        sa, sb = _subject(cards[a]), _subject(cards[b])
        question = rng.choice([f"{sa} or {sb}: which is which?", f"difference between {sa} and {sb}",
                               f"I confuse {sa} with {sb}, how are they different?"])
        calib = config.calibration_every > 0 and i % config.calibration_every == 0
        out.append(Asked(question, {c: 2 for s in (sa, sb) for c in by_subject[s]}, "comparison",
                         calib))
    return out


def training_items(config: TrainingConfig,
                   progress: bool = True) -> tuple[list[TrainingItem], TrainingStats]:
    """Every training question with its grades and fused candidates, from the train split only
    (the calibration items among them carry ``calibration=True``)."""
    rng = random.Random(config.seed)
    cards = {c["card_id"]: c for c in load_cards()}
    by_subject: dict[str, list[str]] = {}
    for cid, card in cards.items():
        by_subject.setdefault(_subject(card), []).append(cid)
    queries = load_queries("train")
    if config.max_queries is not None:
        queries = queries[:config.max_queries]
    asked = [
        Asked(q["question"], {c: g for c, g in q["relevant"].items() if c in cards and g > 0},
              "template", config.calibration_every > 0 and i % config.calibration_every == 0)
        for i, q in enumerate(queries)]
    for cid in sorted({c for q in queries for c, g in q["relevant"].items() if g == 2 and c in cards}):
        for question in generated_questions(cards[cid], config.generated_per_card, rng):
            asked.append(Asked(question, {c: 2 for c in by_subject[_subject(cards[cid])]},
                               "generated", False))
    if config.styled:
        asked += _styled(asked, cards, by_subject, config, rng)
    ranked = fused_candidates([q for q, _, _, _ in asked], depth=max(20, config.negative_pool),
                              progress=progress)
    twins = look_alikes(cards.values())
    items = [TrainingItem(q, grades, tuple(cands), style == "generated", style, calib,
                          tuple(sorted({twins[c] for c in grades if c in twins} - set(grades))))
             for (q, grades, style, calib), cands in zip(asked, ranked, strict=True) if grades]
    styles: dict[str, int] = {}
    for it in items:
        styles[it.style] = styles.get(it.style, 0) + 1
    train_items = [it for it in items if not it.calibration]
    stats = TrainingStats(
        train_questions=len(queries), generated_questions=sum(1 for it in items if it.generated),
        items=len(items), training_items=len(train_items),
        calibration_items=len(items) - len(train_items), styles=styles,
        hard_negatives_available=sum(
            sum(1 for c in it.candidates[:config.negative_pool] if c not in it.grades)
            for it in train_items))
    return items, stats


def sample_group(item: TrainingItem, config: TrainingConfig, rng: random.Random,
                 all_ids: list[str]) -> list[tuple[str, int]]:
    """(card id, grade) pairs scored together: up to half the group relevant (best grade
    first), the rest hard negatives from the top fused candidates, topped up at random when
    fusion found too few."""
    relevant = sorted(item.grades, key=lambda c: (-item.grades[c], c))[:max(1, config.group_size // 2)]
    want = config.group_size - len(relevant)
    negatives = [c for c in item.forced_negatives if c not in item.grades][:want]
    pool = [c for c in item.candidates[:config.negative_pool]
            if c not in item.grades and c not in negatives]
    negatives += rng.sample(pool, min(want - len(negatives), len(pool)))
    while len(negatives) < want:
        cid = rng.choice(all_ids)
        if cid not in item.grades and cid not in negatives:
            negatives.append(cid)
    return [(c, item.grades[c]) for c in relevant] + [(c, 0) for c in negatives]


def train(config: TrainingConfig, out_dir: Path, base_model: Path | None = None,
          progress: bool = True) -> RerankerManifest:
    """Fine-tune and save a CrossEncoder to ``out_dir`` (written to a temp dir, then renamed,
    so a half-written model is never picked up). Returns the manifest."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # heavy: torch, sentence-transformers and transformers (tqdm with them) load when training
    # runs, not with this module, which the service imports for `default_reranker_dir`
    import torch
    from sentence_transformers import CrossEncoder
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    started = time.monotonic()
    rng = random.Random(config.seed)
    torch.manual_seed(config.seed)
    everything, stats = training_items(config, progress=progress)
    items = [it for it in everything if not it.calibration]
    held = [it for it in everything if it.calibration]
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
    step, stopped_early = 0, False
    losses: list[float] = []
    order: list[int] = []
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
    calibration = calibrate(model, held, cards, config) if held else None
    tmp = out_dir.with_name(out_dir.name + f".tmp-{os.getpid()}")
    model.save(str(tmp))
    manifest = RerankerManifest(
        config=asdict(config), fingerprint=fingerprint(config), base_model=str(base),
        data=stats, steps=step, stopped_early_by_time_budget=stopped_early,
        final_loss_avg20=round(sum(losses[-20:]) / max(1, len(losses[-20:])), 4),
        seconds=round(time.monotonic() - started, 1), torch_threads=torch.get_num_threads(),
        splits_used=["train"], calibration=calibration,
    )
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tmp.rename(out_dir)
    return manifest


def _ece(probs: list[float], labels: list[float], bins: int = 10) -> float:
    total, err = len(probs), 0.0
    for b in range(bins):
        inside = [(p, y) for p, y in zip(probs, labels, strict=True)
                  if b / bins <= p < (b + 1) / bins or (b == bins - 1 and p == 1.0)]
        if inside:
            err += len(inside) / total * abs(sum(p for p, _ in inside) / len(inside)
                                             - sum(y for _, y in inside) / len(inside))
    return err


def calibrate(model: CrossEncoder, held: list[TrainingItem], cards: dict[str, dict[str, Any]],
              config: TrainingConfig) -> Calibration:
    """Fit sigmoid(a * logit + b) to "relevant" over the calibration items' fused top 20 (what
    the service reranks) and fold a and b into the last linear layer, so the model itself emits
    the calibrated logit."""
    import torch  # heavy: loaded when a trained model is calibrated, not at import

    net = model.model
    if net is None:  # a CrossEncoder loaded from a transformers folder always holds one
        raise ValueError("the cross-encoder holds no transformers model to calibrate")
    pairs = [(it.question, cid, 1.0 if it.grades.get(cid, 0) > 0 else 0.0)
             for it in held for cid in it.candidates[:20]]
    logits: list[float] = []
    with torch.no_grad():
        for start in range(0, len(pairs), 64):
            batch = pairs[start:start + 64]
            feats = model.tokenizer([q for q, _, _ in batch],
                                    [rerank_passage(q, cards[c]["title"], cards[c]["text"]) for q, c, _ in batch],
                                    padding=True, truncation="longest_first",
                                    max_length=config.max_length, return_tensors="pt")
            logits += net(**feats).logits.view(-1).tolist()
    x = torch.tensor(logits)
    y = torch.tensor([label for _, _, label in pairs])
    a = torch.ones(1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.LBFGS([a, b], lr=0.5, max_iter=200)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(a * x + b, y)
        loss.backward()
        return loss

    opt.step(closure)
    scale, shift = float(a.item()), float(b.item())
    head = net.classifier  # BertForSequenceClassification: the one-logit Linear
    if not isinstance(head, torch.nn.Linear):
        raise TypeError(f"expected a Linear classifier head to fold the calibration into, got {head!r}")
    with torch.no_grad():
        head.weight.mul_(scale)
        head.bias.mul_(scale).add_(shift)
    before = torch.sigmoid(x).tolist()
    after = torch.sigmoid(scale * x + shift).tolist()
    return Calibration(temperature=round(1 / scale, 4) if scale else None, scale=round(scale, 4),
                       bias=round(shift, 4), pairs=len(pairs), questions=len(held),
                       ece_before=round(_ece(before, y.tolist()), 4),
                       ece_after_in_sample=round(_ece(after, y.tolist()), 4))


def read_manifest(model_dir: Path) -> RerankerManifest | None:
    try:
        manifest: RerankerManifest = json.loads((model_dir / MANIFEST).read_text())
        return manifest
    except (OSError, ValueError):
        return None
