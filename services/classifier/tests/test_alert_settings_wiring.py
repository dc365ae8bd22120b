"""The operator's settings reach the alert channels and the metrics' minimums (bootstrap)."""

from __future__ import annotations

import asyncio

from attesta_classifier.bootstrap import build_notifier, handler_settings
from attesta_classifier.settings import ClassifierSettings


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
