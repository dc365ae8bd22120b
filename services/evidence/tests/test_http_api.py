"""Every status code of the public and internal routes, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib

import httpx
import pytest

from attesta_contracts.api.evidence import EvidenceView, LogPublicKey, SignedTreeHead
from attesta_contracts.evidence import EvidenceRefKind
from attesta_evidence.adapters.postgres import EvidenceUnitOfWork
from attesta_evidence.domain import merkle
from attesta_evidence.domain.model import IncomingEvidence, Reference
from attesta_evidence.domain.signing import load_public_key, tree_head_signature_ok
from attesta_evidence.domain.commands import Intake, RecordEvidence
from attesta_evidence.service_layer.handlers import record_evidence
from attesta_platform.messaging import Messaging

pytestmark = pytest.mark.integration

INTERNAL = "test-internal-token"
ANSWER = "Velnorex: the usual adult dose is 20 mg once daily. \N{EM DASH} café"


async def put(pool, text: str, ref: str = "run-1", ws: str = "ws-1",
              kind: EvidenceRefKind = EvidenceRefKind.RUN) -> str:
    sha = hashlib.sha256(text.encode()).hexdigest()
    item = IncomingEvidence.build(text, sha, "text/plain; charset=utf-8", Reference(kind, ref, ws),
                                  1 << 20)
    await record_evidence(RecordEvidence((Intake(item, "c", None),)), EvidenceUnitOfWork(pool),
                          Messaging("127.0.0.1:1", "t"))
    return sha


def _err(resp: httpx.Response, status: int, code: str) -> None:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["error"]["code"] == code and body["error"]["reason"]


async def test_get_evidence_200_with_a_proof_that_verifies(live_api, app_pool):
    sha = await put(app_pool, ANSWER)
    await put(app_pool, ANSWER, ref="run-2", ws="ws-secret")
    await put(app_pool, "another answer", ref="run-3")
    async with httpx.AsyncClient(base_url=live_api.base_url) as http:
        resp = await http.get(f"/v1/public/evidence/{sha}")
        assert resp.status_code == 200, resp.text
        view = EvidenceView.model_validate_json(resp.content)
        upper = await http.get(f"/v1/public/evidence/{sha.upper()}")
        key = LogPublicKey.model_validate_json((await http.get("/v1/public/log/public-key")).content)
    assert upper.status_code == 200 and upper.json()["sha256"] == sha  # normalised
    assert "ws-secret" not in resp.text and "run-2" not in resp.text  # no private ids publicly
    assert "content" not in resp.json()
    assert [(r.kind, r.count) for r in view.references] == [(EvidenceRefKind.RUN, 2)]
    assert view.size_bytes == len(ANSWER.encode()) and view.media_type == "text/plain; charset=utf-8"
    head, proof = view.tree_head, view.inclusion
    assert head is not None and proof is not None and head.tree_size >= 1
    public = load_public_key(base64.b64encode(base64.b64decode(key.public_key)))
    assert tree_head_signature_ok(public, head.tree_size, bytes.fromhex(head.root_hash),
                                  head.timestamp_ms, head.signature)
    leaf = merkle.leaf_hash(view.log_entry.entry.encode())
    assert merkle.verify_inclusion(proof.leaf_index, proof.tree_size, leaf,
                                   [bytes.fromhex(p) for p in proof.audit_path],
                                   bytes.fromhex(head.root_hash))


@pytest.mark.parametrize("bad", ["abc", "g" * 64, "0" * 63, "0" * 65, "%20" + "0" * 61,
                                 "0" * 64 + ".json"])
async def test_get_evidence_400_when_not_a_hash(live_api, bad):
    async with httpx.AsyncClient(base_url=live_api.base_url) as http:
        _err(await http.get(f"/v1/public/evidence/{bad}"), 400, "invalid_sha256")


async def test_get_and_check_404_for_unknown_hash(live_api):
    unknown = hashlib.sha256(b"never recorded").hexdigest()
    async with httpx.AsyncClient(base_url=live_api.base_url) as http:
        _err(await http.get(f"/v1/public/evidence/{unknown}"), 404, "not_found")
        _err(await http.post(f"/v1/public/evidence/{unknown}/check", json={"content": "x"}),
             404, "not_found")


async def test_check_matches_byte_for_byte(live_api, app_pool):
    sha = await put(app_pool, ANSWER)
    other = await put(app_pool, "a different answer", ref="run-9")
    async with httpx.AsyncClient(base_url=live_api.base_url) as http:
        ok = (await http.post(f"/v1/public/evidence/{sha}/check", json={"content": ANSWER})).json()
        off = (await http.post(f"/v1/public/evidence/{sha.upper()}/check",
                               json={"content": ANSWER + " "})).json()
        swapped = (await http.post(f"/v1/public/evidence/{sha}/check",
                                   json={"content": "a different answer"})).json()
        _err(await http.post("/v1/public/evidence/xyz/check", json={"content": ANSWER}),
             400, "invalid_sha256")
    assert ok == {"sha256": sha, "match": True, "computed_sha256": sha,
                  "computed_size_bytes": len(ANSWER.encode()), "computed_recorded": True}
    assert off["match"] is False and off["sha256"] == sha and off["computed_recorded"] is False
    assert off["computed_sha256"] == hashlib.sha256((ANSWER + " ").encode()).hexdigest()
    assert swapped["match"] is False and swapped["computed_sha256"] == other
    assert swapped["computed_recorded"] is True


async def test_check_422_on_bad_bodies(live_api, app_pool):
    sha = await put(app_pool, ANSWER)
    url = f"/v1/public/evidence/{sha}/check"
    async with httpx.AsyncClient(base_url=live_api.base_url) as http:
        _err(await http.post(url, content=b"{not json", headers={"content-type": "application/json"}),
             422, "invalid_request")
        _err(await http.post(url, json={}), 422, "invalid_request")
        _err(await http.post(url, json={"content": 5}), 422, "invalid_request")
        _err(await http.post(url, json={"content": "x", "extra": 1}), 422, "invalid_request")
        _err(await http.post(url, content=b'{"content": "\\ud800"}',
                             headers={"content-type": "application/json"}), 422, "invalid_content")


async def test_check_413_over_the_body_limit(live_api, app_pool):
    sha = await put(app_pool, ANSWER)
    url = f"/v1/public/evidence/{sha}/check"
    big = {"content": "x" * (live_api.max_body_bytes + 1)}
    async with httpx.AsyncClient(base_url=live_api.base_url) as http:
        _err(await http.post(url, json=big), 413, "payload_too_large")

        async def chunks():  # no Content-Length: the limit holds while streaming
            yield b'{"content": "'
            for _ in range(live_api.max_body_bytes // 1000 + 2):
                yield b"y" * 1000
            yield b'"}'

        _err(await http.post(url, content=chunks(), headers={"content-type": "application/json"}),
             413, "payload_too_large")
        # just under the limit still works
        fits = {"content": "z" * (live_api.max_body_bytes - 100)}
        assert (await http.post(url, json=fits)).status_code == 200


async def test_log_routes_200_400_422(live_api, app_pool, log_key):
    for i in range(5):
        await put(app_pool, f"entry {i}", ref=f"run-{i}")
    async with httpx.AsyncClient(base_url=live_api.base_url) as http:
        # no head was signed yet, so the first request signs one over all five
        head = SignedTreeHead.model_validate_json((await http.get("/v1/public/log/tree-head")).content)
        assert head.tree_size == 5
        cons = await http.get("/v1/public/log/consistency", params={"first": 2, "second": 5})
        assert cons.status_code == 200
        c = cons.json()
        assert merkle.verify_consistency(2, 5, bytes.fromhex(c["first_root_hash"]),
                                         bytes.fromhex(head.root_hash),
                                         [bytes.fromhex(p) for p in c["proof"]])
        inc = (await http.get("/v1/public/log/inclusion",
                              params={"leaf_index": 1, "tree_size": 3})).json()
        leaves = (await http.get("/v1/public/log/leaves", params={"start": 0, "end": 5})).json()
        assert [x["leaf_index"] for x in leaves["leaves"]] == [0, 1, 2, 3, 4]
        tree = merkle.MemoryTree.from_entries(x["entry"].encode() for x in leaves["leaves"])
        assert tree.root().hex() == head.root_hash
        assert [bytes.fromhex(p) for p in inc["audit_path"]] == tree.inclusion_proof(1, 3)
        for params in ({"first": 0, "second": 5}, {"first": 3, "second": 2},
                       {"first": 1, "second": 6}, {"first": -1, "second": 5},
                       {"first": 1, "second": 2**70}):
            _err(await http.get("/v1/public/log/consistency", params=params), 400, "invalid_range")
        for params in ({"leaf_index": 5, "tree_size": 5}, {"leaf_index": 0, "tree_size": 6},
                       {"leaf_index": -1, "tree_size": 2}):
            _err(await http.get("/v1/public/log/inclusion", params=params), 400, "invalid_range")
        _err(await http.get("/v1/public/log/leaves", params={"start": 3, "end": 2}), 400,
             "invalid_range")
        _err(await http.get("/v1/public/log/leaves", params={"start": 0, "end": 6}), 400,
             "invalid_range")
        _err(await http.get("/v1/public/log/consistency", params={"first": "a", "second": 2}),
             422, "invalid_request")
        _err(await http.get("/v1/public/log/inclusion"), 422, "invalid_request")
        _err(await http.delete("/v1/public/log/tree-head"), 405, "method_not_allowed")


async def test_internal_route_401_400_404_200(live_api, app_pool):
    sha = await put(app_pool, ANSWER, ref="run-mine", ws="ws-mine")
    await put(app_pool, ANSWER, ref="run-theirs", ws="ws-theirs")
    url = f"/v1/evidence/{sha}"
    good = {"X-Attesta-Internal-Token": INTERNAL, "X-Attesta-Workspace": "ws-mine"}
    async with httpx.AsyncClient(base_url=live_api.base_url) as http:
        _err(await http.get(url), 401, "unauthorized")
        _err(await http.get(url, headers={**good, "X-Attesta-Internal-Token": "wrong"}), 401,
             "unauthorized")
        _err(await http.get(url, headers={"X-Attesta-Internal-Token": INTERNAL}), 400,
             "missing_workspace")
        _err(await http.get("/v1/evidence/nothex", headers=good), 400, "invalid_sha256")
        _err(await http.get(url, headers={**good, "X-Attesta-Workspace": "ws-other"}), 404,
             "not_found")
        resp = await http.get(url, headers=good)
    assert resp.status_code == 200
    refs = resp.json()["references"]
    assert [(r["kind"], r["ref_id"]) for r in refs] == [("run", "run-mine")]  # not the other ws
