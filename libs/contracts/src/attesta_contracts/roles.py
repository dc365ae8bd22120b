"""Which service publishes and which consumes each topic: declared once, here.

Every service's declaration is the source of the AsyncAPI document (``docs/asyncapi.json``,
``docs/asyncapi.md``) and of the README's topic table, and it is enforced twice: at run time
``attesta_platform.messaging.Messaging`` (created with the service's name as its producer)
refuses to publish, stage in the outbox or consume a topic the service has not declared, and
a unit test scans each service's source and fails on a use of an undeclared topic.

A consumer's ``group`` is its consumer group (a template where it is built at run time);
``None`` is a group-less replay (every instance reads the whole compacted topic). Every
consumer may publish to the dead-letter topic; that is declared for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from attesta_contracts.topics import (
    ALERT_DELIVERY_DEAD_LETTERED, ALERTS_RAISED, CHAT_ANSWERED, CHAT_REQUESTED,
    CLASSIFICATION_RECORDED, CLASSIFICATION_REFUSED, COLLECTION_FAILED, DEAD_LETTERED, ENGINE_RESPONSE_CAPTURED,
    EVIDENCE_RECORDED, GROUNDTRUTH_REFRESHED, GROUNDTRUTH_SOURCE_FETCHED, KB_CARDS,
    RETRIEVAL_COMPLETED, RUNS_RECORDED, SLOT_COMPLETED)


@dataclass(frozen=True)
class Consumes:
    topic: str
    group: str | None
    note: str = ""


@dataclass(frozen=True)
class Publishes:
    topic: str
    note: str = ""  # how: "outbox" (staged in a transaction, relayed) or a tool's name


@dataclass(frozen=True)
class ServiceRoles:
    service: str
    publishes: tuple[Publishes, ...]
    consumes: tuple[Consumes, ...]

    def published_topics(self) -> set[str]:
        extra = {DEAD_LETTERED} if self.consumes else set()
        return {p.topic for p in self.publishes} | extra

    def consumed_topics(self) -> set[str]:
        return {c.topic for c in self.consumes}


def _registry() -> dict[str, ServiceRoles]:
    services = [
        ServiceRoles(
            "gateway",
            publishes=(Publishes(CHAT_REQUESTED),),
            consumes=(Consumes(CHAT_ANSWERED, "gateway-{instance_id}",
                               "own group per instance, from latest: every instance sees every reply"),)),
        ServiceRoles(
            "retrieval",
            publishes=(Publishes(RETRIEVAL_COMPLETED),
                       Publishes(KB_CARDS, "attesta retrieval seed-kb (cards and tombstones)")),
            consumes=(Consumes(CHAT_REQUESTED, "retrieval"),
                      Consumes(KB_CARDS, None, "replayed from the beginning by every instance"))),
        ServiceRoles(
            "answer",
            publishes=(Publishes(CHAT_ANSWERED), Publishes(RUNS_RECORDED)),
            consumes=(Consumes(RETRIEVAL_COMPLETED, "answer"),)),
        ServiceRoles(
            "classifier",
            publishes=(Publishes(CLASSIFICATION_RECORDED, "outbox"),
                       Publishes(CLASSIFICATION_REFUSED, "outbox"),
                       Publishes(GROUNDTRUTH_SOURCE_FETCHED, "outbox"),
                       Publishes(GROUNDTRUTH_REFRESHED, "outbox"),
                       Publishes(RUNS_RECORDED, "outbox: runs recorded through its API"),
                       Publishes(ALERTS_RAISED, "outbox: with the alert and its deliveries"),
                       Publishes(ALERT_DELIVERY_DEAD_LETTERED,
                                 "outbox: with the delivery's 'dead' state")),
            consumes=(Consumes(RUNS_RECORDED, "classifier"),
                      Consumes(RUNS_RECORDED, "{group}", "attesta classifier backfill"),
                      Consumes(EVIDENCE_RECORDED, "classifier-evidence",
                               "the log's leaf index of answers, for the run exports"),
                      Consumes(SLOT_COMPLETED, "classifier-alerts",
                               "evaluates the workspace's alert rules after each schedule slot"))),
        ServiceRoles(
            "evidence",
            publishes=(Publishes(EVIDENCE_RECORDED, "outbox"),),
            consumes=(Consumes(RUNS_RECORDED, "evidence"),
                      Consumes(GROUNDTRUTH_SOURCE_FETCHED, "evidence"),
                      Consumes(ENGINE_RESPONSE_CAPTURED, "evidence"))),
        ServiceRoles(
            "collector",
            publishes=(Publishes(RUNS_RECORDED, "outbox: the answers it collected"),
                       Publishes(CHAT_REQUESTED, "outbox: questions to our own assistant"),
                       Publishes(COLLECTION_FAILED, "outbox"),
                       Publishes(ENGINE_RESPONSE_CAPTURED,
                                 "outbox: the raw body behind each run it recorded"),
                       Publishes(SLOT_COMPLETED,
                                 "outbox: once per schedule slot, when its last sample is done")),
            consumes=(Consumes(CHAT_ANSWERED, "collector",
                               "from latest; only replies to its own collection ids"),)),
    ]
    return {s.service: s for s in services}


_ROLES: dict[str, ServiceRoles] | None = None


def all_roles() -> dict[str, ServiceRoles]:
    global _ROLES
    if _ROLES is None:
        _ROLES = _registry()
    return _ROLES


def roles_of(service: str) -> ServiceRoles | None:
    return all_roles().get(service)


class UndeclaredTopic(Exception):
    """A service used a topic its roles do not declare (a programming error)."""


def declared_topics(service: str) -> list[str]:
    """The topics a service creates at start-up: those its roles declare (published, consumed
    and the dead letters), so a new topic needs no second list."""
    roles = roles_of(service)
    if roles is None:
        raise UndeclaredTopic(f"{service} declares no topic roles")
    return sorted(roles.published_topics() | roles.consumed_topics())
