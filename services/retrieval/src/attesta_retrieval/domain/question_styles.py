"""Training questions in the styles people write, generated from the train split and the
cards (pure; seeded by the caller's ``random.Random``).

The labelled train questions come from templates, so a reranker trained on them alone learns
the templates. People misspell names, ask from a fact back to the medicine, wrap a question
in a paragraph, type two words, or compare two look-alikes. These functions restyle a train
question or read a card's own facts into such questions; each keeps the grades it was built
with (a reverse lookup is only emitted when exactly one card carries that fact).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from typing import Any

from attesta_retrieval.domain.model import card_metadata

_VOWELS = "aeiou"


def misspell(word: str, rng: random.Random) -> str:
    """One plausible slip in ``word`` (>= 5 letters): a letter dropped, two swapped, one
    doubled, or a vowel replaced; shorter words are returned unchanged."""
    if len(word) < 5:
        return word
    i = rng.randrange(1, len(word) - 1)
    kind = rng.randrange(4)
    if kind == 0:
        return word[:i] + word[i + 1:]
    if kind == 1:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 2:
        return word[:i] + word[i] + word[i:]
    vowels = [j for j, ch in enumerate(word) if ch.lower() in _VOWELS and 0 < j]
    if not vowels:
        return word[:i] + word[i + 1:]
    j = rng.choice(vowels)
    return word[:j] + rng.choice([v for v in _VOWELS if v != word[j].lower()]) + word[j + 1:]


def with_typos(question: str, names: Iterable[str], rng: random.Random) -> str | None:
    """``question`` with one slip in each name it mentions (the names people misspell:
    medicines, conditions, companies), or ``None`` when it names none of them."""
    out, changed = question, False
    for name in sorted(set(names), key=len, reverse=True):
        for word in name.split():
            if len(word) >= 5 and re.search(rf"\b{re.escape(word)}\b", out, re.I):
                out = re.sub(rf"\b{re.escape(word)}\b", misspell(word, rng).lower(), out, count=1,
                             flags=re.I)
                changed = True
                break
    return out if changed else None


_PREAMBLES = (
    "Sorry if this is a silly question, but I've been reading about this for days and my "
    "doctor was in a hurry when I asked, so I'm hoping you can clear it up for me:",
    "My mother was told about this at her last appointment and we are both a bit confused "
    "because the leaflet was long and full of jargon, so here is what we want to know:",
    "I'm a pharmacy student revising for an exam next week and I keep getting my notes "
    "mixed up between similar-sounding names, so could you help me with one thing,",
    "Hi, I have an appointment on Monday and I want to be prepared with the right "
    "questions, because last time I forgot everything I wanted to ask, so basically,",
)
_POSTAMBLES = ("Thanks a lot in advance!", "I'd really appreciate a clear answer.",
               "Sorry for the long message.", "")


def rambling(question: str, rng: random.Random) -> str:
    """``question`` inside a 40-60-word message, as people write to a chat box."""
    return f"{rng.choice(_PREAMBLES)} {question} {rng.choice(_POSTAMBLES)}".strip()


def keywords(question: str, stop: frozenset[str], rng: random.Random) -> str:
    """Two or three content words of ``question``, as typed in a search box."""
    words = list(dict.fromkeys(w for w in re.findall(r"[A-Za-z][\w-]*", question)
                               if w.lower() not in stop))
    if len(words) <= 2:
        return " ".join(words) or question
    keep = sorted(rng.sample(range(len(words)), 2 if rng.random() < 0.6 else 3))
    # The name is what people always type: keep the first capitalised word when there is one.
    cap = next((i for i, w in enumerate(words) if w[0].isupper() and i > 0), None)
    if cap is not None and cap not in keep:
        keep[0] = cap
        keep.sort()
    return " ".join(words[i].lower() for i in keep)


# Facts a card states once, read back into a question whose answer is the card.
_DESCRIBED = re.compile(r"first described in (\d{4}) by (Dr\. [\w-]+ [\w-]+)")
_REVERSE = {
    "medicine": (
        (re.compile(r"is manufactured by ([^.]+?) and was first approved in (\d{4})"),
         "{1} approval, made by {0}: which medicine is that?"),
        (re.compile(r"It is marketed by ([^.]+?) and was first approved in (\d{4})"),
         "{0} medicine approved in {1}, name?"),
    ),
    "condition": (
        (re.compile(r"Diagnosis requires an? ([\w -]+?) level above ([\d.,]+ [^ ]+)"),
         "A {0} above {1} on two tests points to which disorder?"),
        (_DESCRIBED, "{1} described a disorder in {0}; what is it called?"),
    ),
    "procedure": (
        (re.compile(r"The operator uses (?:an? |the )?([^.]+?)\..*?(?:reported success at one year is) (\d+%)",
                    re.I | re.S),
         "procedure done with {0}, {1} success at one year"),
        (_DESCRIBED, "{1} ({0}) described which intervention?"),
    ),
    "brand": (
        (re.compile(r"headquartered in ([^.]+?)\. Founded in (\d{4})"),
         "company from {1} with head office in {0}"),
        (re.compile(r"Chief executive officer ((?:Dr\. )?[\w-]+ [\w-]+) leads"),
         "{0} is chief executive of what company?"),
        (re.compile(r"is chaired by ([\w-]+ [\w-]+)"),
         "{0} chairs the board of which firm?"),
        (re.compile(r"based in ([^.]+?)\. It was founded in (\d{4})"),
         "firm in {0} founded {1}"),
    ),
}


def reverse_lookups(cards: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(question, card id) for every card fact of ``_REVERSE`` that exactly one card states."""
    found: dict[str, list[str]] = {}
    for card in cards:
        meta = card_metadata(card)
        for pattern, template in _REVERSE.get(str(meta.get("kind")), ()):
            m = pattern.search(card["text"])
            if m:
                found.setdefault(template.format(*(g.strip() for g in m.groups())), []).append(
                    card["card_id"])
        generic = meta.get("generic_name")
        if generic:
            found.setdefault(f"{generic} is sold under what brand name?", []).append(card["card_id"])
    return [(q, ids[0]) for q, ids in found.items() if len(ids) == 1]


_LOOKALIKE = re.compile(r"(?:do not confuse [\w -]+? with|should not be confused with) "
                        r"([A-Z][\w-]*(?: [A-Z]?[\w-]+)*?)(?: \(|,)")


def look_alikes(cards: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """card id -> the card id of its look-alike (a card's text warns about it by subject name;
    the pair counts both ways)."""
    cards = list(cards)
    by_subject: dict[str, str] = {}
    for card in cards:
        meta = card_metadata(card)
        subject = str(meta.get("subject") or "")
        if subject and str(meta.get("kind")) in ("medicine", "condition", "procedure"):
            by_subject.setdefault(subject.casefold(), card["card_id"])
    out = {}
    for card in cards:
        m = _LOOKALIKE.search(card["text"])
        if m and m.group(1).casefold() in by_subject:
            other = by_subject[m.group(1).casefold()]
            if other != card["card_id"]:
                out[card["card_id"]] = other
                out.setdefault(other, card["card_id"])  # the warning is written on one side only
    return out
