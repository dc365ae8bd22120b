"""Dropped citations are counted by reason (Prometheus) and logged, never sent; settings fail fast."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from attesta_answer.adapters.metrics import answer_metrics
from attesta_answer.bootstrap import build_generator
from attesta_answer.settings import AnswerSettings
from attesta_answer.domain.model import Draft
from attesta_answer.service_layer.answering import build_answer
from attesta_answer.service_layer.handlers import record_outcome
from attesta_contracts.chat import ContextChunk, HybridPath, RetrievalCompleted

pytestmark = pytest.mark.unit


class ScriptedGenerator:
    name = "scripted"

    def __init__(self, draft: Draft) -> None:
        self._draft = draft

    async def draft(self, question, cards, language=None):
        return self._draft

    def warm_up(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def dropped_count(reason: str) -> float:
    return REGISTRY.get_sample_value("attesta_answer_citations_dropped_total", {"reason": reason}) or 0.0


async def test_drops_are_counted_by_reason_and_logged_but_not_in_the_payload(capsys):
    chunk = ContextChunk(id="c1", card_id="c1", text="The dose is five milligrams daily.",
                         source="https://a.example/c1", metadata={"license": "CC0-1.0"})
    draft = Draft("The dose is five milligrams daily.", (
        {"card_id": "c1", "span": "dose is five milligrams"},
        {"card_id": "ghost", "span": "dose is five milligrams"},
        {"card_id": "c1", "span": "ten milligrams weekly"},
        {"card_id": "c1", "span": "dose is five milligrams"},
    ))
    before = {r: dropped_count(r) for r in ("card_not_retrieved", "span_not_in_card", "duplicate")}
    built = await build_answer(RetrievalCompleted(request_id="r-drop", question="dose?", chunks=[chunk],
                                                  hybrid_path=HybridPath.RRF_ONLY),
                               ScriptedGenerator(draft))
    record_outcome(built, "r-drop", answer_metrics())
    for reason in before:
        assert dropped_count(reason) == before[reason] + 1
    logged = capsys.readouterr()
    assert "citations dropped by reconciliation" in logged.err + logged.out
    assert "ghost" in logged.err + logged.out
    wire = built.reply.model_dump_json()
    assert "ghost" not in wire and "dropped" not in wire and "ten milligrams" not in wire
    assert REGISTRY.get_sample_value("attesta_answer_enrichment_fields_total",
                                     {"field": "retrieved_score", "outcome": "absent"}) >= 1


def test_settings_defaults_and_fail_fast(monkeypatch):
    for name in ("ATTESTA_ANSWER_GENERATOR", "ATTESTA_ANSWER_LLM_API_KEY", "ATTESTA_ANSWER_LLM_BASE_URL",
                 "ATTESTA_ASSISTANT_WORKSPACE", "ATTESTA_HEALTH_PORT"):
        monkeypatch.delenv(name, raising=False)
    s = AnswerSettings()
    # Anonymous chats go to an internal workspace of their own, never a customer's (#23).
    assert (s.answer_generator, s.assistant_workspace, s.health_port) == (
        "offline", "assistant-public", 8084)
    assert AnswerSettings(assistant_workspace="").assistant_workspace == ""  # no run for them
    assert build_generator(s).name.startswith("offline-extractive-v2+gate-")  # the gate's version (#24)
    with pytest.raises(ValueError, match="ATTESTA_ANSWER_LLM_API_KEY"):
        AnswerSettings(answer_generator="openai")
    with pytest.raises(ValueError, match="http"):
        AnswerSettings(answer_generator="openai", answer_llm_base_url="ftp://x")
    monkeypatch.setenv("ATTESTA_ANSWER_GENERATOR", "openai")
    monkeypatch.setenv("ATTESTA_ANSWER_LLM_BASE_URL", "http://127.0.0.1:9999/v1")
    monkeypatch.setenv("ATTESTA_ANSWER_LLM_MODEL", "local/llama")
    monkeypatch.setenv("ATTESTA_ASSISTANT_WORKSPACE", "acme")
    s = AnswerSettings()
    assert s.assistant_workspace == "acme"
    assert build_generator(s).name == "local/llama"
    assert "llama" not in repr(s.answer_llm_api_key)


def test_cli_try_and_strip_links(capsys):
    import json

    from attesta_answer.cli import main

    main(["try", "What is the usual adult dose of Velnorex?", "--cards", "med-velnorex",
          "med-velnorax", "--path", "rrf_only"])
    reply = json.loads(capsys.readouterr().out)
    assert reply["status"] == "answered" and reply["hybrid_path"] == "rrf_only"
    assert all("retrieved_score" not in c and c["source_url"].startswith("https://")
               for c in reply["citations"])
    main(["try", "Who makes Velnorax?", "--path", "full"])  # cards found by BM25
    reply = json.loads(capsys.readouterr().out)
    assert reply["citations"][0]["card_id"] == "med-velnorax" and "retrieved_score" in reply["citations"][0]
    main(["strip-links", "see [x](https://evil.example) or www.evil.com"])
    assert capsys.readouterr().out.strip() == "see x or (link removed)"
    with pytest.raises(SystemExit, match="unknown card"):
        main(["try", "q", "--cards", "no-such-card"])
