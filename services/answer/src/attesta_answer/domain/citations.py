"""Citation reconciliation, then server-side enrichment (ADR-0024), both pure.

``reconcile_and_enrich`` is the only way citations reach a reply: reconciliation first (a
citation survives only if its card was retrieved, its span occurs in that card and it is not a
duplicate), and immediately after it ``_enrich``, the one private enrichment helper.
"""

from __future__ import annotations

import ipaddress
import math
import numbers
import re
import time
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from attesta_answer.domain.firewall import strip_links
from attesta_answer.domain.text import normalise, normalise_span, words
from attesta_contracts.chat import Citation, HybridPath

if TYPE_CHECKING:  # the model imports score_from from here
    from attesta_answer.domain.model import Card

MAX_CITATIONS = 8
MAX_PROPOSED = 64  # proposals looked at; the rest are dropped unexamined (a hostile list is long)
MAX_SPAN_CHARS = 1000
MIN_SPAN_WORDS = 2  # "the" occurs in every card: a one-word span verifies nothing
MAX_URL_CHARS = 2048
MAX_LICENSE_CHARS = 200


# -- reconciliation ----------------------------------------------------------------------------
class DropReason(StrEnum):
    MALFORMED = "malformed"  # not an object with a string card_id and a string span
    CARD_NOT_RETRIEVED = "card_not_retrieved"
    SPAN_TOO_SHORT = "span_too_short"
    SPAN_TOO_LONG = "span_too_long"  # over MAX_SPAN_CHARS: a quote, not the card
    SPAN_NOT_IN_CARD = "span_not_in_card"
    DUPLICATE = "duplicate"
    OVER_LIMIT = "over_limit"


@dataclass(frozen=True)
class DroppedCitation:
    reason: DropReason
    card_id: str | None
    span: str | None  # cut to 200 characters: for the logs only, never in a payload


def reconcile(proposed: Iterable[Any], cards: Sequence[Card],
              limit: int = MAX_CITATIONS) -> tuple[list[Citation], list[DroppedCitation]]:
    """Keep the citations that name a retrieved card and quote it; say why the others went.

    A span "occurs in the card" when its ``normalise_span`` form is a substring of the
    ``normalise`` form of the card's text or title (see ``domain.text`` for the rules), both
    taken after the link firewall, i.e. the text the generator was shown.
    """
    by_id = {card.card_id: card for card in cards}
    haystacks: dict[str, tuple[str, str]] = {}
    kept: list[Citation] = []
    dropped: list[DroppedCitation] = []
    seen: set[tuple[str, str]] = set()

    for position, item in enumerate(proposed):
        card_id = item.get("card_id") if isinstance(item, Mapping) else None
        span = item.get("span") if isinstance(item, Mapping) else None
        if position >= MAX_PROPOSED:
            dropped.append(DroppedCitation(DropReason.OVER_LIMIT, _short(card_id), _short(span)))
            continue
        if not isinstance(card_id, str) or not isinstance(span, str):
            dropped.append(DroppedCitation(DropReason.MALFORMED, _short(card_id), _short(span)))
            continue
        if len(span) > MAX_SPAN_CHARS:
            dropped.append(DroppedCitation(DropReason.SPAN_TOO_LONG, _short(card_id), _short(span)))
            continue
        card = by_id.get(card_id) or by_id.get(card_id.strip())
        if card is None:
            dropped.append(DroppedCitation(DropReason.CARD_NOT_RETRIEVED, _short(card_id), _short(span)))
            continue
        shown_span = strip_links(span).strip()
        key = normalise_span(shown_span)
        if len(words(key)) < MIN_SPAN_WORDS:
            dropped.append(DroppedCitation(DropReason.SPAN_TOO_SHORT, card.card_id, _short(span)))
            continue
        if card.card_id not in haystacks:
            haystacks[card.card_id] = (normalise(card.text), normalise(card.title))
        text, title = haystacks[card.card_id]
        if key not in text and key not in title:
            dropped.append(DroppedCitation(DropReason.SPAN_NOT_IN_CARD, card.card_id, _short(span)))
            continue
        if (card.card_id, key) in seen:
            dropped.append(DroppedCitation(DropReason.DUPLICATE, card.card_id, _short(span)))
            continue
        if len(kept) >= limit:
            dropped.append(DroppedCitation(DropReason.OVER_LIMIT, card.card_id, _short(span)))
            continue
        seen.add((card.card_id, key))
        kept.append(Citation(card_id=card.card_id, span=shown_span))
    return kept, dropped


def _short(value: Any) -> str | None:
    return value[:200] if isinstance(value, str) else None


# -- enrichment: the three fields, each with its own rules ------------------------------------
_C0_OR_SPACE = "".join(chr(i) for i in range(0x21))
_ASCII_REFUSED = re.compile(r"[\x00-\x20\x7f\\]")  # controls, space, backslash
_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HOST_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def source_url_from(source: Any) -> str | None:
    """An absolute http(s) URL with a host, parsed the way a browser would treat it, or None.

    Rules (WHATWG-minded, stricter where a browser would be lenient): leading/trailing C0
    controls and spaces are trimmed (as WHATWG does); then any control, format or separator
    character left inside (tabs/newlines that a browser would silently drop, e.g.
    ``java\\tscript:``; bidi overrides; spaces) or a backslash (a browser reads it as ``/``) refuses
    the URL; the scheme, compared case-insensitively, must be ``http`` or ``https`` and be
    followed by ``//`` and a valid host (DNS labels, IPv4 or bracketed IPv6; no percent-escapes,
    no user-info, a valid port). Returned with scheme and host lower-cased.
    ``javascript:``, ``data:``, ``ftp:``, relative, empty and non-string sources give None.
    """
    if not isinstance(source, str) or len(source) > MAX_URL_CHARS + 64:  # + room for trimming
        return None
    return _source_url(str(source))  # str(): a str subclass must not reach the cache


@lru_cache(maxsize=8192)  # a KB's sources repeat across answers; the result is a pure function
def _source_url(source: str) -> str | None:
    url = source.strip(_C0_OR_SPACE)
    if not url or len(url) > MAX_URL_CHARS or _ASCII_REFUSED.search(url):
        return None
    if not url.isascii() and any(unicodedata.category(ch)[0] in "CZ" for ch in url):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError when not a number in 0..65535
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not url[len(scheme) + 1:].startswith("//"):
        return None
    if "@" in parts.netloc:  # user-info: "https://trusted.example@evil.example" misleads
        return None
    host = parts.hostname
    if not host or not _valid_host(host, bracketed=parts.netloc.startswith("[")):
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    rest = url[len(scheme) + 3 + len(parts.netloc):]
    return f"{scheme}://{netloc}{rest}"


def _valid_host(host: str, *, bracketed: bool) -> bool:
    if bracketed:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return False
        return True
    if len(host) > 253:
        return False
    return all(_HOST_LABEL.match(label) for label in host.split("."))


def license_from(metadata: Any) -> str | None:
    """``metadata["license"]`` when metadata is a dict and the licence a non-empty string
    (trimmed; at most 200 characters; no control characters), else None."""
    if not isinstance(metadata, dict):
        return None
    value = metadata.get("license")
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > MAX_LICENSE_CHARS:
        return None
    if _ASCII_CONTROL.search(value) or (
            not value.isascii() and any(unicodedata.category(ch)[0] == "C" for ch in value)):
        return None
    return value


def score_from(logit: Any, hybrid_path: Any) -> float | None:
    """``round(100 * sigmoid(logit))`` clamped to [0, 100], as a float, only on the full path.

    Non-full paths (``rrf_only``, ``dense_only``, an absent label) never give a score: RRF and
    cosine scores are on other scales (ADR-0024 (B)). A logit that is not a real number, or
    not finite, gives None. The sigmoid is computed in its stable form (no ``exp`` overflow for
    large negative logits). ``round`` is Python's (half to even).
    """
    if not (isinstance(hybrid_path, str) and hybrid_path == HybridPath.FULL.value):
        return None
    if type(logit) is not float and (isinstance(logit, bool) or not isinstance(logit, numbers.Real)):
        return None
    try:
        x = float(logit)
    except (OverflowError, ValueError, TypeError):
        return None
    if not math.isfinite(x):
        return None
    if x >= 0:
        p = 1.0 / (1.0 + math.exp(-x))
    else:
        e = math.exp(x)
        p = e / (1.0 + e)
    return float(min(100, max(0, round(100.0 * p))))


def _guarded(compute: Any) -> Any:
    try:
        return compute()
    except Exception:  # noqa: BLE001 - ADR-0024 (C): a bad value gives an absent field
        return None


def _enrich(citations: Iterable[Citation], context: Iterable[Any],
            hybrid_path: Any) -> list[Citation]:
    """ADR-0024's enrichment helper. Never raises.

    Looks each citation's card id up over the retrieved context (first chunk per card id
    wins: the best-ranked) and sets ``source_url`` from the chunk's source, ``source_license``
    from its metadata and ``retrieved_score`` from its reranker logit (full path only). Each
    field has its own guard: a missing chunk or a bad value leaves that field absent. The three
    fields are always recomputed from the context, so nothing set upstream survives.
    """
    by_card: dict[str, Any] = {}
    try:
        for chunk in context:
            card_id = _guarded(lambda chunk=chunk: chunk.card_id)
            if isinstance(card_id, str) and card_id not in by_card:
                by_card[card_id] = chunk
    except Exception:  # noqa: BLE001 - a context that cannot be iterated enriches nothing
        pass
    try:
        items = list(citations)
    except Exception:  # noqa: BLE001 - citations that cannot be iterated: none to enrich
        return []
    enriched: list[Citation] = []
    for citation in items:
        try:
            chunk = by_card.get(citation.card_id)
            update = {
                "source_url": _guarded(lambda: source_url_from(chunk.source)),
                "source_license": _guarded(lambda: license_from(chunk.metadata)),
                "retrieved_score": _guarded(
                    lambda: score_from(chunk.scores.rerank_logit, hybrid_path)),
            } if chunk is not None else dict.fromkeys(
                ("source_url", "source_license", "retrieved_score"))
            enriched.append(citation.model_copy(update=update))
        except Exception:  # noqa: BLE001 - ADR-0024 (C): the original citation, unchanged
            enriched.append(citation)
    return enriched


@dataclass(frozen=True)
class ReconciledCitations:
    citations: list[Citation]
    dropped: list[DroppedCitation]
    reconcile_ms: float
    enrich_ms: float


def reconcile_and_enrich(proposed: Iterable[Any], cards: Sequence[Card], context: Iterable[Any],
                         hybrid_path: Any) -> ReconciledCitations:
    """Reconcile, then enrich immediately after (ADR-0024 §2); each step timed."""
    started = time.perf_counter()
    kept, dropped = reconcile(proposed, cards)
    reconciled = time.perf_counter()
    enriched = _enrich(kept, context, hybrid_path)
    done = time.perf_counter()
    return ReconciledCitations(enriched, dropped, (reconciled - started) * 1000,
                               (done - reconciled) * 1000)
