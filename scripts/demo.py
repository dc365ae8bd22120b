"""The main job of `scripts/up.sh`, against the running system through the gateway only.

1. A chat question: POST /v1/chat with the demo workspace's API key. The topics' end offsets
   before and after show it went through Kafka; the answer carries enriched citations (source
   URL, licence, and a 0-100 score on the `full` hybrid path).
2. The answer became a run: the classifier's verdict per tracked brand (GET /v1/runs/{id}).
3. The answer's exact bytes are public evidence: GET /v1/public/evidence/{sha256} with its
   inclusion proof, a byte-for-byte check, and the offline verifier (public key only).
4. An external engine's run (POST /v1/runs with an Idempotency-Key) that links a brand's site,
   classified STRONG.
5. Collection: a prompt set for the demo brands (JSONL import, then the same file again: nothing
   changes), two engines (our assistant over Kafka, and a local OpenAI-compatible fake engine
   started here on 127.0.0.1), a schedule with 3 samples run now; the classes of every sample,
   its cited sources labelled for the brand, and the metrics with both intervals.
6. Alerts: one rule (Lumora's citation rate), a signed-webhook channel to a receiver started
   here (on 127.0.0.1 locally; in the compose stack on the collector's network namespace, which
   this job shares, as http://collector:8096; the classifier's ATTESTA_ALERT_ALLOW names its
   port, set by scripts/up.sh and docker-compose.yml), and one **test** alert delivered to it:
   the demo's answers are all from today, so no closed week holds a real change to fire on. The
   receiver checks the signature with the secret the API showed once; the delivery log shows it
   delivered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

TOPICS = ["chat.requested.v1", "retrieval.completed.v1", "chat.answered.v1", "runs.recorded.v1",
          "evidence.recorded.v1", "classification.recorded.v1"]
QUESTION = "What is the usual adult dose of Velnorex?"


async def end_offsets() -> dict[str, int]:
    bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics(TOPICS)
    finally:
        await admin.close()
    parts = [TopicPartition(d["topic"], p["partition"]) for d in described
             for p in d.get("partitions", [])]
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await c.start()
    try:
        ends = await c.end_offsets(parts)
        return {t: sum(v for k, v in ends.items() if k.topic == t) for t in TOPICS}
    finally:
        await c.stop()


def poll(fn, what: str, timeout_s: float = 180.0):
    deadline = time.monotonic() + timeout_s
    while True:
        result = fn()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            sys.exit(f"[demo] FAILED: {what} not ready within {timeout_s:g} s")
        time.sleep(0.5)


def show_run(http: httpx.Client, run_id: str) -> dict:
    def classified():
        r = http.get(f"/v1/runs/{run_id}")
        if r.status_code != 200:
            return None
        view = r.json()
        return view if view["brands"] and all(b["status"] != "pending" for b in view["brands"]) else None

    view = poll(classified, f"classification of run {run_id}")
    for b in view["brands"]:
        how = b.get("decided_by") or "-"
        model = f" by {b['judge_model']}" if b.get("judge_model") else ""
        print(f"    {b['brand_id']:<10} {b['status']:<10} {b.get('citation_class') or '-':<13} "
              f"{how}{model}")
    return view


DEMO_PROMPTS = [
    {"text": "What does Lumora Therapeutics make?", "prompt_set": "demo-collection",
     "tags": {"topic": "company", "funnel": "awareness"}, "brand_ids": ["lumora"]},
    {"text": "Which medicines prevent episodic migraine?", "prompt_set": "demo-collection",
     "tags": {"topic": "migraine", "funnel": "consideration"}},
    {"text": "Is Lumora a good choice for migraine prevention?", "prompt_set": "demo-collection",
     "tags": {"topic": "migraine", "funnel": "decision"}, "brand_ids": ["lumora"]},
]


def start_fake_engine(brands: list[dict], port: int) -> tuple[subprocess.Popen, str]:
    """The fake engine on the port the operator allow-listed for it (ATTESTA_FETCH_ALLOW of
    scripts/up.sh and docker-compose.yml): the collector refuses every other loopback port."""
    import re
    import tempfile

    spec = [{"name": b["name"], "domain": b["domains"][0],
             "product": (b.get("products") or [{"name": "products"}])[0]["name"],
             "fact": f"headquartered in {b.get('headquarters', 'Europe')}"}
            for b in brands if b.get("domains")]
    path = os.path.join(tempfile.mkdtemp(), "brands.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    proc = subprocess.Popen([sys.executable, "-m", "attesta_collector.fake_engine", "--port", str(port),
                             "--brands", path], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    m = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
    if not m:
        proc.kill()
        sys.exit(f"[demo] FAILED: the fake engine did not start: {line!r}")
    return proc, m.group(1)


def run_view(http: httpx.Client, run_id: str, settle_s: float = 5.0) -> dict:
    """The run with its current classes: waits for it to be recorded, then at most
    ``settle_s`` for the judge; a pair the judge leaves pending is shown as pending."""
    view = poll(lambda: (lambda r: r.json() if r.status_code == 200 and r.json()["brands"]
                         else None)(http.get(f"/v1/runs/{run_id}")), f"run {run_id}")
    deadline = time.monotonic() + settle_s
    while any(b["status"] == "pending" for b in view["brands"]) and time.monotonic() < deadline:
        time.sleep(1)
        view = http.get(f"/v1/runs/{run_id}").json()
    return view


def put_or_create(http: httpx.Client, path: str, key: str, body: dict) -> dict:
    r = http.post(path, json=body)
    if r.status_code == 409:  # a previous demo made it: bring it up to date
        r = http.put(f"{path}/{body[key]}", json={k: v for k, v in body.items() if k != key})
    if r.status_code not in (200, 201):
        sys.exit(f"[demo] FAILED: {path} -> HTTP {r.status_code}: {r.text}")
    return r.json()


def demo_secret(http: httpx.Client, name: str = "demo-fake-engine-key") -> str:
    """The fake engine's key as a secret of the workspace: sent once, kept encrypted by the
    collector, never returned; the engine names it by id (a re-run finds the live one)."""
    r = http.post("/v1/secrets", json={"name": name, "value": f"sk-demo-{uuid.uuid4().hex}"})
    if r.status_code == 201:
        return r.json()["secret_id"]
    if r.status_code == 409:
        return next(s["secret_id"] for s in http.get("/v1/secrets").json()["items"]
                    if s["name"] == name)
    sys.exit(f"[demo] FAILED: /v1/secrets -> HTTP {r.status_code}: {r.text}")


def collection_demo(http: httpx.Client, engine_port: int) -> None:
    from attesta_kb import load_brands

    print("[demo] 5. collection: prompts x engines x samples on a schedule")
    brands = load_brands()
    lines = "".join(json.dumps(p) + "\n" for p in DEMO_PROMPTS).encode()
    for attempt in ("import", "re-import"):
        r = http.post("/v1/prompts/import", content=lines,
                      headers={"content-type": "application/x-ndjson"})
        if r.status_code != 200:
            sys.exit(f"[demo] FAILED: prompt import -> HTTP {r.status_code}: {r.text}")
        rep = r.json()
        print(f"  {attempt} of {len(DEMO_PROMPTS)} prompts (JSONL): accepted {rep['accepted']}, "
              f"unchanged {rep['unchanged']}, refused {rep['refused']}")
    for p in http.get("/v1/prompts", params={"prompt_set": "demo-collection"}).json()["items"]:
        print(f"    {p['prompt_id']}: branded={p['branded']!s:<5} tags={p['tags']} {p['text']!r}")
    fake, url = start_fake_engine(brands, engine_port)
    secret_id = demo_secret(http)
    try:
        put_or_create(http, "/v1/engines", "engine_id", {
            "engine_id": "demo-assistant", "kind": "assistant", "name": "attesta-assistant",
            "concurrency": 4, "timeout_s": 60})
        put_or_create(http, "/v1/engines", "engine_id", {
            "engine_id": "demo-fake", "name": "local-fake-engine", "base_url": url,
            "model": "fake-demo-1", "concurrency": 4, "timeout_s": 10,
            "api_key_secret_id": secret_id,
            "retry": {"attempts": 3, "initial_backoff_s": 0.2, "max_backoff_s": 2}})
        print(f"  engines: demo-assistant (our assistant, over Kafka), demo-fake ({url}, its key "
              f"the workspace secret {secret_id}, on the operator's allow-list)")
        put_or_create(http, "/v1/schedules", "schedule_id", {
            "schedule_id": "demo-daily", "name": "demo, daily at 09:00 UTC",
            "prompt_sets": ["demo-collection"], "engine_ids": ["demo-assistant", "demo-fake"],
            "cron": "0 9 * * *", "samples": 3, "missed_slots": "skip"})
        r = http.post("/v1/schedules/demo-daily/run", json={})
        if r.status_code != 202:
            sys.exit(f"[demo] FAILED: run schedule -> HTTP {r.status_code}: {r.text}")
        slot = r.json()["slot"]
        print(f"  schedule demo-daily (cron 0 9 * * *, 3 samples) run now for slot {slot}: "
              f"{r.json()['new_collections']} new samples (a re-run of the same slot adds none)")

        def finished():
            r = http.get("/v1/collections", params={
                "schedule_id": "demo-daily", "slot": slot, "brand_id": "lumora", "limit": 1000})
            if r.status_code == 503:  # the brands (classifier) slow to answer: ask again
                return None
            if r.status_code != 200:
                sys.exit(f"[demo] FAILED: GET /v1/collections -> HTTP {r.status_code}: {r.text}")
            items = r.json()["items"]
            open_ = [c for c in items if c["status"] in ("pending", "awaiting_reply")]
            return items if items and not open_ else None

        items = poll(finished, "the schedule's samples", timeout_s=240)
    finally:
        fake.terminate()
    prompts = {p["prompt_id"]: p for p in http.get("/v1/prompts").json()["items"]}
    raw_checked = None
    for c in sorted(items, key=lambda c: (c["engine_id"], c["prompt_id"], c["sample"])):
        text = prompts.get(c["prompt_id"], {}).get("text", c["prompt_id"])
        print(f"  {c['engine_id']:<15} sample {c['sample']} {text[:45]!r:<48} {c['status']}"
              + (f" ({c['reason']})" if c["reason"] else ""))
        if c["status"] != "collected":
            continue
        view = run_view(http, c["run_id"])
        classes = ", ".join(f"{b['brand_id']}={b.get('citation_class') or b['status']}"
                            for b in view["brands"] if b["status"] == "pending"
                            or (b["status"] == "classified" and b.get("citation_class") != "ABSENT"))
        print(f"      run {c['run_id'][:24]}: {classes or 'every tracked brand ABSENT'}")
        if c["sources"]:
            print("      sources: " + ", ".join(f"{s['domain']} [{s['label']}, {s['origin']}]"
                                                 for s in c["sources"]))
        if raw_checked is None and c.get("raw_response_sha256"):
            raw_checked = c
    if raw_checked is not None:
        # The engine's raw body is public evidence too: fetch it from the collector, check it
        # against the public log by its hash.
        sha = raw_checked["raw_response_sha256"]
        body = http.get(f"/v1/collections/{raw_checked['collection_id']}/raw").content
        ev = poll(lambda: (lambda x: x.json() if x.status_code == 200 else None)(
            http.get(f"/v1/public/evidence/{sha}")), "the raw response's evidence record")
        chk = http.post(f"/v1/public/evidence/{sha}/check",
                        json={"content": body.decode("utf-8")}).json()
        print(f"  raw engine response of {raw_checked['run_id'][:24]}: {len(body)} bytes, "
              f"public evidence {sha[:12]}... references {ev.get('references')}, "
              f"check -> match={chk.get('match')}")

    def iv(lo, hi):
        return "[  n/a  ]" if lo is None else f"[{lo:.2f}, {hi:.2f}]"

    def figure(name, r):
        value = "-" if r["value"] is None else f"{r['value']:.2f}"
        bp = r.get("by_prompt") or {}
        return (f"{name} {value} Wilson {iv(r['ci95_low'], r['ci95_high'])} by-prompt "
                f"{iv(bp.get('ci95_low'), bp.get('ci95_high'))}")

    def show(params: dict, label) -> None:
        r = http.get("/v1/metrics", params={"period": "day", "brand_id": "lumora", **params})
        if r.status_code != 200:
            sys.exit(f"[demo] FAILED: GET /v1/metrics {params} -> HTTP {r.status_code}: {r.text}")
        rows = r.json()["rows"]  # the day the samples were answered (not the slot's day)
        latest = max((row["period_start"] for row in rows), default=None)
        rows = [row for row in rows if row["period_start"] == latest]
        print(f"  GET /v1/metrics?period=day&brand_id=lumora&group_by={params['group_by']}")
        for row in rows:
            cr, bp = row["citation_rate"], row.get("citation_rate_by_prompt") or {}
            share = row.get("source_share") or {}
            change = row.get("citation_rate_change")
            print(f"    {label(row):<28} n={row['n']:<3} "
                  + figure("citation", {**cr, "by_prompt": bp})
                  + f" ({bp.get('prompts', 0)} prompts)"
                  + (f"; vs {change['previous_period_start'][:10]}: "
                     f"{'significant' if change['significant'] else 'not significant'}"
                     if change else ""))
            if share:
                print(f"      sources over {share['answers']} answers: "
                      + "; ".join(figure(k, share[k]) for k in ("owned", "competitor", "third_party")))
            if row.get("top_domains"):
                print("      top cited: " + ", ".join(f"{d['domain']} {d['answers']} ({d['label']})"
                                                      for d in row["top_domains"][:5]))

    print("  metrics of lumora on the latest day (95% intervals: Wilson over answers, and a seeded "
          "bootstrap over prompts):")
    show({"group_by": "engine"}, lambda r: f"engine {r['engine']}")
    show({"group_by": ""}, lambda r: "all engines")
    show({"group_by": "branded"}, lambda r: f"{'branded' if r['branded'] else 'unbranded'} prompts")
    show({"group_by": "topic"}, lambda r: f"topic {r['topic']}")


class AlertReceiver:
    """The demo's webhook receiver (standard library, in a thread): answers 200 and
    keeps each request with its signature checked, as docs/alerts.md tells a receiver to (the
    raw bytes, the channel's secret, a 5-minute window)."""

    def __init__(self, port: int, listen: str = "127.0.0.1", url_host: str | None = None) -> None:
        from attesta_classifier.domain.notifications import (
            DELIVERY_ID_HEADER, SIGNATURE_HEADER, SignatureInvalid, verify_signature)

        self.secret = ""
        self.got: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    verify_signature(outer.secret, self.headers.get(SIGNATURE_HEADER, ""), body,
                                     time.time(), 300)
                    signature = "valid"
                except SignatureInvalid as exc:
                    signature = f"invalid ({exc.reason})"
                outer.got.append({"path": self.path, "body": json.loads(body or b"{}"),
                                  "delivery_id": self.headers.get(DELIVERY_ID_HEADER),
                                  "signature": signature})
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((listen, port), Handler)
        self.url = f"http://{url_host or listen}:{self.server.server_address[1]}/attesta-alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


ALERT_RULE_NAME = "demo: Lumora citation rate"
ALERT_CHANNEL_NAME = "demo receiver"
# Earlier versions' name: a re-run against an older database replaces that channel too (it would
# otherwise get the test alert as well, signed with a secret the new receiver does not know).
ALERT_CHANNEL_OLD_NAMES = ("demo receiver (127.0.0.1)",)


def alerts_demo(http: httpx.Client, port: int, listen: str = "127.0.0.1", url_host: str | None = None,
                brand_id: str = "lumora") -> dict:
    """Step 6; returns the delivered test alert's detail."""
    print(f"[demo] 6. alerts: a rule, a signed webhook to a receiver on {url_host or listen}, a test alert")
    rules = http.get("/v1/alerts/rules").json()["items"]
    rule = next((r for r in rules if r["name"] == ALERT_RULE_NAME), None)
    if rule is None:  # a re-run keeps the rule it made
        r = http.post("/v1/alerts/rules", json={
            "brand_id": brand_id, "metric": "citation_rate", "direction": "either",
            "name": ALERT_RULE_NAME}, headers={"idempotency-key": str(uuid.uuid4())})
        if r.status_code != 201:
            sys.exit(f"[demo] FAILED: POST /v1/alerts/rules -> HTTP {r.status_code}: {r.text}")
        rule = r.json()
    print(f"  rule {rule['rule_id']}: {brand_id} citation rate, either way, fires only on a "
          f"statistically real change between two closed weeks, never below {rule['min_n']} "
          f"answers or {rule['min_prompts']} prompts a week")
    try:
        receiver = AlertReceiver(port, listen, url_host)
    except OSError as exc:
        sys.exit(f"[demo] FAILED: the alert receiver cannot listen on {listen}:{port}: {exc}")
    try:
        # A channel's secret is shown once: a re-run replaces the channel it made before (its
        # undelivered alerts end as "channel deleted").
        for ch in http.get("/v1/alerts/channels").json()["items"]:
            if ch["name"] in (ALERT_CHANNEL_NAME, *ALERT_CHANNEL_OLD_NAMES):
                http.delete(f"/v1/alerts/channels/{ch['channel_id']}")
        r = http.post("/v1/alerts/channels", json={"kind": "webhook", "target": receiver.url,
                                                   "name": ALERT_CHANNEL_NAME})
        if r.status_code == 422:
            reason = (r.json().get("error") or {}).get("reason", r.text)
            sys.exit(f"[demo] FAILED: channel to {receiver.url} refused: {reason} (the classifier's "
                     "ATTESTA_ALERT_ALLOW must name the receiver's address and port)")
        if r.status_code != 201:
            sys.exit(f"[demo] FAILED: POST /v1/alerts/channels -> HTTP {r.status_code}: {r.text}")
        channel = r.json()
        receiver.secret = channel["secret"]
        print(f"  channel {channel['channel_id']}: signed webhook -> {receiver.url} (its signing "
              "secret was shown this once; the receiver checks every request with it)")
        print("  the demo's answers are all from today: no closed week holds a real change, so "
              "this is a test alert (marked test) with the rule's figures over the last closed week")
        r = http.post(f"/v1/alerts/rules/{rule['rule_id']}/test")
        if r.status_code != 202:
            sys.exit(f"[demo] FAILED: send a test alert -> HTTP {r.status_code}: {r.text}")
        alert_id = r.json()["alert_id"]
        print(f"  POST /v1/alerts/rules/{rule['rule_id']}/test -> 202, alert {alert_id}, "
              f"{r.json()['deliveries']} delivery(ies)")

        def delivered():
            detail = http.get(f"/v1/alerts/{alert_id}").json()
            ours = [d for d in detail["deliveries"] if d["channel_id"] == channel["channel_id"]]
            return detail if ours and ours[0]["status"] == "delivered" else None

        detail = poll(delivered, "the test alert's delivery", timeout_s=60)
        got = [g for g in receiver.got if g["body"].get("alert_id") == alert_id]
        if len(got) != 1 or got[0]["signature"] != "valid":
            sys.exit(f"[demo] FAILED: the receiver got {got!r}")
        body = got[0]["body"]
        print(f"  the receiver got {body['type']} for {body['brand']['name']} "
              f"({body['metric']}): signature {got[0]['signature']}, delivery id "
              f"{got[0]['delivery_id']}")
        for d in detail["deliveries"]:
            print(f"  delivery log: {d['kind']} {d['status']} after {d['attempts']} attempt(s) "
                  f"at {d['delivered_at']}")
        return detail
    finally:
        receiver.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gateway", default="http://127.0.0.1:8080")
    ap.add_argument("--api-key", required=True)
    ap.add_argument("--engine-port", type=int,
                    default=int(os.environ.get("ATTESTA_DEMO_ENGINE_PORT", "8095")),
                    help="the fake engine's port: the one the collector's allow-list names")
    ap.add_argument("--alert-port", type=int,
                    default=int(os.environ.get("ATTESTA_DEMO_ALERT_PORT", "8096")),
                    help="the alert receiver's port: the one the classifier's ATTESTA_ALERT_ALLOW "
                         "names")
    ap.add_argument("--alert-listen", default="127.0.0.1",
                    help="the address the alert receiver listens on (0.0.0.0 in the compose stack)")
    ap.add_argument("--alert-url-host", default=None,
                    help="the host name the classifier sends alerts to (default: --alert-listen; "
                         "'collector' in the compose stack, whose network namespace this job shares)")
    args = ap.parse_args()
    public = httpx.Client(base_url=args.gateway, timeout=60)
    private = httpx.Client(base_url=args.gateway, timeout=60,
                           headers={"authorization": f"Bearer {args.api_key}"})

    print(f"[demo] 1. POST /v1/chat {QUESTION!r} (with the demo workspace's key)")
    before = asyncio.run(end_offsets())
    # With the key the answer is a run of `demo`, classified against its brands; an anonymous
    # chat would be recorded in the internal `assistant-public` workspace instead.
    r = private.post("/v1/chat", json={"question": QUESTION})
    after = asyncio.run(end_offsets())
    if r.status_code != 200:
        sys.exit(f"[demo] FAILED: /v1/chat -> HTTP {r.status_code}: {r.text}")
    reply = r.json()
    print(f"  HTTP 200, hybrid path {reply.get('hybrid_path')!r}, generator {reply['generator']!r}")
    print(f"  answer: {reply['answer']}")
    for c in reply["citations"]:
        print(f"  cites {c['card_id']}: score={c.get('retrieved_score', '(absent)')} "
              f"licence={c.get('source_license', '(absent)')} url={c.get('source_url', '(absent)')}")
    for t in TOPICS[:3]:
        print(f"  {t}: end offset {before[t]} -> {after[t]}")

    run_id, sha = reply.get("run_id"), reply.get("answer_sha256")
    if run_id:
        print(f"[demo] 2. our own answer as run {run_id}: classes per tracked brand")
        show_run(private, run_id)

    print(f"[demo] 3. public evidence for the answer's bytes (sha256 {sha})")
    ev = poll(lambda: (lambda x: x.json() if x.status_code == 200 and x.json().get("inclusion")
                       else None)(public.get(f"/v1/public/evidence/{sha}")), "evidence record")
    print(f"  GET /v1/public/evidence/{sha[:12]}...: {ev['size_bytes']} bytes, leaf "
          f"{ev['inclusion']['leaf_index']} of tree size {ev['tree_head']['tree_size']}")
    chk = public.post(f"/v1/public/evidence/{sha}/check", json={"content": reply["answer"]}).json()
    print(f"  POST .../check with the answer text -> match={chk.get('match')}")
    # The verifier trusts nothing the server says: only the public key, which the operator
    # publishes out of band (here: the file `attesta evidence keygen` wrote next to the key).
    pem = os.environ.get("ATTESTA_EVIDENCE_SIGNING_KEY_FILE",
                         ".state/evidence/log-signing-key.pem") + ".pub"
    verify = subprocess.run(
        [sys.executable, "-m", "attesta_platform.cli", "evidence", "verify", "inclusion",
         "--base-url", args.gateway, "--public-key", pem, "--content", reply["answer"]],
        capture_output=True, text=True)
    print(f"  attesta evidence verify inclusion -> exit {verify.returncode}: "
          f"{(verify.stdout or verify.stderr).strip().splitlines()[-1] if (verify.stdout or verify.stderr).strip() else ''}")
    if verify.returncode != 0:
        sys.exit("[demo] FAILED: the offline verifier did not accept the proof")

    print("[demo] 4. an external engine's run (POST /v1/runs, Idempotency-Key)")
    body = {"engine": "demo-engine", "model": "demo-model",
            "prompt": "Which companies make migraine medicines?",
            "answer": "Lumora Therapeutics (https://lumora.example/products) makes Velnorex.",
            "brand_ids": ["lumora"]}
    ik = str(uuid.uuid4())
    first = private.post("/v1/runs", json=body, headers={"idempotency-key": ik})
    again = private.post("/v1/runs", json=body, headers={"idempotency-key": ik})
    if first.status_code != 202:
        sys.exit(f"[demo] FAILED: POST /v1/runs -> HTTP {first.status_code}: {first.text}")
    print(f"  HTTP {first.status_code} run {first.json()['run_id']}; replay with the same key -> "
          f"HTTP {again.status_code}, same body: {again.json() == first.json()}")
    show_run(private, first.json()["run_id"])
    collection_demo(private, args.engine_port)
    alerts_demo(private, args.alert_port, args.alert_listen, args.alert_url_host)
    print("[demo] done. Try it yourself:")
    print(f"  curl -s {args.gateway}/v1/public/evidence/{sha}")
    print(f"  curl -s -X POST {args.gateway}/v1/public/evidence/{sha}/check "
          f"-H 'content-type: application/json' -d {json.dumps(json.dumps({'content': reply['answer']}))}")


if __name__ == "__main__":
    main()
