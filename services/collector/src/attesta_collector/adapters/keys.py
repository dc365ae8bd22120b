"""Engine keys: workspace secrets sealed at rest, the operator's keys, and the key of a call.

Envelope encryption (AES-256-GCM from ``cryptography``):
- every secret gets its own random 256-bit data key; its value is encrypted with that key
  (random 96-bit nonce) and the associated data names the workspace and the secret id;
- the data key is wrapped by the key-encryption key (KEK) of the operator's settings
  (``ATTESTA_COLLECTOR_SECRETS_KEK``; AES-GCM, its own nonce, the same associated data plus the
  KEK's id);
- a row stores the KEK id, the wrapped data key and the ciphertext: the database alone (a dump,
  a replica, a backup) reads no key, and a row copied to another workspace or id fails
  authentication. Rotating the KEK re-wraps data keys only (``rewrap``); a previous KEK listed
  in ``ATTESTA_COLLECTOR_SECRETS_PREVIOUS_KEKS`` still opens what it wrapped until then.

In development without a KEK, one is made once in ``ATTESTA_COLLECTOR_SECRETS_KEK_FILE``
(like the evidence log's signing key); production refuses to start without one.

Operator keys (``ATTESTA_COLLECTOR_OPERATOR_KEYS``) are read from the variable or file the
operator listed for a workspace and name, at the moment they are needed; a value that is
missing, empty or not one line of visible ASCII is the same as a name that is not listed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from attesta_collector.domain.keys import OPERATOR_KEY_UNUSABLE, SECRET_UNUSABLE, SealedSecret
from attesta_collector.domain.model import EngineFault, EngineSpec, FaultKind
from attesta_collector.service_layer.unit_of_work import UnitOfWork

KEY_BYTES = 32
NONCE_BYTES = 12
_ONE_VISIBLE_LINE = re.compile(r"^[\x21-\x7e]+$")


class KeyConfigError(Exception):
    """A KEK or operator-key setting that cannot be used (start-up stops with the reason)."""


class SecretUnreadable(Exception):
    """A sealed secret that none of this process's KEKs opens (wrong KEK, or a tampered or
    moved row)."""


def kek_id(kek: bytes) -> str:
    """Which KEK wrapped a row, without revealing it."""
    return "kek-" + hashlib.sha256(b"attesta-collector-kek-id\x00" + kek).hexdigest()[:16]


def decode_kek(text: str, what: str) -> bytes:
    try:
        kek = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        kek = b""
    if len(kek) != KEY_BYTES:
        raise KeyConfigError(f"{what} must be {KEY_BYTES} random bytes in base64 (e.g. "
                             "`python -c 'import os,base64; "
                             "print(base64.b64encode(os.urandom(32)).decode())'`)")
    return kek


def _aad(workspace_id: str, secret_id: str, *extra: str) -> bytes:
    return orjson.dumps(["attesta-engine-secret", workspace_id, secret_id, *extra])


@dataclass(frozen=True)
class SecretBox:
    """Seals and opens secret values with the current KEK (and opens with previous ones)."""

    current: bytes
    previous: tuple[bytes, ...] = ()

    @property
    def kek_id(self) -> str:
        return kek_id(self.current)

    def seal(self, workspace_id: str, secret_id: str, value: str) -> SealedSecret:
        data_key = AESGCM.generate_key(bit_length=256)
        nonce = secrets.token_bytes(NONCE_BYTES)
        ciphertext = nonce + AESGCM(data_key).encrypt(nonce, value.encode("utf-8"),
                                                      _aad(workspace_id, secret_id))
        return SealedSecret(self.kek_id, self._wrap(workspace_id, secret_id, data_key),
                            ciphertext)

    def open(self, workspace_id: str, secret_id: str, sealed: SealedSecret) -> str:
        data_key = self._unwrap(workspace_id, secret_id, sealed)
        try:
            plain = AESGCM(data_key).decrypt(sealed.ciphertext[:NONCE_BYTES],
                                             sealed.ciphertext[NONCE_BYTES:],
                                             _aad(workspace_id, secret_id))
        except (InvalidTag, ValueError):
            raise SecretUnreadable("the secret's ciphertext does not authenticate") from None
        return plain.decode("utf-8")

    def rewrap(self, workspace_id: str, secret_id: str,
               sealed: SealedSecret) -> SealedSecret | None:
        """The same ciphertext with its data key wrapped by the current KEK (None: it is)."""
        if sealed.kek_id == self.kek_id:
            return None
        data_key = self._unwrap(workspace_id, secret_id, sealed)
        return SealedSecret(self.kek_id, self._wrap(workspace_id, secret_id, data_key),
                            sealed.ciphertext)

    def _wrap(self, workspace_id: str, secret_id: str, data_key: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce + AESGCM(self.current).encrypt(
            nonce, data_key, _aad(workspace_id, secret_id, self.kek_id))

    def _unwrap(self, workspace_id: str, secret_id: str, sealed: SealedSecret) -> bytes:
        kek = next((k for k in (self.current, *self.previous) if kek_id(k) == sealed.kek_id), None)
        if kek is None:
            raise SecretUnreadable(f"wrapped by {sealed.kek_id}, a KEK this collector does not "
                                   "have")
        try:
            return AESGCM(kek).decrypt(sealed.wrapped_key[:NONCE_BYTES],
                                       sealed.wrapped_key[NONCE_BYTES:],
                                       _aad(workspace_id, secret_id, sealed.kek_id))
        except (InvalidTag, ValueError):
            raise SecretUnreadable("the wrapped data key does not authenticate") from None


def secret_box(*, kek: str, previous: str, kek_file: Path, production: bool,
               warn: Callable[[str], None]) -> SecretBox:
    """The box of the settings: the configured KEK; in development without one, the KEK in
    ``kek_file``, made once (mode 0600) when missing."""
    old = tuple(decode_kek(p, "each of ATTESTA_COLLECTOR_SECRETS_PREVIOUS_KEKS")
                for p in previous.split(",") if p.strip())
    if kek.strip():
        return SecretBox(decode_kek(kek, "ATTESTA_COLLECTOR_SECRETS_KEK"), old)
    if production:
        raise KeyConfigError("ATTESTA_COLLECTOR_SECRETS_KEK is not set; production never makes "
                             "its own key-encryption key: set it to 32 random bytes in base64 and "
                             "keep it outside the database")
    if not kek_file.exists():
        kek_file.parent.mkdir(parents=True, exist_ok=True)
        # Written whole under another name, then linked in place: a collector starting at the
        # same moment either makes the file or reads the complete one the other made.
        draft = kek_file.with_name(f"{kek_file.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode() + "\n")
        try:
            os.link(draft, kek_file)
            warn(f"generated a development key-encryption key for engine secrets in {kek_file}")
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return SecretBox(decode_kek(kek_file.read_text(encoding="ascii"),
                                f"the development KEK in {kek_file}"), old)


# --------------------------------------------------------------------------- operator keys

def parse_operator_keys(text: str) -> dict[str, dict[str, str]]:
    """``{"<workspace>": {"<name>": "env:VARIABLE" | "file:/absolute/path"}}`` (ValueError)."""
    if not text.strip():
        return {}
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise ValueError("ATTESTA_COLLECTOR_OPERATOR_KEYS is not JSON") from None
    if not isinstance(data, dict):
        raise ValueError("ATTESTA_COLLECTOR_OPERATOR_KEYS must be a JSON object of workspaces")
    out: dict[str, dict[str, str]] = {}
    for ws, names in data.items():
        if not isinstance(names, dict):
            raise ValueError(f"ATTESTA_COLLECTOR_OPERATOR_KEYS[{ws!r}] must be an object of "
                             "names")
        for name, source in names.items():
            kind, _, where = source.partition(":") if isinstance(source, str) else ("", "", "")
            if not ((kind == "env" and where) or (kind == "file" and where.startswith("/"))):
                raise ValueError(f"ATTESTA_COLLECTOR_OPERATOR_KEYS[{ws!r}][{name!r}]: write "
                                 "\"env:VARIABLE\" or \"file:/absolute/path\"")
        out[str(ws)] = {str(n): str(s) for n, s in names.items()}
    return out


@dataclass(frozen=True)
class OperatorKeys:
    """The keys the operator lists per workspace and name; read when used, never stored."""

    sources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)

    def read(self, workspace_id: str, name: str) -> str | None:
        """The key, or None whatever the reason (not listed, not set, empty, unreadable, not
        one line of visible ASCII): the caller gives one reason for all of them."""
        source = self.sources.get(workspace_id, {}).get(name)
        if source is None:
            return None
        kind, _, where = source.partition(":")
        try:
            value = (self.environ.get(where, "") if kind == "env"
                     else Path(where).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None
        value = value.strip()
        return value if _ONE_VISIBLE_LINE.fullmatch(value) else None


# --------------------------------------------------------------------------- a call's key

@dataclass
class EngineKeys:
    """The key an engine sends, found when it calls: its workspace's secret (opened with the
    KEK, kept in memory for ``cache_s``) or the operator's key of that name."""

    new_uow: Callable[[], UnitOfWork]
    box: SecretBox
    operator: OperatorKeys = field(default_factory=OperatorKeys)
    cache_s: float = 10.0
    clock: Callable[[], float] = time.monotonic
    _opened: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)

    async def key_for(self, workspace_id: str, spec: EngineSpec) -> str | None:
        if spec.operator_key:
            value = self.operator.read(workspace_id, spec.operator_key)
            if value is None:
                raise EngineFault(FaultKind.NO_KEY, OPERATOR_KEY_UNUSABLE)
            return value
        if spec.api_key_secret_id:
            return await self._secret(workspace_id, spec.api_key_secret_id)
        return None

    def forget(self, workspace_id: str, secret_id: str) -> None:
        self._opened.pop((workspace_id, secret_id), None)

    async def _secret(self, workspace_id: str, secret_id: str) -> str:
        now = self.clock()
        cached = self._opened.get((workspace_id, secret_id))
        if cached is not None and cached[0] > now:
            return cached[1]
        async with self.new_uow().read() as uow:
            row = await uow.secrets.get(workspace_id, secret_id)
        if row is None or row["retired_at"] is not None or row["ciphertext"] is None:
            self.forget(workspace_id, secret_id)
            raise EngineFault(FaultKind.NO_KEY, SECRET_UNUSABLE)
        try:
            value = self.box.open(workspace_id, secret_id, SealedSecret(
                row["kek_id"], bytes(row["wrapped_key"]), bytes(row["ciphertext"])))
        except SecretUnreadable:
            raise EngineFault(FaultKind.NO_KEY, "the secret cannot be opened with this "
                                                "collector's key-encryption keys") from None
        if self.cache_s > 0:
            self._opened[(workspace_id, secret_id)] = (now + self.cache_s, value)
        return value
