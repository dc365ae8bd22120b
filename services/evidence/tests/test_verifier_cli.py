"""`attesta evidence verify` as a person runs it: a subprocess with nothing but the public key
and a base URL. Includes the tamper test: a superuser edits, deletes, and even rewrites the log
behind the service's back; the verifier catches it against an earlier signed tree head."""

from __future__ import annotations

import asyncio
import contextlib
import io
import hashlib
import json
import sys
from pathlib import Path

import asyncpg
import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from attesta_evidence.adapters.postgres import EvidenceUnitOfWork
from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import IncomingEvidence, Reference, leaf_entry
from attesta_evidence.domain.signing import public_key_pem
from attesta_evidence.domain.commands import Intake, RecordEvidence
from attesta_evidence.service_layer.handlers import record_evidence
from attesta_contracts.evidence import EvidenceRefKind
from attesta_platform.messaging import Messaging

pytestmark = pytest.mark.integration

ATTESTA = str(Path(sys.executable).parent / "attesta")
ANSWERS = ["Answer A: Velnorex 20 mg.", "Answer B: Brandly cites https://brandly.example/.",
           "Answer C: nothing about brands \N{SNOWMAN}"]


async def put(pool, text: str, ref: str) -> str:
    sha = hashlib.sha256(text.encode()).hexdigest()
    item = IncomingEvidence.build(text, sha, "text/plain; charset=utf-8",
                                  Reference(EvidenceRefKind.RUN, ref, "ws-1"), 1 << 20)
    await record_evidence(RecordEvidence((Intake(item, "c", None),)), EvidenceUnitOfWork(pool),
                          Messaging("127.0.0.1:1", "t"))
    return sha


class Cli:
    def __init__(self, base_url: str, public_key: Path) -> None:
        self.base_url, self.public_key = base_url, public_key

    def _argv(self, args: tuple[str, ...], key: Path | None) -> list[str]:
        what, *rest = args
        return ["verify", what, "--base-url", self.base_url,
                "--public-key", str(key or self.public_key), *rest]

    async def run(self, *args: str, key: Path | None = None) -> tuple[int, str]:
        """The real command in its own process (what CI proves works end to end)."""
        proc = await asyncio.create_subprocess_exec(
            ATTESTA, "evidence", *self._argv(args, key),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        return proc.returncode, out.decode()

    async def verify(self, *args: str, key: Path | None = None) -> tuple[int, str]:
        """The same entry point in-process (a subprocess costs ~2 s of imports on 2 busy cores)."""
        from attesta_evidence.cli import main

        def call() -> tuple[int, str]:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                try:
                    main(self._argv(args, key))
                except SystemExit as exc:
                    return int(exc.code or 0), buf.getvalue()
            return 0, buf.getvalue()

        return await asyncio.to_thread(call)


@pytest.fixture
def cli(live_api, log_key, tmp_path) -> Cli:
    path = tmp_path / "log.pub"
    path.write_text(public_key_pem(log_key.public_key()))
    return Cli(live_api.base_url, path)


async def test_verify_inclusion_consistency_and_full_audit(cli, app_pool, tmp_path):
    shas = [await put(app_pool, text, f"run-{i}") for i, text in enumerate(ANSWERS)]
    h1 = tmp_path / "head-1.json"
    rc, out = await cli.run("tree-head", "--save", str(h1))
    assert rc == 0, out
    assert json.loads(h1.read_text())["tree_size"] == 3

    rc, out = await cli.run("inclusion", "--content", ANSWERS[0])
    assert rc == 0 and "OK included: leaf 0 of 3" in out, out
    content_file = tmp_path / "answer.txt"
    content_file.write_bytes(ANSWERS[2].encode())
    rc, out = await cli.verify("inclusion", "--content-file", str(content_file))
    assert rc == 0 and "leaf 2 of 3" in out, out
    rc, out = await cli.verify("inclusion", "--sha256", shas[1].upper())
    assert rc == 0, out

    rc, out = await cli.verify("inclusion", "--content", ANSWERS[0] + "!")
    assert rc == 1 and "not in the store" in out, out
    other_key = tmp_path / "other.pub"
    other_key.write_text(public_key_pem(Ed25519PrivateKey.generate().public_key()))
    rc, out = await cli.verify("inclusion", "--content", ANSWERS[0], key=other_key)
    assert rc == 1 and "not by the given public key" in out, out

    await put(app_pool, "Answer D", "run-3")
    await put(app_pool, "Answer E", "run-4")
    rc, out = await cli.verify("consistency", "--old", str(h1))  # vs the latest head
    assert rc == 0 and "3 -> 5" in out, out
    h2 = tmp_path / "head-2.json"
    assert (await cli.verify("tree-head", "--save", str(h2)))[0] == 0
    rc, out = await cli.verify("consistency", "--old", str(h1), "--new", str(h2))
    assert rc == 0, out
    rc, out = await cli.verify("log", "--tree-head", str(h1))
    assert rc == 0 and "all 3 entries" in out, out
    rc, out = await cli.verify("inclusion", "--content", ANSWERS[1], "--tree-head", str(h1))
    assert rc == 0 and "also included in the saved head of size 3" in out, out

    forged = json.loads(h1.read_text())
    forged["root_hash"] = "00" * 32
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    rc, out = await cli.verify("consistency", "--old", str(tmp_path / "forged.json"))
    assert rc == 1 and "signature does not verify" in out, out
    rc, out = await cli.verify("tree-head", key=other_key)
    assert rc == 1, out


async def test_tamper_is_detected_against_an_earlier_signed_head(cli, app_pool, evidence_db,
                                                                 live_api, tmp_path):
    for i, text in enumerate(ANSWERS):
        await put(app_pool, text, f"run-{i}")
    await put(app_pool, "Answer D", "run-3")
    saved = tmp_path / "saved.json"
    assert (await cli.verify("tree-head", "--save", str(saved)))[0] == 0
    assert (await cli.verify("log", "--tree-head", str(saved)))[0] == 0

    admin = await asyncpg.connect(evidence_db.admin_url)
    try:
        # 1. a superuser edits a row behind the service's back (triggers off for the session)
        await admin.execute("SET session_replication_role = replica")
        await admin.execute("UPDATE evidence SET media_type = 'text/html' WHERE log_index = 1")
        rc, out = await cli.run("inclusion", "--content", ANSWERS[1])
        assert rc == 1 and "does not verify against the signed root" in out, out
        rc, out = await cli.verify("log", "--tree-head", str(saved))
        assert rc == 1 and "entries were changed" in out, out

        # 2. ... and deletes another
        await admin.execute("DELETE FROM evidence_references WHERE sha256 = $1",
                            hashlib.sha256(ANSWERS[2].encode()).hexdigest())
        await admin.execute("DELETE FROM evidence WHERE log_index = 2")
        rc, out = await cli.verify("log", "--tree-head", str(saved))
        assert rc == 1 and "leaf 2 is missing" in out, out

        # 3. ... then covers the tracks: rebuilds every stored subtree hash from the edited rows
        # and lets the service sign new heads (it holds the key). A verifier that saved an
        # earlier head still sees that the log was rewritten.
        await admin.execute("DELETE FROM evidence WHERE log_index > 1")
        await admin.execute("DELETE FROM log_nodes")
        await admin.execute("DELETE FROM tree_heads")
        rows = await admin.fetch("SELECT sha256, size_bytes, media_type, first_recorded_at "
                                 "FROM evidence ORDER BY log_index")
        tree = merkle.MemoryTree.from_entries(leaf_entry(*r) for r in rows)
        await admin.executemany("INSERT INTO log_nodes (level, idx, hash) VALUES ($1, $2, $3)",
                                [(lvl, idx, h) for (lvl, idx), h in tree.nodes.items()])
        await admin.execute("RESET session_replication_role")
    finally:
        await admin.close()
    for i in range(5):
        await put(app_pool, f"Answer after the rewrite {i}", f"run-new-{i}")
    async with httpx.AsyncClient(base_url=live_api.base_url) as http:
        head = (await http.get("/v1/public/log/tree-head")).json()
    assert head["tree_size"] == 7  # a freshly signed, validly signed, rewritten log
    rc, out = await cli.verify("inclusion", "--content", "Answer after the rewrite 0")
    assert rc == 0, out  # on its own, the rewritten log looks fine ...
    rc, out = await cli.run("consistency", "--old", str(saved))
    assert rc == 1 and "changed or removed" in out, out  # ... but not against the saved head
    rc, out = await cli.verify("inclusion", "--content", "Answer after the rewrite 0",
                               "--tree-head", str(saved))
    assert rc == 1, out
    rc, out = await cli.verify("log", "--tree-head", str(saved))
    assert rc == 1, out


async def test_audit_of_a_page_boundary_log(cli, app_pool, tmp_path, log_key):
    """More entries than one page of /log/leaves, so the audit pages through them."""
    items = [f"bulk {i}" for i in range(1005)]
    for i, text in enumerate(items):
        await put(app_pool, text, f"run-{i}")
    saved = tmp_path / "saved.json"
    assert (await cli.verify("tree-head", "--save", str(saved)))[0] == 0
    rc, out = await cli.verify("log", "--tree-head", str(saved))
    assert rc == 0 and "all 1005 entries" in out, out
    async with EvidenceUnitOfWork(app_pool).read() as uow:
        assert await uow.log.size() == 1005
