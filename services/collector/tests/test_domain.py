"""The collector's pure rules: cadence and slots, collection ids, branded prompts, sources,
source labels, engine payload validation and chat-completion parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest
from pydantic import ValidationError

from attesta_collector.domain.model import (
    BrandNames,
    Cadence,
    EngineFault,
    EngineSpec,
    FaultKind,
    MissedSlots,
    PromptSpec,
    ReportedBuild,
    ScheduleSpec,
    branded_brands,
    collection_id,
    due_slots,
    parse_chat_completion,
    prompt_key,
    prompt_matches,
)
from attesta_collector.domain.sources import SourceLabel, extract_sources, label_sources
from attesta_contracts.runs import MODEL_BUILD_MAX_LENGTH, ModelBuild

pytestmark = pytest.mark.unit

T0 = datetime(2026, 12, 4, 10, 7, 30, tzinfo=UTC)
LUMORA = BrandNames("lumora", "Lumora", ("Lumora Health",), ("lumora.example",), ("vexa",))
VEXA = BrandNames("vexa", "Vexa", (), ("vexa-labs.example", "shop.vexa.co.uk"), ("lumora",))


def test_interval_slots_are_aligned_and_stable():
    c = Cadence(interval_s=3600)
    assert c.latest_at_or_before(T0) == datetime(2026, 12, 4, 10, tzinfo=UTC)
    assert c.next_after(datetime(2026, 12, 4, 10, tzinfo=UTC)) == datetime(2026, 12, 4, 11, tzinfo=UTC)


def test_cron_slots():
    c = Cadence(cron="*/15 * * * *")
    assert c.latest_at_or_before(T0) == datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
    assert c.latest_at_or_before(datetime(2026, 12, 4, 10, 15, tzinfo=UTC)) == \
        datetime(2026, 12, 4, 10, 15, tzinfo=UTC)
    assert c.next_after(T0) == datetime(2026, 12, 4, 10, 15, tzinfo=UTC)


def test_new_schedule_collects_only_the_current_slot():
    assert due_slots(Cadence(interval_s=3600), None, T0, MissedSlots.COLLECT, 24) == \
        ([datetime(2026, 12, 4, 10, tzinfo=UTC)], 0)


def test_nothing_due_within_the_same_slot():
    planned = datetime(2026, 12, 4, 10, tzinfo=UTC)
    assert due_slots(Cadence(interval_s=3600), planned, T0, MissedSlots.COLLECT, 24) == ([], 0)


def test_missed_slots_collect_policy_catches_up_to_the_bound():
    planned = datetime(2026, 12, 4, 4, tzinfo=UTC)  # down from 04:00 to 10:07: 05..10 missed
    slots, skipped = due_slots(Cadence(interval_s=3600), planned, T0, MissedSlots.COLLECT, 24)
    assert [s.hour for s in slots] == [5, 6, 7, 8, 9, 10] and skipped == 0
    slots, skipped = due_slots(Cadence(interval_s=3600), planned, T0, MissedSlots.COLLECT, 2)
    assert [s.hour for s in slots] == [9, 10] and skipped == 4


def test_missed_slots_skip_policy_takes_only_the_latest():
    planned = datetime(2026, 12, 4, 4, tzinfo=UTC)
    slots, skipped = due_slots(Cadence(cron="0 * * * *"), planned, T0, MissedSlots.SKIP, 24)
    assert slots == [datetime(2026, 12, 4, 10, tzinfo=UTC)] and skipped == 5


def test_collection_id_is_deterministic_and_distinct_per_component():
    slot = datetime(2026, 12, 4, 10, tzinfo=UTC)
    a = collection_id("s", "p", "e", slot, 0)
    assert a == collection_id("s", "p", "e", slot.astimezone(UTC), 0)
    assert a.startswith("col-") and len(a) <= 100
    others = {collection_id("s2", "p", "e", slot, 0), collection_id("s", "p2", "e", slot, 0),
              collection_id("s", "p", "e2", slot, 0), collection_id("s", "p", "e", slot, 1),
              collection_id("s", "p", "e", slot + timedelta(hours=1), 0)}
    assert a not in others and len(others) == 5


def test_branded_uses_the_classifier_matcher():
    brands = [LUMORA, VEXA]
    assert branded_brands("Is LUMORÁ any good for sleep?", brands) == ["lumora"]
    assert branded_brands("what does lumora.example sell", brands) == ["lumora"]
    assert branded_brands("Compare Vexa and Lumora Health", brands) == ["lumora", "vexa"]
    assert branded_brands("best sleep tracker for runners", brands) == []
    assert branded_brands("Lumoras are lamps", brands) == []  # whole words only


def test_prompt_key_folds_whitespace_only():
    a = PromptSpec(text="best  sleep\ttracker", locale="en")
    b = PromptSpec(text="best sleep tracker", locale="en")
    c = PromptSpec(text="best sleep tracker", locale="pt-BR")
    assert prompt_key(a) == prompt_key(b) != prompt_key(c)


def test_prompt_validation_refuses_bad_rows():
    with pytest.raises(ValidationError):
        PromptSpec(text="   ")
    with pytest.raises(ValidationError):
        PromptSpec(text="x", locale="english")
    with pytest.raises(ValidationError):
        PromptSpec(text="x", tags={"funnel": "impulse"})
    with pytest.raises(ValidationError):
        PromptSpec(text="x", unknown=1)


def test_prompt_matches_by_set_and_tag():
    tags = {"topic": "sleep", "persona": "runner", "funnel": "awareness"}
    assert prompt_matches("core", tags, [], [])
    assert prompt_matches("core", tags, ["core"], ["runner"])
    assert not prompt_matches("core", tags, ["other"], [])
    assert not prompt_matches("core", tags, [], ["decision"])


def test_engine_spec_rules():
    EngineSpec(name="gpt", base_url="http://127.0.0.1:9/v1", api_key_secret_id="sec-1")
    EngineSpec(name="gpt", base_url="http://127.0.0.1:9/v1", operator_key="OPENAI_API_KEY")
    EngineSpec(name="ours", kind="assistant")
    for bad in ({"name": "x"},  # openai without base_url
                {"name": "x", "kind": "assistant", "base_url": "http://127.0.0.1/"},
                {"name": "x", "kind": "assistant", "api_key_secret_id": "sec-1"},
                {"name": "x", "base_url": "http://a/", "api_key_secret_id": "s",
                 "operator_key": "k"},
                {"name": "x", "base_url": "http://a/", "params": {"stream": True}},
                # a tenant never names a variable or file of the server
                {"name": "x", "base_url": "http://a/", "api_key_env": "OPENAI_API_KEY"},
                {"name": "x", "base_url": "http://a/", "api_key_file": "/run/secrets/k"},
                {"name": "x", "base_url": "http://a/", "api_key_env": None},
                {"name": "x", "base_url": "http://a/", "operator_key": "../../etc/passwd"},
                {"name": "x", "base_url": "ftp://a/"},
                {"name": "x", "base_url": "http://a/", "api_key": "sk-123"}):  # keys never stored
        with pytest.raises(ValidationError):
            EngineSpec(**bad)


URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(("given", "method"), [
    ({}, "api"),
    ({"collection_method": None}, "api"),
    ({"collection_method": "api_with_search"}, "api_with_search"),  # a grounded endpoint
    ({"params": {"search_mode": "web"}}, "api_with_search"),
    ({"params": {"enable_search": True}}, "api_with_search"),
    ({"params": {"enable_search": False}}, "api"),
    ({"model": "openai/gpt-4o:online"}, "api_with_search"),
])
def test_engine_collection_method_declared_or_derived(given, method):
    assert EngineSpec(name="gpt", base_url=URL, **given).collection_method == method
    assert EngineSpec(name="ours", kind="assistant").collection_method == "assistant"


@pytest.mark.parametrize(("given", "reason"), [
    ({"collection_method": "assistant"}, "only for our own assistant"),
    ({"collection_method": "grounded"}, "collection_method"),
    ({"collection_method": "api", "params": {"search_mode": "web"}},
     "search_mode turn(s) on a web search: declare collection_method 'api_with_search'"),
    ({"kind": "assistant", "base_url": None, "collection_method": "api"},
     "the assistant engine's collection_method is 'assistant'"),
])
def test_engine_collection_method_contradictions_are_refused_with_a_reason(given, reason):
    with pytest.raises(ValidationError) as err:
        EngineSpec(**{"name": "gpt", "base_url": URL, **given})
    assert reason in str(err.value)


def test_schedule_needs_one_valid_cadence():
    ScheduleSpec(engine_ids=["e"], cron="0 9 * * 1")
    ScheduleSpec(engine_ids=["e"], interval_s=3600)
    for bad in ({"engine_ids": ["e"]}, {"engine_ids": ["e"], "cron": "0 9 * * 1", "interval_s": 60},
                {"engine_ids": ["e"], "cron": "every day"}, {"engine_ids": [], "interval_s": 60},
                {"engine_ids": ["e"], "interval_s": 5}):
        with pytest.raises(ValidationError):
            ScheduleSpec(**bad)


def completion(content, **extra) -> bytes:
    msg = {"role": "assistant", "content": content}
    msg.update(extra.pop("message_extra", {}))
    return orjson.dumps({"id": "x", "model": "m-1", "choices": [{"message": msg}], **extra})


def test_parse_completion_with_usage_annotations_and_citations():
    ann = [{"type": "url_citation", "url_citation": {"url": "https://lumora.example/a",
                                                     "title": "A", "start_index": 0}}]
    body = completion("Hi", message_extra={"annotations": ann},
                      usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
                      citations=["https://news.example.org/x"])
    text, model, annotations, citations, usage, reported = parse_chat_completion(body, 1000)
    assert (text, model, annotations, citations) == ("Hi", "m-1", ann, ["https://news.example.org/x"])
    assert usage == {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    assert reported == ReportedBuild(ModelBuild(model="m-1"), ())


@pytest.mark.parametrize(("fields", "build", "notes"), [
    ({"model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_abc"},
     ModelBuild(model="gpt-4o-2024-08-06", system_fingerprint="fp_abc"), []),
    ({"model": None}, None, []),  # absent and null: not reported
    ({"model": "  "}, None, []),
    ({"model": "m" * 300, "system_fingerprint": 42},
     ModelBuild(model="m" * MODEL_BUILD_MAX_LENGTH),
     ["model: 300 characters reported, kept the first 200",
      "system_fingerprint: the engine reported a JSON number, not a string; dropped"]),
    ({"model": ["a"], "system_fingerprint": "fp\x00\nx"}, ModelBuild(system_fingerprint="fpx"),
     ["model: the engine reported a JSON array, not a string; dropped",
      "system_fingerprint: control characters removed"]),
    ({"model": True, "system_fingerprint": {"a": 1}}, None,
     ["model: the engine reported a JSON boolean, not a string; dropped",
      "system_fingerprint: the engine reported a JSON object, not a string; dropped"]),
])
def test_reported_build_is_bounded_text_or_dropped_with_a_note(fields, build, notes):
    body = orjson.dumps({"choices": [{"message": {"content": "Hi"}}], **fields})
    parsed = parse_chat_completion(body, 100)
    assert parsed.reported == ReportedBuild(build, tuple(notes))
    assert parsed.model == (build.model if build else None)


@pytest.mark.parametrize(("body", "kind"), [
    (b"<html>502 Bad Gateway</html>", FaultKind.MALFORMED),
    (b"[1, 2]", FaultKind.MALFORMED),
    (b'{"choices": []}', FaultKind.MALFORMED),
    (b'{"choices": [{"text": "legacy"}]}', FaultKind.MALFORMED),
    (completion(None), FaultKind.EMPTY_ANSWER),
    (completion("   \n"), FaultKind.EMPTY_ANSWER),
    (completion(42), FaultKind.MALFORMED),
    (completion("x" * 101), FaultKind.TOO_LARGE),
])
def test_parse_completion_faults(body, kind):
    with pytest.raises(EngineFault) as err:
        parse_chat_completion(body, 100)
    assert err.value.kind is kind


def test_sources_from_text_annotations_and_citations():
    text = ("See [the guide](https://www.lumora.example/guide) and vexa-labs.example, or "
            "https://en.wikipedia.org/wiki/Sleep. Mail info@lumora.example; 10.0.0.1/x is no source. "
            "Again https://www.lumora.example/guide.")
    ann = [{"type": "url_citation", "url_citation": {"url": "https://health.bbc.co.uk/sleep",
                                                     "title": "BBC"}},
           {"type": "file_citation", "file_id": "f"}]
    sources = extract_sources(text, ann, [{"url": "https://shop.vexa.co.uk/p"}, "not a url", 7])
    got = [(s.origin, s.domain, s.position) for s in sources]
    assert got == [("annotation", "bbc.co.uk", 0), ("citations", "vexa.co.uk", 1),
                   ("text", "lumora.example", 2), ("text", "vexa-labs.example", 3),
                   ("text", "wikipedia.org", 4)]
    assert sources[0].title == "BBC" and sources[2].url == "https://www.lumora.example/guide"


def test_a_place_cited_twice_is_one_source():
    sources = extract_sources("See vexa.co.uk and http://vexa.co.uk/ again.", [],
                              ["https://vexa.co.uk/"])
    assert [(s.origin, s.url) for s in sources] == [("citations", "https://vexa.co.uk/")]


def test_source_labels_per_brand():
    sources = extract_sources("lumora.example, https://vexa-labs.example/x, "
                              "shop.vexa.co.uk, other.vexa.co.uk, lumora.example.evil.io, nih.gov")
    labels = label_sources(sources, {"lumora": LUMORA, "vexa": VEXA})
    O, C, T = SourceLabel.OWNED, SourceLabel.COMPETITOR, SourceLabel.THIRD_PARTY  # noqa: E741 - the labels' initials, to read the expected lists at a glance
    assert [s.domain for s in sources] == ["lumora.example", "vexa-labs.example", "vexa.co.uk",
                                           "vexa.co.uk", "evil.io", "nih.gov"]
    assert labels["lumora"] == [O, C, C, T, T, T]
    assert labels["vexa"] == [C, O, O, T, T, T]
