"""Alert channels: one delivery attempt of one alert to one channel (issue #25).

``deliver(channel, message, delivery_id=..., settings=...)`` sends once and returns a
:class:`DeliveryReceipt`, or raises :class:`DeliveryFailed` whose class (and ``retryable``)
says whether a later attempt can help. Retries, backoff, the dead letter and the delivery log
belong to the caller (the outbox relay); the same ``delivery_id`` on every attempt of one
delivery lets a webhook receiver drop duplicates.

Webhook and Slack targets are tenant input, so every attempt goes through the system's one
outbound policy (``attesta_platform.outbound``), as the ground-truth fetcher's requests do:
the URL's shape, then every address its host resolves to *now* (a name's addresses can change
between the rule's creation and the send), the connection made to the checked address (Host
header and TLS SNI keep the name), and **no redirect followed**: a 3xx is a non-retryable
failure that names the status only (the Location may point inside our network, and a
receiver that moved must be re-entered by the tenant, who then passes the check again). A
refusal happens before any connection. The receiver's body is never read into an error: the
tenant sees a status or an error class, not what an internal service would have answered.

E-mail goes to the operator's SMTP server (``smtp_host``, not tenant input) with aiosmtplib;
STARTTLS when ``smtp_starttls`` is set.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import ssl
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage

import aiosmtplib
import httpx

from attesta_classifier.domain.notifications import (
    AlertMessage,
    Channel,
    DeliveryFailed,
    DeliveryReceipt,
    DeliveryRefused,
    DeliveryRetryable,
    email_content,
    slack_body,
    webhook_body,
    webhook_headers,
)
from attesta_platform.outbound import HostUnresolved, OutboundPolicy, OutboundRefused

__all__ = ["DeliveryFailed", "NotifierSettings", "deliver", "http_client"]

# Retry-After is a hint; a receiver asking for more than a day is capped (the caller's backoff
# still decides).
_RETRY_AFTER_MAX_S = 86_400.0
_DELIVERY_HEADER = "X-Attesta-Delivery-Id"


@dataclass(frozen=True)
class NotifierSettings:
    """What the channels need from the service's settings (the classifier wires them).

    ``policy`` is the process's outbound policy (``ServiceSettings.outbound_policy()``, the
    shared ``ATTESTA_FETCH_ALLOW``); ``http_timeout_s`` bounds one whole webhook/Slack attempt
    (resolve, connect, send, status line); ``smtp_timeout_s`` one SMTP conversation."""

    policy: OutboundPolicy = field(default_factory=OutboundPolicy)
    http_timeout_s: float = 10.0
    user_agent: str = "Attesta-Alerts/1.0 (+https://attesta.example/alerts)"
    tls_verify: bool | str = True  # True, False (tests only) or a CA bundle's path
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 25
    smtp_starttls: bool = False
    smtp_ca_file: str = ""  # CA bundle for the mail server's certificate; empty: the system's
    smtp_username: str = ""
    smtp_password: str = field(default="", repr=False)
    smtp_timeout_s: float = 10.0
    mail_from: str = "Attesta alerts <alerts@attesta.invalid>"


def http_client(settings: NotifierSettings) -> httpx.AsyncClient:
    """A client for many deliveries (connection reuse): never follows redirects, ignores the
    environment's proxies (a proxy would connect to a name we did not check)."""
    return httpx.AsyncClient(follow_redirects=False, trust_env=False,
                             verify=_tls_context(settings.tls_verify),
                             timeout=httpx.Timeout(settings.http_timeout_s))


@functools.lru_cache(maxsize=8)
def _tls_context(verify: bool | str) -> ssl.SSLContext | bool:
    """One TLS context per setting for the process: loading the CA bundle costs ~15 ms of CPU,
    more than the rest of a delivery to a nearby receiver (benchmarks/webhook_delivery.py)."""
    if verify is False:
        return False
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return httpx.create_ssl_context(verify=True)


async def deliver(channel: Channel, message: AlertMessage, *, delivery_id: str,
                  settings: NotifierSettings, client: httpx.AsyncClient | None = None,
                  now: float | None = None) -> DeliveryReceipt:
    """One attempt. ``client`` (from :func:`http_client`) is reused when given; ``now`` (unix
    seconds) is the signature's timestamp, the clock when omitted."""
    started = time.monotonic()
    if channel.kind == "email":
        status, detail = await _send_email(channel.target, message, delivery_id, settings)
    else:
        if channel.kind == "webhook":
            if not channel.secret:  # Channel refuses one without; a caller may bypass it
                raise DeliveryRefused("the webhook channel has no signing secret")
            body = webhook_body(message, delivery_id)
            headers = webhook_headers(channel.secret, body, delivery_id,
                                      int(time.time() if now is None else now))
        else:
            body = slack_body(message)
            headers = {"Content-Type": "application/json"}
        status = await _post(channel.target, body, headers, settings, client)
        detail = f"HTTP {status}"
    return DeliveryReceipt(delivery_id, channel.kind, status, time.monotonic() - started, detail)


# ---------------------------------------------------------------------------------- HTTP

async def _post(url: str, body: bytes, headers: dict[str, str], settings: NotifierSettings,
                client: httpx.AsyncClient | None) -> int:
    try:
        async with asyncio.timeout(settings.http_timeout_s):
            if client is not None:
                return await _post_once(client, url, body, headers, settings)
            async with http_client(settings) as own:
                return await _post_once(own, url, body, headers, settings)
    except TimeoutError:
        raise DeliveryRetryable(f"timed out after {settings.http_timeout_s:g} s") from None


async def _post_once(client: httpx.AsyncClient, url: str, body: bytes, headers: dict[str, str],
                     settings: NotifierSettings) -> int:
    try:
        pinned = await settings.policy.pin(url)
    except OutboundRefused as exc:
        raise DeliveryRefused(f"target refused: {exc.public_reason}") from None
    except HostUnresolved:
        # Perhaps a DNS outage, perhaps a name that is gone: retried, then dead-lettered.
        raise DeliveryRetryable("the target's host name did not resolve") from None
    request = client.build_request(
        "POST", pinned.url, content=body,
        headers={**headers, "Host": pinned.host_header, "User-Agent": settings.user_agent},
        extensions={"sni_hostname": pinned.server_name})
    try:
        # follow_redirects=False here too: a caller's own client may have been built to follow.
        response = await client.send(request, stream=True, follow_redirects=False)
    except httpx.TimeoutException:
        raise DeliveryRetryable(f"timed out after {settings.http_timeout_s:g} s") from None
    except httpx.HTTPError as exc:
        # Refused, reset, TLS failure, malformed response: the class only, no address.
        raise DeliveryRetryable(f"connection failed ({type(exc).__name__})") from None
    try:
        status = response.status_code
        if 200 <= status < 300:
            return status
        if 300 <= status < 400:
            raise DeliveryRefused(f"HTTP {status}: redirects are not followed", status=status)
        if status in (408, 429) or status >= 500:
            hint = _retry_after(response.headers.get("retry-after"))
            raise DeliveryRetryable(
                f"HTTP {status}" + (f" (Retry-After {hint:g} s)" if hint is not None else ""),
                retry_after_s=hint, status=status)
        raise DeliveryRefused(f"HTTP {status}", status=status)
    finally:
        # The body is never read: a tenant must not learn what a target answers.
        await response.aclose()


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return min(float(value), _RETRY_AFTER_MAX_S)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max((when - datetime.now(UTC)).total_seconds(), 0.0), _RETRY_AFTER_MAX_S)


# ---------------------------------------------------------------------------------- SMTP

def _email(address: str, message: AlertMessage, delivery_id: str,
           settings: NotifierSettings) -> EmailMessage:
    content = email_content(message)
    mail = EmailMessage()
    mail["From"] = settings.mail_from
    mail["To"] = address
    mail["Subject"] = content.subject
    mail["Date"] = email.utils.format_datetime(datetime.now(UTC))
    domain = settings.mail_from.rpartition("@")[2].rstrip(">").strip() or "attesta.invalid"
    # One Message-ID per delivery: a retry after a lost reply is recognisable as the same mail.
    mail["Message-ID"] = f"<{delivery_id}@{domain}>"
    mail["X-Attesta-Alert-Id"] = message.alert_id
    mail[_DELIVERY_HEADER] = delivery_id
    mail.set_content(content.text)
    mail.add_alternative(content.html, subtype="html")
    return mail


async def _send_email(address: str, message: AlertMessage, delivery_id: str,
                      settings: NotifierSettings) -> tuple[int, str]:
    mail = _email(address, message, delivery_id, settings)
    try:
        errors, reply = await aiosmtplib.send(
            mail, hostname=settings.smtp_host, port=settings.smtp_port,
            start_tls=settings.smtp_starttls, cert_bundle=settings.smtp_ca_file or None,
            timeout=settings.smtp_timeout_s,
            username=settings.smtp_username or None, password=settings.smtp_password or None)
    except aiosmtplib.SMTPRecipientsRefused as exc:
        codes = [r.code for r in exc.recipients]
        raise _smtp_failure("recipient refused", min(codes) if codes else 550) from None
    except aiosmtplib.SMTPResponseException as exc:
        raise _smtp_failure("mail server refused", exc.code) from None
    except aiosmtplib.SMTPNotSupported as exc:
        raise DeliveryRefused(f"mail server lacks a required feature ({exc})") from None
    except (aiosmtplib.SMTPTimeoutError, aiosmtplib.SMTPConnectTimeoutError):
        raise DeliveryRetryable(f"mail server timed out after {settings.smtp_timeout_s:g} s") \
            from None
    except aiosmtplib.SMTPException as exc:
        if type(exc) is aiosmtplib.SMTPException:
            # The bare class is aiosmtplib's word for our settings and the server disagreeing
            # (STARTTLS required by ``smtp_starttls`` and not offered): the operator's to fix.
            raise DeliveryRefused(f"mail server lacks a required feature ({exc})") from None
        raise DeliveryRetryable(f"mail server unreachable ({type(exc).__name__})") from None
    except OSError as exc:
        # TLS failures included (an unknown certificate): retried, as the operator may fix it.
        raise DeliveryRetryable(f"mail server connection failed ({type(exc).__name__})") \
            from None
    if errors:  # one recipient only, so a refusal raised above; kept for safety
        code = min(r.code for r in errors.values())
        raise _smtp_failure("recipient refused", code)
    return 250, f"SMTP accepted: {reply.strip()[:200]}"


def _smtp_failure(what: str, code: int) -> DeliveryFailed:
    # SMTP's own classes: 4xx is a temporary failure, 5xx a permanent one (RFC 5321 §4.2.1).
    if 400 <= code < 500:
        return DeliveryRetryable(f"{what} (SMTP {code})", status=code)
    return DeliveryRefused(f"{what} (SMTP {code})", status=code)
