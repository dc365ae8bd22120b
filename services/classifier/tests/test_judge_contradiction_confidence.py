"""claims-judge-2026.12.17 (issue #28): the model's "contradicted" accuses an engine only when the
model is sure of it.

Before, a "contradicted" backed by a checkable item (a count no fact gives, a fact saying the
opposite) made the answer CONFABULATED whatever the model's probability of the word; on the spent
held-out sets most wrong CONFABULATED labels were such verdicts, given with a low probability. Now
the verdict counts only at ``judging.CONTRADICTED_MIN_P`` or above, and only when the endpoint gave
a probability at all; otherwise the claim stays undecided and the pair waits for a person.

The brand and facts are invented for these tests (a sailmaker); none comes from an evaluation set."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest

from attesta_classifier.adapters.judges import ClaimJudge, JudgeAbstained
from attesta_classifier.domain import judging
from attesta_classifier.domain.checks import CONTRADICTED, SUPPORTED, UNKNOWN, assess
from attesta_classifier.domain.claims import brand_claims
from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_contracts.classification import CitationClass
from attesta_platform.llm import ChatCompletionsClient, LLMConfig
from attesta_testing.chat_server import FakeChatServer, FakeReply

pytestmark = pytest.mark.unit  # a local HTTP server and the embedder from disk, no infrastructure

AT = datetime(2026, 12, 1, tzinfo=UTC)
SAILS = Brand("velaria", "ws", "Velaria Norte", ("Velaria",), ("velaria.example",))
FACTS = tuple(Fact(f"velaria-{i:02d}", "velaria", "manual", t, "https://velaria.example/", AT, "velaria.example",
                   "b" * 64) for i, t in enumerate((
                       "Velaria Norte — description: Maker of cruising sails from recycled polyester.",
                       "Velaria Norte — founding date: 1987",
                       "Velaria Norte — headquarters: Aveiro, Portugal",
                       "Velaria Norte — number of employees: 24",
                   )))
INDEX = judging.fact_index(SAILS, FACTS)
BRAND_WORDS = INDEX.names | INDEX.products
BACKED = "Velaria Norte runs 12 lofts across Europe."  # a count no fact gives: it may back a contradiction
SURE, UNSURE = 0.99, judging.CONTRADICTED_MIN_P - 0.05


def model_says(text: str, word: str, p: float | None) -> judging.ClaimOutcome:
    [claim] = brand_claims(text, SAILS, FACTS)
    return judging.model_outcome(assess(claim, INDEX), word, p, "m", FACTS, BRAND_WORDS)


def test_a_sure_backed_contradiction_counts() -> None:
    outcome = model_says(BACKED, judging.MODEL_CONTRADICTED, SURE)
    assert outcome.status == CONTRADICTED and "p=0.99" in outcome.detail


@pytest.mark.parametrize("p", [UNSURE, 0.5, None])
def test_an_unsure_or_unmeasured_contradiction_leaves_the_claim_undecided(p: float | None) -> None:
    outcome = model_says(BACKED, judging.MODEL_CONTRADICTED, p)
    assert outcome.status == UNKNOWN and outcome.fact_ids == ()
    assert "not sure enough of a contradiction" in outcome.detail


def test_the_threshold_touches_only_contradictions() -> None:
    # the same probability is enough for "supported" (its own, lower threshold) ...
    assert model_says("Velaria Norte makes sails for cruising boats.", judging.MODEL_SUPPORTED,
                      UNSURE).status == SUPPORTED
    # ... and for "not in the facts" about an item no fact has (ADR-031: absent, CONFABULATED)
    assert model_says(BACKED, judging.MODEL_ABSENT, UNSURE).status == "absent"


def with_logprob(word: str, p: float | None) -> FakeReply:
    """A llama.cpp-shaped reply: the bare word (GBNF), with the first token's logprob or none."""
    choice: dict[str, object] = {"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": word}}
    if p is not None:
        choice["logprobs"] = {"content": [{"token": word[:5], "logprob": math.log(p), "top_logprobs": []},
                                          {"token": word[5:], "logprob": -0.001, "top_logprobs": []}]}
    payload = {"id": "x", "object": "chat.completion", "model": "m", "choices": [choice]}
    return FakeReply(200, json.dumps(payload).encode(), (("content-type", "application/json"),))


def run_of(answer: str) -> Run:
    return Run("run-c", "ws", "engine", "model", "What do you know about Velaria Norte?", answer, "0" * 64)


async def test_against_a_server_only_a_sure_contradiction_makes_the_answer_confabulated() -> None:
    with FakeChatServer() as server:
        # Unsure, it is not asked again: the second look is an option, off by default (test_judge_second_look.py).
        server.script(with_logprob("contradicted", SURE), with_logprob("contradicted", UNSURE),
                      with_logprob("contradicted", None))
        config = LLMConfig(base_url=server.base_url, model="local-test-model", timeout_s=2.0, attempts=1)
        judge = ClaimJudge("combined", client=ChatCompletionsClient(config), constraint="gbnf")
        d = await judge.judge(run=run_of(BACKED), brand=SAILS, facts=FACTS)
        assert d.citation_class is CitationClass.CONFABULATED
        for _ in range(2):  # unsure, then a server that gives no probability
            with pytest.raises(JudgeAbstained, match="not sure enough of a contradiction") as caught:
                await judge.judge(run=run_of(BACKED), brand=SAILS, facts=FACTS)
            [claim] = caught.value.judgment["claims"]
            assert claim["verdict"] == UNKNOWN
        await judge.aclose()
    assert all(body["logprobs"] is True for body in server.requests)


def with_raw_logprob(word: str, logprob: float) -> FakeReply:
    payload = {"id": "x", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": word},
        "logprobs": {"content": [{"token": word, "logprob": logprob, "top_logprobs": []}]}}]}
    return FakeReply(200, json.dumps(payload).encode(), (("content-type", "application/json"),))


@pytest.mark.parametrize("logprob", [float("nan"), 2.5, float("inf")])
async def test_a_hostile_servers_impossible_probability_is_no_probability(logprob: float) -> None:
    """A server that claims more than certainty (a positive log-probability) or sends NaN gave no
    probability: its "contradicted" does not count, and the pair waits for a person."""
    with FakeChatServer() as server:
        server.script(with_raw_logprob("contradicted", logprob))
        config = LLMConfig(base_url=server.base_url, model="local-test-model", timeout_s=2.0, attempts=1)
        judge = ClaimJudge("combined", client=ChatCompletionsClient(config), constraint="gbnf")
        with pytest.raises(JudgeAbstained, match="not sure enough of a contradiction"):
            await judge.judge(run=run_of(BACKED), brand=SAILS, facts=FACTS)
        await judge.aclose()


async def test_once_a_claim_is_undecided_only_claims_that_could_be_false_are_asked() -> None:
    """After a claim the model leaves undecided the pair cannot be DESCRIPTIVE: a paraphrase the
    model's word cannot make false is not asked about (a saved question); a count no fact gives is."""
    vague = "Velaria Norte also sews covers for boats."
    with FakeChatServer() as server:
        server.responder = lambda body: with_logprob("not_in_facts", SURE)
        config = LLMConfig(base_url=server.base_url, model="local-test-model", timeout_s=2.0, attempts=1)
        judge = ClaimJudge("combined", client=ChatCompletionsClient(config), constraint="gbnf")
        with pytest.raises(JudgeAbstained):
            await judge.judge(run=run_of(f"{vague} Velaria Norte also mends kites for children."), brand=SAILS,
                              facts=FACTS)
        assert len(server.requests) == 1
        d = await judge.judge(run=run_of(f"{vague} {BACKED}"), brand=SAILS, facts=FACTS)
        await judge.aclose()
    assert len(server.requests) == 3 and d.citation_class is CitationClass.CONFABULATED
