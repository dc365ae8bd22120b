"""The deterministic half of the classifier (ADR-031 "heuristic before judge"). Pure, no I/O.

``decide(run, brand)`` returns a Decision only when a machine can be sure:

- STRONG: the answer cites a URL whose host is the brand's registered domain or a subdomain
  of it. Candidates are found in the text, then parsed with a URL parser; hosts are IDNA
  (UTS #46) normalized and compared by registered domain (eTLD+1 from the Public Suffix List;
  the PSL's default ``*`` rule makes ``lumora.example`` a registered domain too).
- ABSENT: the answer names neither the brand, nor an alias, nor one of its domains
  (accent-, case- and width-insensitive, whole words only).
- ECHO, only in the narrow case where it is certain: the prompt named the brand and the
  answer's sentences about it carry nothing beyond the brand's names, the prompt's own words,
  stopwords and "I don't know / check their website" vocabulary (no numbers, no yes/no
  verdict on what the prompt asserted, no URL).

Everything else returns None and goes to the judge. Bump HEURISTIC_VERSION when a rule
changes: every history row records it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from attesta_contracts.classification import CitationClass, DecidedBy
from attesta_platform.brandmatch import (  # the shared matcher; these are re-exported
    CitedUrl,
    brand_name_pattern,
    cited_urls,
    domain_patterns,
    fold,
    host_is_on_domains,
    mentions_domain,
    mentions_name,
    normalize_host,
    registered_domain,
)

from .model import Brand, Decision, Run

# .2: disguised HTML links are not STRONG; .3: a brand name that is a common word counts only as a
# name (capitalized, not inside another proper name, or with the brand in context), see
# BrandMatcher.mentions (issue #18)
# .4: the lines under a title line naming the brand (a heading, a bold line, a table's header,
# "Brand:") are about it: a bullet list or a table under the brand's name is no sure ECHO
HEURISTIC_VERSION = "heuristic-2026.12.4"

__all__ = ["CitedUrl", "brand_name_pattern", "cited_urls", "domain_patterns", "fold",
           "host_is_on_domains", "mentions_domain", "mentions_name", "normalize_host",
           "registered_domain", "brand_domains", "BrandMatcher", "brand_matcher", "decide", "load_tables",
           "echo_reason", "HEURISTIC_VERSION", "STOPWORDS", "META_WORDS"]


def brand_domains(brand: Brand) -> tuple[str, ...]:
    out = []
    for d in brand.domains:
        host = normalize_host(d.removeprefix("*."))
        if host and registered_domain(host):  # a bare public suffix can never be a brand's domain
            out.append(host)
    return tuple(dict.fromkeys(out))


# --------------------------------------------------------------------------- sure ECHO

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself nor of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t m re ve ll d don doesn didn
    isn aren wasn weren haven hasn hadn won wouldn shouldn couldn cannot can't i'm it's there's
    let us one not no never""".split()
)
# Words that talk about knowing, not about the brand: "I don't have specific information about
# X; check their official website". An answer made only of these says nothing about the brand.
META_WORDS = frozenset(
    """information info specific details detail data knowledge aware familiar sure certain able
    unable provide share know known knows find check verify official website site webpage page
    sources source recommend recommended suggest consult visit look looking research recent news
    latest date up-to-date current currently publicly public available company brand name named
    called mentioned mention mentions asked ask asking question regarding sorry unfortunately
    however may might want help happy further additional reliable accurate verified independent
    directly contact reach note enough limited without appears seems recognize cutoff training
    exist exists refer refers context tell reliably confidently comment unclear unsure best
    suggestion suggestions resources resource perhaps possibly please also entity organization
    organisation say said might need needed like would could trustworthy""".split()
)
# A yes/no verdict or a negation turns the prompt's own words into a claim ("Is Lumora a dental
# company?" "Yes, Lumora is a dental company." / "Lumora is not a dental company."): in such a
# sentence the prompt's words are content. "I'm not familiar with Lumora" stays an echo.
_VERDICT_WORDS = frozenset(
    "yes no not never nor none neither nothing cannot correct incorrect true false indeed right "
    "wrong exactly absolutely definitely certainly affirmative negative".split()
)
# Sentences with these may talk about the brand without naming it.
_ANAPHORA = frozenset("it its they their them theirs itself themselves he she his her".split())
_ANAPHORA_PHRASES = re.compile(r"\b(?:the|this|that) (?:company|firm|brand|business|organi[sz]ation|maker|manufacturer)\b")
_BRAND_TOKEN = " qqbrandqq "
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def _words(folded: str) -> list[str]:
    return [w.replace("’", "'") for w in _WORD.findall(folded)]


def _content_words(words: Iterable[str], exempt: frozenset[str]) -> list[str]:
    out = []
    for w in words:
        if w == _BRAND_TOKEN.strip() or w in STOPWORDS or w in META_WORDS or w in exempt:
            continue
        if "'" in w and all(p in STOPWORDS or p in META_WORDS or p in exempt for p in w.split("'")):
            continue  # don't, i'm, they're
        out.append(w)
    return out


# A line that titles what follows: a markdown heading, a line in bold alone, a table's row, a line
# ending with a colon ("**Brand**", "## Brand", "| | Brand |", "Brand:").
_TITLE_LINE = re.compile(r"^\s*(?:#{1,6}\s|\*\*[^*]+\*\*\s*:?\s*$|\|)|:\s*\**\s*$")


def _sentences_about_brand(folded: str) -> list[str]:
    """The answer's sentences about the brand: those naming it or referring back to it, and every
    line under a title line that names it (a heading, a bold line, a table's header, "Brand:"):
    the bullets and rows below such a title are about the brand without naming it (since
    heuristic-2026.12.4; before, "**Brand**" over "- Since 1987" was a sure ECHO)."""
    out: list[str] = []
    titled = False
    for line in folded.splitlines():
        for s in (s for s in _SENTENCE_SPLIT.split(line) if s.strip()):
            if (titled or _BRAND_TOKEN.strip() in s or _ANAPHORA_PHRASES.search(s)
                    or any(w in _ANAPHORA for w in _words(s))):
                out.append(s)
        titled = titled or (_BRAND_TOKEN.strip() in line and bool(_TITLE_LINE.search(line)))
    return out


def echo_reason(prompt: str, answer: str, brand: Brand) -> str | None:
    """Why the answer is a sure ECHO, or None when it may say something about the brand."""
    names = brand.names
    pattern = brand_name_pattern(names)
    if pattern is None or not pattern.search(fold(prompt)):
        return None  # the prompt did not carry the brand: an unprompted mention is the judge's
    if cited_urls(answer):
        return None  # any URL is a claim (a lookalike domain, a page on another site)
    folded = pattern.sub(_BRAND_TOKEN, fold(answer))
    prompt_words = frozenset(
        w for w in _words(pattern.sub(" ", fold(prompt))) if not any(c.isdigit() for c in w)
    )
    about_brand = _sentences_about_brand(folded)
    if not about_brand:
        return None  # the name only appears inside something else (e.g. a domain)
    for s in about_brand:
        words = _words(s)
        if any(any(c.isdigit() for c in w) for w in words):
            return None  # a number, a year, a dose: something specific to check
        verdict = any(w in _VERDICT_WORDS or w.endswith("n't") for w in words)
        if _content_words(words, frozenset() if verdict else prompt_words):
            return None
    return (
        f"the prompt names {brand.name}; the answer's {len(about_brand)} sentence(s) about it carry "
        "no content beyond the brand's names, the prompt's own words and stopwords "
        "(no number, no URL, no yes/no verdict)"
    )


# --------------------------------------------------------------------------- the decision


def _decision(cls: CitationClass, reason: str) -> Decision:
    return Decision(
        citation_class=cls,
        reason=reason,
        decided_by=DecidedBy.DETERMINISTIC.value,
        heuristic_version=HEURISTIC_VERSION,
    )


# --------------------------------------------------------------------------- per-brand precomputation


@dataclass(frozen=True)
class BrandMatcher:
    """Everything ``decide`` needs from a brand that depends on the brand alone, computed once.

    Built by ``brand_matcher`` (cached on the brand's value: a changed name, alias or domain is a
    different ``Brand`` and so a different entry). Holds the same values the per-call helpers
    (``brand_domains``, ``brand_name_pattern``, ``registered_domain``, ``_unicode_domain``)
    compute, so decisions are identical; only the repetition is gone.
    """

    names: tuple[str, ...]
    domains: tuple[str, ...]  # normalized brand hosts, as ``brand_domains`` returns them
    registered: tuple[str | None, ...]  # ``registered_domain`` of each of ``domains``
    name_pattern: re.Pattern[str] | None  # whole-word names on folded text
    domain_patterns: tuple[re.Pattern[str], ...]  # each domain, ASCII and folded Unicode form

    @classmethod
    def build(cls, brand: Brand) -> BrandMatcher:
        domains = brand_domains(brand)
        common = tuple(dict.fromkeys(fold(n).strip() for n in brand.names
                                     if len(n.split()) == 1 and _is_common_word(n.strip())))
        patterns = domain_patterns(domains)
        plain = tuple(n for n in brand.names if fold(n).strip() not in common)
        return cls(
            names=brand.names,
            domains=domains,
            registered=tuple(registered_domain(d) for d in domains),
            name_pattern=brand_name_pattern(brand.names),
            domain_patterns=patterns,
            common_names=common,
            plain_pattern=brand_name_pattern(plain),
            domain_needles=_domain_needles(domains, patterns),
            # Each plain name's first folded word (its regex needs all of them); a name that
            # folds to nothing gives "", which every text contains: no skipping then.
            plain_needles=tuple(dict.fromkeys((fold(n).strip().split() or [""])[0]
                                              for n in plain if n and n.strip())),
        )

    def domain_of(self, host: str) -> str | None:
        """``host_is_on_domains`` with the domains' registered parts already known."""
        return host_is_on_domains(host, self.domains, self.registered)

    common_names: tuple[str, ...] = ()  # folded one-word names that are dictionary words
    plain_pattern: re.Pattern[str] | None = None  # the other names
    # Literal text each pattern cannot match without (None: not known, search anyway): the
    # domain of each of ``domain_patterns``, the first word of each plain name. Most answers name
    # none of a brand's competitors; a substring test skips those regex searches, the costliest
    # part of ranking an answer (issue #27). Which texts match is unchanged.
    domain_needles: tuple[str, ...] | None = None
    plain_needles: tuple[str, ...] | None = None

    def plain_starts(self, folded: str) -> Iterator[int]:
        """Where in ``folded`` each domain pattern, then the plain-name pattern, first matches:
        the uses that name the brand whatever the context."""
        for i, p in enumerate(self.domain_patterns):
            if self.domain_needles is None or self.domain_needles[i] in folded:
                if m := p.search(folded):
                    yield m.start()
        if self.plain_pattern is not None and (
                self.plain_needles is None or any(n in folded for n in self.plain_needles)):
            if m := self.plain_pattern.search(folded):
                yield m.start()

    def mentioned_in(self, folded: str) -> bool:
        """``mentions_name`` or ``mentions_domain`` on already folded text."""
        if self.name_pattern is not None and self.name_pattern.search(folded):
            return True
        return any(p.search(folded) for p in self.domain_patterns)

    def mentions(self, text: str, context: str = "") -> bool | None:
        """Does ``text`` name the brand? Like ``mentioned_in``, except for a one-word name that is
        also an ordinary English or Portuguese word ("Beacon", "Kestrel"): it counts
        only written with a capital, and, when it sits inside a longer capitalized name ("Beacon
        Hill", "Kestrel Ridge Analytics"), only if the brand is named elsewhere
        in ``text`` or in ``context`` (the prompt).
        Returns None when the only uses are such ambiguous ones: not ABSENT for sure, so the judge
        (or a person) decides. Deterministic; documented in docs/classifier-accuracy.md."""
        folded = fold(text)
        if next(self.plain_starts(folded), None) is not None:
            return True
        if not self.common_names:
            return False
        sure, ambiguous = _common_name_uses(text, self.common_names)
        if sure:
            return True
        if not ambiguous:
            return False
        cf = fold(context)
        if any(p.search(cf) for p in self.domain_patterns) or (
                self.plain_pattern is not None and self.plain_pattern.search(cf)):
            return True
        c_sure, c_ambiguous = _common_name_uses(context, self.common_names)
        return True if (c_sure or c_ambiguous) else None


def _domain_needles(domains: tuple[str, ...], patterns: tuple[re.Pattern[str], ...]
                    ) -> tuple[str, ...] | None:
    """Each domain pattern's literal domain, when every pattern is exactly one domain's ASCII
    form (no IDN domain with a second, Unicode pattern); None otherwise (no skipping)."""
    if len(patterns) != len(domains) or any(re.escape(d) not in p.pattern
                                            for d, p in zip(domains, patterns, strict=True)):
        return None
    return domains


def _is_common_word(name: str) -> bool:
    from .evidence import is_common_word  # simplemma's en/pt lexicons, loaded on first use

    return is_common_word(name)


_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n—–\-\"“(]\s*)$")
_CAP_WORD_AFTER = re.compile(r"^[ \t]+[A-ZÀ-ÖØ-Þ0-9][\w'’-]*")
_CAP_WORD_BEFORE = re.compile(r"(?<![.!?:;])\b([A-ZÀ-ÖØ-Þ][\w'’-]*)[ \t]+$")


def _common_name_uses(text: str, names: tuple[str, ...]) -> tuple[bool, bool]:
    """(a sure use as the brand's name, an ambiguous capitalized use) of common-word names.
    Lower-case uses are the ordinary word ("a beacon", "trilhar um caminho")."""
    # One folded character per original one, so match offsets are ``text``'s own. ASCII text
    # (most answers) folds one to one (``fold`` is ``casefold`` there): one call, not one a
    # character (which was the classifier's largest CPU cost per run).
    folded = text.casefold() if text.isascii() else "".join((fold(ch) or " ")[0] for ch in text)
    sure = ambiguous = False
    for name in names:
        for m in re.finditer(r"(?<!\w)" + re.escape(name) + r"(?!\w)", folded):
            word = text[m.start(): m.end()]
            if not word[:1].isupper():
                continue
            before, after = text[: m.start()], text[m.end():]
            cap_before = _CAP_WORD_BEFORE.search(before)
            in_run = bool(_CAP_WORD_AFTER.match(after)) or bool(
                cap_before and not _SENTENCE_START.search(before[: cap_before.start()]))
            # At a sentence start a capital says nothing, but "Nandu sells coffee." is the brand
            # far more often than not: only a longer capitalized name makes it ambiguous.
            if in_run:
                ambiguous = True
            else:
                sure = True
    return sure, ambiguous


def load_tables() -> None:
    """Load now what the rules otherwise load on first use: simplemma's English and Portuguese
    lexicons (is a one-word brand name a common word?, over a second of CPU) and the Public
    Suffix List. The service calls it at start-up so its first batch does not stall on them."""
    _is_common_word("beacon")
    registered_domain("lumora.example")


@lru_cache(maxsize=1024)
def brand_matcher(brand: Brand) -> BrandMatcher:
    return BrandMatcher.build(brand)


def decide(run: Run, brand: Brand, matcher: BrandMatcher | None = None) -> Decision | None:
    """STRONG / ABSENT / sure ECHO, decided by rules alone; None sends the run to the judge.

    ``matcher`` is ``brand_matcher(brand)`` (the default): the brand's normalized domains and
    compiled name/domain patterns, built once per brand instead of once per run."""
    m = matcher if matcher is not None else brand_matcher(brand)
    for url in cited_urls(run.answer):
        on = m.domain_of(url.host)
        if on:
            return _decision(
                CitationClass.STRONG,
                f"the answer cites {url.text[:200]} (host {url.host}, on the brand's domain {on})",
            )
    mentioned = m.mentions(run.answer, run.prompt)
    if mentioned is None:
        return None  # a common-word name only inside another capitalized name: not sure either way
    if not mentioned:
        return _decision(
            CitationClass.ABSENT,
            "the answer names neither " + ", ".join(repr(n) for n in m.names)
            + (" nor the domain " + ", ".join(m.domains) if m.domains else ""),
        )
    reason = echo_reason(run.prompt, run.answer, brand)
    if reason:
        return _decision(CitationClass.ECHO, reason)
    return None
