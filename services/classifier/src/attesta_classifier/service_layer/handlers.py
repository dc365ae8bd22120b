"""Everything the classifier can be asked to do: one handler per command or query.

A handler takes the message and its dependencies by parameter name (``uow``: a fresh unit of
work per message; ``new_uow``: the factory, for handlers that open several; ``heuristic``,
``judge``, ``fetcher`` and settings such as ``refresh_deadline_s``); ``bootstrap.py`` binds
them once. The use cases live with their aggregate (``brands``, ``ground_truth``, ``runs``,
``review``, ``metrics``, ``alerting``, the Kafka intake in ``pipeline``, the judge worker's step
in ``judge_worker``) and each takes its message itself.
"""

from __future__ import annotations

from typing import Any

from attesta_classifier.domain import alert_commands as a
from attesta_classifier.domain import commands as c
from attesta_classifier.service_layer import alerting, brands, ground_truth, metrics, review, runs
from attesta_classifier.service_layer.judge_worker import judge_due
from attesta_classifier.service_layer.pipeline import record_runs
from attesta_platform.bus import Handler, Message


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
    c.RecordRuns: record_runs,
    c.RecordEvidenceLeaves: runs.record_evidence_leaves,
    c.ListRuns: runs.list_runs,
    c.GetRun: runs.get_run,
    c.GetHistory: runs.history,
    c.Reclassify: runs.reclassify,
    c.JudgeDuePairs: judge_due,
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
