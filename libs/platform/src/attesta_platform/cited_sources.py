"""Cited sources as data: what an answer cites, and whose each source is. Pure, no I/O.

Shared by the collector (it extracts the sources of every answer it collects) and the
classifier (it extracts them from runs that arrive without any, and labels them per brand for
the metrics' source share), so both decide the same way.

Sources come from three places, deduplicated by URL in order of first appearance:
1. ``annotations``: the engine's structured ``url_citation`` annotations on the message
   (``{"type": "url_citation", "url_citation": {"url", "title", "start_index", ...}}``), also the
   flat form ``{"type": "url_citation", "url": ...}``;
2. ``citations``: a list next to the text (strings, or objects with ``url``), as some engines
   return it at the top level of the response;
3. ``text``: URLs and bare domains in the answer, found by the classifier's own matcher
   (``attesta_platform.brandmatch.cited_urls``: markdown/HTML link targets, not their visible
   text; e-mail addresses and non-http schemes are not sources).

Every source carries its registered domain (eTLD+1 by the Public Suffix List, as the
classifier computes it); a candidate without one (an IP address, a bare public suffix) is not a
source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Literal

from attesta_contracts.runs import RunSource
from attesta_platform.brandmatch import (
    _parse_candidate,
    cited_urls,
    host_is_on_domains,
    normalize_host,
    registered_domain,
)

MAX_SOURCES = 500



# Where a source was found: RunSource.origin's values.
Origin = Literal["text", "annotation", "citations"]


def _structured_urls(annotations: Iterable[Any], citations: Iterable[Any]
                     ) -> list[tuple[str, str | None, Origin]]:
    out: list[tuple[str, str | None, Origin]] = []
    for a in annotations:
        if not isinstance(a, dict) or a.get("type") != "url_citation":
            continue
        nested = a.get("url_citation")
        inner = nested if isinstance(nested, dict) else a
        url, title = inner.get("url"), inner.get("title")
        if isinstance(url, str):
            out.append((url, title if isinstance(title, str) else None, "annotation"))
    for c in citations:
        url = c if isinstance(c, str) else (c.get("url") if isinstance(c, dict) else None)
        title = c.get("title") if isinstance(c, dict) else None
        if isinstance(url, str):
            out.append((url, title if isinstance(title, str) else None, "citations"))
    return out


def extract_sources(text: str, annotations: Iterable[Any] = (),
                    citations: Iterable[Any] = ()) -> list[RunSource]:
    """The answer's cited sources (see the module docstring), at most ``MAX_SOURCES``."""
    found: list[RunSource] = []
    seen: set[str] = set()

    def add(url: str, host: str | None, origin: Origin, title: str | None = None) -> None:
        if not host or len(found) >= MAX_SOURCES:
            return
        domain = registered_domain(host)
        # The same place cited twice (a citation URL and the bare domain in the text): one
        # source. Scheme and a trailing slash do not make a different place.
        key = re.sub(r"^[a-z][a-z0-9+.-]*:", "", url.strip().lower()).lstrip("/").rstrip("/")
        if domain is None or key in seen:
            return
        seen.add(key)
        found.append(RunSource(url=url[:4000], domain=domain, host=host, position=len(found),
                               origin=origin, title=title[:1000] if title else None))

    for url, title, origin in _structured_urls(annotations, citations):
        add(url.strip(), _parse_candidate(url.strip()), origin, title)
    for cited in cited_urls(text):
        add(cited.text, cited.host, "text")
    return found


class SourceLabel(StrEnum):
    OWNED = "owned"  # on the brand's own domains
    COMPETITOR = "competitor"  # on a domain of one of the brand's competitors
    THIRD_PARTY = "third_party"  # anyone else


def brand_hosts(domains: Iterable[str]) -> tuple[str, ...]:
    """A brand's domains as normalized hosts (``*.`` prefixes dropped), without duplicates."""
    out = [normalize_host(d.removeprefix("*.")) for d in domains]
    return tuple(dict.fromkeys(h for h in out if h))


def source_label(host: str, own_hosts: tuple[str, ...],
                 competitor_hosts: Iterable[tuple[str, ...]]) -> SourceLabel:
    """Whose the source is, from one brand's point of view (subdomains count, the registered
    domain must match: ``lumora.example.evil.io`` is not Lumora's)."""
    if host_is_on_domains(host, own_hosts):
        return SourceLabel.OWNED
    if any(hosts and host_is_on_domains(host, hosts) for hosts in competitor_hosts):
        return SourceLabel.COMPETITOR
    return SourceLabel.THIRD_PARTY
