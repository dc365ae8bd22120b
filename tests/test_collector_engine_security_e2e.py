"""Engine secrets and the outbound policy against the real processes (issue #23): `attesta run
collector` (migrated by `attesta collector migrate`) behind `attesta run gateway`, real
Kafka/PostgreSQL/Redis, and local HTTP servers on 127.0.0.1 standing for what an attacker aims
at. The collector's operator allow-list names two of them only: `sink` (an engine a tenant may
use) and `redirector` (an allowed engine that answers with redirects and error bodies).
`internal` stands for the system's internal ports: it is never allowed, and nothing may ever
reach it. A stub answers the collector's brand look-ups (no brands), so prompts can be made
without the classifier.

The probe that filed #23 saw, on the old code: an engine naming ATTESTA_INTERNAL_TOKEN, a key
file or /etc/hostname sent their values to a listener; internal ports, [::1], mapped and numeric
IPv4 spellings, userinfo and empty hosts accepted; a 302/307 to an internal port followed; up to
300 bytes of an upstream body in the collection's reason. Each test below fails there.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import pytest
import pytest_asyncio

from tests.gateway_fakes import (
    ROOT,
    GatewayProcess,
    free_port,
    make_key,
    migrated_database,
    wait_http,
)
from attesta_testing.infra import kafka_bootstrap, postgres_admin_url, redis_url

pytestmark = pytest.mark.integration

UPSTREAM_MARKER = "UPSTREAM-BODY-7f3c"  # what an upstream says; it must never reach the API
OPERATOR_VAR = f"ATTESTA_T_OPS_KEY_{uuid.uuid4().hex[:6].upper()}"
UNSET_VAR = f"ATTESTA_T_UNSET_{uuid.uuid4().hex[:6].upper()}"
COMPLETION = {"id": "c1", "model": "sink-1", "choices": [{"index": 0, "message": {
    "role": "assistant", "content": "An answer from the sink engine."}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 6, "total_tokens": 9}}


class Recorder(ThreadingHTTPServer):
    """A local server that records every request it gets (method, path, headers, body)."""

    daemon_threads = True

    def __init__(self, answer) -> None:
        self.seen: list[dict] = []
        self.answer = answer
        super().__init__(("127.0.0.1", 0), _Handler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, *args) -> None:
        return

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append({"method": self.command, "path": self.path,
                                 "headers": dict(self.headers), "body": body})
        status, headers, out = self.server.answer(self.command, self.path)
        self.send_response(status)
        for k, v in {"Content-Length": str(len(out)), **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = _any  # noqa: N815


def _sink(method: str, path: str):
    return 200, {"Content-Type": "application/json"}, json.dumps(COMPLETION).encode()


def _internal(method: str, path: str):
    return 200, {"Content-Type": "application/json"}, json.dumps(
        {"choices": [{"message": {"content": f"internal data {UPSTREAM_MARKER}"}}]}).encode()


def _brands(method: str, path: str):
    return 200, {"Content-Type": "application/json"}, b'{"items": []}'


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def system(tmp_path_factory):
    logs = tmp_path_factory.mktemp("collector-security")
    tag = uuid.uuid4().hex[:8]
    token, gw_secret = secrets.token_urlsafe(32), secrets.token_urlsafe(48)
    internal = Recorder(_internal)
    sink = Recorder(_sink)

    def redirect(method: str, path: str):
        code = int(path.split("/")[1][1:])  # /r307/chat/completions -> 307
        if 300 <= code < 400:
            return code, {"Location": f"http://127.0.0.1:{internal.port}/steal"}, b""
        return code, {"Content-Type": "application/json"}, (
            json.dumps({"error": {"message": UPSTREAM_MARKER}}).encode())

    redirector = Recorder(redirect)
    classifier = Recorder(_brands)
    admin = urlsplit(postgres_admin_url())
    col_db, col_port = f"t_colsec_{tag}", free_port()
    env = {"ATTESTA_COLLECTOR_DATABASE": col_db, "ATTESTA_INTERNAL_TOKEN": token,
           "ATTESTA_COLLECTOR_DATABASE_URL": urlunsplit(admin._replace(
               netloc=f"attesta_collector:attesta-collector-dev-only@{admin.hostname}:"
                      f"{admin.port}", path=f"/{col_db}")),
           "ATTESTA_COLLECTOR_HTTP_PORT": str(col_port),
           "ATTESTA_CLASSIFIER_URL": f"http://127.0.0.1:{classifier.port}",
           "ATTESTA_COLLECTOR_CONSUMER_GROUP": f"t-colsec-{tag}",
           "ATTESTA_COLLECTOR_SECRETS_KEK": base64.b64encode(os.urandom(32)).decode(),
           "ATTESTA_COLLECTOR_KEY_CACHE_S": "0",  # a retired secret stops at the next call
           "ATTESTA_FETCH_ALLOW": f"127.0.0.1:{sink.port},127.0.0.1:{redirector.port}",
           "ATTESTA_COLLECTOR_OPERATOR_KEYS": json.dumps({"ws-a": {
               "ops-key": f"env:{OPERATOR_VAR}", "listed-but-unset": f"env:{UNSET_VAR}"}}),
           OPERATOR_VAR: "sk-operator-provided", "ATTESTA_LOG_JSON": "false"}
    env = {**{k: v for k, v in os.environ.items() if k != UNSET_VAR}, **env}
    out = subprocess.run([sys.executable, "-m", "attesta_platform.cli", "collector", "migrate"],
                         env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    log = logs / "collector.log"
    proc = subprocess.Popen([sys.executable, "-m", "attesta_platform.cli", "run", "collector"],
                            env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT,  # noqa: SIM115
                            cwd=ROOT)
    gw = None
    try:
        async with migrated_database() as gw_db:
            keys = {ws: (await make_key(gw_db, gw_secret, ws))[1] for ws in ("ws-a", "ws-b")}
            gw = GatewayProcess({
                "ATTESTA_GATEWAY_DB_URL": gw_db, "ATTESTA_GATEWAY_SECRET": gw_secret,
                "ATTESTA_INTERNAL_TOKEN": token, "REDIS_URL": redis_url(),
                "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap(),
                "ATTESTA_CLASSIFIER_URL": f"http://127.0.0.1:{classifier.port}",
                "ATTESTA_EVIDENCE_URL": f"http://127.0.0.1:{classifier.port}",
                "ATTESTA_COLLECTOR_URL": f"http://127.0.0.1:{col_port}",
                "ATTESTA_RATE_LIMIT_PREFIX": f"t-colsec-{tag}:",
                "ATTESTA_RATE_LIMIT_PER_KEY": "100000"}, logs, "gateway").start()
            wait_http(f"http://127.0.0.1:{col_port}/readyz", proc, timeout=90, log=log)
            try:
                yield {"url": gw.url, "keys": keys, "sink": sink, "internal": internal,
                       "redirector": redirector, "collector_port": col_port,
                       "gateway_port": gw.port, "token": token, "log": log,
                       # the admin's URL of the collector's database (every table readable)
                       "db_url": urlunsplit(admin._replace(path=f"/{col_db}"))}
            finally:
                gw.stop()
    finally:
        if gw is not None:
            gw.stop()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        for server in (internal, sink, redirector, classifier):
            server.stop()
        conn = await asyncpg.connect(postgres_admin_url())
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{col_db}" WITH (FORCE)')
        finally:
            await conn.close()


def _client(system, ws: str = "ws-a") -> httpx.Client:
    return httpx.Client(base_url=system["url"], timeout=60,
                        headers={"Authorization": f"Bearer {system['keys'][ws]}"})


def _engine(c: httpx.Client, **spec) -> httpx.Response:
    return c.post("/v1/engines", json={"name": "probe", "model": "m", "timeout_s": 5,
                                       "retry": {"attempts": 1}, **spec})


def _collect(c: httpx.Client, engine_ids: list[str], timeout_s: float = 60) -> dict[str, dict]:
    """One prompt x ``engine_ids`` planned now and collected; each engine's collection."""
    prompt_set = f"p{uuid.uuid4().hex[:8]}"
    r = c.post("/v1/prompts", json={"text": f"Which sleep tracker? {prompt_set}",
                                    "prompt_set": prompt_set})
    assert r.status_code == 201, r.text
    r = c.post("/v1/schedules", json={"engine_ids": engine_ids, "interval_s": 3600,
                                      "prompt_sets": [prompt_set]})
    assert r.status_code == 201, r.text
    schedule_id = r.json()["schedule_id"]
    assert c.post(f"/v1/schedules/{schedule_id}/run", json={}).status_code == 202
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        items = c.get("/v1/collections", params={"schedule_id": schedule_id}).json()["items"]
        if len(items) == len(engine_ids) and all(i["status"] in ("collected", "failed")
                                                 for i in items):
            return {i["engine_id"]: i for i in items}
        time.sleep(0.2)
    raise AssertionError(f"not collected in time: {items}")


def test_an_engine_cannot_name_a_file_or_variable_of_the_server(system):
    """The exfiltration attempts of the probe: each is a 422 that says to store a secret, and
    the engine's endpoint (allowed, listening) receives nothing."""
    sink = system["sink"]
    before = len(sink.seen)
    base = f"http://127.0.0.1:{sink.port}/v1"
    with _client(system) as c:
        for ref in ({"api_key_env": "ATTESTA_INTERNAL_TOKEN"},
                    {"api_key_env": "ATTESTA_PG_ADMIN_URL"},
                    {"api_key_env": "NO_SUCH_VARIABLE_ANYWHERE"},
                    {"api_key_file": "/etc/hostname"},
                    {"api_key_file": ".state/demo-api-key"},
                    {"api_key_file": "../../../../etc/passwd"},
                    {"api_key_file": "/nonexistent/key"}):
            r = _engine(c, base_url=base, **ref)
            assert r.status_code == 422, (ref, r.text)
            reason = r.json()["error"]["reason"]
            assert "POST /v1/secrets" in reason and "not set" not in reason, reason
        # An operator key is a name the operator listed for this workspace: an unlisted name
        # and a listed one whose variable is not set read the same (no existence oracle).
        reasons = set()
        for name in ("ATTESTA_INTERNAL_TOKEN", "listed-but-unset", "never-listed"):
            r = _engine(c, base_url=base, operator_key=name)
            assert r.status_code == 422, (name, r.text)
            reasons.add(r.json()["error"]["reason"])
        assert reasons == {"operator_key: the operator provides no key of this name to this "
                           "workspace"}
        r = _engine(c, base_url=base, operator_key="../../etc/hostname")
        assert r.status_code == 422 and "operator_key" in r.json()["error"]["reason"]
        # The same on update.
        created = _engine(c, base_url=base).json()
        r = c.put(f"/v1/engines/{created['engine_id']}", json={
            "name": "probe", "base_url": base, "api_key_env": "ATTESTA_INTERNAL_TOKEN"})
        assert r.status_code == 422, r.text
    with _client(system, "ws-b") as c:  # another workspace may not use ws-a's operator key
        r = _engine(c, base_url=base, operator_key="ops-key")
        assert r.status_code == 422, r.text
    time.sleep(1.0)
    assert sink.seen[before:] == []


def test_each_ssrf_spelling_is_refused_at_create_and_update_and_reads_the_same(system):
    internal, sink = system["internal"], system["sink"]
    closed = free_port()
    targets = {  # what each spelling aims at: loopback (internal ports, open or closed) etc.
        "open internal port": f"http://127.0.0.1:{internal.port}/v1",
        "closed port": f"http://127.0.0.1:{closed}/v1",
        "the collector": f"http://127.0.0.1:{system['collector_port']}/v1",
        "the gateway": f"http://127.0.0.1:{system['gateway_port']}/v1",
        "8081": "http://127.0.0.1:8081/v1", "8082": "http://127.0.0.1:8082/v1",
        "8085": "http://127.0.0.1:8085/v1",
        "IPv6 loopback": f"http://[::1]:{internal.port}/v1",
        "IPv4-mapped": f"http://[::ffff:127.0.0.1]:{internal.port}/v1",
        "IPv4-mapped hex": f"http://[::ffff:7f00:1]:{internal.port}/v1",
        "decimal": f"http://2130706433:{internal.port}/v1",
        "octal": f"http://0177.0.0.1:{internal.port}/v1",
        "hex": f"http://0x7f.1:{internal.port}/v1",
        "short": f"http://127.1:{internal.port}/v1",
        "localhost": f"http://localhost:{internal.port}/v1",
        "unspecified": f"http://0.0.0.0:{internal.port}/v1",
        "metadata": "http://169.254.169.254/latest/meta-data",
        "private": "http://10.0.0.1/v1",
        # an allowed address:port, but with credentials, or no host at all
        "userinfo": f"http://u:p@127.0.0.1:{sink.port}/v1",
        "empty host": "http:///x",
    }
    loopback = "base_url: loopback address refused by the outbound policy"
    with _client(system) as c:
        existing = _engine(c, base_url=f"http://127.0.0.1:{sink.port}/v1").json()["engine_id"]
        reasons = {}
        for what, url in targets.items():
            r = _engine(c, base_url=url)
            assert r.status_code == 422, (what, r.text)
            reasons[what] = r.json()["error"]["reason"]
            r = c.put(f"/v1/engines/{existing}", json={"name": "probe", "base_url": url})
            assert r.status_code == 422, (what, r.text)
    # Open and closed ports, and every service's port, read exactly the same: no port scan.
    assert {reasons[k] for k in ("open internal port", "closed port", "the collector",
                                 "the gateway", "8081", "8082", "8085", "IPv6 loopback",
                                 "IPv4-mapped", "IPv4-mapped hex", "localhost")} == {loopback}
    assert all("non-canonical" in reasons[k] for k in ("decimal", "octal", "hex", "short"))
    assert "link-local" in reasons["metadata"] and "private" in reasons["private"]
    assert "credentials" in reasons["userinfo"]
    assert not any(str(internal.port) in r or str(closed) in r for r in reasons.values())
    time.sleep(0.5)
    assert internal.seen == []


def test_redirects_are_not_followed_and_only_the_status_reaches_the_tenant(system):
    internal, redirector = system["internal"], system["redirector"]
    with _client(system) as c:
        ids = {}
        for code in (301, 302, 303, 307, 308, 400, 401, 500):
            r = _engine(c, base_url=f"http://127.0.0.1:{redirector.port}/r{code}")
            assert r.status_code == 201, r.text
            ids[r.json()["engine_id"]] = code
        collected = _collect(c, list(ids))
        for engine_id, code in ids.items():
            item = collected[engine_id]
            assert item["status"] == "failed", item
            kind = "server_error" if code >= 500 else "client_error"
            note = " (redirects are not followed)" if code < 400 else ""
            assert item["reason"] == f"{kind}: HTTP {code} from the engine{note} (after 1 attempt)"
            assert c.get(f"/v1/collections/{item['collection_id']}/raw").status_code == 404
            assert UPSTREAM_MARKER not in c.get(f"/v1/collections/{item['collection_id']}").text
        listed = c.get("/v1/collections").text
    assert UPSTREAM_MARKER not in listed
    assert {s["path"].split("/")[1] for s in redirector.seen} >= {"r307", "r308"}
    assert internal.seen == []  # no hop was followed, with or without the POST body


def test_every_call_is_checked_again_even_for_an_engine_stored_before_the_policy(system):
    """Engines already in the database (made before the policy, or whose host resolves
    elsewhere now) are refused when they call, before anything is sent."""
    import asyncio

    internal = system["internal"]
    rows = {"legacy-literal": f"http://127.0.0.1:{internal.port}/v1",
            "legacy-name": f"http://localhost:{internal.port}/v1",
            "legacy-mapped": f"http://[::ffff:127.0.0.1]:{internal.port}/v1"}

    async def store() -> None:
        conn = await asyncpg.connect(system["db_url"])
        try:
            for engine_id, url in rows.items():
                await conn.execute(
                    "INSERT INTO engines (workspace_id, engine_id, spec) VALUES ('ws-a', $1, $2)",
                    engine_id, json.dumps({"name": engine_id, "base_url": url, "model": "m",
                                           "timeout_s": 5, "retry": {"attempts": 1}}))
        finally:
            await conn.close()

    asyncio.run(store())
    with _client(system) as c:
        collected = _collect(c, list(rows))
    for engine_id in rows:
        assert collected[engine_id]["status"] == "failed"
        assert collected[engine_id]["reason"] == (
            "client_error: base_url: loopback address refused by the outbound policy "
            "(after 1 attempt)"), collected[engine_id]
    assert internal.seen == []


def test_a_secret_is_write_only_sealed_at_rest_and_usable_by_its_workspace_only(system):
    import asyncio

    sink, value = system["sink"], f"sk-live-{secrets.token_hex(16)}"
    base = f"http://127.0.0.1:{sink.port}/v1"
    with _client(system) as a, _client(system, "ws-b") as b:
        r = a.post("/v1/secrets", json={"name": "openai prod", "value": value})
        assert r.status_code == 201, r.text
        secret = r.json()
        assert set(secret) == {"secret_id", "name", "created_at", "retired_at"}
        assert a.post("/v1/secrets", json={"name": "openai prod", "value": "x"}).status_code == 409
        listed = a.get("/v1/secrets")
        assert [s["secret_id"] for s in listed.json()["items"]] == [secret["secret_id"]]
        engine = _engine(a, base_url=base, api_key_secret_id=secret["secret_id"])
        assert engine.status_code == 201, engine.text
        engine_id = engine.json()["engine_id"]
        responses = [r, listed, engine, a.get("/v1/engines")]
        # The key works: the engine sends it to its endpoint, and only there.
        before = len(sink.seen)
        assert _collect(a, [engine_id])[engine_id]["status"] == "collected"
        assert [s["headers"].get("Authorization") for s in sink.seen[before:]] == [
            f"Bearer {value}"]
        # Another workspace: its id is unknown there, exactly like an id that does not exist.
        r_other = _engine(b, base_url=base, api_key_secret_id=secret["secret_id"])
        r_none = _engine(b, base_url=base, api_key_secret_id="sec-does-not-exist")
        assert r_other.status_code == r_none.status_code == 422
        assert r_other.json()["error"]["reason"] == r_none.json()["error"]["reason"]
        assert b.get("/v1/secrets").json()["items"] == []
        assert b.post(f"/v1/secrets/{secret['secret_id']}/retire").status_code == 404
        # An operator key listed for ws-a reaches its engine (and is never stored either).
        ops = _engine(a, base_url=base, operator_key="ops-key")
        assert ops.status_code == 201, ops.text
        before = len(sink.seen)
        ops_id = ops.json()["engine_id"]
        assert _collect(a, [ops_id])[ops_id]["status"] == "collected"
        assert sink.seen[before]["headers"].get("Authorization") == "Bearer sk-operator-provided"
        # Retired: its sealed value is erased and the engine stops sending it at once.
        retired = a.post(f"/v1/secrets/{secret['secret_id']}/retire")
        assert retired.status_code == 200 and retired.json()["retired_at"]
        responses += [retired, a.get("/v1/secrets", params={"include_retired": "true"})]
        before = len(sink.seen)
        after = _collect(a, [engine_id])[engine_id]
        assert after["status"] == "failed" and after["reason"].startswith(
            "no_key: api_key_secret_id: no usable secret"), after
        assert sink.seen[before:] == []
        assert _engine(a, base_url=base,
                       api_key_secret_id=secret["secret_id"]).status_code == 422
    assert not any(value in resp.text for resp in responses)

    async def stored() -> list[str]:
        conn = await asyncpg.connect(system["db_url"])  # as the admin: every table
        try:
            tables = [t["tablename"] for t in await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
            return [row[0] for t in tables
                    for row in await conn.fetch(f'SELECT t::text FROM "{t}" t')]
        finally:
            await conn.close()

    dump = "\n".join(asyncio.run(stored()))
    assert secret["secret_id"] in dump  # the row is there, and the key in it is not:
    assert value not in dump and value.encode().hex() not in dump
    assert base64.b64encode(value.encode()).decode() not in dump
    assert value not in Path(system["log"]).read_text(errors="replace")
