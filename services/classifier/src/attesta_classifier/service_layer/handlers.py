"""Everything the classifier can be asked to do: one handler per command or query.

A handler takes the message and its dependencies by parameter name (``uow``: a fresh unit of
work per message; ``new_uow``: the factory, for handlers that open several; ``heuristic``,
``judge``, ``fetcher`` and settings such as ``refresh_deadline_s``); ``bootstrap.py`` binds
them once. The use cases live with their aggregate (``brands``, ``ground_truth``, ``runs``,
``review``, ``metrics``, ``alerting``); the two below adapt functions whose callers outside the
bus (the benchmarks, the lead's judge worker) keep their own signature.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attesta_classifier.domain import alert_commands as a
from attesta_classifier.domain import commands as c
from attesta_classifier.service_layer import alerting, brands, ground_truth, metrics, review, runs
from attesta_classifier.service_layer.judge_worker import Backoff, judge_due
from attesta_classifier.service_layer.pipeline import Heuristic, Rejected, record_runs
from attesta_classifier.service_layer.unit_of_work import UnitOfWork
from attesta_platform.bus import Handler, Message


async def record_run_events(cmd: c.RecordRuns, uow: UnitOfWork, heuristic: Heuristic
                            ) -> tuple[dict[str, int], list[Rejected]]:
    return await record_runs(uow, cmd.items, consumer=cmd.consumer, trigger=cmd.trigger,
                             heuristic=heuristic)


async def judge_due_pairs(cmd: c.JudgeDuePairs, new_uow: Callable[[], UnitOfWork], judge: Any,
                          heuristic: Heuristic, judge_concurrency: int = 4,
                          judge_backoff: Backoff = Backoff()) -> dict[str, int]:
    return await judge_due(new_uow, judge, heuristic.version, limit=cmd.limit,
                           concurrency=judge_concurrency, backoff=judge_backoff)


HANDLERS: dict[type[Message[Any]], Handler] = {
    c.CreateBrand: brands.create_brand,
    c.UpdateBrand: brands.update_brand,
    c.GetBrand: brands.get_brand,
    c.ListBrands: brands.list_brands,
    c.RefreshGroundTruth: ground_truth.refresh,
    c.GetGroundTruth: ground_truth.get_ground_truth,
    c.AddManualFact: ground_truth.add_manual_fact,
    c.Reverify: runs.reverify_brand,
    c.SubmitRun: runs.submit_run,
    c.RecordRuns: record_run_events,
    c.RecordEvidenceLeaves: runs.record_evidence_leaves,
    c.ListRuns: runs.list_runs,
    c.GetRun: runs.get_run,
    c.GetHistory: runs.history,
    c.Reclassify: runs.reclassify,
    c.JudgeDuePairs: judge_due_pairs,
    c.GetMetrics: metrics.compute,
    c.ListReviewQueue: review.queue,
    c.GetReviewItem: review.item,
    c.DecideReview: review.decide,
    c.GetJudgeAgreement: review.judge_agreement,
    # alerts (issue #25; service_layer/alerting.py)
    a.CreateAlertRule: alerting.create_rule,
    a.ListAlertRules: alerting.list_rules,
    a.GetAlertRule: alerting.get_rule,
    a.UpdateAlertRule: alerting.update_rule,
    a.DeleteAlertRule: alerting.delete_rule,
    a.SendTestAlert: alerting.send_test_alert,
    a.CreateAlertChannel: alerting.create_channel,
    a.ListAlertChannels: alerting.list_channels,
    a.DeleteAlertChannel: alerting.delete_channel,
    a.ListAlerts: alerting.list_alerts,
    a.GetAlert: alerting.get_alert,
    a.EvaluateClosedPeriods: alerting.evaluate_closed_periods,
    a.EvaluateAfterSlot: alerting.evaluate_after_slot,
    a.DeliverDueAlerts: alerting.deliver_due,
}
