"""Real alert receivers on 127.0.0.1 for the tests (issue #25): a webhook receiver (aiohttp) and
an SMTP server (aiosmtpd), both in the test's own event loop, both recording what they got.

Use as async context managers::

    async with WebhookReceiver(secret="s3cret") as hooks, SmtpReceiver() as smtp:
        settings = NotifierSettings(policy=hooks.policy(), smtp_port=smtp.port, ...)
        await deliver(Channel("webhook", hooks.url("/ok"), "s3cret"), message, ...)
        assert hooks.requests[0].signature == "ok"

or as pytest fixtures (``webhook_receiver``, ``smtp_receiver``: import them into a test module
or a conftest); a synchronous test (the browser tests) runs one in a thread:
``with webhook_receiver_thread() as hooks: ...``. Loopback is refused by the outbound policy, so a test allows the receiver's
own port only: ``hooks.policy()`` (``ATTESTA_FETCH_ALLOW`` = ``hooks.allow_setting``), as the
fetcher's tests do.

Webhook paths (any method; POST is what the channels send):

=====================  ==============================================================
``/ok``, ``/hook/...``  200 ``ok`` (Slack's answer)
``/status/<code>``     that status; 429 and 503 carry ``Retry-After: 7``
``/slow``              answers 200 after ``slow_s`` seconds (a timeout for the client)
``/redirect``          302 to ``redirect_to`` (default the cloud metadata address)
``/redirect-metadata`` 302 to ``http://169.254.169.254/latest/meta-data/``
``/flaky/<n>/...``     500 to the first n requests on that path, then 200
``/admin``             200; stands for an internal endpoint (use a second receiver)
=====================  ==============================================================

Every request is recorded (``requests``) with its body, headers, ``Attesta-Delivery-Id`` and
the signature check's outcome (``"ok"``, a ``SignatureInvalid`` reason, or None when the
receiver has no secret or the request no signature); ``delivered()`` gives the signed, 2xx,
de-duplicated deliveries a real receiver would act on.

SMTP: every accepted message is recorded (``messages``: envelope sender, recipients, the parsed
``email.message.EmailMessage``, whether it came over TLS). Recipients starting ``reject`` get 550
(permanent), starting ``later`` get 451 (temporary). ``SmtpReceiver(starttls=True)`` requires
STARTTLS with a self-signed certificate (``ca_file``).
"""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
import ipaddress
import ssl
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiosmtpd.smtp import SMTP, Envelope, Session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from attesta_classifier.domain.notifications import (
    DELIVERY_ID_HEADER,
    SIGNATURE_HEADER,
    SignatureInvalid,
    verify_signature,
)
from attesta_platform.outbound import OutboundPolicy

METADATA_URL = "http://169.254.169.254/latest/meta-data/"


@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    status: int  # what the receiver answered
    delivery_id: str | None
    signature: str | None  # "ok", "malformed", "stale", "future", "mismatch", or None
    received_at: float


class WebhookReceiver:
    def __init__(self, secret: str | None = None, *, slow_s: float = 5.0,
                 redirect_to: str = METADATA_URL, tolerance_s: float = 300) -> None:
        self.secret, self.slow_s, self.redirect_to = secret, slow_s, redirect_to
        self.tolerance_s = tolerance_s
        self.requests: list[ReceivedRequest] = []
        self._hits: Counter[str] = Counter()
        self._arrived = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle
    async def start(self) -> WebhookReceiver:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # handler_cancellation: a client that gave up (the timeout test) ends the slow handler.
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, handler_cancellation=True,
                                     access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]  # the port the OS gave for 0
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> WebhookReceiver:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- addresses
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/ok") -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    @property
    def allow_setting(self) -> str:
        """The ``ATTESTA_FETCH_ALLOW`` entry that admits this receiver (its port only)."""
        return f"127.0.0.1:{self.port}"

    def policy(self, *others: WebhookReceiver) -> OutboundPolicy:
        """The outbound policy with this receiver (and ``others``) allowed, nothing else."""
        return OutboundPolicy.from_setting(
            ",".join(r.allow_setting for r in (self, *others)))

    # -- what arrived
    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def delivered(self) -> dict[str, ReceivedRequest]:
        """Delivery id -> the first signed (or unsigned when no secret), 2xx request with it:
        what a receiver that drops duplicates acts on."""
        out: dict[str, ReceivedRequest] = {}
        for r in self.requests:
            good_signature = self.secret is None or r.signature == "ok"
            if r.delivery_id and 200 <= r.status < 300 and good_signature:
                out.setdefault(r.delivery_id, r)
        return out

    async def wait_for(self, count: int, timeout: float = 10.0) -> list[ReceivedRequest]:
        """Until at least ``count`` requests arrived (TimeoutError otherwise)."""
        async with asyncio.timeout(timeout):
            while len(self.requests) < count:
                self._arrived.clear()
                await self._arrived.wait()
        return self.requests

    def clear(self) -> None:
        self.requests.clear()
        self._hits.clear()

    # -- the server
    def _signature(self, request: web.Request, body: bytes) -> str | None:
        header = request.headers.get(SIGNATURE_HEADER)
        if self.secret is None or header is None:
            return None
        try:
            verify_signature(self.secret, header, body, time.time(), self.tolerance_s)
        except SignatureInvalid as exc:
            return exc.reason
        return "ok"

    def _answer(self, path: str) -> tuple[int, dict[str, str], float]:
        parts = [p for p in path.split("/") if p]
        head = parts[0] if parts else ""
        if head == "status" and len(parts) > 1 and parts[1].isdigit():
            code = int(parts[1])
            retry = {"Retry-After": "7"} if code in (429, 503) else {}
            return code, retry, 0.0
        if head == "slow":
            return 200, {}, self.slow_s
        if head == "redirect":
            return 302, {"Location": self.redirect_to}, 0.0
        if head == "redirect-metadata":
            return 302, {"Location": METADATA_URL}, 0.0
        if head == "flaky" and len(parts) > 1 and parts[1].isdigit():
            self._hits[path] += 1
            return (500 if self._hits[path] <= int(parts[1]) else 200), {}, 0.0
        return 200, {}, 0.0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        status, headers, delay = self._answer(request.path)
        self.requests.append(ReceivedRequest(
            request.method, request.path, dict(request.headers), body, status,
            request.headers.get(DELIVERY_ID_HEADER), self._signature(request, body), time.time()))
        self._arrived.set()
        if delay:
            await asyncio.sleep(delay)
        text = "ok" if 200 <= status < 300 else f"status {status}"
        return web.Response(status=status, text=text, headers=headers)


@dataclass(frozen=True)
class ReceivedMail:
    mail_from: str
    rcpt_tos: tuple[str, ...]
    data: bytes
    message: EmailMessage = field(repr=False)
    tls: bool = False  # came after STARTTLS


class _Recorder:
    """aiosmtpd's handler: the RCPT rules above, then every message kept."""

    def __init__(self, box: SmtpReceiver) -> None:
        self.box = box

    async def handle_RCPT(self, server: SMTP, session: Session, envelope: Envelope,  # noqa: N802
                          address: str, rcpt_options: list[str]) -> str:
        local = address.partition("@")[0].lower()
        if local.startswith("reject"):
            return "550 5.1.1 mailbox unavailable"
        if local.startswith("later"):
            return "451 4.3.0 try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session,  # noqa: N802
                          envelope: Envelope) -> str:
        data = envelope.original_content or b""
        if isinstance(envelope.content, bytes):
            data = envelope.content
        parsed = email.message_from_bytes(data, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.box.messages.append(ReceivedMail(str(envelope.mail_from), tuple(envelope.rcpt_tos),
                                              data, parsed, session.ssl is not None))
        self.box._arrived.set()
        return "250 Message accepted for delivery"


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key (the certificate is its own CA)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "attesta-test-smtp")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "smtp-cert.pem", folder / "smtp-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class SmtpReceiver:
    """``starttls=True``: the server offers STARTTLS and refuses mail before it, with a
    self-signed certificate for 127.0.0.1 whose file is ``ca_file`` (give it to the client)."""

    def __init__(self, *, starttls: bool = False) -> None:
        self.messages: list[ReceivedMail] = []
        self._arrived = asyncio.Event()
        self._server: asyncio.base_events.Server | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.starttls = starttls
        self.ca_file = ""
        self._folder: tempfile.TemporaryDirectory[str] | None = None

    async def start(self) -> SmtpReceiver:
        loop = asyncio.get_running_loop()
        handler = _Recorder(self)
        tls: ssl.SSLContext | None = None
        if self.starttls:
            self._folder = tempfile.TemporaryDirectory(prefix="attesta-smtp-")
            cert, key = _self_signed(Path(self._folder.name))
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(cert, key)
            self.ca_file = str(cert)
        # hostname given: aiosmtpd would otherwise ask DNS for this machine's FQDN.
        self._server = await loop.create_server(
            lambda: SMTP(handler, hostname="localhost", loop=loop, tls_context=tls,
                         require_starttls=tls is not None), self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    async def __aenter__(self) -> SmtpReceiver:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_for(self, count: int, timeout: float = 10.0) -> list[ReceivedMail]:
        async with asyncio.timeout(timeout):
            while len(self.messages) < count:
                self._arrived.clear()
                await self._arrived.wait()
        return self.messages


# ---------------------------------------------------------------------------- fixtures

WEBHOOK_SECRET = "whsec-test-4f1c"


@pytest.fixture
async def webhook_receiver() -> AsyncIterator[WebhookReceiver]:
    """A receiver that checks signatures with ``WEBHOOK_SECRET``; a short ``slow_s``."""
    async with WebhookReceiver(WEBHOOK_SECRET, slow_s=3.0) as receiver:
        yield receiver


@pytest.fixture
async def smtp_receiver() -> AsyncIterator[SmtpReceiver]:
    async with SmtpReceiver() as receiver:
        yield receiver


@contextlib.contextmanager
def webhook_receiver_thread(secret: str | None = None, **options: Any
                            ) -> Iterator[WebhookReceiver]:
    """A :class:`WebhookReceiver` on its own event loop in a thread, for a synchronous test (the
    browser tests drive Chromium with blocking calls, so a receiver in the test's loop would
    never answer). ``requests`` is read from the test's thread; set ``secret`` once known."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="webhook-receiver", daemon=True)
    thread.start()
    receiver = WebhookReceiver(secret, **options)
    try:
        asyncio.run_coroutine_threadsafe(receiver.start(), loop).result(timeout=30)
        yield receiver
    finally:
        asyncio.run_coroutine_threadsafe(receiver.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()
