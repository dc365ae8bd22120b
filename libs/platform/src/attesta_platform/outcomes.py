"""The outcome policy of the consume path: after a handler call, what happens to the messages
it was given and to the partitions' offsets. Pure (no client, no I/O), so each commit step can
be unit-tested; ``attesta_platform.consuming`` acts on what it says.

The rules, in one place:
- a handler call that returned: COMMIT (the effect is durable; the items it rejected are
  dead-lettered first, then the offsets past them are committed);
- a transient error with attempts left: RETRY in place (backoff with jitter, nothing committed);
- a transient error with the attempts spent: REREAD (nothing committed past the first message
  not done; the consumer seeks back to it and pauses);
- any other error: DEAD_LETTER for one message, SPLIT for several (each is tried alone, so only
  the poison one is dead-lettered).
An offset is committed only up to a partition's first message not done (:func:`resume_points`).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from attesta_platform.envelopes import Delivery
from attesta_platform.errors import is_transient

K = TypeVar("K")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    initial_delay_s: float = 0.1
    max_delay_s: float = 5.0

    def delay(self, attempt: int) -> float:
        base = min(self.max_delay_s, self.initial_delay_s * (2.0 ** (attempt - 1)))
        return base * (0.5 + random.random() / 2)  # jitter: spread retries of many consumers


class Decision(enum.Enum):
    COMMIT = "commit"  # the handler returned: its effect is durable, commit past it
    RETRY = "retry"  # transient, attempts left: wait (backoff + jitter) and call again
    REREAD = "reread"  # transient, attempts spent: do not commit; seek back and read it later
    SPLIT = "split"  # permanent (or unknown) for a batch: try each message alone
    DEAD_LETTER = "dead_letter"  # permanent (or unknown) for one message: dead-letter, commit


def outcome(error: BaseException | None, attempt: int, policy: RetryPolicy,
            messages: int = 1) -> Decision:
    """What happens after the ``attempt``-th handler call over ``messages`` messages ended
    with ``error`` (None: it returned)."""
    if error is None:
        return Decision.COMMIT
    if is_transient(error):
        return Decision.RETRY if attempt < policy.attempts else Decision.REREAD
    return Decision.SPLIT if messages > 1 else Decision.DEAD_LETTER


def decide(exc: BaseException, attempt: int, policy: RetryPolicy) -> Decision:
    """:func:`outcome` of one message's handler error."""
    return outcome(exc, attempt, policy)


def resume_points(after_fetched: Mapping[K, int], not_done: Iterable[tuple[K, int]]) -> dict[K, int]:
    """Per partition, where its committed offset may go and where it is read again from: its
    first message not done, else just after the last record fetched (``after_fetched``).
    Dead-lettered and skipped records count as done."""
    marks = dict(after_fetched)
    firsts: dict[K, int] = {}
    for partition, offset in not_done:
        if offset < firsts.get(partition, offset + 1):
            firsts[partition] = offset
    marks.update(firsts)
    return marks


class DeadLetters(Protocol):
    """The dead-letter port: the original bytes, where they came from, the error and the
    attempt count go to ``messaging.dead-lettered.v1`` (``Messaging.dead_letter``). The same
    failed message always gets the same dead-letter id, so a crash after it dedups downstream."""

    async def dead_letter(self, consumer: str, delivery: Delivery, exc: BaseException | str,
                          attempts: int) -> None: ...
