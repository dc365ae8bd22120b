"""The gateway's service layer on its unit of work's in-memory repositories (no database, no
network): idempotent forwarding, authentication, chat request/reply. The same store contract is
checked against PostgreSQL in tests/test_gateway_stores.py."""

from __future__ import annotations

import asyncio
import json

import pytest

from attesta_contracts import Envelope
from attesta_contracts.chat import AnswerStatus, ChatAnswered
from tests.gateway_fakes import InMemoryUnitOfWork
from attesta_gateway.adapters.replies import ReplyRouter
from attesta_gateway.adapters.upstream import UpstreamReply
from attesta_gateway.domain.keys import StoredKey, key_digest, new_key
from attesta_gateway.service_layer.chat import ask_assistant
from attesta_gateway.service_layer.auth import Authenticator
from attesta_gateway.entrypoints.responses import REPLAYED_HEADER
from attesta_gateway.entrypoints.responses import to_response as answer
from attesta_gateway.domain.commands import JSON_ONLY, AskAssistant, ForwardOnce
from attesta_gateway.service_layer.forwarding import checked, forward_once
from attesta_platform.http import ApiError
from attesta_platform.messaging import Delivery
from tests.gateway_fakes import http_errors

pytestmark = pytest.mark.unit
SECRET = b"s" * 40


class FakeUpstream:
    name, base_url = "classifier", "http://fake"

    def __init__(self, status: int = 201) -> None:
        self.calls: list[tuple[str, str, bytes | None, str | None]] = []
        self.status = status
        self.gate: asyncio.Event | None = None

    async def request(self, method, path, *, workspace=None, actor=None, params=None,
                      body=None, idempotency_key=None, actor_name=None) -> UpstreamReply:
        self.calls.append((method, path, body, idempotency_key))
        if self.gate is not None:
            await self.gate.wait()
        return UpstreamReply(self.status, json.dumps({"n": len(self.calls)}).encode(),
                             "application/json")


async def _post(uow, upstream, key, fp="fp-1", ws="ws"):
    """What the route answers (its refusals raised as the ApiError the edge turns them into)."""
    with http_errors():
        return answer(await forward_once(
            ForwardOnce("classifier", "/v1/runs", ws, "k", key, fp, b"{}"), uow,
            lambda name: upstream))


async def test_a_key_forwards_once_and_replays_the_stored_answer():
    uow, up = InMemoryUnitOfWork(), FakeUpstream()
    first = await _post(uow, up, "abc")
    again = await _post(uow, up, "abc")
    assert len(up.calls) == 1 and up.calls[0][3] == "abc"
    assert again.body == first.body and again.headers[REPLAYED_HEADER] == "true"
    other_ws = await _post(uow, up, "abc", ws="other")  # keys are per workspace
    assert len(up.calls) == 2 and REPLAYED_HEADER not in other_ws.headers


async def test_reuse_with_another_payload_is_422_and_in_flight_is_409():
    uow, up = InMemoryUnitOfWork(), FakeUpstream()
    up.gate = asyncio.Event()
    first = asyncio.create_task(_post(uow, up, "k1"))
    await asyncio.sleep(0)
    with pytest.raises(ApiError) as busy, http_errors():
        await _post(uow, up, "k1")
    assert busy.value.status == 409
    up.gate.set()
    await first
    with pytest.raises(ApiError) as reused, http_errors():
        await _post(uow, up, "k1", fp="fp-2")
    assert reused.value.status == 422 and reused.value.code == "idempotency_key_reused"


async def test_a_5xx_frees_the_key_for_a_retry():
    uow, up = InMemoryUnitOfWork(), FakeUpstream(status=500)
    assert (await _post(uow, up, "k")).status_code == 502
    up.status = 201
    assert (await _post(uow, up, "k")).status_code == 201
    assert len(up.calls) == 2


async def test_authenticator_accepts_stored_keys_and_refuses_revoked_ones():
    uow = InMemoryUnitOfWork()
    key_id, plaintext = new_key()
    await uow.keys.add(StoredKey(key_id, "ws-a", "ci", key_digest(SECRET, plaintext)))
    auth = Authenticator(uow.keys, SECRET, cache_ttl_s=0)
    principal = await auth.authenticate(plaintext)
    assert (principal.key_id, principal.workspace_id) == (key_id, "ws-a")
    assert await uow.keys.revoke(key_id)
    with pytest.raises(ApiError) as refused, http_errors():
        await auth.authenticate(plaintext)
    assert refused.value.status == 401
    with pytest.raises(ApiError), http_errors():
        await auth.authenticate(new_key()[1])  # well-formed, unknown


class LoopbackPublisher:
    """Publishes by answering at once through the reply router, as the answer service would."""

    def __init__(self, replies: ReplyRouter, fail: bool = False, answer: bool = True) -> None:
        self.replies, self.fail, self.answer = replies, fail, answer
        self.published: list = []

    async def publish(self, topic, payload, *, key, correlation_id):
        if self.fail:
            raise ConnectionError("broker down")
        self.published.append((topic, payload))
        if self.answer:
            reply = ChatAnswered(request_id=payload.request_id, question=payload.question,
                                 answer="a", citations=[], status=AnswerStatus.NO_CONTEXT,
                                 generator="test")
            env = Envelope[ChatAnswered](event_type="ChatAnswered", schema_version=1,
                                         correlation_id=key, producer="test", payload=reply)
            asyncio.get_running_loop().call_soon(
                lambda: asyncio.ensure_future(self.replies.on_reply(
                    env, Delivery("chat.answered.v1", 0, 0, key.encode(), b""))))


async def test_chat_publishes_the_question_and_returns_its_reply():
    replies = ReplyRouter()
    pub = LoopbackPublisher(replies)
    reply = await ask_assistant(AskAssistant("q?", 3, "ws"), pub, replies, reply_to="inst-1",
                                chat_timeout_s=2)
    topic, sent = pub.published[0]
    assert topic == "chat.requested.v1" and sent.reply_to == "inst-1"
    assert sent.workspace_id == "ws" and sent.top_k == 3
    assert reply.request_id == sent.request_id


async def test_chat_times_out_with_504_and_a_refused_publish_is_503():
    replies = ReplyRouter()
    with pytest.raises(ApiError) as late, http_errors():
        await ask_assistant(AskAssistant("q", 1, None), LoopbackPublisher(replies, answer=False),
                            replies, reply_to="i", chat_timeout_s=0.05)
    assert late.value.status == 504 and late.value.code == "answer_timeout"
    with pytest.raises(ApiError) as down, http_errors():
        await ask_assistant(AskAssistant("q", 1, None), LoopbackPublisher(replies, fail=True),
                            replies, reply_to="i", chat_timeout_s=1)
    assert down.value.status == 503 and down.value.headers["Retry-After"] == "1"


def test_a_route_that_exports_csv_passes_it_through_and_json_routes_refuse_it():
    def to_response(upstream, reply, media_types=JSON_ONLY):  # the route's answer
        return answer(checked(upstream.name, reply, media_types))

    csv = UpstreamReply(200, b"a,b\n1,2\n", "text/csv; charset=utf-8")
    assert to_response(FakeUpstream(), csv).status_code == 502
    passed = to_response(FakeUpstream(), csv, ("text/csv", *JSON_ONLY))
    assert passed.status_code == 200 and passed.body == b"a,b\n1,2\n"
    assert passed.media_type.startswith("text/csv")
    error = UpstreamReply(404, b"<html>", "text/html")
    assert to_response(FakeUpstream(), error, ("text/csv", *JSON_ONLY)).status_code == 502


def test_every_domain_error_has_its_http_status_at_the_edge():
    from attesta_gateway.entrypoints.responses import api_error
    from attesta_gateway.service_layer import errors

    kinds = [c for c in vars(errors).values()
             if isinstance(c, type) and issubclass(c, errors.GatewayError)
             and c is not errors.GatewayError]
    statuses = {c.__name__: api_error(c("code", "reason", retry_after=2)).status for c in kinds}
    assert statuses == {"Unauthenticated": 401, "RateLimited": 429,
                        "AuthenticationThrottled": 429, "InFlight": 409, "KeyReused": 422,
                        "BadUpstream": 502, "Unavailable": 503, "TimedOut": 504}
    throttled = api_error(errors.AuthenticationThrottled("c", "r", retry_after=7))
    assert throttled.headers == {"Retry-After": "7", "WWW-Authenticate": 'Bearer realm="attesta"'}
