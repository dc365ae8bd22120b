"""Step 1 of the claim-checking judge: the answer's statements about the brand.

A claim is one sentence (or one list item with the line that introduced it) that names the
brand, one of its products, or continues about it ("It ...", "A empresa ..."). URLs and e-mail
addresses are taken out first: they are the heuristic's business (STRONG), not statements.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from attesta_platform.brandmatch import fold, mentions_name

from .evidence import is_common_word, places
from .lexicon import lexicon, patterns, phrase_pattern
from .model import Brand, Fact

MAX_CLAIMS = 24  # an answer's first claims about the brand; the rest adds cost, not evidence

_MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\s]*\)")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"<?(?:[a-z][a-z0-9+.-]*:)?//\S+|\b(?:[\w-]+\.)+[a-z]{2,}(?:/\S*)?>?", re.IGNORECASE)
_MARKUP = re.compile(r"[*_`#>|]+")
_ITEM = re.compile(r"^\s*(?:[-•*]|\d{1,2}[.)])\s+")
_ABBREV = re.compile(r"\b(?:Dr|Dra|Mr|Mrs|Ms|Prof|Inc|Ltd|Co|Corp|St|Sr|Sra|Jr|vs|approx|etc|e\.g|i\.e|S\.A|[A-Z])\.$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CAPWORD = re.compile(r"(?<![\w-])[A-ZÀ-ÖØ-Þ][\w'’-]+")


@dataclass(frozen=True)
class Claim:
    text: str  # what the sentence asserts: its clauses that are not "I don't know" (may be "")
    sentence: str  # the sentence as written (URLs and e-mail addresses removed)
    hedge: bool  # a clause says the answerer does not know ("no idea", "não sei")
    uncertain: bool  # hedged ("I think", "talvez"): still a statement


def _clean(text: str) -> str:
    text = _MARKDOWN_LINK.sub(r"\1", text)
    text = _EMAIL.sub(" ", text)
    text = _URL.sub(" ", text)
    return _MARKUP.sub(" ", text)


def _sentences(line: str) -> list[str]:
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(line):
        head = line[start:m.start()]
        if _ABBREV.search(head):
            continue
        out.append(head)
        start = m.end()
    out.append(line[start:])
    return [" ".join(s.split()) for s in out if s.strip(" .;:")]


def product_words(brand: Brand, facts: Sequence[Fact]) -> set[str]:
    """Names the brand's facts give its products ("Sorventa", "Velnorex", "Corvina Headway"):
    capitalized words that no dictionary knows or that follow the brand's name, in at least two
    facts that name the brand, and no person's (next to a role) or place's name. A sentence
    naming one is about the brand."""
    brand_words = {fold(w) for n in brand.names for w in n.split()}
    seen: dict[str, int] = {}
    for f in facts:
        if not mentions_name(f.text, brand.names):
            continue
        skip = {fold(w) for p in places(f.text) for w in p.text.split()}
        skip |= _near_roles(f.text)
        found = {fold(m.group(0)) for m in _CAPWORD.finditer(f.text)
                 if not is_common_word(m.group(0)) or _after_name(f.text, m.start(), brand_words)}
        for w in found - skip - brand_words:
            seen[w] = seen.get(w, 0) + 1
    return {w for w, n in seen.items() if n >= 2 and len(w) >= 3}


def _after_name(text: str, start: int, brand_words: set[str]) -> bool:
    before = text[:start].split()
    return bool(before) and fold(before[-1]) in brand_words


def _near_roles(text: str) -> set[str]:
    """Capitalized words within a few words of a role ("CEO: Imogen Strachan"): people."""
    roles = phrase_pattern(tuple(p for ps in lexicon().roles.values() for p in ps))
    folded = fold(text)
    out: set[str] = set()
    for m in roles.finditer(folded):
        window = text[max(0, m.start() - 40): m.end() + 40]
        out |= {fold(w.group(0)) for w in _CAPWORD.finditer(window)}
    return out


MIN_CONTINUATION_WORDS = 2  # words beyond stop, vague and meta words
ANAPHORA_WINDOW = 6  # "Founded in 1990, it ...": the pronoun comes after an opening phrase
_READER = re.compile(r"(?<![\w'])(?:i|i'm|you|your|voce|voces|eu|recomendo|sugiro)(?![\w'])")


def _continues(sentence: str, known: set[str]) -> bool:
    """A sentence right after one about the brand is about it too when it refers back to it
    ("It ...", "Founded in 1990, the company ...") or, in a description that goes on ("The
    cheese is made with ..."), when it names nobody and nothing else (every capitalized word
    after the first is one the facts or the brand's names use, or a place) and does not turn to
    the reader ("you may want to ..."). Missing such a sentence would judge the answer on its
    first sentence alone: a false detail after a true one would pass as DESCRIPTIVE."""
    folded = fold(sentence)
    if patterns()["anaphora"].search(" ".join(folded.split()[:ANAPHORA_WINDOW])):
        return True
    if _READER.search(folded):
        return False
    lx = lexicon()
    caps = [m for m in _CAPWORD.finditer(sentence) if m.start() > 0 and not _award_name(sentence, m.start())]
    plain = {*lx.stopwords["en"], *lx.stopwords["pt"], *lx.vague, *lx.meta}
    said = [w for w in re.findall(r"[^\W\d_]+", folded) if len(w) > 2 and w not in plain]
    if not caps and not re.search(r"\d", sentence) and len(said) < MIN_CONTINUATION_WORDS:
        return False  # says nothing to check: "Many customers like it.", a link's leftovers
    in_places = {fold(w) for p in places(sentence) for w in p.text.split()}
    return all(fold(m.group(0)) in known or fold(m.group(0)) in in_places for m in caps)


_NAME_RUN = re.compile(r"(?:[A-ZÀ-ÖØ-Þ][\w'’-]*|de|do|da|of|the)\s+$")


def _award_name(sentence: str, start: int) -> bool:
    """Is the capitalized word at ``start`` part of a prize's name, written right after an award
    word ("ganhou o prêmio Pedal de Ouro", "won the Golden Reel Award")? A prize's name is no
    other party the sentence is about (since 2026.12.14); the claim still carries it as a name
    the facts must have."""
    before = sentence[:start]
    while (m := _NAME_RUN.search(before)) and fold(m.group(0).strip()) not in _award_words():
        before = before[: m.start()]
    words = fold(before).split()
    return bool(words) and (words[-1] in _award_words() or (len(words) > 1 and words[-2] in _award_words()
                                                            and words[-1] in ("o", "a", "the", "el", "la")))


@lru_cache(maxsize=1)
def _award_words() -> frozenset[str]:
    return frozenset(lexicon().concepts.get("award", ()))


# Where a sentence's clauses meet: "X may be good, but I can't confirm it" asserts only its first.
# "..., mas, segundo a empresa, ...": a comma may follow the conjunction (since 2026.12.16).
_CLAUSE = re.compile(r"\s*[;:]\s+|,?\s+(?:but|mas|though|although|embora|porém|however),?\s+"
                     r"|,\s+(?=(?:so|então|e|and)\s)", re.IGNORECASE)


def _hedged_statement(clause: str, names: tuple[str, ...]) -> str | None:
    """The statement in a clause whose hedge is a part of its own between commas ("X might be
    based in Leeds, I'm not sure", "Talvez a X tenha sido fundada em 2015, não tenho certeza"):
    the parts without the hedge that name the brand, or None. A hedged statement is still a
    statement (since 2026.12.16; it was dropped with its hedge, and a false one judged ECHO)."""
    parts = [p for p in re.split(r",\s+", clause) if p.strip()]
    hedge = patterns()["hedge"]
    kept = [p for p in parts if not hedge.search(fold(p))]
    if len(kept) == len(parts) or not names or not any(mentions_name(p, names) for p in kept):
        return None
    text = ", ".join(kept)
    # Only a specific item makes it a statement worth checking: a number, or a name beyond the
    # brand's ("Quizás X sea buena", "Sobre X especificamente" stay with their hedge).
    name_words = {fold(w) for n in names for w in n.split()}
    specific = re.search(r"\d", text) or any(fold(m.group(0)) not in name_words
                                             for m in _CAPWORD.finditer(text) if m.start() > 0)
    return text if specific else None


def _claim(sentence: str, names: tuple[str, ...] = ()) -> Claim:
    pats = patterns()
    clauses = [c for c in _CLAUSE.split(sentence) if c and c.strip()]
    asserted = []
    after_hedge = kept_hedged = False
    for c in clauses:
        if pats["hedge"].search(fold(c)):
            after_hedge = True
            if (statement := _hedged_statement(c, names)) is not None:
                asserted.append(statement)
                kept_hedged = True
        # After "I don't know X; ..." comes advice ("vale a pena ler avaliações", "no puedo opinar
        # sobre ella"), as after a hedged sentence (brand_claims): a clause that neither names the
        # brand nor refers back to it ("it ...") asserts nothing about it (since 2026.12.14).
        elif not (after_hedge and names and not mentions_name(c, names)
                  and not pats["anaphora"].search(" ".join(fold(c).split()[:ANAPHORA_WINDOW]))):
            asserted.append(c)
    text = "; ".join(" ".join(c.split()) for c in asserted)
    return Claim(text, sentence, kept_hedged or len(asserted) < len(clauses),
                 kept_hedged or bool(pats["uncertainty"].search(fold(text))))


def brand_claims(answer: str, brand: Brand, facts: Sequence[Fact]) -> list[Claim]:
    """The answer's claims about the brand, in order."""
    products = product_words(brand, facts)
    known = {fold(m.group(0)) for f in facts for m in _CAPWORD.finditer(f.text)}
    known |= {fold(w) for n in brand.names for w in n.split()}
    claims: list[Claim] = []
    about_previous = False
    intro: str | None = None  # a line about the brand that ends with ":" introduces a list
    table = False  # in a table whose header (or an earlier row) names the brand
    for raw_line, marked in ((_clean(ln), ln) for ln in answer.splitlines()):
        if not raw_line.strip(" -:.|\t"):
            continue  # blank, or a table's or a heading's rule ("|---|---|"): the rows go on about it
        row = marked.lstrip().startswith("|")
        table = table and row
        if table:
            # every row under a header that names the brand is about it, whatever it names
            # ("| HQ | <a city> |": since 2026.12.16 the rows went on only while they named no one else)
            claims += [_claim(s, brand.names) for s in _sentences(raw_line)]
            continue
        item = _ITEM.match(raw_line)
        line = raw_line[item.end():] if item else raw_line
        if item and intro is not None:
            claims.append(_claim(f"{intro} {' '.join(line.split())}", brand.names))
            continue
        intro = None
        for s in _sentences(line):
            words = {fold(m.group(0)) for m in _CAPWORD.finditer(s)}
            about = (mentions_name(s, brand.names) or bool(words & products)
                     or (about_previous and _continues(s, known)))
            if about and s.rstrip().endswith(":"):
                intro = s.rstrip().rstrip(":")
            elif about:
                claims.append(_claim(s, brand.names))
                # a header that names only the brand, its products or the facts' words: not a
                # comparison with another brand's column
                table = table or (row and all(fold(m.group(0)) in known or fold(m.group(0)) in products
                                              for m in _CAPWORD.finditer(s)))
            # A hedge ("I don't know X.") is followed by advice, not by more about the brand.
            about_previous = about and not (claims and claims[-1].hedge and claims[-1].sentence == s)
    return claims[:MAX_CLAIMS]


def named_only_in_addresses(answer: str, brand: Brand) -> bool:
    """The brand is named inside an e-mail address or a URL of the answer ("write to
    info@<brand>.example"), and nowhere in its text: such an answer says nothing checkable about
    the brand (the heuristic has already ruled out a URL on the brand's own domain)."""
    if mentions_name(_clean(answer), brand.names):
        return False
    compact = {re.sub(r"[^a-z0-9]", "", fold(n)) for n in brand.names}
    for m in (*_EMAIL.finditer(answer), *_URL.finditer(answer)):
        address = fold(m.group(0))
        if mentions_name(re.sub(r"[^a-z0-9]+", " ", address), brand.names) or any(
                len(c) >= 4 and c in re.sub(r"[^a-z0-9]", "", address) for c in compact):
            return True
    return False


def _brand_addresses(answer: str, brand: Brand) -> list[str]:
    """E-mail addresses of the answer that name the brand (in the mailbox's domain or on one of
    its domains), folded."""
    compact = {re.sub(r"[^a-z0-9]", "", fold(n)) for n in brand.names}
    domains = {fold(d).removeprefix("www.") for d in brand.domains}
    out = []
    for m in _EMAIL.finditer(answer):
        address = fold(m.group(0)).rstrip(".")
        host = address.split("@", 1)[1]
        if any(host == d or host.endswith("." + d) for d in domains) or any(
                len(c) >= 4 and c in re.sub(r"[^a-z0-9]", "", host) for c in compact):
            out.append(address)
    return list(dict.fromkeys(out))


def unknown_addresses(answer: str, brand: Brand, facts: Sequence[Fact]) -> list[str]:
    """E-mail addresses of the answer on the brand's name that no fact gives, when the facts give
    another address: the brand's address is then known and this one may be invented (since
    2026.12.15; since 2026.12.16 also when the answer names the brand only in it). When the facts
    give none, an address on the brand's name is no checkable item (as before)."""
    said = " ".join(fold(f.text) for f in facts)
    if not _EMAIL.search(said):
        return []
    return [a for a in _brand_addresses(answer, brand) if a not in said]


def known_addresses(answer: str, brand: Brand, facts: Sequence[Fact]) -> list[tuple[str, Fact]]:
    """E-mail addresses of the answer on the brand's name that a fact gives, with that fact: a
    checked item like a place or a year (since 2026.12.16; the address was dropped with the URLs
    and an answer that gave only the brand's right address was ECHO)."""
    out = []
    for address in _brand_addresses(answer, brand):
        fact = next((f for f in facts if re.search(r"(?<![\w.+-])" + re.escape(address) + r"(?![\w-])",
                                                   fold(f.text))), None)
        if fact is not None:
            out.append((address, fact))
    return out


def has_injection(answer: str) -> bool:
    """Text addressed to the judge ("ignore previous instructions ...") anywhere in the answer."""
    return bool(patterns()["injection"].search(fold(answer)))
