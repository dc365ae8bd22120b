"""What the evidence service can be asked to do: its commands (imperative) and queries, as data.

Every entrypoint (the HTTP routes, the Kafka intake subscribers, the tree-head signer) builds one
of these and hands it to the message bus; ``service_layer/handlers.py`` lists the handler of
each. Each message names what handling it returns (``Message[Result]``); the result types are
the service layer's read models, named here for the type checker only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attesta_evidence.domain.model import IncomingEvidence
from attesta_platform.bus import Message

# The results' types, for the type checker only (named in strings below, which ruff does not
# read as uses): at run time the domain imports nothing from the service layer.
if TYPE_CHECKING:
    from attesta_evidence.domain.model import (  # noqa: F401
        RecordOutcome, StoredEvidence, StoredReference, TreeHeadRow)
    from attesta_evidence.service_layer.queries import (  # noqa: F401
        ConsistencyProofHashes, ContentCheck, InclusionProofHashes, LeavesPage, LogKey,
        PublicView)


@dataclass(frozen=True)
class Intake:
    """One piece of evidence to record, with the ids of the message that brought it."""

    incoming: IncomingEvidence
    correlation_id: str
    causation_id: str | None


# -- intake -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecordEvidence(Message["list[RecordOutcome]"]):
    """Store a batch in one transaction (group commit), outcomes in list order."""

    items: tuple[Intake, ...]


# -- the log ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SignTreeHead(Message["TreeHeadRow"]):
    """Sign the log as it is now, unless the latest head already covers it."""


@dataclass(frozen=True)
class GetTreeHead(Message["TreeHeadRow"]):
    """The latest signed head, signing a new one first when the log has grown past it."""


@dataclass(frozen=True)
class GetConsistencyProof(Message["ConsistencyProofHashes"]):
    first: int
    second: int


@dataclass(frozen=True)
class GetInclusionProof(Message["InclusionProofHashes"]):
    leaf_index: int
    tree_size: int


@dataclass(frozen=True)
class ListLeaves(Message["LeavesPage"]):
    """Log entries [start, end) of the latest signed tree, at most ``limit`` of them."""

    start: int
    end: int
    limit: int


@dataclass(frozen=True)
class GetPublicKey(Message["LogKey"]):
    pass


# -- evidence ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GetPublicEvidence(Message["PublicView"]):
    sha256: str  # normalised


@dataclass(frozen=True)
class CheckContent(Message["ContentCheck"]):
    """Compare the content the caller holds (as text: its UTF-8 bytes) with the stored bytes."""

    sha256: str  # normalised
    content: str


@dataclass(frozen=True)
class GetWorkspaceEvidence(Message["tuple[StoredEvidence, list[StoredReference]]"]):
    sha256: str  # normalised
    workspace_id: str
