"""The shared LLM client against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import time

import pytest

from attesta_platform.errors import is_transient
from attesta_platform.llm import ChatCompletionsClient, LLMBadOutput, LLMConfig, LLMUnavailable
from attesta_testing.chat_server import FakeChatServer, FakeReply

pytestmark = pytest.mark.unit  # a loopback HTTP server only: no Kafka/PostgreSQL/Redis

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
          "additionalProperties": False}
MSGS = [{"role": "user", "content": "give x"}]


@pytest.fixture
def server():
    with FakeChatServer() as s:
        yield s


def client(server: FakeChatServer, **kw) -> ChatCompletionsClient:
    cfg = dict(base_url=server.base_url, model="fake", api_key="k", timeout_s=2.0, attempts=3,
               initial_backoff_s=0.01, max_backoff_s=0.02)
    cfg.update(kw)
    return ChatCompletionsClient(LLMConfig(**cfg))


async def test_returns_parsed_object_and_sends_structured_output_request(server):
    server.script(FakeReply.json({"x": 7}))
    c = client(server)
    assert await c.complete_json(MSGS, schema_name="x", json_schema=SCHEMA) == {"x": 7}
    await c.aclose()
    sent = server.requests[0]
    assert sent["model"] == "fake"
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA


async def test_429_and_500_are_retried_then_succeed(server):
    server.script(FakeReply.status(429, retry_after=0), FakeReply.status(500), FakeReply.json({"x": 1}))
    c = client(server)
    assert await c.complete_json(MSGS, schema_name="x", json_schema=SCHEMA) == {"x": 1}
    await c.aclose()
    assert len(server.requests) == 3


async def test_persistent_429_gives_transient_unavailable_after_bounded_attempts(server):
    server.script(*[FakeReply.status(429, retry_after=0)] * 5)
    c = client(server)
    with pytest.raises(LLMUnavailable) as info:
        await c.complete_json(MSGS, schema_name="x", json_schema=SCHEMA)
    await c.aclose()
    assert is_transient(info.value)
    assert len(server.requests) == 3  # bounded: exactly `attempts` calls


async def test_retry_after_is_capped(server):
    server.script(FakeReply.status(429, retry_after=3600), FakeReply.json({"x": 2}))
    c = client(server, max_retry_after_s=0.05)
    t0 = time.monotonic()
    assert await c.complete_json(MSGS, schema_name="x", json_schema=SCHEMA) == {"x": 2}
    await c.aclose()
    assert time.monotonic() - t0 < 1.5  # did not sleep an hour


async def test_timeout_gives_transient_unavailable(server):
    server.script(*[FakeReply.json({"x": 1}, delay_s=1.0)] * 2)
    c = client(server, timeout_s=0.2, attempts=2)
    with pytest.raises(LLMUnavailable, match="timed out"):
        await c.complete_json(MSGS, schema_name="x", json_schema=SCHEMA)
    await c.aclose()


@pytest.mark.parametrize("reply, reason", [
    (FakeReply.content("{not json"), "not valid JSON"),
    (FakeReply.content("[1, 2]"), "not an object"),
    (FakeReply.content(""), "no text content"),
    (FakeReply.raw(b"<html>oops</html>"), "not a chat completion"),
    (FakeReply.raw(b'{"choices": []}'), "not a chat completion"),
    (FakeReply.status(400), "HTTP 400"),
])
async def test_malformed_output_is_permanent_bad_output(server, reply, reason):
    server.script(*[reply] * 3)
    c = client(server)
    with pytest.raises(LLMBadOutput, match=reason) as info:
        await c.complete_json(MSGS, schema_name="x", json_schema=SCHEMA)
    await c.aclose()
    assert not is_transient(info.value)


async def test_code_fenced_json_is_accepted(server):
    server.script(FakeReply.content('```json\n{"x": 3}\n```'))
    c = client(server)
    assert await c.complete_json(MSGS, schema_name="x", json_schema=SCHEMA) == {"x": 3}
    await c.aclose()


async def test_unreachable_endpoint_is_transient():
    with FakeChatServer() as s:
        url = s.base_url
    c = ChatCompletionsClient(LLMConfig(base_url=url, timeout_s=0.5, attempts=2,
                                        initial_backoff_s=0.01, max_backoff_s=0.02))
    with pytest.raises(LLMUnavailable, match="unreachable"):
        await c.complete_json(MSGS, schema_name="x", json_schema=SCHEMA)
    await c.aclose()
