"""Topic names, event types and schema versions: the one place they are spelled.

Topics are ``<domain>.<event>.v<N>``. A breaking change to a payload gets a new topic version;
additive optional fields keep the version (see tests/contracts compatibility check).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class Topic:
    name: str
    event_type: str
    schema_version: int
    key: str  # what the Kafka message key is, for per-entity ordering
    payload: type[BaseModel]
    compacted: bool = False
    description: str = ""


def _registry() -> dict[str, Topic]:
    # late: the package's __init__ imports this module, so importing the models (submodules of
    # the package) at module level would be a cycle; they are imported at the first lookup
    from attesta_contracts import (
        alerts,
        chat,
        classification,
        collection,
        deadletter,
        evidence,
        groundtruth,
        kb,
        runs,
    )

    topics = [
        Topic("kb.cards.v1", "KbCardPublished", 1, "card_id", kb.KbCardPublished, compacted=True,
              description="Compacted changelog of the verified KB: latest version of every card; "
                          "a tombstone (null value) retracts a card."),
        Topic("chat.requested.v1", "ChatRequested", 1, "request_id", chat.ChatRequested,
              description="A user asked the grounded assistant a question."),
        Topic("retrieval.completed.v1", "RetrievalCompleted", 1, "request_id", chat.RetrievalCompleted,
              description="Context chunks retrieved for a chat request, with the hybrid-path label "
                          "(full / rrf_only / dense_only / absent)."),
        Topic("chat.answered.v1", "ChatAnswered", 1, "request_id", chat.ChatAnswered,
              description="The assistant's answer with reconciled, server-enriched citations "
                          "(source_url, source_license, retrieved_score absent when unset)."),
        Topic("runs.recorded.v1", "RunRecorded", 1, "run_id", runs.RunRecorded,
              description="A prompt put to an AI engine and the engine's answer, to be audited."),
        Topic("evidence.recorded.v1", "EvidenceRecorded", 1, "sha256", evidence.EvidenceRecorded,
              description="Raw evidence stored content-addressed by SHA-256 and appended to the log."),
        Topic("groundtruth.source-fetched.v1", "GroundTruthSourceFetched", 1, "brand_id",
              groundtruth.GroundTruthSourceFetched,
              description="A raw document fetched from a brand's ground-truth source."),
        Topic("groundtruth.refreshed.v1", "GroundTruthRefreshed", 1, "brand_id",
              groundtruth.GroundTruthRefreshed,
              description="A brand's active ground-truth facts after a refresh."),
        Topic("classification.recorded.v1", "ClassificationRecorded", 1, "run_id",
              classification.ClassificationRecorded,
              description="One appended classification history row for a (run, brand)."),
        Topic("classification.refused.v1", "ClassificationRefused", 1, "run_id",
              classification.ClassificationRefused,
              description="The classifier refused a (run, brand): no active ground truth."),
        Topic("collection.failed.v1", "CollectionFailed", 1, "collection_id",
              collection.CollectionFailed,
              description="The collector gave up on one sample (engine fault after retries)."),
        Topic("collection.response-captured.v1", "EngineResponseCaptured", 1, "run_id",
              collection.EngineResponseCaptured,
              description="An AI engine's raw response body, byte for byte, next to the run the "
                          "collector recorded from it, so the evidence log stores it by SHA-256."),
        Topic("collection.slot-completed.v1", "SlotCompleted", 1, "schedule_id",
              collection.SlotCompleted,
              description="Every planned sample of one schedule slot was collected or given up: "
                          "the slot, its counts and the run ids it produced (the classifier "
                          "evaluates the workspace's alert rules once those runs are classified)."),
        Topic("alerts.raised.v1", "AlertRaised", 1, "rule_id", alerts.AlertRaised,
              description="An alert rule fired on a statistically real change between two "
                          "closed periods (or a test alert was sent): both periods' values, n, "
                          "intervals, the raw and adjusted p-values and the runs behind them."),
        Topic("alerts.delivery-dead-lettered.v1", "AlertDeliveryDeadLettered", 1, "alert_id",
              alerts.AlertDeliveryDeadLettered,
              description="The delivery of an alert to one channel was given up (permanent "
                          "error or attempts spent), with the reason."),
        Topic("messaging.dead-lettered.v1", "MessageDeadLettered", 1, "consumer",
              deadletter.MessageDeadLettered,
              description="A message a consumer could not parse or process: its original bytes "
                          "(base64), topic/partition/offset, the error and the attempts."),
    ]
    return {t.name: t for t in topics}


_TOPICS: dict[str, Topic] | None = None


def all_topics() -> dict[str, Topic]:
    global _TOPICS
    if _TOPICS is None:
        _TOPICS = _registry()
    return _TOPICS


def topic(name: str) -> Topic:
    return all_topics()[name]


KB_CARDS = "kb.cards.v1"
CHAT_REQUESTED = "chat.requested.v1"
RETRIEVAL_COMPLETED = "retrieval.completed.v1"
CHAT_ANSWERED = "chat.answered.v1"
RUNS_RECORDED = "runs.recorded.v1"
EVIDENCE_RECORDED = "evidence.recorded.v1"
GROUNDTRUTH_SOURCE_FETCHED = "groundtruth.source-fetched.v1"
GROUNDTRUTH_REFRESHED = "groundtruth.refreshed.v1"
CLASSIFICATION_RECORDED = "classification.recorded.v1"
CLASSIFICATION_REFUSED = "classification.refused.v1"
COLLECTION_FAILED = "collection.failed.v1"
ENGINE_RESPONSE_CAPTURED = "collection.response-captured.v1"
SLOT_COMPLETED = "collection.slot-completed.v1"
DEAD_LETTERED = "messaging.dead-lettered.v1"
ALERTS_RAISED = "alerts.raised.v1"
ALERT_DELIVERY_DEAD_LETTERED = "alerts.delivery-dead-lettered.v1"
