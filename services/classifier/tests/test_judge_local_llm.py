"""A smoke judgment against the real local LLM process (``attesta run llm``: llama.cpp with the
pinned Qwen2.5-Coder-1.5B on one thread), kept short: one pair whose claim no exact check can
decide, judged in the combined mode through the shared client, with the grammar and with the
JSON-schema enum. It checks the wiring (the process answers a one-word verdict the judge
accepts, recorded under the model's name, in a decision or, for "not in the facts", in the
abstention the review queue shows), not the model's accuracy: that is measured on the dev
split by ``benchmarks/judge_modes.py``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from attesta_classifier.adapters.judges import OFFLINE_MODEL_NAME, ClaimJudge, JudgeAbstained
from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_contracts.classification import CitationClass
from attesta_testing.llm import LocalLLMProcess
from attesta_platform.llm import ChatCompletionsClient, LLMConfig

pytestmark = pytest.mark.unit  # a local process, no Kafka/PostgreSQL/Redis

AT = datetime(2026, 12, 1, tzinfo=UTC)
BRAND = Brand("brackwater", "ws", "Brackwater Kayaks", ("Brackwater",), ("brackwater.example",))
FACTS = tuple(Fact(f"f{i}", "brackwater", "manual", t, "https://brackwater.example/", AT, "brackwater.example",
                   "a" * 64) for i, t in enumerate((
                       "Brackwater Kayaks — description: Maker of inflatable touring kayaks.",
                       "Brackwater Kayaks — headquarters: Bergen, Norway",
                       "Brackwater kayaks have never used PVC.",
                   )))


@pytest.fixture(scope="module")
def local_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLLMProcess]:
    llm = LocalLLMProcess(Path(tmp_path_factory.mktemp("llm")) / "llm.log").start()
    yield llm
    llm.stop()


@pytest.mark.parametrize("constraint", ["gbnf", "json_schema"])
async def test_a_claim_judged_by_the_real_local_model(local_llm: LocalLLMProcess, constraint: str) -> None:
    client = ChatCompletionsClient(LLMConfig(base_url=local_llm.base_url, model="qwen2.5-coder-1.5b-instruct-q4_k_m",
                                             timeout_s=120.0, attempts=1))
    judge = ClaimJudge("combined", client=client, constraint=constraint)
    run = Run("smoke", "ws", "e", "m", "Tell me about Brackwater Kayaks",
              "Brackwater Kayaks also sells wooden rowing boats.", "0" * 64)
    try:
        try:
            d = await judge.judge(run=run, brand=BRAND, facts=FACTS)
        except JudgeAbstained as exc:  # the model's "not in the facts" alone is not "false"
            assert exc.judgment is not None
            (claim,) = exc.judgment["claims"]
            verdict, by = claim["verdict"], claim["reason"]
        else:
            assert d.citation_class in (CitationClass.DESCRIPTIVE, CitationClass.CONFABULATED)
            assert d.judge_model == f"{OFFLINE_MODEL_NAME}+qwen2.5-coder-1.5b-instruct-q4_k_m"
            verdict, by = d.citation_class.value, d.reason
    finally:
        await judge.aclose()
    assert judge.llm_calls == 1  # one claim, one one-word question
    assert verdict in ("DESCRIPTIVE", "CONFABULATED", "unknown"), verdict
    assert "qwen2.5-coder" in by  # the verdict is the model's, recorded under its name
