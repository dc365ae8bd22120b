"""What can go wrong in the retrieval service's use cases, in its own words (no HTTP).

The retry / dead-letter decision stays in the messaging core: an error that is a
``PermanentError`` is dead-lettered with its reason, not retried.
"""

from __future__ import annotations

from attesta_platform.errors import PermanentError


class CardRefused(PermanentError):
    """A card record the index must not take (its key is not its card id, or its content does
    not match its hash)."""


class NotReady(RuntimeError):
    """The background start-up has not built what a message needs yet."""
