"""Brand names and cited URLs in text: the one matcher the classifier's heuristic and the
collector share (a prompt that names a tracked brand is "branded"; a cited source's registered
domain). Pure, no I/O; the Public Suffix List is the offline copy in the ``publicsuffixlist``
wheel, built on first use.

Moved here unchanged from ``attesta_classifier.domain.heuristic`` (which re-exports it) so a
second service decides "names the brand" and "registered domain" exactly like the classifier.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import idna
from publicsuffixlist import PublicSuffixList

# --------------------------------------------------------------------------- text normalization


def fold(text: str) -> str:
    """Accent-, case- and width-insensitive form: NFKD, drop combining marks, casefold.

    NFKD also maps full-width letters and ligatures to their plain forms, so ``Ｌｕｍｏｒａ``
    and ``Lumorá`` both fold to ``lumora``.
    """
    if text.isascii():
        # Most answers are plain ASCII: NFKD leaves ASCII as it is and no ASCII character is
        # combining, so the per-character filter below would only cost time (same result).
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return stripped.casefold()


def _name_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """One regex matching any of the names as whole words (longest first), on folded text."""
    parts = []
    for name in sorted({fold(n).strip() for n in names if n and n.strip()}, key=len, reverse=True):
        words = [re.escape(w) for w in name.split()]
        parts.append(r"\s+".join(words))
    if not parts:
        return None
    # (?<!\w) / (?!\w) instead of \b: names may end in punctuation ("S.A."), where \b fails.
    return re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")(?!\w)")


@lru_cache(maxsize=1024)
def brand_name_pattern(names: tuple[str, ...]) -> re.Pattern[str] | None:
    return _name_pattern(names)


def mentions_name(text: str, names: tuple[str, ...]) -> bool:
    pattern = brand_name_pattern(names)
    return bool(pattern and pattern.search(fold(text)))


# --------------------------------------------------------------------------- URLs and domains

_PSL: PublicSuffixList | None = None


def _psl() -> PublicSuffixList:
    global _PSL
    if _PSL is None:  # built on first use (no work at import time); offline data in the wheel
        _PSL = PublicSuffixList()
    return _PSL


@lru_cache(maxsize=1 << 14)  # pure, and hosts repeat across answers (IDNA is the costly part)
def normalize_host(host: str) -> str | None:
    """ASCII (punycode) lower-case host without a trailing dot, or None if it is not a valid
    DNS name. UTS #46 mapping folds full-width dots and letters the way browsers do."""
    host = host.strip().rstrip(".")
    if not host or len(host) > 253:
        return None
    try:
        ascii_host = idna.encode(host, uts46=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        return None
    return ascii_host.lower()


@lru_cache(maxsize=1 << 14)  # pure, and hosts repeat across answers (the PSL walk is in Python)
def registered_domain(host: str) -> str | None:
    """eTLD+1 of a normalized host under PSL rules (None for a bare public suffix or an IP)."""
    if not host or re.fullmatch(r"[0-9.]+|\[?[0-9a-f:.]+\]?", host):
        return None
    return _psl().privatesuffix(host)


@dataclass(frozen=True)
class CitedUrl:
    text: str  # the candidate as it appeared (after trimming punctuation)
    host: str  # normalized host


# A markdown link: its visible text is not a citation on its own (``[lumora.example](evil.io)``
# is a disguised link), only its target is.
_MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
# The same for an HTML anchor: <a href="https://evil.io">brand.example</a> cites evil.io.
_HTML_LINK = re.compile(r"<a\b[^>]*?\bhref\s*=\s*[\"']?([^\"'\s>]+)[^>]*>.*?</a\s*>",
                        re.IGNORECASE | re.DOTALL)
# Candidate tokens: maximal runs without whitespace or the delimiters that wrap URLs in prose,
# markdown and HTML. Each candidate is then parsed; most are just words and are discarded.
_CANDIDATE = re.compile(r"[^\s<>\"'`()\[\]{}|^]+")
_LEADING_JUNK = "*_~“”‘’«»‹›¿¡:;,."
_TRAILING_JUNK = ".,;:!?*_~“”‘’«»‹›…"
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):", re.IGNORECASE)
_HOSTLIKE = re.compile(r"^[^/?#@:]+\.[^/?#@:]+")
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
_DNS_NAME = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})")


@lru_cache(maxsize=1 << 16)  # pure, and most tokens are words that recur across answers
def _parse_candidate(token: str) -> str | None:
    """Host of a candidate URL, or None. Only http(s) and scheme-less URLs count; e-mail
    addresses (``info@brand.example``) and other schemes (mailto:, javascript:) do not."""
    # Full-width letters and the ideographic/full-width dots are read as ASCII by browsers.
    token = unicodedata.normalize("NFKC", token).translate(_DOTS)
    token = token.strip(_LEADING_JUNK).rstrip(_TRAILING_JUNK)
    if not token:
        return None
    # Browsers read "\" as "/" in http(s) URLs: https://evil.io\@brand.example goes to evil.io.
    token = token.replace("\\", "/")
    scheme = _SCHEME.match(token)
    if token.startswith("//"):
        url = "http:" + token
    elif scheme and token[scheme.end():].startswith("//"):
        if scheme.group(1).lower() not in ("http", "https"):
            return None
        url = token
    elif scheme and not _HOSTLIKE.match(token):
        return None  # mailto:, javascript:, tel:, or "word:" in prose
    else:
        head = re.split(r"[/?#]", token, maxsplit=1)[0]
        if "@" in head:
            return None  # an e-mail address, not a URL
        if not _HOSTLIKE.match(token):
            return None
        url = "http://" + token
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if not host or "." not in host.strip("."):
        return None
    host = normalize_host(host)
    # Only things shaped like DNS names count: "e.g.", "3.5", "S.A." are not hosts.
    return host if host and _DNS_NAME.fullmatch(host) else None


@lru_cache(maxsize=4096)  # the consumer's batch asks twice per run: for its sources, then decide
def cited_urls(answer: str) -> tuple[CitedUrl, ...]:
    """Every http(s) or scheme-less URL candidate in the answer, with its normalized host."""
    targets: list[str] = []

    def _keep_target(m: re.Match[str]) -> str:
        targets.append(m.group(2))
        return " "

    def _keep_href(m: re.Match[str]) -> str:
        targets.append(m.group(1))
        return " "

    text = _MARKDOWN_LINK.sub(_keep_target, _HTML_LINK.sub(_keep_href, answer))
    found: list[CitedUrl] = []
    for token in [*targets, *(m.group(0) for m in _CANDIDATE.finditer(text))]:
        host = _parse_candidate(token)
        if host:
            found.append(CitedUrl(token.strip(_LEADING_JUNK).rstrip(_TRAILING_JUNK), host))
    return tuple(found)


def host_is_on_domains(host: str, domains: tuple[str, ...],
                       registered: tuple[str | None, ...] | None = None) -> str | None:
    """The brand domain ``host`` belongs to (itself or a subdomain, same registered domain).
    ``registered``: ``registered_domain`` of each of ``domains``, when already known."""
    reg = registered_domain(host)
    if reg is None:
        return None
    regs = registered if registered is not None else tuple(registered_domain(d) for d in domains)
    for d, d_reg in zip(domains, regs, strict=True):
        if (host == d or host.endswith("." + d)) and reg == d_reg:
            return d
    return None


def domain_patterns(domains: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """Each domain as a host anywhere in folded text, in its ASCII and folded Unicode forms."""
    return tuple(re.compile(_domain_regex(form))
                 for d in domains for form in dict.fromkeys((d, _unicode_domain(d))))


def mentions_domain(text: str, domains: tuple[str, ...]) -> bool:
    """Does the brand's domain appear anywhere as a host (URL, bare domain, e-mail address)?
    ``brand.example.evil.io`` does not count: that host belongs to evil.io."""
    folded = fold(text)
    return any(p.search(folded) for p in domain_patterns(domains))


def names_brand(text: str, names: tuple[str, ...], hosts: tuple[str, ...]) -> bool:
    """Does ``text`` name the brand: one of its names or aliases (whole words, accent/case/width
    folded) or one of its domains as a host? A prompt that does is *branded* (the collector
    stores it per prompt, the classifier's metrics split by it)."""
    return mentions_name(text, names) or bool(hosts and mentions_domain(text, hosts))


def _domain_regex(form: str) -> str:
    return r"(?<![\w-])(?:[\w-]+\.)*" + re.escape(form) + r"(?![\w-]|\.[\w-])"


def _unicode_domain(domain: str) -> str:
    try:
        return fold(idna.decode(domain))
    except (idna.IDNAError, UnicodeError, ValueError):
        return domain


# --------------------------------------------------------------------------- where the brand is named


def _fold_with_offsets(text: str) -> tuple[str, list[int]]:
    """``fold(text)`` and, for each of its characters, the index in ``text`` of the character it
    comes from. Folding one character at a time gives the same string: NFKD only reorders
    combining marks, which are dropped, and case folding has no context."""
    if text.isascii():
        return text.casefold(), list(range(len(text)))  # ASCII folds one character to one
    folded: list[str] = []
    offsets: list[int] = []
    for i, ch in enumerate(text):
        piece = fold(ch)
        folded.append(piece)
        offsets.extend([i] * len(piece))
    return "".join(folded), offsets


def mention_spans(text: str, names: tuple[str, ...],
                  domains: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """Where ``text`` names the brand, as ``(start, end, kind)`` in ``text``'s own indexes, in
    order and never overlapping: ``"domain"`` for one of its domains as a host (a subdomain
    included), ``"name"`` for its name or an alias, matched as ``names_brand`` matches them. A
    name inside a domain is part of the domain's span."""
    folded, offsets = _fold_with_offsets(text)
    found: list[tuple[int, int, str]] = []
    for pattern in domain_patterns(domains):
        found += [(m.start(), m.end(), "domain") for m in pattern.finditer(folded) if m.end() > m.start()]
    name_pattern = brand_name_pattern(tuple(names))
    if name_pattern is not None:
        found += [(m.start(), m.end(), "name") for m in name_pattern.finditer(folded)
                  if m.end() > m.start()]
    kept: list[tuple[int, int, str]] = []
    # Domains first, then longer spans: a name inside a domain, or a shorter overlapping
    # match, gives way.
    for start, end, kind in sorted(found, key=lambda s: (s[2] != "domain", s[0] - s[1], s[0])):
        if all(end <= s or start >= e for s, e, _ in kept):
            kept.append((start, end, kind))
    return sorted((offsets[s], offsets[e - 1] + 1, kind) for s, e, kind in kept)
