"""The LLM generator end to end through answer building, against a real OpenAI-compatible HTTP
server on 127.0.0.1 (``FakeChatServer``) that answers with hostile outputs. Every case has a
defined outcome: a reply (answered / no_context / failed with a reason), never an exception."""

from __future__ import annotations

import json
import math

import pytest

from attesta_answer.adapters.llm_generator import ANSWER_SCHEMA, LLMGenerator
from attesta_answer.domain.firewall import LINK_REMOVED
from attesta_answer.domain.model import NO_CONTEXT_ANSWER
from attesta_answer.service_layer.answering import FAILED_ANSWER, answer_sha256, build_answer
from attesta_contracts.chat import (
    AnswerStatus,
    ChunkScores,
    ContextChunk,
    HybridPath,
    RetrievalCompleted,
)
from attesta_platform.llm import LLMConfig
from attesta_testing.chat_server import FakeChatServer, FakeReply

pytestmark = pytest.mark.unit  # a loopback HTTP server only

DOSE = "The recommended adult dose is one 40 mg tablet once daily"
VELNOREX = ContextChunk(
    id="med-velnorex", card_id="med-velnorex", title="Velnorex (see https://title.example/x)",
    text=f"Velnorex is a tablet made by Lumora (lumora.example). {DOSE}. "
         "More at https://ref.medvault.example/monographs/velnorex and www.medvault.example.",
    source="https://ref.medvault.example/monographs/velnorex",
    metadata={"license": "proprietary-internal", "publisher_url": "https://secret-meta.example/"},
    scores=ChunkScores(rerank_logit=2.0, rrf=0.03, dense=0.8, bm25=7.0))
VELNORAX = ContextChunk(
    id="med-velnorax", card_id="med-velnorax", title="Velnorax",
    text="Velnorax is a 70 mg monthly injection made by Kestrel.",
    source="javascript:alert(1)", metadata={"license": 42},
    scores=ChunkScores(rerank_logit=-1.0))


def retrieval(path: HybridPath | None = HybridPath.FULL,
              question: str = "What is the adult dose of Velnorex?") -> RetrievalCompleted:
    return RetrievalCompleted(request_id="req-1", question=question,
                              chunks=[VELNOREX, VELNORAX], hybrid_path=path)


@pytest.fixture(scope="module")
def shared_server():
    # One server for the module: stopping one costs up to 0.5 s (serve_forever's poll interval).
    with FakeChatServer() as s:
        yield s


@pytest.fixture
def server(shared_server):
    shared_server.requests.clear()
    yield shared_server
    leftover = list(shared_server._script)  # every test consumes exactly what it scripted
    shared_server._script.clear()
    assert leftover == []


@pytest.fixture
async def generator(server):
    gen = LLMGenerator(LLMConfig(base_url=server.base_url, model="fake/model-1", api_key="k",
                                 timeout_s=0.5, attempts=3, initial_backoff_s=0.01,
                                 max_backoff_s=0.02, max_retry_after_s=0.05))
    yield gen
    await gen.aclose()


def good(answer: str = f"{DOSE}.", citations=None) -> FakeReply:
    return FakeReply.json({"answer": answer, "citations": citations if citations is not None else [
        {"card_id": "med-velnorex", "span": DOSE}]})


async def test_prompt_carries_ids_and_link_free_text_and_never_a_url_source_or_metadata(server, generator):
    server.script(good())
    built = await build_answer(retrieval(
        question="What is the adult dose of Velnorex? I read https://forum.example/velnorex"), generator)
    assert built.reply.status == AnswerStatus.ANSWERED
    [sent] = server.requests
    assert sent["model"] == "fake/model-1"
    assert sent["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA
    prompt = json.dumps(sent["messages"])
    assert "med-velnorex" in prompt and "med-velnorax" in prompt and DOSE in prompt
    for forbidden in ("http", "://", "www.", ".example", "javascript", "medvault", "forum",
                      "proprietary-internal", "secret-meta", "license"):
        assert forbidden not in prompt.replace("example_", ""), forbidden


async def test_answered_reply_is_reconciled_enriched_and_hashed(server, generator):
    server.script(good())
    reply = (await build_answer(retrieval(), generator)).reply
    assert reply.answer == f"{DOSE}."
    assert reply.generator == "fake/model-1"
    assert reply.answer_sha256 == answer_sha256(reply.answer)
    assert [c.model_dump(mode="json") for c in reply.citations] == [{
        "card_id": "med-velnorex", "span": DOSE,
        "source_url": "https://ref.medvault.example/monographs/velnorex",
        "source_license": "proprietary-internal",
        "retrieved_score": float(round(100 / (1 + math.exp(-2.0)))),  # 88.0
    }]
    assert reply.citations[0].retrieved_score == 88.0
    assert set(reply.timings_ms) >= {"answer.generate", "answer.reconcile", "answer.enrich"}


async def test_rrf_only_path_gives_url_and_licence_but_no_score(server, generator):
    server.script(good())
    reply = (await build_answer(retrieval(HybridPath.RRF_ONLY), generator)).reply
    assert reply.hybrid_path == HybridPath.RRF_ONLY
    assert reply.citations[0].model_dump(mode="json") == {
        "card_id": "med-velnorex", "span": DOSE,
        "source_url": "https://ref.medvault.example/monographs/velnorex",
        "source_license": "proprietary-internal"}


@pytest.mark.parametrize(("model_answer", "shown"), [
    (f"{DOSE}. See https://evil.example/buy now.", f"{DOSE}. See {LINK_REMOVED} now."),
    (f"{DOSE} ([source](https://evil.example/x)).", f"{DOSE} (source)."),
    (f"{DOSE}. <a href=\"https://evil.example\">Buy</a>", f"{DOSE}. Buy"),
    (f"{DOSE}. Visit lumora.example/velnorex or www.evil.com.",
     f"{DOSE}. Visit {LINK_REMOVED} or {LINK_REMOVED}."),
    (f"{DOSE}. <https://evil.example>", f"{DOSE}. {LINK_REMOVED}"),
    (f"{DOSE}. hxxps://evil[.]example", f"{DOSE}. {LINK_REMOVED}"),
])
async def test_urls_in_the_model_answer_never_reach_the_reply(server, generator, model_answer, shown):
    server.script(good(model_answer))
    reply = (await build_answer(retrieval(), generator)).reply
    assert reply.status == AnswerStatus.ANSWERED
    assert reply.answer == shown
    assert reply.answer_sha256 == answer_sha256(shown)
    assert [c.source_url for c in reply.citations] == [
        "https://ref.medvault.example/monographs/velnorex"]  # the only URL: from the KB


async def test_an_overlong_model_answer_is_cut(server, generator):
    server.script(good(f"{DOSE}. " + "Blah blah. " * 2000))
    reply = (await build_answer(retrieval(), generator)).reply
    assert reply.status == AnswerStatus.ANSWERED
    assert reply.answer.startswith(DOSE) and reply.answer.endswith(" …")
    assert len(reply.answer) <= 4002


async def test_a_url_the_model_puts_in_a_citation_is_ignored(server, generator):
    server.script(good(citations=[{"card_id": "med-velnorex", "span": DOSE,
                                   "source_url": "https://evil.example/", "retrieved_score": 100}]))
    reply = (await build_answer(retrieval(HybridPath.DENSE_ONLY), generator)).reply
    assert reply.citations[0].model_dump(mode="json") == {
        "card_id": "med-velnorex", "span": DOSE,
        "source_url": "https://ref.medvault.example/monographs/velnorex",
        "source_license": "proprietary-internal"}


async def test_bad_citations_are_dropped_with_reasons_and_good_ones_kept(server, generator):
    server.script(good(citations=[
        {"card_id": "med-not-retrieved", "span": DOSE},
        {"card_id": "med-velnorex", "span": "a 70 mg monthly injection made by Kestrel"},
        {"card_id": "med-velnorex", "span": DOSE},
        {"card_id": "med-velnorex", "span": DOSE + "."},
        {"card_id": "med-velnorax", "span": "Velnorax is a 70 mg monthly injection"},
    ]))
    built = await build_answer(retrieval(), generator)
    assert [(c.card_id, c.span) for c in built.reply.citations] == [
        ("med-velnorex", DOSE), ("med-velnorax", "Velnorax is a 70 mg monthly injection")]
    assert [d.reason.value for d in built.dropped] == [
        "card_not_retrieved", "span_not_in_card", "duplicate"]
    velnorax = built.reply.citations[1].model_dump(mode="json")
    assert velnorax == {"card_id": "med-velnorax", "span": "Velnorax is a 70 mg monthly injection",
                        "retrieved_score": 27.0}  # javascript: source and licence 42 -> absent
    assert "dropped" not in built.reply.model_dump_json()  # drops are logged, not sent


@pytest.mark.parametrize("citations", [
    [], [{"card_id": "med-elsewhere", "span": DOSE}],
    [{"card_id": "med-velnorex", "span": "Velnorex cures everything in one hour"}],
])
async def test_no_surviving_citation_gives_no_context_and_withholds_the_text(server, generator, citations):
    server.script(good("Velnorex cures everything.", citations))
    reply = (await build_answer(retrieval(), generator)).reply
    assert reply.status == AnswerStatus.NO_CONTEXT
    assert reply.answer == NO_CONTEXT_ANSWER and reply.citations == []


@pytest.mark.parametrize(("replies", "reason_part", "calls"), [
    ([FakeReply.content("this is not json {")] * 3, "not valid JSON", 3),
    ([FakeReply.raw(b"<html>gateway</html>")] * 3, "not a chat completion", 3),
    ([FakeReply.content('["a list"]')] * 3, "not an object", 3),
    ([FakeReply.status(429, retry_after=0)] * 3, "HTTP 429", 3),
    ([FakeReply.status(500)] * 3, "HTTP 500", 3),
    ([FakeReply.status(503, retry_after=0)] * 3, "HTTP 503", 3),
    ([FakeReply.status(401, body='{"secret": "upstream-detail"}')] * 3, "HTTP 401", 3),  # retried too
    ([FakeReply.json({"answer": 5, "citations": []})], "no string 'answer'", 1),
    ([FakeReply.json({"answer": "x", "citations": "med-velnorex"})], "'citations' is not a list", 1),
    ([FakeReply.json({"citations": []})], "no string 'answer'", 1),
])
async def test_hostile_endpoint_gives_a_failed_reply_with_a_reason(server, generator, replies,
                                                                   reason_part, calls):
    server.script(*replies)
    reply = (await build_answer(retrieval(), generator)).reply
    assert reply.status == AnswerStatus.FAILED
    assert reply.answer == FAILED_ANSWER and reply.citations == []
    assert reason_part in reply.error
    assert "upstream-detail" not in reply.error  # the upstream's body is not shown to users
    assert reply.answer_sha256 == answer_sha256(FAILED_ANSWER)
    assert len(server.requests) <= calls  # bounded


async def test_timeouts_are_retried_a_bounded_number_of_times_then_fail(server, generator):
    server.script(*[FakeReply.json({"answer": "late", "citations": []}, delay_s=1.0)] * 3)
    reply = (await build_answer(retrieval(), generator)).reply
    assert reply.status == AnswerStatus.FAILED
    assert "timed out" in reply.error
    assert len(server.requests) == 3


async def test_the_whole_generation_has_a_budget_below_the_gateway_timeout(server):
    import time

    gen = LLMGenerator(LLMConfig(base_url=server.base_url, model="m", timeout_s=0.6, attempts=3,
                                 initial_backoff_s=0.01, max_backoff_s=0.02), budget_s=1.0)
    server.script(*[FakeReply.json({"answer": "late", "citations": []}, delay_s=0.8)] * 2)
    started = time.monotonic()
    try:
        reply = (await build_answer(retrieval(), gen)).reply
    finally:
        await gen.aclose()
    assert time.monotonic() - started < 1.5
    assert reply.status == AnswerStatus.FAILED
    assert "within the 1 s budget" in reply.error
    assert len(server.requests) == 2  # the second attempt was cut by the budget


async def test_transient_errors_then_success_answers(server, generator):
    server.script(FakeReply.status(429, retry_after=0), FakeReply.status(500), good())
    reply = (await build_answer(retrieval(), generator)).reply
    assert reply.status == AnswerStatus.ANSWERED
    assert len(server.requests) == 3


async def test_malformed_citation_items_are_dropped_not_fatal(server, generator):
    server.script(good(citations=[None, "med-velnorex", {"card_id": 3, "span": DOSE},
                                  {"card_id": "med-velnorex", "span": DOSE}]))
    built = await build_answer(retrieval(), generator)
    assert built.reply.status == AnswerStatus.ANSWERED
    assert [d.reason.value for d in built.dropped] == ["malformed"] * 3


async def test_unreachable_endpoint_fails_cleanly():
    gen = LLMGenerator(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=0.5,
                                 attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02))
    try:
        reply = (await build_answer(retrieval(), gen)).reply
    finally:
        await gen.aclose()
    assert reply.status == AnswerStatus.FAILED and "unreachable" in reply.error


async def test_empty_context_never_calls_the_model(server, generator):
    reply = (await build_answer(RetrievalCompleted(request_id="r", question="q?"), generator)).reply
    assert reply.status == AnswerStatus.NO_CONTEXT and reply.answer == NO_CONTEXT_ANSWER
    assert server.requests == []
