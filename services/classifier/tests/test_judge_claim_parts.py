"""claims-judge-2026.12.11 (issue #28): what the model is asked, and which sentences are read.

- The model is asked only about the parts of a claim the exact checks left unverified, each
  naming the brand: shown a whole claim whose year and founder are right, a small model calls
  it supported although one attribute is wrong.
- A description the checks support only in part (one word in five missing) goes to the model
  in ``combined``; offline it stays as before.
- A sentence after one about the brand that names someone the facts do not ("Em 2019 ganhou o
  prémio X.") is read as a loose claim: it can keep the answer from DESCRIPTIVE, but what no
  fact has in it, or a number that differs, never makes the answer CONFABULATED on its own.
- A decade ("the late 1990s") is no year: it agrees with a fact's year inside it.
- Spanish "no" before a verb negates ("no usa aceite de palma").
- The echo test knows a word the prompt carried in another form ("Brazilian" / "Brazil").

The brand and facts are invented for these tests (a felt-hat maker); none comes from an
evaluation set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from attesta_classifier.adapters.judges import ClaimJudge, JudgeAbstained
from attesta_classifier.domain import judging
from attesta_classifier.domain.checks import SUPPORTED, UNKNOWN, assess, negated
from attesta_classifier.domain.claims import brand_claims
from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_contracts.classification import CitationClass
from attesta_platform.llm import ChatCompletionsClient, LLMConfig
from attesta_testing.chat_server import FakeChatServer, FakeReply

pytestmark = pytest.mark.unit  # a local HTTP server and the embedder from disk, no infrastructure

AT = datetime(2026, 12, 1, tzinfo=UTC)
HATS = Brand("zornvik", "ws", "Zornvik Hats", ("Zornvik",), ("zornvik.example",))
FACTS = tuple(Fact(f"zv-{i:02d}", "zornvik", "manual", t, "https://zornvik.example/", AT, "zornvik.example", "c" * 64)
              for i, t in enumerate((
                  "Zornvik Hats — description: Maker of felt hats from rabbit fur.",
                  "Zornvik Hats — founding date: 1996",
                  "Zornvik Hats — headquarters: Porto, Portugal",
                  "Zornvik Hats — founder: Lidia Amaral",
                  "Zornvik Hats — number of employees: 31",
                  "Zornvik shapes every hat by hand in its Porto workshop and does not use synthetic felt.",
                  "Zornvik sells its hats in Portugal, Spain and Japan.",
              )))
INDEX = judging.fact_index(HATS, FACTS)


def assessed(answer: str, prompt: str = "Tell me about Zornvik.") -> list[judging.Assessment]:
    drop = INDEX.names | INDEX.products
    return [judging.echo_of_prompt(assess(c, INDEX), prompt, drop) for c in brand_claims(answer, HATS, FACTS)]


def judged(answer: str, prompt: str = "Tell me about Zornvik.") -> judging.Outcome:
    return judging.judge_offline(run=Run("r", "ws", "e", "m", prompt, answer, "0" * 64), brand=HATS, facts=FACTS)


def test_the_model_is_asked_only_what_the_checks_left_unverified() -> None:
    [a] = assessed("Zornvik, founded in 1996 by Lidia Amaral, makes straw hats woven from palm leaves.")
    assert a.status == UNKNOWN
    question = judging.model_question(a, HATS)
    assert "straw" in question and "1996" not in question and "Lidia" not in question
    assert question.startswith("Zornvik")  # the part names the brand


def test_a_claim_with_nothing_verified_is_asked_whole() -> None:
    [a] = assessed("Zornvik also makes leather gloves.")
    assert judging.model_question(a, HATS) == a.claim.text


def test_a_list_stays_one_part() -> None:
    assert judging.claim_parts("Zornvik sells in Portugal, Spain and Korea") == ["Zornvik sells in Portugal, Spain, Korea"]
    assert judging.claim_parts("Zornvik, founded in 1996, makes felt hats by hand") == [
        "Zornvik, founded in 1996", "makes felt hats by hand"]


def test_a_description_supported_in_part_needs_the_model() -> None:
    [a] = assessed("Zornvik makes felt hats from rabbit fur, shaped by hand in velvet.")
    description = [r for r in a.results if r.check == "description"]
    assert a.status == SUPPORTED and description and description[0].missing  # offline: supported
    assert judging.needs_model(a)
    [whole] = assessed("Zornvik makes felt hats from rabbit fur.")
    assert whole.status == SUPPORTED and not judging.needs_model(whole)


def test_a_sentence_naming_someone_else_is_a_loose_claim() -> None:
    claims = brand_claims("Zornvik makes felt hats in Porto. In 2019 it won the Golden Brim prize.", HATS, FACTS)
    assert [c.loose for c in claims] == [False, False]  # "it": it continues
    claims = brand_claims("Zornvik makes felt hats in Porto. Em 2019 ganhou o prémio Aba Dourada.", HATS, FACTS)
    assert [c.loose for c in claims] == [False, True]
    outcome = judged("Zornvik makes felt hats in Porto. Em 2019 ganhou o prémio Aba Dourada.")
    assert outcome.citation_class is None  # no longer DESCRIPTIVE on its first sentence


def test_a_loose_claim_never_confabulates_alone() -> None:
    [_, loose] = assessed("Zornvik makes felt hats in Porto. Chapelaria Costa foi fundada em 1950.")
    assert loose.claim.loose
    assert judging.exact_outcome(loose).status != "contradicted"
    outcome = judging.model_outcome(loose, judging.MODEL_ABSENT, 0.9, "m", FACTS[:2])
    assert outcome.status == UNKNOWN and "someone else" in outcome.detail


def test_a_decade_is_no_year() -> None:
    assert judged("Zornvik was founded in the 1990s by Lidia Amaral.").citation_class is CitationClass.DESCRIPTIVE
    assert judged("Zornvik was founded in the late 1990s.").citation_class is not CitationClass.CONFABULATED
    assert judged("Zornvik was founded in the 1980s.").citation_class is not CitationClass.CONFABULATED


@pytest.mark.parametrize(("text", "negative"), [
    ("Zornvik no usa fieltro sintético.", True),
    ("Zornvik no lo hace a máquina.", True),
    ("A Zornvik tem sede no Porto.", False),
    ("A Zornvik vende no Japão.", False),
    ("Zornvik vende en Portugal y en el Japón.", False),
])
def test_spanish_no_before_a_verb_negates(text: str, negative: bool) -> None:
    assert negated(text, "pt") is negative


def test_a_true_spanish_negation_is_not_a_confabulation() -> None:
    outcome = judged("Zornvik no usa fieltro sintético.")
    assert outcome.citation_class is not CitationClass.CONFABULATED, outcome.reason


@pytest.mark.parametrize(("prompt", "answer"), [
    ("Is Zornvik a Portuguese hat maker?", "Yes, Zornvik is a hat maker from Portugal."),
    ("¿Zornvik es una marca portuguesa de sombreros?", "Sí, Zornvik es una marca de sombreros de Portugal."),
])
def test_an_echo_in_another_word_form_is_echo(prompt: str, answer: str) -> None:
    outcome = judged(answer, prompt)
    assert outcome.citation_class is CitationClass.ECHO, outcome.reason


async def test_combined_sends_the_unverified_part_and_a_contradiction_backed_by_a_fact_decides() -> None:
    answer = "Zornvik, founded in 1996 by Lidia Amaral, makes hats of synthetic felt."
    with FakeChatServer() as server:
        server.script(FakeReply.json({"choice": "contradicted"}))
        config = LLMConfig(base_url=server.base_url, model="local-test-model", timeout_s=2.0, attempts=1,
                           initial_backoff_s=0.01, max_backoff_s=0.02)
        judge = ClaimJudge("combined", client=ChatCompletionsClient(config), verdict_attempts=1)
        d = await judge.judge(run=Run("r", "ws", "e", "m", "What is Zornvik?", answer, "0" * 64), brand=HATS,
                              facts=FACTS)
        await judge.aclose()
    assert d.citation_class is CitationClass.CONFABULATED, d.reason  # "does not use synthetic felt"
    [body] = server.requests
    user = body["messages"][1]["content"]
    assert "synthetic felt" in user and "Lidia Amaral, makes" not in user


async def test_combined_asks_about_a_partly_supported_description() -> None:
    answer = "Zornvik makes felt hats from rabbit fur, shaped by hand in velvet."
    with FakeChatServer() as server:
        server.script(FakeReply.json({"choice": "not_in_facts"}))
        config = LLMConfig(base_url=server.base_url, model="local-test-model", timeout_s=2.0, attempts=1,
                           initial_backoff_s=0.01, max_backoff_s=0.02)
        judge = ClaimJudge("combined", client=ChatCompletionsClient(config), verdict_attempts=1)
        with pytest.raises(JudgeAbstained):
            await judge.judge(run=Run("r", "ws", "e", "m", "What is Zornvik?", answer, "0" * 64), brand=HATS,
                              facts=FACTS)
        await judge.aclose()
    assert len(server.requests) == 1


def test_a_part_about_someone_else_is_not_glued_to_the_brand() -> None:
    [a] = assessed("You could try Zornvik, Chapelaria Costa or a stall at a local market.")
    assert judging.model_question(a, HATS) == a.claim.text
