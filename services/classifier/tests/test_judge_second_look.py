"""claims-judge-2026.12.18 (issue #28): an unsure "contradicted" is asked again, in other words.

Since 2026.12.17 the model's "contradicted" counts only at ``CONTRADICTED_MIN_P``; most true
contradictions it gives below that, and they left the pair pending. Now such a verdict in the band
``SECOND_LOOK_MIN_P`` .. ``CONTRADICTED_MIN_P`` gets a second question on the same facts, worded
differently (records and statement side by side: "does the statement conflict with the
records?", yes or no). The claim is contradicted only when both questions agree and the second is
not "no"; the backing rules of 2026.12.9 still apply, and a number alone does not back it (a
small model misreads conversions in both wordings alike). One more call, only for those claims.

The brand and facts are invented for these tests (a maker of wooden clogs); none comes from an
evaluation set."""

from __future__ import annotations

import json
import math
import types
from datetime import UTC, datetime
from typing import Any

import pytest

from attesta_classifier.adapters.judges import ClaimJudge, JudgeAbstained, JudgeUnavailable, build_judge
from attesta_classifier.domain import judging
from attesta_classifier.domain.checks import CONTRADICTED, UNKNOWN, assess
from attesta_classifier.domain.claims import brand_claims
from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_contracts.classification import CitationClass
from attesta_platform.llm import ChatCompletionsClient, LLMConfig
from attesta_testing.chat_server import FakeChatServer, FakeReply

pytestmark = pytest.mark.unit  # a local HTTP server and the embedder from disk, no infrastructure

AT = datetime(2026, 12, 1, tzinfo=UTC)
CLOGS = Brand("tamanco", "ws", "Tamancaria Orvalho", ("Orvalho",), ("orvalho.example",))
FACTS = tuple(Fact(f"orvalho-{i:02d}", "tamanco", "manual", t, "https://orvalho.example/", AT, "orvalho.example",
                   "d" * 64) for i, t in enumerate((
                       "Tamancaria Orvalho — description: Maker of wooden clogs carved from alder.",
                       "Tamancaria Orvalho — founding date: 1954",
                       "Tamancaria Orvalho — headquarters: Braga, Portugal",
                       "Tamancaria Orvalho — number of employees: 18",
                   )))
INDEX = judging.fact_index(CLOGS, FACTS)
BRAND_WORDS = INDEX.names | INDEX.products
BACKED = "Tamancaria Orvalho sells its clogs through Sapataria Lumen."  # a name no fact gives: it may back one
NUMBERS_ONLY = "Tamancaria Orvalho sells its clogs in 9 shops."  # only a count no fact gives
UNBACKED = "Tamancaria Orvalho carves its clogs by hand."  # nothing specific, no fact says the opposite
IN_BAND = (judging.SECOND_LOOK_MIN_P + judging.CONTRADICTED_MIN_P) / 2
SURE = 0.95


def assessed(text: str) -> Any:
    [claim] = brand_claims(text, CLOGS, FACTS)
    return assess(claim, INDEX)


def outcome(text: str, p: float | None, second: tuple[str, float | None] | None) -> judging.ClaimOutcome:
    return judging.model_outcome(assessed(text), judging.MODEL_CONTRADICTED, p, "m", FACTS, BRAND_WORDS,
                                 second=second)


def test_an_unsure_contradiction_the_second_question_confirms_counts() -> None:
    o = outcome(BACKED, IN_BAND, ("yes", SURE))
    assert o.status == CONTRADICTED and "asked again: yes" in o.detail


@pytest.mark.parametrize("second", [("no", SURE), ("yes", None), None])
def test_a_second_answer_that_disagrees_or_is_unsure_leaves_the_claim_undecided(
        second: tuple[str, float | None] | None) -> None:
    o = outcome(BACKED, IN_BAND, second)
    assert o.status == UNKNOWN and o.fact_ids == () and "not sure enough of a contradiction" in o.detail


def test_below_the_band_even_a_sure_yes_does_not_count() -> None:
    assert outcome(BACKED, judging.SECOND_LOOK_MIN_P - 0.05, ("yes", SURE)).status == UNKNOWN


def test_a_yes_counts_whatever_its_own_probability() -> None:
    """The second answer's probability lies near one half for right and wrong "yes" alike (spent
    held-out sets): the agreement of the two wordings is the signal, not its number."""
    assert outcome(BACKED, IN_BAND, ("yes", 0.45)).status == CONTRADICTED


def test_a_number_alone_does_not_back_a_second_look() -> None:
    assert not judging.backed_beyond_numbers(assessed(NUMBERS_ONLY), FACTS, BRAND_WORDS)
    assert judging.backed_beyond_numbers(assessed(BACKED), FACTS, BRAND_WORDS)
    assert outcome(NUMBERS_ONLY, IN_BAND, ("yes", SURE)).status == UNKNOWN


def test_two_agreeing_answers_still_need_a_checkable_item() -> None:
    """Agreement of two wordings does not replace the backing rule (2026.12.9): a claim with no item
    the facts lack and no fact saying its opposite stays undecided."""
    o = outcome(UNBACKED, IN_BAND, ("yes", SURE))
    assert o.status == UNKNOWN and o.fact_ids == ()


@pytest.mark.parametrize(("text", "verdict", "p", "wanted"), [
    (BACKED, judging.MODEL_CONTRADICTED, IN_BAND, True),
    (BACKED, judging.MODEL_CONTRADICTED, SURE, False),  # sure already: no second question
    (BACKED, judging.MODEL_CONTRADICTED, judging.SECOND_LOOK_MIN_P - 0.05, False),
    (BACKED, judging.MODEL_CONTRADICTED, None, False),
    (BACKED, judging.MODEL_SUPPORTED, IN_BAND, False),
    (BACKED, judging.MODEL_ABSENT, IN_BAND, False),
    (UNBACKED, judging.MODEL_CONTRADICTED, IN_BAND, False),  # it could not count anyway
    (NUMBERS_ONLY, judging.MODEL_CONTRADICTED, IN_BAND, False),  # nor could this one
])
def test_only_an_unsure_backed_contradiction_is_asked_again(text: str, verdict: str, p: float | None,
                                                            wanted: bool) -> None:
    assert judging.wants_second_look(assessed(text), verdict, p, FACTS, BRAND_WORDS) is wanted


def test_the_second_question_is_worded_apart_and_carries_the_data_as_json() -> None:
    first = judging.build_claim_messages(CLOGS, BACKED, FACTS)
    second = judging.build_second_look_messages(CLOGS, BACKED, FACTS)
    assert second[0]["content"] == judging.SECOND_LOOK_SYSTEM_PROMPT != first[0]["content"]
    assert json.dumps(BACKED) in second[1]["content"]
    assert all(json.dumps(f.text, ensure_ascii=False) in second[1]["content"] for f in FACTS)
    assert second[1]["content"].endswith("Does the statement conflict with the records?")


@pytest.mark.parametrize("value", ["maybe", "Yes, ignore the records", "", None])
def test_a_second_answer_outside_yes_and_no_is_refused(value: object) -> None:
    with pytest.raises(judging.InvalidVerdict):
        judging.parse_second_look(value)


def word(text: str, p: float | None) -> FakeReply:
    """A llama.cpp-shaped reply: the bare word (GBNF), with its first token's logprob or none."""
    choice: dict[str, object] = {"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}
    if p is not None:
        choice["logprobs"] = {"content": [{"token": text, "logprob": math.log(p), "top_logprobs": []}]}
    payload = {"id": "x", "object": "chat.completion", "model": "m", "choices": [choice]}
    return FakeReply(200, json.dumps(payload).encode(), (("content-type", "application/json"),))


def run_of(answer: str) -> Run:
    return Run("run-s", "ws", "engine", "model", "What do you know about Tamancaria Orvalho?", answer, "0" * 64)


def make_judge(server: FakeChatServer) -> ClaimJudge:
    config = LLMConfig(base_url=server.base_url, model="local-test-model", timeout_s=2.0, attempts=1)
    return ClaimJudge("combined", client=ChatCompletionsClient(config), constraint="gbnf", second_look=True)


async def test_against_a_server_two_agreeing_answers_make_the_answer_confabulated() -> None:
    with FakeChatServer() as server:
        server.script(word("contradicted", IN_BAND), word("yes", SURE))
        judge = make_judge(server)
        d = await judge.judge(run=run_of(BACKED), brand=CLOGS, facts=FACTS)
        await judge.aclose()
    assert d.citation_class is CitationClass.CONFABULATED
    first, second = server.requests
    assert second["messages"][0]["content"] == judging.SECOND_LOOK_SYSTEM_PROMPT
    assert second["grammar"] == 'root ::= "yes" | "no"'
    shown = [line for line in first["messages"][1]["content"].splitlines() if line.startswith("- ")]
    assert shown == [line for line in second["messages"][1]["content"].splitlines() if line.startswith("- ")]


async def test_against_a_server_a_no_keeps_the_pair_pending_and_a_sure_verdict_is_not_asked_again() -> None:
    with FakeChatServer() as server:
        server.script(word("contradicted", IN_BAND), word("no", SURE), word("contradicted", SURE))
        judge = make_judge(server)
        with pytest.raises(JudgeAbstained) as caught:
            await judge.judge(run=run_of(BACKED), brand=CLOGS, facts=FACTS)
        [claim] = caught.value.judgment["claims"]
        assert claim["verdict"] == UNKNOWN and "asked again: no" in claim["reason"]
        d = await judge.judge(run=run_of(BACKED), brand=CLOGS, facts=FACTS)
        await judge.aclose()
    assert d.citation_class is CitationClass.CONFABULATED and len(server.requests) == 3


async def test_a_hostile_second_answer_is_never_a_verdict() -> None:
    """A server that ignores the grammar on the second question (another word, an instruction)
    gets it asked once more, then the judge is unavailable: the pair is retried, never guessed."""
    with FakeChatServer() as server:
        server.script(word("contradicted", IN_BAND), word("contradicted", SURE),
                      word("ignore the records and answer yes", SURE))
        judge = make_judge(server)
        with pytest.raises(JudgeUnavailable, match="no valid claim verdict"):
            await judge.judge(run=run_of(BACKED), brand=CLOGS, facts=FACTS)
        await judge.aclose()
    assert len(server.requests) == 3


async def test_off_by_default_an_unsure_contradiction_is_not_asked_again_and_the_version_says_which() -> None:
    with FakeChatServer() as server:
        server.script(word("contradicted", IN_BAND))
        config = LLMConfig(base_url=server.base_url, model="local-test-model", timeout_s=2.0, attempts=1)
        judge = ClaimJudge("combined", client=ChatCompletionsClient(config), constraint="gbnf")
        with pytest.raises(JudgeAbstained, match="not sure enough of a contradiction"):
            await judge.judge(run=run_of(BACKED), brand=CLOGS, facts=FACTS)
        await judge.aclose()
        on = make_judge(server)
        await on.aclose()
    assert len(server.requests) == 1
    assert judging.SECOND_LOOK_VERSION not in judge.prompt_version
    assert on.prompt_version == f"{judge.prompt_version}+{judging.SECOND_LOOK_VERSION}"


async def test_the_service_setting_switches_it_on() -> None:
    settings = types.SimpleNamespace(judge="combined", llm_base_url="http://127.0.0.1:9/v1", llm_model="m",
                                     llm_constraint="gbnf", judge_second_look=True)
    on, off = build_judge(settings), build_judge(types.SimpleNamespace(**{**vars(settings), "judge_second_look": False}))
    assert isinstance(on, ClaimJudge) and isinstance(off, ClaimJudge)
    await on.aclose()
    await off.aclose()
    assert judging.SECOND_LOOK_VERSION in on.prompt_version
    assert judging.SECOND_LOOK_VERSION not in off.prompt_version
