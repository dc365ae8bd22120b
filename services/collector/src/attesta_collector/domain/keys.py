"""Engine keys: where an engine's key may come from, and what a tenant reads when it cannot.

A key is either a secret of the engine's own workspace (given once through the API, kept
encrypted: ``SealedSecret``) or a key the operator provides to that workspace by name. A tenant
never names a variable or file of the server, and the reasons below are the same whatever the
cause (an id of another workspace or of nothing, an unlisted name or a variable that is not
set), so they tell nothing about the server or about other workspaces.
"""

from __future__ import annotations

from dataclasses import dataclass

SECRET_UNUSABLE = ("api_key_secret_id: no usable secret with this id in this workspace (store the "
                   "key with POST /v1/secrets; a retired secret cannot be used)")
OPERATOR_KEY_UNUSABLE = ("operator_key: the operator provides no key of this name to this "
                         "workspace")


@dataclass(frozen=True)
class SealedSecret:
    """A secret's value as stored: encrypted with its own data key, which is wrapped by the
    key-encryption key ``kek_id`` (adapters/keys.py)."""

    kek_id: str
    wrapped_key: bytes
    ciphertext: bytes
