"""A Redis cache of judge verdicts, so a backfill or a reverification does not pay twice.

Key: (brand, SHA-256 of the answer text, groundTruthHash, judge model, prompt version). The
same answer judged against different ground truth, or by another model or prompt, is another
key. Only valid verdicts are cached (a JudgeUnavailable is never stored). Redis is an
optimisation here: when it is down, slow or holds a corrupt entry, judging goes on without it
(logged, counted in ``stats`` and in ``attesta_classifier_verdict_cache_total`` on /metrics).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from attesta_contracts.classification import CitationClass
from attesta_platform.logs import get_logger

from ..domain.judging import JUDGE_CLASSES
from ..domain.model import Brand, Decision, Fact, Run, ground_truth_hash
from .judges import Judge
from .telemetry import VERDICT_CACHE

if TYPE_CHECKING:  # pragma: no cover
    import redis.asyncio

log = get_logger("attesta.classifier.verdict_cache")

KEY_PREFIX = "attesta:classifier:verdict:v1"


def verdict_key(run: Run, brand: Brand, facts: Sequence[Fact], model: str, prompt_version: str,
                prefix: str = KEY_PREFIX) -> str:
    answer_sha = hashlib.sha256(run.answer.encode("utf-8")).hexdigest()
    parts = json.dumps([brand.brand_id, answer_sha, ground_truth_hash(facts), model, prompt_version])
    return f"{prefix}:{hashlib.sha256(parts.encode('utf-8')).hexdigest()}"


def _encode(d: Decision) -> str:
    return json.dumps({
        "class": d.citation_class.value, "reason": d.reason, "fact_ids": list(d.fact_ids),
        "judge_model": d.judge_model, "prompt_version": d.prompt_version,
    }, sort_keys=True)


def _decode(raw: bytes | str, model: str, prompt_version: str) -> Decision:
    obj = json.loads(raw)
    cls = CitationClass(obj["class"])
    if cls not in JUDGE_CLASSES or obj["judge_model"] != model or obj["prompt_version"] != prompt_version:
        raise ValueError("cached verdict does not match its key")
    if not isinstance(obj["reason"], str) or not obj["reason"].strip():
        raise ValueError("cached verdict has no reason")
    return Decision(citation_class=cls, reason=obj["reason"], decided_by="judge",
                    fact_ids=tuple(str(i) for i in obj["fact_ids"]), judge_model=model,
                    prompt_version=prompt_version)


class CachedJudge:
    def __init__(self, inner: Judge, redis: redis.asyncio.Redis, ttl_s: int | None = None, *,
                 op_timeout_s: float = 0.5, prefix: str = KEY_PREFIX) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.prompt_version = inner.prompt_version
        self._redis = redis
        self._ttl_s = ttl_s
        self._timeout = op_timeout_s
        self._prefix = prefix
        self.stats = {"hits": 0, "misses": 0, "errors": 0}

    async def judge(self, *, run: Run, brand: Brand, facts: Sequence[Fact]) -> Decision:
        key = verdict_key(run, brand, facts, self.model_name, self.prompt_version, self._prefix)
        cached = await self._get(key, run)
        if cached is not None:
            self.stats["hits"] += 1
            VERDICT_CACHE.labels("hit").inc()
            return cached
        self.stats["misses"] += 1
        VERDICT_CACHE.labels("miss").inc()
        decision = await self.inner.judge(run=run, brand=brand, facts=facts)
        await self._set(key, decision, run)
        return decision

    def _error(self) -> None:
        self.stats["errors"] += 1
        VERDICT_CACHE.labels("error").inc()

    async def _get(self, key: str, run: Run) -> Decision | None:
        try:
            raw = await asyncio.wait_for(self._redis.get(key), self._timeout)
        except Exception as exc:  # noqa: BLE001 - any Redis failure: judge without the cache
            self._error()
            log.warning("verdict cache read failed; judging without it", run_id=run.run_id,
                        error=repr(exc)[:200])
            return None
        if raw is None:
            return None
        try:
            return _decode(raw, self.model_name, self.prompt_version)
        except (ValueError, KeyError, TypeError) as exc:
            self._error()
            log.warning("corrupt verdict cache entry ignored", key=key, error=repr(exc)[:200])
            return None

    async def _set(self, key: str, decision: Decision, run: Run) -> None:
        try:
            await asyncio.wait_for(self._redis.set(key, _encode(decision), ex=self._ttl_s),
                                   self._timeout)
        except Exception as exc:  # noqa: BLE001 - the verdict stands; only the cache missed it
            self._error()
            log.warning("verdict cache write failed", run_id=run.run_id, error=repr(exc)[:200])
