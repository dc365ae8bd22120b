"""Alert channels (issue #25): the signature and its replay window, the Slack and e-mail content,
and each delivery outcome against real receivers on 127.0.0.1 (attesta_testing.alert_receivers: an
aiohttp webhook receiver, an aiosmtpd SMTP server). Loopback is refused by the outbound policy,
so each test allows its receiver's port only, as the fetcher's tests do."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from attesta_classifier.adapters import notifiers
from attesta_classifier.adapters.notifiers import NotifierSettings, deliver, http_client
from attesta_classifier.domain import notifications as n
from attesta_classifier.domain.notifications import (
    AlertMessage,
    Channel,
    DeliveryFailed,
    DeliveryRefused,
    DeliveryRetryable,
    Period,
    SignatureInvalid,
)
from attesta_platform.errors import PermanentError, TransientError, is_transient
from attesta_platform.outbound import OutboundPolicy
from attesta_testing.alert_receivers import SmtpReceiver, WebhookReceiver

pytestmark = pytest.mark.unit  # local servers only

SECRET = "whsec-test-0b7e"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "alerts.md"


def message(**kw: object) -> AlertMessage:
    base: dict[str, object] = dict(
        alert_id="al-1", workspace_id="ws-1", rule_id="ru-1", brand_id="b-lumora",
        brand_name="Lumora", metric="citation_rate", segment={"tag": "x", "engine": "chatgpt"},
        direction="down",
        before=Period("2026-W47", 0.30, 30, 100, 0.22, 0.40),
        after=Period("2026-W48", 0.125, 15, 120, 0.08, 0.20),
        p_value=0.0004, adjusted_p=0.012,
        run_links=["https://app.attesta.example/runs/r1", "/runs/r2"],
        is_test=False, raised_at=datetime(2026, 12, 5, 5, 0, tzinfo=UTC))
    return AlertMessage(**(base | kw))  # type: ignore[arg-type]


def settings_for(*receivers: WebhookReceiver, **kw: object) -> NotifierSettings:
    policy = receivers[0].policy(*receivers[1:]) if receivers else OutboundPolicy()
    return NotifierSettings(**({"policy": policy, "http_timeout_s": 2.0} | kw))  # type: ignore[arg-type]


def receiver_snippet() -> str:
    """The verification code docs/alerts.md gives receivers (run here, so it stays right)."""
    text = DOCS.read_text()
    found = re.search(r"<!-- receiver-snippet[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert found, "docs/alerts.md lost its receiver snippet"
    return found.group(1)


# ------------------------------------------------------------------------ signature

def test_signature_round_trip_and_the_documented_receiver_check() -> None:
    body = n.webhook_body(message(), "dl-1")
    header = n.signature_header(SECRET, body, 1_764_910_800)
    t, v1 = re.fullmatch(r"t=(\d+),v1=([0-9a-f]{64})", header).groups()  # type: ignore[union-attr]
    # The scheme, recomputed by hand: HMAC-SHA256 over "<t>.<body>".
    assert v1 == hmac.new(SECRET.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    assert n.verify_signature(SECRET, header, body, now=1_764_910_800 + 10) == 1_764_910_800

    scope: dict[str, object] = {}
    exec(receiver_snippet(), scope)  # noqa: S102 - our own docs' code
    check = scope["verify_attesta_signature"]
    fresh = n.signature_header(SECRET, body, int(time.time()))
    assert check(SECRET, fresh, body) is True  # type: ignore[operator]
    assert check(SECRET, fresh, body + b" ") is False  # type: ignore[operator]
    assert check("other", fresh, body) is False  # type: ignore[operator]
    assert check(SECRET, n.signature_header(SECRET, body, int(time.time()) - 301), body) is False  # type: ignore[operator]
    assert check(SECRET, "t=x,v1=é", body) is False  # type: ignore[operator]


@pytest.mark.parametrize(("offset", "reason"), [(-301, "stale"), (-86_400, "stale"),
                                                (301, "future"), (86_400, "future")])
def test_replay_window_refuses_stale_and_future_timestamps(offset: int, reason: str) -> None:
    body, now = b'{"a":1}', 1_764_910_800
    header = n.signature_header(SECRET, body, now + offset)
    with pytest.raises(SignatureInvalid) as caught:
        n.verify_signature(SECRET, header, body, now=now)
    assert caught.value.reason == reason
    # The window's edges are inside it.
    for edge in (-300, 300):
        assert n.verify_signature(SECRET, n.signature_header(SECRET, body, now + edge), body, now)


def test_tampered_body_wrong_secret_and_malformed_headers_refused() -> None:
    body, now = n.webhook_body(message(), "dl-1"), 1_764_910_800
    header = n.signature_header(SECRET, body, now)
    tampered = body.replace(b'"Lumora"', b'"Lumorb"')
    for secret, data in ((SECRET, tampered), ("whsec-other", body)):
        with pytest.raises(SignatureInvalid, match="mismatch"):
            n.verify_signature(secret, header, data, now)
    # Moving the timestamp forward (to get past the window) breaks the HMAC.
    moved = header.replace(f"t={now}", f"t={now + 1000}")
    with pytest.raises(SignatureInvalid, match="mismatch"):
        n.verify_signature(SECRET, moved, body, now + 1000)
    for bad in ("", "v1=abc", f"t={now}", f"t=-{now},v1=00", f"t={now},t={now},v1=00",
                f"t={now};v1=00", "t=１２,v1=00"):
        with pytest.raises(SignatureInvalid, match="malformed"):
            n.verify_signature(SECRET, bad, body, now)


def test_several_v1_values_accepted_during_secret_rotation() -> None:
    body, now = b"{}", 1_764_910_800
    old = n.signature_header("old-secret", body, now).split(",")[1]
    header = f"{n.signature_header(SECRET, body, now)},{old}"
    assert n.verify_signature(SECRET, header, body, now) == now
    assert n.verify_signature("old-secret", header, body, now) == now


# ----------------------------------------------------------------------- the bodies

def test_webhook_body_is_stable_and_complete() -> None:
    msg = message()
    body = n.webhook_body(msg, "dl-1")
    assert body == n.webhook_body(message(segment={"engine": "chatgpt", "tag": "x"}), "dl-1")
    doc = json.loads(body)
    assert list(doc) == ["schema", "type", "delivery_id", "alert_id", "workspace_id", "rule_id",
                         "brand", "metric", "segment", "direction", "before", "after", "change",
                         "p_value", "adjusted_p", "run_links", "is_test", "raised_at"]
    assert list(doc["segment"]) == ["engine", "tag"]
    assert doc["type"] == "alert.fired" and doc["delivery_id"] == "dl-1"
    assert doc["before"] == {"period": "2026-W47", "value": 0.3, "successes": 30, "n": 100,
                             "low": 0.22, "high": 0.4}
    assert doc["change"] == pytest.approx(-0.175) and doc["adjusted_p"] == 0.012
    assert doc["raised_at"] == "2026-12-05T05:00:00Z"
    test = json.loads(n.webhook_body(message(is_test=True, p_value=float("nan")), "dl-2"))
    assert test["type"] == "alert.test" and test["is_test"] is True and test["p_value"] is None


def test_slack_payload_has_block_kit_shape_and_escapes_tenant_text() -> None:
    msg = message(brand_name="<!channel> & Co", segment={"engine": "<@U123>"},
                  run_links=["https://app.attesta.example/runs/r1?a=1|b",
                             "javascript:alert(1)", "/runs/r3"], is_test=True)
    payload = n.slack_payload(msg)
    assert set(payload) == {"text", "blocks"}
    assert payload["text"].startswith("[TEST] &lt;!channel&gt; &amp; Co: citation rate down")
    header, section, context = payload["blocks"]
    assert header["type"] == "header" and header["text"]["type"] == "plain_text"
    assert len(header["text"]["text"]) <= 150
    assert section["type"] == "section" and section["text"]["type"] == "mrkdwn"
    assert 1 <= len(section["fields"]) <= 10
    assert all(f["type"] == "mrkdwn" and len(f["text"]) <= 2000 for f in section["fields"])
    assert context["type"] == "context" and len(context["elements"]) <= 10
    mrkdwn = " ".join([payload["text"], section["text"]["text"],
                       *(f["text"] for f in section["fields"]),
                       *(e["text"] for e in context["elements"])])
    # No raw control sequences from tenant text in mrkdwn: Slack would ping the channel or a
    # user (the header is plain_text, which Slack shows as it is).
    assert "<!channel>" not in mrkdwn and "<@U123>" not in mrkdwn
    assert "&lt;@U123&gt;" in mrkdwn
    links = context["elements"][0]["text"]
    assert "<https://app.attesta.example/runs/r1?a=1%7Cb|run 1>" in links
    assert "<javascript:" not in links and "javascript:alert(1)" in links
    assert "30.0%" in section["fields"][0]["text"] and "12.5%" in section["fields"][1]["text"]
    long = n.slack_payload(message(brand_name="L" * 400))
    assert len(long["blocks"][0]["text"]["text"]) == 150


def test_email_subject_is_one_line_and_body_carries_the_figures() -> None:
    content = n.email_content(message(brand_name="Lumora\r\nBcc: victim@example.com"))
    assert "\n" not in content.subject and "\r" not in content.subject
    assert content.subject.startswith("[Attesta] Lumora Bcc: victim@example.com: citation rate")
    assert "Before (2026-W47): 30.0% (30/100, 95% interval 22.0%–40.0%)" in content.text
    assert "After (2026-W48): 12.5% (15/120, 95% interval 8.0%–20.0%)" in content.text
    assert "p-value: 0.0004" in content.text and "https://app.attesta.example/runs/r1" in content.text
    assert '<a href="https://app.attesta.example/runs/r1">' in content.html
    assert "<script" not in n.email_content(message(brand_name="<script>")).html


def test_channels_refuse_bad_targets() -> None:
    with pytest.raises(ValueError, match="secret"):
        Channel("webhook", "https://hooks.example.com/x")
    for target in ("ftp://x.example/", "javascript:alert(1)", "https://a.example/\nx"):
        with pytest.raises(ValueError, match="http"):
            Channel("slack", target)
    for address in ("a@b.example, c@d.example", "a@b.example\r\nBcc: x@y.example", "nobody"):
        with pytest.raises(ValueError, match="address"):
            Channel("email", address)
    assert SECRET not in repr(Channel("webhook", "https://hooks.example.com/x", SECRET))


def test_failure_classes_carry_retryable() -> None:
    retry, refuse = DeliveryRetryable("HTTP 500"), DeliveryRefused("HTTP 404")
    assert isinstance(retry, TransientError) and is_transient(retry) and retry.retryable
    assert isinstance(refuse, PermanentError) and not is_transient(refuse) and not refuse.retryable
    assert notifiers._retry_after("120") == 120.0
    later = (datetime.now(UTC) + timedelta(seconds=90)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert 80 <= (notifiers._retry_after(later) or 0) <= 91
    assert notifiers._retry_after("soon") is None and notifiers._retry_after("9" * 12) == 86_400


# ----------------------------------------------------------- against real receivers

async def test_webhook_delivered_signed_pinned_and_deduplicable() -> None:
    async with WebhookReceiver(SECRET) as hooks:
        channel = Channel("webhook", hooks.url("/hook/acme"), SECRET)
        port = hooks.port
        named = Channel("webhook", f"http://localhost:{port}/hook/named", SECRET)
        receipt = await deliver(channel, message(), delivery_id="dl-1", settings=settings_for(hooks))
        await deliver(channel, message(), delivery_id="dl-1", settings=settings_for(hooks))  # a retry
        await deliver(named, message(), delivery_id="dl-2", settings=settings_for(hooks))
    assert receipt.status == 200 and receipt.kind == "webhook" and receipt.delivery_id == "dl-1"
    first, again, by_name = hooks.requests
    assert first.method == "POST" and first.signature == "ok"
    assert first.headers["Content-Type"] == "application/json"
    assert first.headers["Attesta-Delivery-Id"] == "dl-1" == first.headers["Idempotency-Key"]
    assert first.headers["User-Agent"].startswith("Attesta-Alerts/")
    assert json.loads(first.body)["alert_id"] == "al-1"
    assert again.body == first.body  # the same bytes on a retry, the same id to drop it by
    assert set(hooks.delivered()) == {"dl-1", "dl-2"}
    # Connected to the checked address (127.0.0.1), the name kept in the Host header.
    assert by_name.headers["Host"] == f"localhost:{port}" and by_name.signature == "ok"


async def test_slack_delivery_sends_the_payload_unsigned() -> None:
    async with WebhookReceiver() as hooks:
        receipt = await deliver(Channel("slack", hooks.url("/services/T0/B0/x")), message(),
                                delivery_id="dl-s", settings=settings_for(hooks))
    assert receipt.status == 200 and receipt.kind == "slack"
    (got,) = hooks.requests
    assert json.loads(got.body) == n.slack_payload(message())
    assert "Attesta-Signature" not in got.headers


async def test_500_is_retryable() -> None:
    async with WebhookReceiver(SECRET) as hooks:
        with pytest.raises(DeliveryRetryable) as caught:
            await deliver(Channel("webhook", hooks.url("/status/500"), SECRET), message(),
                          delivery_id="dl-5", settings=settings_for(hooks))
        # The same delivery later succeeds on a receiver that recovered.
        flaky = Channel("webhook", hooks.url("/flaky/1/x"), SECRET)
        with pytest.raises(DeliveryRetryable):
            await deliver(flaky, message(), delivery_id="dl-6", settings=settings_for(hooks))
        ok = await deliver(flaky, message(), delivery_id="dl-6", settings=settings_for(hooks))
    assert caught.value.retryable and caught.value.reason == "HTTP 500"
    assert caught.value.status == 500 and "status 500" not in str(caught.value)  # no body shown
    assert ok.status == 200 and list(hooks.delivered()) == ["dl-6"]


async def test_timeout_is_retryable_and_bounded() -> None:
    async with WebhookReceiver(SECRET, slow_s=5.0) as hooks:
        started = time.monotonic()
        with pytest.raises(DeliveryRetryable, match="timed out after 0.5 s") as caught:
            await deliver(Channel("webhook", hooks.url("/slow"), SECRET), message(),
                          delivery_id="dl-t", settings=settings_for(hooks, http_timeout_s=0.5))
        elapsed = time.monotonic() - started
    assert caught.value.retryable and elapsed < 2.0
    assert hooks.paths() == ["/slow"]  # it was reached: the timeout is the receiver's


async def test_redirect_to_internal_address_refused_and_never_followed() -> None:
    async with WebhookReceiver(SECRET) as internal, WebhookReceiver(SECRET) as hooks:
        hooks.redirect_to = internal.url("/admin")
        # The worst case: the internal address is even on the allow-list. Not followed anyway.
        settings = settings_for(hooks, internal)
        for path in ("/redirect", "/redirect-metadata"):
            with pytest.raises(DeliveryRefused) as caught:
                await deliver(Channel("webhook", hooks.url(path), SECRET), message(),
                              delivery_id="dl-r", settings=settings)
            assert caught.value.reason == "HTTP 302: redirects are not followed"
            assert not caught.value.retryable
            assert "127.0.0.1" not in str(caught.value) and "169.254" not in str(caught.value)
        with pytest.raises(DeliveryRefused):
            await deliver(Channel("slack", hooks.url("/redirect")), message(),
                          delivery_id="dl-r2", settings=settings)
    assert hooks.paths() == ["/redirect", "/redirect-metadata", "/redirect"]
    assert internal.requests == []  # never contacted


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 413, 422])
async def test_4xx_is_not_retryable(status: int) -> None:
    async with WebhookReceiver(SECRET) as hooks:
        with pytest.raises(DeliveryRefused) as caught:
            await deliver(Channel("webhook", hooks.url(f"/status/{status}"), SECRET), message(),
                          delivery_id="dl-4", settings=settings_for(hooks))
    assert caught.value.reason == f"HTTP {status}" and not caught.value.retryable
    assert caught.value.status == status


@pytest.mark.parametrize(("status", "hint"), [(408, None), (429, 7.0), (503, 7.0)])
async def test_408_429_and_503_are_retryable_with_the_retry_after_hint(
        status: int, hint: float | None) -> None:
    async with WebhookReceiver(SECRET) as hooks:
        with pytest.raises(DeliveryRetryable) as caught:
            await deliver(Channel("webhook", hooks.url(f"/status/{status}"), SECRET), message(),
                          delivery_id="dl-h", settings=settings_for(hooks))
    assert caught.value.retryable and caught.value.retry_after_s == hint
    assert caught.value.status == status


async def test_private_targets_refused_at_send_time_before_any_connection() -> None:
    async with WebhookReceiver(SECRET) as hooks, WebhookReceiver(SECRET) as other:
        for url in (hooks.url("/ok"), f"http://localhost:{hooks.port}/ok",
                    f"http://[::ffff:127.0.0.1]:{hooks.port}/ok", "http://10.0.0.7/hook",
                    "http://169.254.169.254/latest/meta-data/", "http://[::1]/x",
                    "http://2130706433/", "http://user:pw@hooks.example.com/x"):
            with pytest.raises(DeliveryRefused) as caught:  # no allow-list: the default policy
                await deliver(Channel("webhook", url, SECRET), message(), delivery_id="dl-p",
                              settings=settings_for(http_timeout_s=2.0))
            assert not caught.value.retryable and caught.value.reason.startswith("target refused")
            assert "127.0.0.1" not in caught.value.reason  # the class, never the address
        # The allow-list admits one address:port; the other receiver's port stays refused, and
        # the check is made at send time, with the policy the attempt is given.
        with pytest.raises(DeliveryRefused, match="loopback"):
            await deliver(Channel("webhook", other.url("/ok"), SECRET), message(),
                          delivery_id="dl-p", settings=settings_for(hooks))
        await deliver(Channel("webhook", other.url("/ok"), SECRET), message(),
                      delivery_id="dl-p", settings=settings_for(other))
    assert hooks.requests == [] and other.paths() == ["/ok"]


async def test_connection_refused_is_retryable() -> None:
    with socket.socket() as s:  # a port nobody listens on (bound, never listening)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        settings = NotifierSettings(policy=OutboundPolicy.from_setting(f"127.0.0.1:{port}"),
                                    http_timeout_s=2.0)
        with pytest.raises(DeliveryRetryable, match="connection failed") as caught:
            await deliver(Channel("webhook", f"http://127.0.0.1:{port}/x", SECRET), message(),
                          delivery_id="dl-c", settings=settings)
    assert caught.value.retryable


async def test_a_shared_client_delivers_many_and_follows_no_redirect() -> None:
    async with WebhookReceiver(SECRET) as internal, WebhookReceiver(SECRET) as hooks:
        hooks.redirect_to = internal.url("/admin")
        settings = settings_for(hooks, internal)
        async with http_client(settings) as client:
            for i in range(5):
                await deliver(Channel("webhook", hooks.url("/ok"), SECRET), message(),
                              delivery_id=f"dl-{i}", settings=settings, client=client)
            with pytest.raises(DeliveryRefused, match="302"):
                await deliver(Channel("webhook", hooks.url("/redirect"), SECRET), message(),
                              delivery_id="dl-x", settings=settings, client=client)
        # Even a client someone built to follow redirects does not follow them here.
        async with httpx.AsyncClient(follow_redirects=True) as following:
            with pytest.raises(DeliveryRefused, match="302"):
                await deliver(Channel("webhook", hooks.url("/redirect"), SECRET), message(),
                              delivery_id="dl-y", settings=settings, client=following)
    assert len(hooks.delivered()) == 5 and internal.requests == []


# ------------------------------------------------------------------------------ SMTP

async def test_email_delivered_to_a_real_smtp_server() -> None:
    async with SmtpReceiver() as smtp:
        settings = NotifierSettings(smtp_host=smtp.host, smtp_port=smtp.port,
                                    mail_from="Attesta alerts <alerts@attesta.example>")
        receipt = await deliver(Channel("email", "brand-team@lumora.example"), message(),
                                delivery_id="dl-m", settings=settings)
        (mail,) = await smtp.wait_for(1)
    assert receipt.kind == "email" and receipt.status == 250
    assert mail.rcpt_tos == ("brand-team@lumora.example",)
    assert mail.mail_from == "alerts@attesta.example"
    m = mail.message
    assert m["Subject"] == ("[Attesta] Lumora: citation rate down 30.0% → 12.5% "
                            "(engine=chatgpt, tag=x)")
    assert m["To"] == "brand-team@lumora.example"
    assert m["Message-ID"] == "<dl-m@attesta.example>" and m["X-Attesta-Delivery-Id"] == "dl-m"
    text = m.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "Before (2026-W47): 30.0% (30/100, 95% interval 22.0%–40.0%)" in text
    assert "p-value: 0.0004 (adjusted over the rules evaluated together: 0.012)" in text
    assert "https://app.attesta.example/runs/r1" in text
    assert m.get_body(("html",)) is not None


async def test_smtp_refusals_and_outage_are_classified() -> None:
    async with SmtpReceiver() as smtp:
        settings = NotifierSettings(smtp_host=smtp.host, smtp_port=smtp.port, smtp_timeout_s=2)
        with pytest.raises(DeliveryRefused, match="SMTP 550"):
            await deliver(Channel("email", "reject-me@lumora.example"), message(),
                          delivery_id="dl-m1", settings=settings)
        with pytest.raises(DeliveryRetryable, match="SMTP 451"):
            await deliver(Channel("email", "later@lumora.example"), message(),
                          delivery_id="dl-m2", settings=settings)
        with pytest.raises(DeliveryRefused, match="required feature"):  # STARTTLS not offered
            await deliver(Channel("email", "ops@lumora.example"), message(),
                          delivery_id="dl-m3", settings=NotifierSettings(
                              smtp_host=smtp.host, smtp_port=smtp.port, smtp_starttls=True))
        assert smtp.messages == []
    port = smtp.port  # stopped now: nobody listens there
    with pytest.raises(DeliveryRetryable, match="unreachable") as caught:
        await deliver(Channel("email", "ops@lumora.example"), message(), delivery_id="dl-m4",
                      settings=NotifierSettings(smtp_host="127.0.0.1", smtp_port=port,
                                                smtp_timeout_s=2))
    assert isinstance(caught.value, DeliveryFailed) and caught.value.retryable


async def test_email_over_starttls_with_the_servers_certificate_checked() -> None:
    async with SmtpReceiver(starttls=True) as smtp:
        settings = NotifierSettings(smtp_host=smtp.host, smtp_port=smtp.port, smtp_starttls=True,
                                    smtp_ca_file=smtp.ca_file, smtp_timeout_s=5)
        receipt = await deliver(Channel("email", "ops@lumora.example"), message(),
                                delivery_id="dl-tls", settings=settings)
        (mail,) = await smtp.wait_for(1)
        assert receipt.status == 250 and mail.tls
        # Without STARTTLS this server refuses the mail for good (5xx); with a certificate it
        # cannot check, the client refuses the server (retried: the operator may fix it).
        with pytest.raises(DeliveryRefused, match="SMTP 530"):
            await deliver(Channel("email", "ops@lumora.example"), message(), delivery_id="dl-p",
                          settings=NotifierSettings(smtp_host=smtp.host, smtp_port=smtp.port))
        with pytest.raises(DeliveryRetryable, match="SSLCertVerificationError"):
            await deliver(Channel("email", "ops@lumora.example"), message(), delivery_id="dl-u",
                          settings=NotifierSettings(smtp_host=smtp.host, smtp_port=smtp.port,
                                                    smtp_starttls=True, smtp_timeout_s=5))
    assert len(smtp.messages) == 1
