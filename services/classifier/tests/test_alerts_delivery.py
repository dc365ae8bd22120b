"""Alert delivery against real receivers on 127.0.0.1 and real PostgreSQL (issue #25): once per
channel with a valid signature, a 500 retried then dead with the reason (and its dead-letter
event), a timeout retried, a redirect to an internal address refused and never followed, and a
restart mid-delivery that does not double-send (a lapsed claim is sent once; a request the
receiver got before the crash is sent again with the same delivery id, which the receiver
drops: the at-least-once edge)."""

from __future__ import annotations

import asyncio
import uuid
from functools import partial

import pytest

from attesta_classifier.adapters import notifiers
from attesta_classifier.adapters.alerts_postgres import AlertingUnitOfWork
from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.bootstrap import build_bus
from attesta_classifier.domain import alert_commands as a
from attesta_classifier.domain.commands import CreateBrand
from attesta_classifier.entrypoints.workers import run_alert_delivery
from attesta_classifier.service_layer.alerting import DeliveryPolicy
from attesta_contracts import Envelope
from attesta_contracts.alerts import AlertDeliveryDeadLettered
from attesta_platform.outcomes import RetryPolicy
from attesta_testing.alert_receivers import SmtpReceiver, WebhookReceiver

pytestmark = pytest.mark.integration

@pytest.fixture
def pool(module_pool):
    """This module's own database: a delivery step claims every due delivery in its database,
    so other modules' alerts must not be in it."""
    return module_pool


FAST = DeliveryPolicy(RetryPolicy(attempts=3, initial_delay_s=0.01, max_delay_s=0.02), lease_s=5.0)


def _bus(pool, heuristic, hooks: WebhookReceiver, *others: WebhookReceiver, smtp_port: int = 25,
         policy: DeliveryPolicy = FAST, timeout_s: float = 5.0):
    settings = notifiers.NotifierSettings(policy=hooks.policy(*others), http_timeout_s=timeout_s,
                                          smtp_port=smtp_port)
    return build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic,
                     alert_outbound=hooks.policy(*others),
                     notifier=partial(notifiers.deliver, settings=settings),
                     alert_delivery=policy)


async def _alert(bus, workspace: str, channels: list[tuple[str, str]]) -> tuple[uuid.UUID, dict]:
    """A brand, a rule, the channels and a test alert of the rule: (alert id, secrets by target)."""
    await bus.handle(CreateBrand(workspace, "Lumora", "lumora", domains=("lumora.example",)))
    rule = await bus.handle(a.CreateAlertRule(workspace, "lumora", "citation_rate"))
    secrets = {}
    for kind, target in channels:
        created = await bus.handle(a.CreateAlertChannel(workspace, kind, target))
        secrets[target] = created.channel.secret
    alert_id, n = await bus.handle(a.SendTestAlert(workspace, rule.rule_id))
    assert n == len(channels)
    return alert_id, secrets


async def _drain(bus, rounds: int = 20, pause_s: float = 0.05) -> list[dict[str, int]]:
    """Delivery steps until one claims nothing (after a pause for due retries)."""
    steps = []
    for _ in range(rounds):
        step = await bus.handle(a.DeliverDueAlerts(50))
        steps.append(step)
        if step["claimed"] == 0:
            await asyncio.sleep(pause_s)
            if (await bus.handle(a.DeliverDueAlerts(50)))["claimed"] == 0:
                break
    return steps


async def _log(bus, workspace: str, alert_id: uuid.UUID):
    return (await bus.handle(a.GetAlert(workspace, alert_id)))[1]


async def test_an_alert_is_delivered_once_per_channel_with_a_valid_signature(pool, heuristic,
                                                                            workspace):
    async with WebhookReceiver() as hooks, SmtpReceiver() as smtp:
        bus = _bus(pool, heuristic, hooks, smtp_port=smtp.port)
        alert_id, secrets = await _alert(bus, workspace, [
            ("webhook", hooks.url("/hook/a")), ("slack", hooks.url("/hook/slack")),
            ("email", "team@lumora.example")])
        hooks.secret = secrets[hooks.url("/hook/a")]
        await _drain(bus)
        await _drain(bus)  # a second pass sends nothing more

        assert sorted(hooks.paths()) == ["/hook/a", "/hook/slack"]
        webhook = [r for r in hooks.requests if r.path == "/hook/a"][0]
        assert webhook.signature == "ok" and webhook.delivery_id
        assert len(smtp.messages) == 1 and smtp.messages[0].rcpt_tos == ("team@lumora.example",)
        log = await _log(bus, workspace, alert_id)
        assert {d.kind: (d.status, d.attempts) for d in log} == {
            "webhook": ("delivered", 1), "slack": ("delivered", 1), "email": ("delivered", 1)}
        assert str(next(d for d in log if d.kind == "webhook").delivery_id) == webhook.delivery_id


async def test_a_500_is_retried_with_backoff_then_dead_with_the_reason(pool, heuristic, workspace):
    async with WebhookReceiver() as hooks:
        bus = _bus(pool, heuristic, hooks)
        alert_id, _ = await _alert(bus, workspace, [("webhook", hooks.url("/status/500"))])
        await _drain(bus)
        assert len(hooks.requests) == 3  # FAST: 3 attempts
        assert len({r.delivery_id for r in hooks.requests}) == 1  # one delivery, retried
        [d] = await _log(bus, workspace, alert_id)
        assert (d.status, d.attempts) == ("dead", 3)
        assert d.last_error == "HTTP 500 (gave up after 3 attempts)"
        async with pool.acquire() as conn:
            row = await conn.fetchrow(
                "SELECT value FROM messaging_outbox WHERE topic = 'alerts.delivery-dead-lettered.v1' "
                "AND event_id = $1", uuid.uuid5(uuid.NAMESPACE_URL,
                                                f"alert-delivery-dead:{d.delivery_id}"))
        letter = Envelope[AlertDeliveryDeadLettered].model_validate_json(row["value"]).payload
        assert (letter.reason, letter.attempts, letter.alert_id) == (d.last_error, 3, alert_id)


async def test_a_flaky_receiver_is_delivered_on_a_retry(pool, heuristic, workspace):
    async with WebhookReceiver() as hooks:
        bus = _bus(pool, heuristic, hooks)
        alert_id, _ = await _alert(bus, workspace, [("webhook", hooks.url("/flaky/1/x"))])
        await _drain(bus)
        assert [r.status for r in hooks.requests] == [500, 200]
        [d] = await _log(bus, workspace, alert_id)
        assert (d.status, d.attempts, d.last_error) == ("delivered", 2, None)


async def test_a_timeout_is_retried_and_recorded(pool, heuristic, workspace):
    async with WebhookReceiver(slow_s=3.0) as hooks:
        bus = _bus(pool, heuristic, hooks, timeout_s=0.3, policy=DeliveryPolicy(
            RetryPolicy(attempts=3, initial_delay_s=60.0, max_delay_s=60.0), lease_s=5.0))
        alert_id, _ = await _alert(bus, workspace, [("webhook", hooks.url("/slow"))])
        step = await bus.handle(a.DeliverDueAlerts(50))
        assert step == {"claimed": 1, "delivered": 0, "failed": 1, "dead": 0}
        [d] = await _log(bus, workspace, alert_id)
        assert (d.status, d.attempts) == ("failed", 1)
        assert d.last_error.startswith("timed out") and d.next_attempt_at is not None
        assert (await bus.handle(a.DeliverDueAlerts(50)))["claimed"] == 0  # not due for 30-60 s


async def test_a_redirect_to_an_internal_address_is_refused_and_not_followed(pool, heuristic,
                                                                            workspace):
    async with WebhookReceiver() as internal:
        async with WebhookReceiver(redirect_to=internal.url("/admin")) as hooks:
            # Even with the internal receiver on the allow-list, the redirect is not followed.
            bus = _bus(pool, heuristic, hooks, internal)
            alert_id, _ = await _alert(bus, workspace, [("webhook", hooks.url("/redirect"))])
            await _drain(bus)
            assert hooks.paths() == ["/redirect"] and internal.requests == []
            [d] = await _log(bus, workspace, alert_id)
            assert (d.status, d.attempts) == ("dead", 1)
            assert d.last_error == "HTTP 302: redirects are not followed"


async def test_a_claim_lapsed_by_a_crash_before_sending_is_sent_once(pool, heuristic, workspace):
    async with WebhookReceiver() as hooks:
        bus = _bus(pool, heuristic, hooks)
        alert_id, _ = await _alert(bus, workspace, [("webhook", hooks.url("/ok"))])
        # A worker claims the delivery with a short lease and dies before sending.
        uow = AlertingUnitOfWork(pool)
        async with uow:
            [claimed] = [c for c in await uow.alerts.claim_deliveries(50, 0.5)
                         if c.alert.alert_id == alert_id]
            await uow.commit()
        assert (await bus.handle(a.DeliverDueAlerts(50)))["claimed"] == 0  # still held
        await asyncio.sleep(0.6)
        await _drain(bus)
        assert len(hooks.requests) == 1
        [d] = await _log(bus, workspace, alert_id)
        assert (d.status, d.attempts) == ("delivered", 2)
        assert d.delivery_id == claimed.delivery.delivery_id


async def test_a_restart_mid_request_resends_with_the_same_delivery_id(pool, heuristic, workspace):
    async with WebhookReceiver(slow_s=3.0) as hooks:
        bus = _bus(pool, heuristic, hooks, policy=DeliveryPolicy(FAST.retry, lease_s=0.5))
        alert_id, secrets = await _alert(bus, workspace, [("webhook", hooks.url("/slow"))])
        hooks.secret = secrets[hooks.url("/slow")]
        stop = asyncio.Event()
        worker = asyncio.create_task(run_alert_delivery(bus, stop, idle_s=0.05))
        await hooks.wait_for(1)
        worker.cancel()  # the process dies while the receiver holds the request
        with pytest.raises(asyncio.CancelledError):
            await worker
        [d] = await _log(bus, workspace, alert_id)
        assert (d.status, d.attempts) == ("sending", 1)

        hooks.slow_s = 0.0  # the restarted service finds the receiver quick again
        await asyncio.sleep(0.6)  # the lapsed lease
        restarted = _bus(pool, heuristic, hooks)
        await _drain(restarted)
        ids = [r.delivery_id for r in hooks.requests]
        assert len(ids) == 2 and len(set(ids)) == 1  # sent again, under the same id
        assert list(hooks.delivered()) == [str(d.delivery_id)]  # one delivery for the receiver
        [d] = await _log(restarted, workspace, alert_id)
        assert (d.status, d.attempts) == ("delivered", 2)


async def test_deliveries_of_two_workers_never_overlap(pool, heuristic, workspace):
    async with WebhookReceiver() as hooks:
        bus = _bus(pool, heuristic, hooks)
        await bus.handle(CreateBrand(workspace, "Lumora", "lumora"))
        rule = await bus.handle(a.CreateAlertRule(workspace, "lumora", "citation_rate"))
        for i in range(5):
            await bus.handle(a.CreateAlertChannel(workspace, "slack", hooks.url(f"/hook/{i}")))
        for _ in range(4):
            await bus.handle(a.SendTestAlert(workspace, rule.rule_id))
        await asyncio.gather(_drain(bus), _drain(_bus(pool, heuristic, hooks)))
        assert sorted(hooks.paths()) == sorted(f"/hook/{i}" for i in range(5) for _ in range(4))


async def _dead_letter(pool, delivery_id: uuid.UUID) -> AlertDeliveryDeadLettered:
    async with pool.acquire() as conn:
        row = await conn.fetchrow(
            "SELECT value FROM messaging_outbox WHERE topic = 'alerts.delivery-dead-lettered.v1' "
            "AND event_id = $1", uuid.uuid5(uuid.NAMESPACE_URL, f"alert-delivery-dead:{delivery_id}"))
    assert row is not None, "no dead-letter event staged"
    return Envelope[AlertDeliveryDeadLettered].model_validate_json(row["value"]).payload


async def test_a_pending_delivery_of_a_deleted_channel_is_not_sent_and_ends_dead(pool, heuristic,
                                                                                 workspace):
    async with WebhookReceiver() as hooks:
        bus = _bus(pool, heuristic, hooks)
        alert_id, _ = await _alert(bus, workspace, [("webhook", hooks.url("/hook/gone")),
                                                    ("webhook", hooks.url("/hook/kept"))])
        [gone] = [ch for ch in await bus.handle(a.ListAlertChannels(workspace))
                  if ch.target.endswith("/hook/gone")]
        await bus.handle(a.DeleteAlertChannel(workspace, gone.channel_id))
        steps = await _drain(bus)
        assert hooks.paths() == ["/hook/kept"]  # nothing went to the deleted channel
        assert steps[0] == {"claimed": 2, "delivered": 1, "failed": 0, "dead": 1}
        log = {d.channel_id: d for d in await _log(bus, workspace, alert_id)}
        dead = log[gone.channel_id]
        assert (dead.status, dead.last_error, dead.delivered_at) == ("dead", "channel deleted", None)
        assert [d.status for c, d in log.items() if c != gone.channel_id] == ["delivered"]
        letter = await _dead_letter(pool, dead.delivery_id)
        assert (letter.reason, letter.channel_id, letter.alert_id) == (
            "channel deleted", gone.channel_id, alert_id)


async def test_a_retry_of_a_channel_deleted_between_attempts_is_not_sent(pool, heuristic,
                                                                         workspace):
    async with WebhookReceiver() as hooks:
        bus = _bus(pool, heuristic, hooks)
        alert_id, _ = await _alert(bus, workspace, [("webhook", hooks.url("/status/503"))])
        assert (await bus.handle(a.DeliverDueAlerts(50)))["failed"] == 1
        [channel] = await bus.handle(a.ListAlertChannels(workspace))
        await bus.handle(a.DeleteAlertChannel(workspace, channel.channel_id))
        await _drain(bus)
        assert len(hooks.requests) == 1  # the first attempt only
        [d] = await _log(bus, workspace, alert_id)
        assert (d.status, d.attempts, d.last_error) == ("dead", 2, "channel deleted")
