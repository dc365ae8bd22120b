"""What the retrieval service can be asked to do, as data.

The ``chat.requested.v1`` subscriber hands every chat request to the bus as a
``RetrieveContext``; the KB ingest hands every batch it reads from ``kb.cards.v1`` as an
``IndexCards``. ``service_layer/handlers.py`` lists the handler of each.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from attesta_contracts.chat import ChatRequested
from attesta_platform.bus import Message

# The records' type, for the type checker only (named in strings, which ruff does not read as
# uses): at run time the domain imports nothing from the messaging core.
if TYPE_CHECKING:
    from attesta_platform.consuming import ReplayItem  # noqa: F401


@dataclass(frozen=True)
class RetrieveContext(Message[None]):
    """Retrieve the context of one chat request and publish it (``retrieval.completed.v1``),
    unless nobody waits for it any more. The output's id derives from ``event_id``."""

    request: ChatRequested
    event_id: uuid.UUID
    correlation_id: str
    requested_at: datetime  # when the request was published (its age counts from here)
    offset: int | None = None  # where it was read (for the logs)


@dataclass(frozen=True)
class IndexCards(Message["list[tuple[ReplayItem, str]]"]):
    """Apply a batch of ``kb.cards.v1`` records (a tombstone: a retracted card) to the indexes;
    returns the records refused, each with its reason (they are dead-lettered)."""

    items: tuple[ReplayItem, ...]
