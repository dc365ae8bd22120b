"""Issue #23 on the chat contract: a person's question refuses NUL; the optional deadline of a
chat request travels on the retrieval result and is absent from the JSON when unset."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import TypeAdapter, ValidationError

from attesta_contracts.chat import ChatRequested, Question, RetrievalCompleted

pytestmark = pytest.mark.unit


def test_a_question_with_a_nul_is_refused_with_its_reason():
    question = TypeAdapter(Question)
    assert question.validate_python("dose of Velnorex?") == "dose of Velnorex?"
    with pytest.raises(ValidationError) as err:
        question.validate_python("dose\x00 of Velnorex?")
    assert err.value.errors()[0]["type"] == "nul_character"
    for bad in ("", "x" * 2001):
        with pytest.raises(ValidationError):
            question.validate_python(bad)


def test_the_deadline_is_absent_when_unset_and_kept_when_set():
    plain = ChatRequested(request_id="r", question="q")
    assert "deadline" not in plain.model_dump(mode="json")
    assert "deadline" not in RetrievalCompleted(request_id="r", question="q").model_dump(mode="json")
    when = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    timed = ChatRequested(request_id="r", question="q", deadline=when)
    assert ChatRequested.model_validate_json(timed.model_dump_json()).deadline == when
    with pytest.raises(ValidationError):  # a deadline without a time zone means nothing
        ChatRequested(request_id="r", question="q", deadline=datetime(2026, 12, 5, 12, 0))
