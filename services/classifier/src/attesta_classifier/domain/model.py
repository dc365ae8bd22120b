"""The classifier's domain vocabulary: plain data, no I/O.

Shared by the deterministic heuristic, the judges, and the service layer. ``ground_truth_hash``
is the ``groundTruthHash`` every history row records: SHA-256 of the canonical text of the
active facts used in that judgment, so "what did we know, and when" has an answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from attesta_contracts.classification import CitationClass
from attesta_contracts.runs import ModelBuild, PromptContext, RunSource


@dataclass(frozen=True)
class Brand:
    brand_id: str
    workspace_id: str
    name: str
    aliases: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()  # registered domains, e.g. "lumora.example"
    competitors: tuple[str, ...] = ()  # brand ids of the same workspace
    sources: tuple[str, ...] = ()  # URLs ground truth is collected from

    @property
    def names(self) -> tuple[str, ...]:
        """The name first, then the aliases, without duplicates."""
        return tuple(dict.fromkeys((self.name, *self.aliases)))


@dataclass(frozen=True)
class Fact:
    """A ``GroundTruthFact``: one verifiable statement about a brand, with its provenance."""

    fact_id: str
    brand_id: str
    type: str  # "organization", "product", "heading", "definition", "paragraph", "manual", ...
    text: str
    source_url: str
    fetched_at: datetime
    attribution: str
    content_sha256: str  # SHA-256 of the fetched document (or of the text, for manual facts)


@dataclass(frozen=True)
class Run:
    """A prompt put to an AI engine and the engine's answer (the thing being audited)."""

    run_id: str
    workspace_id: str
    engine: str
    model: str
    prompt: str
    answer: str
    answer_sha256: str
    brand_ids: tuple[str, ...] = ()
    requested_at: datetime | None = None
    answered_at: datetime | None = None
    source: str = "external"
    # What the answer cites (URLs, bare domains, the engine's citation fields), and the
    # collector's prompt id and tags when the run was collected (metrics split by them).
    sources: tuple[RunSource, ...] = ()
    prompt_context: PromptContext | None = None
    # How the answer was collected (the engine's declared method: api, api_with_search,
    # assistant) and the model build the endpoint reported; None: not recorded (issue #25).
    collection_method: str | None = None
    model_build: ModelBuild | None = None


@dataclass(frozen=True)
class Decision:
    """What the heuristic or a judge decided for one (run, brand)."""

    citation_class: CitationClass
    reason: str
    decided_by: str  # "deterministic", "judge" or "human" (attesta_contracts...DecidedBy)
    fact_ids: tuple[str, ...] = field(default_factory=tuple)
    judge_model: str | None = None
    heuristic_version: str = ""
    prompt_version: str | None = None
    reviewer: str | None = None  # decided_by "human": who (the API key's name)
    note: str | None = None  # decided_by "human": their note


def ground_truth_text(facts: Iterable[Fact]) -> str:
    """Canonical text of a set of facts: one line per fact, sorted by fact id, so the same
    facts always give the same bytes whatever order they were loaded in."""
    lines = []
    for f in sorted(facts, key=lambda f: f.fact_id):
        text = " ".join(f.text.split())
        lines.append(f"{f.fact_id}\t{f.type}\t{f.source_url}\t{text}")
    return "\n".join(lines) + "\n" if lines else ""


def ground_truth_hash(facts: Iterable[Fact]) -> str:
    return hashlib.sha256(ground_truth_text(facts).encode("utf-8")).hexdigest()
