"""The judge worker: judges parked (run, brand) pairs outside the Kafka consumer.

Why a worker and not a retry inside the consumer: an LLM that is slow or down would otherwise
hold a partition (every later run of it waits) or, after the retries, make the consumer re-read
the same batch forever. Here the consumer commits as soon as the pair is durably parked in
``pending_judgments``; the worker claims due pairs with a lease (``FOR UPDATE SKIP LOCKED``,
then ``next_attempt_at`` pushed past the lease, so a crashed worker's claim expires and another
instance takes it), calls the judge with no transaction open, and records the decision in one
transaction that first deletes the claimed pending row (a pair settled meanwhile by a newer
decision is skipped). ``JudgeUnavailable`` (or any judge failure) leaves the pair pending with
exponential backoff: never guessed.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from attesta_classifier.adapters.judges import JudgeAbstained
from attesta_classifier.domain.model import Brand, Decision, Fact, Run, ground_truth_hash
from attesta_classifier.domain.commands import JudgeDuePairs
from attesta_classifier.service_layer.pipeline import (
    Classified, Heuristic, Job, Refused, count_outcomes, refusal_reason, write_outcomes)
from attesta_classifier.service_layer.unit_of_work import ClaimedPair, UnitOfWork
from attesta_platform.logs import get_logger

log = get_logger("attesta.classifier.judge_worker")


@dataclass(frozen=True)
class Backoff:
    initial_s: float = 5.0
    max_s: float = 600.0

    def delay(self, attempts: int) -> float:
        base = min(self.max_s, self.initial_s * 2.0 ** max(0, attempts - 1))
        return base * (0.5 + random.random() / 2)


def normalize_judge_decision(decision: Decision, judge: Any) -> Decision:
    """A judge's decision always records decided_by=judge and which model/prompt judged."""
    return replace(decision, decided_by="judge",
                   judge_model=decision.judge_model or getattr(judge, "model_name", None) or "unknown",
                   prompt_version=decision.prompt_version or getattr(judge, "prompt_version", None))


async def judge_pair(judge: Any, run: Run, brand: Brand, facts: Sequence[Fact]) -> Decision:
    decision = await judge.judge(run=run, brand=brand, facts=list(facts))
    return normalize_judge_decision(decision, judge)


async def _settle(uow: UnitOfWork, token: uuid.UUID, pair: ClaimedPair,
                  outcome: Classified | Refused, heuristic_version: str) -> bool:
    async with uow:
        if not await uow.decisions.release_claim(pair.run_id, pair.brand_id, token):
            return False
        await write_outcomes(uow, [outcome], heuristic_version)
        await uow.commit()
    count_outcomes([outcome])
    return True


async def judge_due(cmd: JudgeDuePairs, new_uow: Callable[[], UnitOfWork], judge: Any,
                    heuristic: Heuristic, judge_concurrency: int = 4,
                    judge_backoff: Backoff = Backoff(), lease_s: float = 300.0) -> dict[str, int]:
    """Judge up to ``cmd.limit`` due pairs; returns counts (judged, refused, deferred). Up to
    ``judge_concurrency`` judge calls run at once, with no transaction open; each result is
    written in its own short unit of work as soon as it is known."""
    heuristic_version, backoff = heuristic.version, judge_backoff
    token = uuid.uuid4()
    async with new_uow() as uow:
        claimed = await uow.decisions.claim_due(token, cmd.limit, lease_s)
        await uow.commit()
    counts = {"judged": 0, "refused": 0, "deferred": 0}
    if not claimed:
        return counts
    async with new_uow().read() as uow:
        runs = await uow.runs.get_many(c.run_id for c in claimed)
        workspaces = {c.workspace_id for c in claimed}
        brands = await uow.brands.of_workspaces(workspaces)
        facts = await uow.facts.active_of(workspaces)
    gate = asyncio.Semaphore(judge_concurrency)

    async def one(c: ClaimedPair) -> None:
        run = runs[c.run_id]
        key = (c.workspace_id, c.brand_id)
        brand, brand_facts = brands.get(key), facts.get(key, [])
        job = Job(run, c.brand_id, c.trigger, f"judge:{token}", correlation_id=run.run_id,
                  trigger_reason=c.trigger_reason, actor=c.actor)
        reason = refusal_reason(run.workspace_id, c.brand_id, brand, brand_facts)
        if reason is not None:
            if await _settle(new_uow(), token, c, Refused(job, reason), heuristic_version):
                counts["refused"] += 1
            return
        assert brand is not None
        try:
            async with gate:
                decision = await judge_pair(judge, run, brand, brand_facts)
        except Exception as exc:  # noqa: BLE001 - JudgeUnavailable or a judge bug: never guess
            counts["deferred"] += 1
            log.warning("judge failed; pair stays pending", run_id=run.run_id,
                        brand_id=c.brand_id, attempts=c.attempts, error=repr(exc))
            abstained = isinstance(exc, JudgeAbstained)
            # An abstention is not an outage: retrying soon would give the same answer, so it waits
            # the longest backoff (for the LLM judge, a person, or new facts), and its reason is
            # what the pair shows while it has no class yet.
            wait = Backoff(backoff.max_s, backoff.max_s) if abstained else backoff
            async with new_uow() as uow:
                await uow.decisions.defer(
                    c.run_id, c.brand_id, token, wait.delay(c.attempts), repr(exc),
                    str(exc) if abstained else None,
                    exc.judgment if isinstance(exc, JudgeAbstained) else None)
                await uow.commit()
            return
        outcome = Classified(job, decision, ground_truth_hash(brand_facts))
        if await _settle(new_uow(), token, c, outcome, heuristic_version):
            counts["judged"] += 1

    await asyncio.gather(*(one(c) for c in claimed))
    return counts
