"""Wiring of the classifier service: ``attesta run classifier``.

``build_bus`` is the one place the classifier's handlers get their dependencies (by parameter
name, ``attesta_platform.bus``); the HTTP API, the runs.recorded.v1 subscribers, the judge
worker and the CLI all hand their commands to the bus it returns. One process runs: the
internal HTTP API (uvicorn, :8081), the live batch consumer of runs.recorded.v1 (group
``classifier``), the consumer of evidence.recorded.v1 (group ``classifier-evidence``: the log's
leaf index of answers, for the run exports), the judge worker for ambiguous pairs, the alert evaluator (each closed week,
once), the consumer of collection.slot-completed.v1 (group ``classifier-alerts``: the alert
rules evaluated after each schedule slot, once per slot) and the alert delivery worker, and the outbox relay that publishes what the
transactions staged. Nothing happens at import time.
"""

from __future__ import annotations

import asyncio
import functools
import gc
from collections.abc import Callable
from typing import Any

import redis.asyncio as redis_asyncio

from attesta_classifier.adapters import postgres
from attesta_classifier.adapters.alerts_postgres import with_alerts
from attesta_classifier.adapters.fetcher import SafeFetcher
from attesta_classifier.adapters import notifiers
from attesta_classifier.adapters.judges import build_judge
from attesta_classifier.adapters.telemetry import MeteredJudge
from attesta_classifier.adapters.verdict_cache import CachedJudge
from attesta_classifier.domain.heuristic import HEURISTIC_VERSION, decide, load_tables
from attesta_classifier.entrypoints.consumers import (
    ALERTS_GROUP, EVIDENCE_GROUP, make_evidence_handler, make_runs_handler, make_slot_handler)
from attesta_classifier.entrypoints.http import create_app
from attesta_classifier.entrypoints.workers import (
    run_alert_delivery, run_alert_evaluator, run_judge_worker)
from attesta_classifier.service_layer.alerting import DeliveryPolicy
from attesta_classifier.service_layer.handlers import HANDLERS
from attesta_classifier.service_layer.judge_worker import Backoff
from attesta_classifier.service_layer.pipeline import Heuristic
from attesta_classifier.service_layer.unit_of_work import UnitOfWork
from attesta_classifier.settings import ClassifierSettings
from attesta_contracts.roles import declared_topics
from attesta_contracts.topics import EVIDENCE_RECORDED, RUNS_RECORDED, SLOT_COMPLETED
from attesta_platform import bus
from attesta_platform.logs import configure_logging, get_logger
from attesta_platform.messaging import Messaging
from attesta_platform.migrations import open_migrated_pool
from attesta_platform.outbox import run_relay
from attesta_platform.outcomes import RetryPolicy
from attesta_platform.service import serve
from attesta_platform.settings import load_settings

NAME = "classifier"
log = get_logger("attesta.classifier")



def build_bus(new_uow: Callable[[], UnitOfWork], *, heuristic: Heuristic,
              fetcher: Any = None, judge: Any = None, **settings: Any) -> bus.MessageBus:
    """The classifier's bus: ``uow`` a fresh unit of work per message, ``new_uow`` the factory;
    ``settings`` by the handlers' parameter names (``refresh_deadline_s``,
    ``judge_timeout_s``, ``review_sample_share``, ``judge_concurrency``, ``judge_backoff``),
    each handler's default when left out."""
    defaults = {"refresh_deadline_s": 8.0, "judge_timeout_s": 60.0, "review_sample_share": 0.05}
    # Every unit of work has the alert tables bound (adapters/alerts_postgres.py), whoever
    # built the factory.
    new_uow = with_alerts(new_uow)
    return bus.bootstrap(HANDLERS, fresh={"uow": new_uow}, new_uow=new_uow, heuristic=heuristic,
                         fetcher=fetcher, judge=judge, **(defaults | settings))


def handler_settings(settings: ClassifierSettings) -> dict[str, Any]:
    """The operator's settings the handlers take, by the handlers' parameter names."""
    return {
        "judge_timeout_s": settings.judge_timeout_s,
        "refresh_deadline_s": settings.refresh_deadline_s,
        "review_sample_share": settings.review_sample_share,
        "judge_concurrency": settings.judge_concurrency,
        "judge_backoff": Backoff(settings.judge_retry_initial_s, settings.judge_retry_max_s),
        "alert_outbound": settings.alert_outbound_policy(),
        "alert_delivery": DeliveryPolicy(RetryPolicy(
            settings.alert_delivery_attempts, settings.alert_delivery_backoff_initial_s,
            settings.alert_delivery_backoff_max_s), settings.alert_delivery_lease_s),
        "metrics_min_n": settings.metrics_min_n,
        "metrics_min_prompts": settings.metrics_min_prompts}


def build_notifier(settings: ClassifierSettings) -> tuple[Any, Any]:
    """The alert channels (``adapters/notifiers.py``) with the process's outbound policy and one
    shared HTTP client; (notifier, client to close). SMTP: ``ATTESTA_ALERT_SMTP_*``."""
    notifier_settings = notifiers.NotifierSettings(
        policy=settings.alert_outbound_policy(), smtp_host=settings.alert_smtp_host,
        smtp_port=settings.alert_smtp_port, smtp_starttls=settings.alert_smtp_starttls,
        smtp_ca_file=settings.alert_smtp_ca_file, smtp_username=settings.alert_smtp_username,
        smtp_password=settings.alert_smtp_password, mail_from=settings.alert_mail_from)
    client = notifiers.http_client(notifier_settings)
    return functools.partial(notifiers.deliver, settings=notifier_settings, client=client), client


def build_heuristic() -> Heuristic:
    load_tables()  # at start-up, not inside the first batch the consumer handles
    return Heuristic(decide, HEURISTIC_VERSION)


def build_fetcher(settings: ClassifierSettings) -> SafeFetcher:
    return SafeFetcher(settings.outbound_policy(), max_bytes=settings.fetch_max_bytes,
                       timeout_s=settings.fetch_timeout_s, max_redirects=settings.fetch_max_redirects)


def build_judge_with_cache(settings: ClassifierSettings) -> tuple[Any, Any]:
    """The judge named by the settings, metered (calls and latency on /metrics), behind the
    Redis verdict cache; (judge, redis client)."""
    judge = MeteredJudge(build_judge(settings))
    if not settings.verdict_cache:
        return judge, None
    client = redis_asyncio.from_url(settings.redis_url)
    return CachedJudge(judge, client, settings.verdict_cache_ttl_s), client


async def _main() -> None:
    settings = load_settings(ClassifierSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    if not settings.internal_token:
        log.error("ATTESTA_INTERNAL_TOKEN is required (the gateway's shared secret)")
        raise SystemExit(2)
    pool = await open_migrated_pool(
        NAME, lambda: postgres.create_pool(settings.app_db_url(), settings.classifier_db_pool_max),
        probe_table="brands", url_setting="ATTESTA_CLASSIFIER_DB_URL")
    messaging = Messaging.from_settings(settings, NAME)
    judge, redis_client = build_judge_with_cache(settings)
    notifier, notifier_client = build_notifier(settings)
    message_bus = build_bus(
        functools.partial(postgres.ClassifierUnitOfWork, pool), heuristic=build_heuristic(),
        fetcher=build_fetcher(settings), judge=judge, notifier=notifier,
        **handler_settings(settings))
    consumer = messaging.batch_consumer(
        RUNS_RECORDED, group_id=settings.classifier_group,
        handler=make_runs_handler(message_bus, consumer=settings.classifier_group, trigger="live",
                                  retryable=postgres.CONCURRENT_WRITE),
        batch_max=settings.classifier_batch_max, wait_ms=settings.classifier_batch_wait_ms,
        overlap=settings.classifier_batch_overlap, client_id=settings.instance_id)
    # The Merkle log's leaf index of answers' bytes, for the run exports (issue #25 item 7).
    evidence_consumer = messaging.batch_consumer(
        EVIDENCE_RECORDED, group_id=EVIDENCE_GROUP, handler=make_evidence_handler(message_bus),
        batch_max=settings.classifier_batch_max, wait_ms=settings.classifier_batch_wait_ms,
        client_id=settings.instance_id)
    # The alert rules after each schedule slot (issue #25): few events, one evaluation each.
    slot_consumer = messaging.batch_consumer(
        SLOT_COMPLETED, group_id=ALERTS_GROUP, handler=make_slot_handler(message_bus),
        batch_max=20, wait_ms=settings.classifier_batch_wait_ms, client_id=settings.instance_id)

    def ready() -> str | None:
        if not consumer.started.is_set():
            return "starting: the runs.recorded.v1 consumer has not started yet"
        return None

    async def relay(stop: asyncio.Event) -> None:
        await run_relay(pool, messaging, stop)

    async def judge_worker(stop: asyncio.Event) -> None:
        await run_judge_worker(message_bus, stop, batch=settings.judge_concurrency * 8)

    async def alert_evaluator(stop: asyncio.Event) -> None:
        await run_alert_evaluator(message_bus, stop,
                                  interval_s=settings.alert_evaluation_interval_s)

    async def alert_delivery(stop: asyncio.Event) -> None:
        await run_alert_delivery(message_bus, stop)

    app = create_app(message_bus, internal_token=settings.internal_token, database=pool,
                     ready=ready)
    # What exists now lives as long as the process (modules, the lexicons and the PSL the rules
    # loaded, the app): out of the garbage collector's reach, its full collections no longer
    # walk it again and again (a tenth of a second of CPU each; docs/benchmarks/classifier.md).
    gc.collect()  # what is garbage already goes now, not into the frozen generation
    gc.freeze()
    log.info("classifier starting",
             http=f"http://{settings.classifier_http_host}:{settings.classifier_http_port}",
             judge=getattr(judge, "model_name", "?"))
    try:
        await serve(NAME, messaging, declared_topics(NAME), settings.kafka_partitions, app=app,
                    http_host=settings.classifier_http_host,
                    http_port=settings.classifier_http_port,
                    workers=[consumer.run, evidence_consumer.run, slot_consumer.run, relay,
                             judge_worker,
                             alert_evaluator, alert_delivery])
    finally:
        await notifier_client.aclose()
        await pool.close()
        if redis_client is not None:
            await redis_client.aclose()


def main() -> None:
    asyncio.run(_main())
