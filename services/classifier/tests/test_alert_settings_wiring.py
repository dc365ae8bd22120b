"""The operator's settings reach the alert channels, the alert evaluation and delivery, and the
metrics' minimums (bootstrap)."""

from __future__ import annotations

import asyncio
from ipaddress import ip_address

import pytest
from pydantic import ValidationError

from attesta_classifier.bootstrap import build_notifier, handler_settings
from attesta_classifier.entrypoints.workers import run_alert_evaluator
from attesta_classifier.service_layer.alerting import DeliveryPolicy
from attesta_classifier.settings import ClassifierSettings
from attesta_platform.outbound import OutboundPolicy, OutboundRefused
from attesta_platform.outcomes import RetryPolicy


def test_the_smtp_settings_reach_the_e_mail_channel(monkeypatch) -> None:
    monkeypatch.setenv("ATTESTA_ALERT_SMTP_HOST", "mail.internal.example")
    monkeypatch.setenv("ATTESTA_ALERT_SMTP_PORT", "2525")
    monkeypatch.setenv("ATTESTA_ALERT_SMTP_STARTTLS", "true")
    monkeypatch.setenv("ATTESTA_ALERT_MAIL_FROM", "Brand alerts <alerts@brand.example>")
    settings = ClassifierSettings()
    notifier, client = build_notifier(settings)
    try:
        chosen = notifier.keywords["settings"]
        assert (chosen.smtp_host, chosen.smtp_port, chosen.smtp_starttls, chosen.mail_from) == (
            "mail.internal.example", 2525, True, "Brand alerts <alerts@brand.example>")
    finally:
        asyncio.run(client.aclose())


def test_the_metrics_minimums_reach_the_handlers(monkeypatch) -> None:
    monkeypatch.setenv("ATTESTA_METRICS_MIN_N", "50")
    monkeypatch.setenv("ATTESTA_METRICS_MIN_PROMPTS", "8")
    chosen = handler_settings(ClassifierSettings())
    assert (chosen["metrics_min_n"], chosen["metrics_min_prompts"]) == (50, 8)


def test_the_alert_delivery_settings_reach_the_handlers(monkeypatch) -> None:
    monkeypatch.setenv("ATTESTA_ALERT_DELIVERY_ATTEMPTS", "7")
    monkeypatch.setenv("ATTESTA_ALERT_DELIVERY_BACKOFF_INITIAL_S", "2")
    monkeypatch.setenv("ATTESTA_ALERT_DELIVERY_BACKOFF_MAX_S", "30")
    monkeypatch.setenv("ATTESTA_ALERT_DELIVERY_LEASE_S", "90")
    chosen = handler_settings(ClassifierSettings())["alert_delivery"]
    assert chosen == DeliveryPolicy(RetryPolicy(7, 2.0, 30.0), 90.0)
    for name in ("ATTESTA_ALERT_DELIVERY_ATTEMPTS", "ATTESTA_ALERT_DELIVERY_BACKOFF_INITIAL_S",
                 "ATTESTA_ALERT_DELIVERY_BACKOFF_MAX_S", "ATTESTA_ALERT_DELIVERY_LEASE_S"):
        monkeypatch.delenv(name)
    assert handler_settings(ClassifierSettings())["alert_delivery"] == DeliveryPolicy()


def test_a_lease_shorter_than_one_attempt_is_refused(monkeypatch) -> None:
    monkeypatch.setenv("ATTESTA_ALERT_DELIVERY_LEASE_S", "5")
    with pytest.raises(ValidationError):
        ClassifierSettings()


def _allows(policy: OutboundPolicy, port: int) -> bool:
    try:
        policy.check_address("127.0.0.1", ip_address("127.0.0.1"), port)
    except OutboundRefused:
        return False
    return True


def test_the_alerts_allow_list_reaches_the_channels_and_only_them(monkeypatch) -> None:
    monkeypatch.setenv("ATTESTA_FETCH_ALLOW", "127.0.0.1:8090")
    monkeypatch.setenv("ATTESTA_ALERT_ALLOW", "127.0.0.1:8096")
    settings = ClassifierSettings()
    created = handler_settings(settings)["alert_outbound"]  # a channel's URL, when created
    notifier, client = build_notifier(settings)  # every delivery attempt
    try:
        sent = notifier.keywords["settings"].policy
    finally:
        asyncio.run(client.aclose())
    for policy in (created, sent):
        assert _allows(policy, 8096) and _allows(policy, 8090) and not _allows(policy, 8097)
    # The ground-truth fetcher keeps the shared list only.
    assert not _allows(settings.outbound_policy(), 8096)


def test_a_bad_alert_allow_entry_stops_start_up(monkeypatch) -> None:
    monkeypatch.setenv("ATTESTA_ALERT_ALLOW", "127.0.0.1")  # no port: a whole address
    with pytest.raises(ValidationError, match="alert_allow"):
        ClassifierSettings()


async def test_the_evaluator_asks_once_per_interval() -> None:
    class Bus:
        calls = 0

        async def handle(self, message: object) -> list[object]:
            Bus.calls += 1
            return []

    stop = asyncio.Event()
    task = asyncio.create_task(run_alert_evaluator(Bus(), stop, interval_s=0.05))  # type: ignore[arg-type]
    await asyncio.sleep(0.32)
    stop.set()
    await task
    assert 4 <= Bus.calls <= 8
