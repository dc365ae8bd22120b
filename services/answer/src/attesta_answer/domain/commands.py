"""What the answer service can be asked to do, as data.

The ``retrieval.completed.v1`` subscriber hands every retrieval result to the bus as an
``AnswerQuestion``; ``attesta answer try`` asks for one answer with ``BuildAnswer`` (nothing
published). ``service_layer/handlers.py`` lists the handler of each.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from attesta_contracts.chat import RetrievalCompleted
from attesta_platform.bus import Message

# The result's type, for the type checker only: at run time the domain imports nothing from
# the service layer.
if TYPE_CHECKING:
    from attesta_answer.service_layer.answering import BuiltAnswer  # noqa: F401


@dataclass(frozen=True)
class AnswerQuestion(Message[None]):
    """Answer one retrieval result: publish the chat answer, then record the run. The ids of
    both outputs derive from ``event_id`` (a redelivery publishes the same ones)."""

    retrieval: RetrievalCompleted
    event_id: uuid.UUID
    correlation_id: str
    requested_at: datetime  # the retrieval result's time: the run's ``requested_at``
    offset: int | None = None  # where it was read (for the logs)


@dataclass(frozen=True)
class BuildAnswer(Message["BuiltAnswer"]):
    """The answer to one retrieval result, built and returned (nothing published)."""

    retrieval: RetrievalCompleted
