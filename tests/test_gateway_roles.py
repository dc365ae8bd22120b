"""Roles and scoped keys at the gateway (#25 item 5), with a real gateway process (real Kafka,
PostgreSQL, Redis) in front of the stand-in internal API (``tests/gateway_fakes.StandInApi``):

- every operation of the gateway's own OpenAPI document, for every role: allowed, or 403
  exactly as the role table says, and a refused call is never forwarded upstream;
- key management through the API: create (shown once, idempotent), list (role, last used),
  revoke (401 at once), the last admin of a workspace (409), other workspaces (404);
- the migration makes keys that existed before roles ``admin``.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
import pytest_asyncio
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine

import attesta_gateway.adapters.migrate as gateway_migrate
from attesta_gateway.adapters.database import Database
from attesta_gateway.adapters.keystore import PostgresKeyStore
from attesta_gateway.domain.keys import StoredKey, key_digest, new_key
from attesta_gateway.domain.roles import ROLE_TABLE, ROLES, Role, allows, required_role
from tests.gateway_fakes import (
    TEST_PASSWORD,
    TEST_ROLE,
    GatewayProcess,
    StandInApi,
    migrated_database,
    postgres_admin_url,
    temp_database,
    wait_http,
)

try:
    from attesta_testing.infra import kafka_bootstrap, redis_url
except ImportError:  # the tree before the test helpers left attesta_platform
    from attesta_platform.testing import kafka_bootstrap, redis_url  # type: ignore[no-redef]

pytestmark = pytest.mark.integration
TOKEN = "test-internal-token-" + "r" * 24
METHODS = ("get", "post", "put", "patch", "delete")
# A value for each path parameter the document names (none of them exists upstream).
PATH_VALUES = {"brand_id": "acme", "run_id": "run-x", "sha256": "a" * 64,
               "key_id": "0123456789abcdef", "prompt_id": "p1", "engine_id": "e1",
               "secret_id": "s1", "schedule_id": "sc1", "collection_id": "c1"}


async def _key(db_url: str, secret: str, workspace: str, name: str, role: Role) -> tuple[str, str]:
    db = Database(db_url, min_size=1, max_size=1)
    try:
        key_id, plaintext = new_key()
        await PostgresKeyStore(db).add(StoredKey(key_id, workspace, name,
                                                 key_digest(secret.encode(), plaintext),
                                                 role=role))
        return key_id, plaintext
    finally:
        await db.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(tmp_path_factory):
    kafka_bootstrap()
    logs = tmp_path_factory.mktemp("gateway-roles")
    secret = secrets.token_urlsafe(48)
    api = StandInApi(TOKEN, slow_s=0.1).start()
    async with migrated_database() as db_url:
        keys = {role: await _key(db_url, secret, "ws-roles", f"{role} key", role)
                for role in ROLES}
        env = {
            "ATTESTA_GATEWAY_DB_URL": db_url, "ATTESTA_GATEWAY_SECRET": secret,
            "ATTESTA_INTERNAL_TOKEN": TOKEN, "REDIS_URL": redis_url(),
            "ATTESTA_CLASSIFIER_URL": api.url, "ATTESTA_EVIDENCE_URL": api.url,
            "ATTESTA_COLLECTOR_URL": api.url,
            "ATTESTA_RATE_LIMIT_PREFIX": f"t-gw-roles-{uuid.uuid4().hex[:8]}:",
            "ATTESTA_RATE_LIMIT_PER_KEY": "100000",
            "ATTESTA_RATE_LIMIT_PUBLIC_PER_CLIENT": "100000",
            "ATTESTA_RATE_LIMIT_AUTH_FAILURES_PER_CLIENT": "100000",
            "ATTESTA_UPSTREAM_TIMEOUT_S": "2", "ATTESTA_UPSTREAM_ATTEMPTS": "1",
            "ATTESTA_CHAT_TIMEOUT_S": "2",
            # A long cache: a revoked key must still be refused at once by this instance.
            "ATTESTA_KEY_CACHE_TTL_S": "300",
            "ATTESTA_KEY_LAST_USED_INTERVAL_S": "2",
        }
        proc = GatewayProcess(env, logs, "roles").start(wait=False)
        try:
            wait_http(f"{proc.url}/readyz", proc.proc, log=proc.log)
            yield {"url": proc.url, "api": api, "db": db_url, "secret": secret, "keys": keys}
        finally:
            proc.stop()
            api.stop()


def _call(gw, method: str, path: str, key: str | None = None, **kw) -> httpx.Response:
    headers = kw.pop("headers", {})
    if key is not None:
        headers = {**headers, "Authorization": f"Bearer {key}"}
    return httpx.request(method, gw["url"] + path, headers=headers, timeout=15, **kw)


def _operations(doc: dict) -> list[tuple[str, str, dict]]:
    return [(method.upper(), path, op) for path, item in doc["paths"].items()
            for method, op in item.items() if method in METHODS]


# -- the table against the document and against what the gateway does ------------------------
def test_every_authenticated_operation_names_the_role_the_table_gives_it(gw):
    doc = _call(gw, "GET", "/openapi.json").json()
    keyed = 0
    for method, path, op in _operations(doc):
        if not op.get("security"):
            assert "x-attesta-role" not in op, (method, path)  # public: no key, no role
            continue
        keyed += 1
        need = required_role(method, path)
        assert need is not None, f"{method} {path} is in no row of the role table"
        assert op["x-attesta-role"] == str(need), (method, path)
        assert op["responses"]["403"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorResponse"}, (method, path)
    assert keyed >= 45  # the document was really walked


def test_every_route_for_every_role_is_allowed_or_403_as_the_table_says(gw):
    """Walks the gateway's own OpenAPI document: each keyed operation is called with a viewer,
    an editor and an admin key. A role below the table's gets 403 ``forbidden`` and nothing
    reaches the service; a role at or above it is never refused for its role."""
    doc = _call(gw, "GET", "/openapi.json").json()
    api: StandInApi = gw["api"]
    refused: dict[Role, list[str]] = {role: [] for role in ROLES}
    for method, template, op in _operations(doc):
        if not op.get("security") or template == "/v1/chat":
            continue  # public routes; chat (viewer, so never refused) waits on Kafka
        # Any other id (routes added later, e.g. the alerts' rule_id): a made-up one.
        path = re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES.get(m.group(1), "x1"), template)
        need = Role(op["x-attesta-role"])
        for role in ROLES:
            before = len(api.calls)
            headers = {"Idempotency-Key": uuid.uuid4().hex} if method == "POST" else {}
            body = {} if method in ("POST", "PUT", "PATCH") else None
            resp = _call(gw, method, path, gw["keys"][role][1], json=body, headers=headers)
            label = f"{role} {method} {template}"
            assert resp.status_code != 401, (label, resp.text)
            if allows(role, need):
                assert resp.status_code != 403, (label, resp.text)
            else:
                assert resp.status_code == 403, (label, resp.status_code, resp.text)
                error = resp.json()["error"]
                assert error["code"] == "forbidden" and str(need) in error["reason"], label
                assert len(api.calls) == before, f"{label} was forwarded upstream"
                refused[role].append(f"{method} {template}")
    writes = [f"{m} {p}" for m, p, op in _operations(doc)
              if op.get("security") and m != "GET" and p != "/v1/chat"]
    assert set(writes) <= set(refused[Role.VIEWER]), "a viewer may write"
    assert refused[Role.ADMIN] == []
    admin_only = {f"{m} {p}" for m, p, op in _operations(doc)
                  if op.get("x-attesta-role") == "admin"}
    assert set(refused[Role.EDITOR]) == admin_only  # an editor: all but the admin routes
    assert {"GET /v1/keys", "POST /v1/keys", "DELETE /v1/keys/{key_id}"} <= admin_only


def test_a_viewer_write_is_refused_before_its_body_is_even_read(gw):
    viewer = gw["keys"][Role.VIEWER][1]
    api: StandInApi = gw["api"]
    before = len(api.calls)
    for body in ({"name": "Acme"}, {"not": "a brand"}):
        resp = _call(gw, "POST", "/v1/brands", viewer, json=body)
        assert resp.status_code == 403 and resp.json()["error"]["code"] == "forbidden"
    # A run without its required Idempotency-Key: still the role's 403, not the 400.
    resp = _call(gw, "POST", "/v1/runs", viewer, json={"prompt": "p"})
    assert resp.status_code == 403
    assert len(api.calls) == before
    # The editor's same write is forwarded, with its key id as the actor.
    editor_id, editor = gw["keys"][Role.EDITOR]
    resp = _call(gw, "POST", "/v1/brands", editor, json={"name": "Roles Brand"})
    assert resp.status_code == 201, resp.text
    forwarded = api.calls_to("POST", "/v1/brands")[-1]
    assert forwarded["headers"]["x-attesta-actor"] == editor_id
    assert editor not in str(forwarded["headers"])  # the secret never travels


def test_chat_with_a_viewer_key_is_not_refused_for_its_role(gw):
    resp = _call(gw, "POST", "/v1/chat", gw["keys"][Role.VIEWER][1], json={"question": ""})
    assert resp.status_code == 422  # the question is checked; the role let it through


def test_the_role_table_fails_closed_and_covers_the_alert_routes_by_rule():
    assert required_role("GET", "/v1/somewhere-new") is None
    assert required_role("DELETE", "/v1/brands") == Role.EDITOR  # an area rule
    # The classifier's alert routes (added to the route table later) are covered already.
    assert required_role("GET", "/v1/alerts/rules") == Role.VIEWER
    assert required_role("POST", "/v1/alerts/rules") == Role.EDITOR
    assert required_role("PATCH", "/v1/alerts/rules/{rule_id}") == Role.EDITOR
    assert required_role("POST", "/v1/alerts/rules/{rule_id}/test") == Role.EDITOR
    assert required_role("GET", "/v1/alerts/channels") == Role.ADMIN
    assert required_role("POST", "/v1/alerts/channels/{channel_id}/test") == Role.ADMIN
    assert required_role("GET", "/v1/alerts") == Role.VIEWER
    assert required_role("GET", "/v1/alerts/{alert_id}/deliveries") == Role.VIEWER
    assert required_role("GET", "/v1/keys/me") == Role.VIEWER
    assert required_role("GET", "/v1/exports/anything") == Role.VIEWER
    assert required_role("POST", "/v1/exports/anything") is None
    assert all(rule.role in ROLES for rule in ROLE_TABLE)


# -- key management ---------------------------------------------------------------------------
def test_an_admin_creates_lists_and_revokes_keys_and_a_revoked_key_gets_401_at_once(gw):
    admin_id, admin = gw["keys"][Role.ADMIN]
    idem = {"Idempotency-Key": uuid.uuid4().hex}
    body = {"name": "ci reader", "role": "viewer"}
    made = _call(gw, "POST", "/v1/keys", admin, json=body, headers=idem)
    assert made.status_code == 201, made.text
    new = made.json()
    assert new["role"] == "viewer" and new["key"].startswith(f"atk_{new['key_id']}_")
    assert new["workspace_id"] == "ws-roles" and new["last_used_at"] is None
    assert "only time" in new["warning"]
    assert new["created_by"] == admin_id and new["revoked_by"] is None  # attributed
    # A retry with the same Idempotency-Key: the same key, never its secret again.
    again = _call(gw, "POST", "/v1/keys", admin, json=body, headers=idem)
    assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    assert again.json()["key_id"] == new["key_id"] and again.json()["key"] is None
    other = _call(gw, "POST", "/v1/keys", admin, json={**body, "role": "admin"}, headers=idem)
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    # The new key works, as a viewer of this workspace.
    me = _call(gw, "GET", "/v1/keys/me", new["key"]).json()
    assert me == {"key_id": new["key_id"], "name": "ci reader", "role": "viewer",
                  "workspace_id": "ws-roles"}
    assert _call(gw, "POST", "/v1/brands", new["key"], json={"name": "x"}).status_code == 403
    listed = _call(gw, "GET", "/v1/keys", admin)
    assert listed.status_code == 200
    rows = {k["key_id"]: k for k in listed.json()["items"]}
    assert rows[new["key_id"]]["role"] == "viewer"
    assert new["key"] not in listed.text and "digest" not in listed.text
    # Only an admin manages keys.
    editor = gw["keys"][Role.EDITOR][1]
    assert _call(gw, "GET", "/v1/keys", editor).status_code == 403
    assert _call(gw, "POST", "/v1/keys", editor, json=body).status_code == 403
    assert _call(gw, "DELETE", f"/v1/keys/{new['key_id']}", editor).status_code == 403
    # Revoked: 401 from the next request on, although this gateway caches keys for 300 s.
    assert _call(gw, "GET", "/v1/brands", new["key"]).status_code == 200  # cached now
    gone = _call(gw, "DELETE", f"/v1/keys/{new['key_id']}", admin)
    assert gone.status_code == 200 and gone.json()["revoked_at"] is not None
    assert gone.json()["revoked_by"] == admin_id
    refused = _call(gw, "GET", "/v1/brands", new["key"])
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    # DELETE again: the same answer; the revoked key is listed only on request.
    assert _call(gw, "DELETE", f"/v1/keys/{new['key_id']}", admin).status_code == 200
    active = _call(gw, "GET", "/v1/keys", admin).json()["items"]
    assert new["key_id"] not in {k["key_id"] for k in active}
    everything = _call(gw, "GET", "/v1/keys?include_revoked=true", admin).json()["items"]
    assert new["key_id"] in {k["key_id"] for k in everything}


def test_bad_key_requests_get_the_shared_error_shape(gw):
    admin = gw["keys"][Role.ADMIN][1]
    for body in ({"name": "x", "role": "owner"}, {"name": "", "role": "viewer"},
                 {"name": "x", "role": "viewer", "workspace_id": "other"}):
        resp = _call(gw, "POST", "/v1/keys", admin, json=body)
        assert resp.status_code == 422 and resp.json()["error"]["code"], body
    resp = _call(gw, "DELETE", "/v1/keys/not-a-key-id", admin)
    assert resp.status_code == 422
    resp = _call(gw, "DELETE", f"/v1/keys/{secrets.token_hex(8)}", admin)
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"


def test_the_last_admin_key_of_a_workspace_cannot_be_revoked(gw):
    async def keys():
        first = await _key(gw["db"], gw["secret"], "ws-last", "first admin", Role.ADMIN)
        editor = await _key(gw["db"], gw["secret"], "ws-last", "editor", Role.EDITOR)
        outsider = await _key(gw["db"], gw["secret"], "ws-other", "outsider", Role.ADMIN)
        return first, editor, outsider

    (first_id, first), (editor_id, _), (_, outsider) = asyncio.run(keys())
    resp = _call(gw, "DELETE", f"/v1/keys/{first_id}", first)
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "last_admin_key"
    assert _call(gw, "GET", "/v1/keys/me", first).status_code == 200  # still works
    # Another workspace's admin cannot see or revoke this workspace's keys.
    assert _call(gw, "DELETE", f"/v1/keys/{editor_id}", outsider).status_code == 404
    assert editor_id not in _call(gw, "GET", "/v1/keys", outsider).text
    # With a second admin, the first may go; then the second is the last.
    second = _call(gw, "POST", "/v1/keys", first, json={"name": "second", "role": "admin"})
    second_id, second_key = second.json()["key_id"], second.json()["key"]
    assert _call(gw, "DELETE", f"/v1/keys/{editor_id}", first).status_code == 200
    assert _call(gw, "DELETE", f"/v1/keys/{first_id}", second_key).status_code == 200
    assert _call(gw, "GET", "/v1/keys/me", first).status_code == 401
    last = _call(gw, "DELETE", f"/v1/keys/{second_id}", second_key)
    assert last.status_code == 409 and last.json()["error"]["code"] == "last_admin_key"


def test_concurrent_revocations_never_leave_a_workspace_without_an_admin(gw):
    async def run():
        a = await _key(gw["db"], gw["secret"], "ws-race", "a", Role.ADMIN)
        b = await _key(gw["db"], gw["secret"], "ws-race", "b", Role.ADMIN)
        async with httpx.AsyncClient(base_url=gw["url"], timeout=15) as client:
            # Each admin revokes the other at the same moment: one of them must be refused.
            return await asyncio.gather(*(
                client.delete(f"/v1/keys/{target[0]}",
                              headers={"Authorization": f"Bearer {actor[1]}"})
                for actor, target in ((a, b), (b, a))))

    statuses = sorted(r.status_code for r in asyncio.run(run()))
    assert statuses in ([200, 409], [200, 401]), statuses  # 401: the winner revoked it first
    db = asyncio.run(_active_admins(gw["db"], "ws-race"))
    assert db == 1


async def _active_admins(db_url: str, workspace: str) -> int:
    db = Database(db_url, min_size=1, max_size=1)
    try:
        keys = await PostgresKeyStore(db).list(workspace)
        return sum(1 for k in keys if k.role == Role.ADMIN and k.revoked_at is None)
    finally:
        await db.close()


def test_last_used_is_recorded_at_most_once_per_interval(gw):
    admin = gw["keys"][Role.ADMIN][1]
    made = _call(gw, "POST", "/v1/keys", admin, json={"name": "usage", "role": "editor"}).json()

    def last_used() -> str | None:
        rows = _call(gw, "GET", "/v1/keys", admin).json()["items"]
        return next(k for k in rows if k["key_id"] == made["key_id"])["last_used_at"]

    assert last_used() is None
    assert _call(gw, "GET", "/v1/brands", made["key"]).status_code == 200
    deadline = time.monotonic() + 10
    while (first := last_used()) is None:
        assert time.monotonic() < deadline, "last_used_at never written"
        time.sleep(0.1)
    # Within the interval (2 s here, 60 s by default) more requests write nothing.
    for _ in range(20):
        _call(gw, "GET", "/v1/brands", made["key"])
    time.sleep(0.5)
    assert last_used() == first
    time.sleep(2.1)
    _call(gw, "GET", "/v1/brands", made["key"])
    deadline = time.monotonic() + 10
    while last_used() == first:
        assert time.monotonic() < deadline, "last_used_at not refreshed after the interval"
        time.sleep(0.1)


# -- the migration ------------------------------------------------------------------------------
async def test_keys_that_existed_before_roles_become_admins():
    script = Path(gateway_migrate.__file__).resolve().parents[1] / "migrations"
    async with temp_database("t_gw_roles") as admin_db_url:
        engine = create_engine(admin_db_url.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            with engine.begin() as connection:
                cfg = Config()
                cfg.set_main_option("script_location", str(script))
                cfg.attributes["connection"] = connection
                command.upgrade(cfg, "0001")  # the schema before roles
        finally:
            engine.dispose()
        with psycopg.connect(admin_db_url, autocommit=True) as conn:
            conn.execute("INSERT INTO api_keys (key_id, workspace_id, name, digest) "
                         "VALUES ('00000000000000aa', 'ws-old', 'old', %s)", ("0" * 64,))
        database = urlsplit(admin_db_url).path.lstrip("/")
        await asyncio.to_thread(gateway_migrate.MIGRATION.run, postgres_admin_url(), database,
                                TEST_ROLE, TEST_PASSWORD)
        with psycopg.connect(admin_db_url, autocommit=True) as conn:
            row = conn.execute("SELECT role, last_used_at FROM api_keys "
                               "WHERE key_id = '00000000000000aa'").fetchone()
            assert row == ("admin", None)
            # The role is fixed: the trigger refuses a change, even by the table's owner.
            with pytest.raises(psycopg.errors.RaiseException):
                conn.execute("UPDATE api_keys SET role = 'viewer' "
                             "WHERE key_id = '00000000000000aa'")
