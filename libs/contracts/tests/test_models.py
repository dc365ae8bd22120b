"""Wire behaviour of the models: citation enrichment is additive, envelopes round-trip."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from attesta_contracts import Envelope, derived_id, topic
from attesta_contracts.chat import ChatAnswered, Citation
from attesta_contracts.topics import CHAT_ANSWERED

pytestmark = pytest.mark.unit

ENRICHED = ("source_url", "source_license", "retrieved_score")


class OldCitation(BaseModel):
    """A consumer built before ADR-0024: card id and span only, unknown keys ignored."""

    model_config = ConfigDict(extra="ignore")

    card_id: str
    span: str = ""


def test_bare_citation_has_no_enrichment_keys():
    data = json.loads(Citation(card_id="x").model_dump_json())
    assert data == {"card_id": "x", "span": ""}
    for key in ENRICHED:
        assert key not in data
    assert Citation(card_id="x").model_dump() == {"card_id": "x", "span": ""}


def test_enriched_citation_keeps_set_fields_and_drops_unset_ones():
    data = json.loads(Citation(card_id="x", source_url="https://e.example/a").model_dump_json())
    assert data == {"card_id": "x", "span": "", "source_url": "https://e.example/a"}
    # A zero score is set, not absent.
    assert json.loads(Citation(card_id="x", retrieved_score=0).model_dump_json())["retrieved_score"] == 0


def test_old_consumer_parses_enriched_citation():
    enriched = Citation(card_id="card-1", span="quoted", source_url="https://e.example/a",
                        source_license="CC-BY-4.0", retrieved_score=87.5).model_dump_json()
    old = OldCitation.model_validate_json(enriched)
    assert old == OldCitation(card_id="card-1", span="quoted")
    # ... and the new model parses what an old producer wrote.
    assert Citation.model_validate_json(OldCitation(card_id="c").model_dump_json()) == Citation(card_id="c")


def test_citations_inside_an_answer_stay_bare():
    answer = ChatAnswered(request_id="r", question="q", answer="a", citations=[Citation(card_id="x")])
    data = json.loads(answer.model_dump_json())
    assert data["citations"] == [{"card_id": "x", "span": ""}]


def test_citation_validation():
    with pytest.raises(ValidationError):
        Citation(card_id="")
    with pytest.raises(ValidationError):
        Citation(card_id="x", retrieved_score=-1)


def _answer_envelope(**overrides) -> Envelope[ChatAnswered]:
    t = topic(CHAT_ANSWERED)
    fields = dict(
        event_type=t.event_type,
        schema_version=t.schema_version,
        correlation_id="req-1",
        producer="answer-service",
        payload=ChatAnswered(request_id="req-1", question="q?", answer="a.",
                             citations=[Citation(card_id="card-1", retrieved_score=12.0)]),
    )
    fields.update(overrides)
    return Envelope[t.payload](**fields)  # type: ignore[name-defined]


def test_envelope_json_round_trip():
    t = topic(CHAT_ANSWERED)
    env = _answer_envelope()
    wire = env.model_dump_json()
    back = Envelope[t.payload].model_validate_json(wire)  # type: ignore[name-defined]
    assert back == env
    assert back.model_dump_json() == wire
    data = json.loads(wire)
    assert data["event_type"] == "ChatAnswered" and data["schema_version"] == 1
    assert data["payload"]["citations"] == [{"card_id": "card-1", "span": "", "retrieved_score": 12.0}]
    assert uuid.UUID(data["event_id"]) == env.event_id


def test_envelope_normalizes_occurred_at_to_utc():
    plus2 = timezone(timedelta(hours=2))
    env = _answer_envelope(occurred_at=datetime(2025, 3, 1, 12, 0, tzinfo=plus2))
    assert env.occurred_at == datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
    assert env.occurred_at.utcoffset() == timedelta(0)
    assert json.loads(env.model_dump_json())["occurred_at"] == "2025-03-01T10:00:00Z"
    parsed = Envelope[ChatAnswered].model_validate_json(
        env.model_dump_json().replace("2025-03-01T10:00:00Z", "2025-03-01T07:00:00-03:00")
    )
    assert parsed.occurred_at == env.occurred_at and parsed.occurred_at.utcoffset() == timedelta(0)
    assert _answer_envelope().occurred_at.utcoffset() == timedelta(0)  # default is UTC too


def test_envelope_rejects_naive_datetime():
    with pytest.raises(ValidationError):
        _answer_envelope(occurred_at=datetime(2025, 3, 1, 12, 0))


def test_derived_id_is_deterministic():
    a = derived_id("answer", "req-1", 3)
    assert a == derived_id("answer", "req-1", 3)
    assert a == derived_id("answer", "req-1", "3")  # parts are joined as strings
    assert a != derived_id("answer", "req-2", 3)
    assert a.version == 5
    # Pinned: the namespace is part of the contract (redelivery dedup across deploys).
    assert a == uuid.uuid5(uuid.UUID("6f1f7a52-3c1e-4c55-9a59-9e0c3c9b8a01"), "answer|req-1|3")
    env = _answer_envelope(event_id=a)
    assert Envelope[ChatAnswered].model_validate_json(env.model_dump_json()).event_id == a


# -- times in the classifier API: RFC 3339 text only, never a Unix number -------------------------
RUN_FIELDS = {"engine": "e", "model": "m", "prompt": "p", "answer": "a"}
RUN_TIME_FIELDS = ("requested_at", "answered_at")


@pytest.mark.parametrize("field", RUN_TIME_FIELDS)
@pytest.mark.parametrize("number", [1764547200, 1764547200.5, 0, True])
def test_run_create_refuses_a_unix_number_for_each_time_field(field, number):
    from attesta_contracts.api.classifier import RunCreate

    with pytest.raises(ValidationError) as exc:
        RunCreate(**RUN_FIELDS, **{field: number})
    [error] = exc.value.errors()
    assert error["loc"] == (field,)
    assert "not a number" in error["msg"] and "2026-12-01T00:00:00Z" in error["msg"]
    with pytest.raises(ValidationError) as exc:  # the JSON path (what the HTTP APIs parse)
        RunCreate.model_validate_json(json.dumps({**RUN_FIELDS, field: number}))
    assert exc.value.errors()[0]["loc"] == (field,)


@pytest.mark.parametrize("text", ["1764547200", "2026-12-01", "2026-12-01T00:00:00",
                                  "2026-12-01 00:00:00Z", "2026-12-01T00:00Z", "20261201T000000Z",
                                  "2026-W49-2T00:00:00Z", "2026-13-01T00:00:00Z", "yesterday", ""])
def test_run_create_refuses_times_that_are_not_rfc3339(text):
    from attesta_contracts.api.classifier import RunCreate

    for field in RUN_TIME_FIELDS:
        with pytest.raises(ValidationError) as exc:
            RunCreate(**RUN_FIELDS, **{field: text})
        assert exc.value.errors()[0]["loc"] == (field,)
        assert "date-time" in exc.value.errors()[0]["msg"]


def test_run_create_takes_rfc3339_text_and_aware_datetimes():
    from attesta_contracts.api.classifier import RunCreate

    want = datetime(2026, 12, 1, tzinfo=UTC)
    for text in ("2026-12-01T00:00:00Z", "2026-12-01t00:00:00z", "2026-12-01T01:00:00+01:00",
                 "2026-12-01T00:00:00.000000000Z"):
        run = RunCreate.model_validate_json(json.dumps({**RUN_FIELDS, "requested_at": text,
                                                        "answered_at": text}))
        assert run.requested_at == want and run.answered_at == want
    assert RunCreate(**RUN_FIELDS, answered_at=want).answered_at == want
    assert RunCreate(**RUN_FIELDS).requested_at is None
    with pytest.raises(ValidationError):  # naive: no timezone
        RunCreate(**RUN_FIELDS, answered_at=datetime(2026, 12, 1))
    schema = RunCreate.model_json_schema()["properties"]["answered_at"]
    assert {"type": "string", "format": "date-time"} in schema["anyOf"]
