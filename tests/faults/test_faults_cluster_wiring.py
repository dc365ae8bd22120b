"""The fault harness's cluster wiring, without starting anything: with ``--instances 2`` every
consumer service runs as two processes with a port each, retrieval's second instance has an index
folder of its own, each process connects as its service's own Kafka principal while the CLI keeps
the admin's, evidence's instances fit its intake topics' partitions, and the fault deck kills
every process. The single node's wiring stays what it was (one process per service, no
principal). The benchmark's PLAINTEXT wiring (services on the measurement listener as
User:ANONYMOUS), the ``isr`` fault's steps on fakes, and the error path both scripts share. The
cluster run itself (minutes, three brokers and eleven processes) is
`scripts/faults.py --kafka cluster --instances 2`: docs/reliability.md."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def _wired(faults, tmp_path: Path, cluster: bool, instances: int, plaintext: bool = False):
    infra = faults.Infra(tmp_path, set(), cluster=cluster, plaintext=plaintext)
    bootstrap = f"127.0.0.1:{infra.cluster_port if cluster else infra.kafka_port}"
    infra.env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "REDIS_URL": "redis://127.0.0.1:1/0",
                 "ATTESTA_PG_ADMIN_URL": f"postgresql://a:b@127.0.0.1:{infra.pg_port}/postgres"}
    if cluster:  # what deploy/kafka/cluster.sh writes: env (admin) and env.<service>
        infra.cluster_dir.mkdir()
        for principal in ("admin", *faults.SERVICES):
            name = "env" if principal == "admin" else f"env.{principal}"
            (infra.cluster_dir / name).write_text(
                f"export KAFKA_BOOTSTRAP_SERVERS={bootstrap}\n"
                "export ATTESTA_KAFKA_SECURITY_PROTOCOL=SASL_SSL\n"
                "export ATTESTA_KAFKA_SASL_MECHANISM=SCRAM-SHA-512\n"
                f"export ATTESTA_KAFKA_SASL_USERNAME={principal}\n"
                f"export ATTESTA_KAFKA_SASL_PASSWORD=secret-of-{principal}\n"
                f"export ATTESTA_KAFKA_SSL_CAFILE={infra.cluster_dir}/tls/ca.pem\n")
        if plaintext:  # and env.plaintext, with the measurement listener
            bootstrap_plain = f"127.0.0.1:{infra.plaintext_port}"
            (infra.cluster_dir / "env.plaintext").write_text(
                f"export KAFKA_BOOTSTRAP_SERVERS={bootstrap_plain}\n"
                "export ATTESTA_KAFKA_SECURITY_PROTOCOL=PLAINTEXT\n"
                "export ATTESTA_KAFKA_SASL_USERNAME=\n"
                "export ATTESTA_KAFKA_SASL_PASSWORD=\n")
        infra.env.update(faults.read_env(infra.cluster_dir / "env"))
    return infra, faults.Services(infra, tmp_path, set(), instances)


def test_two_instances_per_consumer_service_each_as_its_own_principal(faults, tmp_path):
    infra, svc = _wired(faults, tmp_path, cluster=True, instances=2)
    assert svc.keys == ["classifier", "classifier#2", "evidence", "evidence#2", "retrieval",
                        "retrieval#2", "answer", "answer#2", "gateway", "collector",
                        "collector#2"]
    assert len({svc.port[k] for k in svc.keys}) == len(svc.keys)  # a port each
    assert len({infra.cluster_port + i for i in range(6)} & set(svc.port.values())) == 0
    envs = {k: svc.service_env(k) for k in svc.keys}
    for key, env in envs.items():
        assert env["ATTESTA_KAFKA_SASL_USERNAME"] == faults.base(key)
        assert env["ATTESTA_KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert svc.service_env("cli")["ATTESTA_KAFKA_SASL_USERNAME"] == "admin"
    assert envs["retrieval"]["ATTESTA_RETRIEVAL_STATE_DIR"] != \
        envs["retrieval#2"]["ATTESTA_RETRIEVAL_STATE_DIR"]
    assert envs["classifier#2"]["ATTESTA_CLASSIFIER_HTTP_PORT"] == str(svc.port["classifier#2"])
    # two evidence instances x one intake consumer per topic <= 3 partitions: both get some
    assert envs["evidence"]["ATTESTA_EVIDENCE_INTAKE_CONSUMERS"] == "1"
    # other services call the first instance's HTTP API
    assert envs["gateway"]["ATTESTA_CLASSIFIER_URL"].endswith(f":{svc.port['classifier']}")
    assert infra.options().sasl_username == "admin"
    assert svc.siblings("answer#2") == ["answer"] and svc.siblings("gateway") == []


def test_the_fault_deck_covers_every_kind_then_every_process(faults, tmp_path):
    infra, svc = _wired(faults, tmp_path, cluster=True, instances=2)
    inj = faults.Injector(infra, svc, random.Random(7), list(faults.CLUSTER_KINDS))
    first = [inj._next() for _ in faults.CLUSTER_KINDS]
    assert sorted(k for k, _ in first) == sorted(faults.CLUSTER_KINDS)
    inj.faults.append(faults.Fault("poison", "topics", 0.0))  # the first deck is done
    later = [inj._next() for _ in range(len(faults.CLUSTER_KINDS) - 1 + len(svc.keys))]
    assert {t for k, t in later if k == "kill"} == set(svc.keys)


def test_the_single_node_wiring_is_unchanged(faults, tmp_path):
    infra, svc = _wired(faults, tmp_path, cluster=False, instances=1)
    assert svc.keys == list(faults.SERVICES)
    env = svc.service_env("classifier")
    assert "ATTESTA_KAFKA_SASL_USERNAME" not in env
    assert "ATTESTA_EVIDENCE_INTAKE_CONSUMERS" not in svc.service_env("evidence")
    assert env["ATTESTA_RETRIEVAL_STATE_DIR"] == str(tmp_path / "retrieval")
    assert infra.options().security_protocol == "PLAINTEXT"
    assert infra._infra_env()["ATTESTA_KAFKA_MODE"] == "single"


def test_the_plaintext_measurement_wiring_puts_only_the_services_on_plaintext(faults, tmp_path):
    infra, svc = _wired(faults, tmp_path, cluster=True, instances=2, plaintext=True)
    assert infra._infra_env()["ATTESTA_KAFKA_CLUSTER_PLAINTEXT_PORT"] == str(infra.plaintext_port)
    assert not {infra.plaintext_port + i for i in range(3)} & \
        ({infra.cluster_port + i for i in range(6)} | set(svc.port.values()))
    for key in svc.keys:
        env = svc.service_env(key)
        assert env["ATTESTA_KAFKA_SECURITY_PROTOCOL"] == "PLAINTEXT"
        assert env["KAFKA_BOOTSTRAP_SERVERS"] == f"127.0.0.1:{infra.plaintext_port}"
        assert env["ATTESTA_KAFKA_SASL_USERNAME"] == "" and env["ATTESTA_KAFKA_SASL_PASSWORD"] == ""
    # set-up commands and the measuring clients stay the admin on SASL_SSL
    assert svc.service_env("cli")["ATTESTA_KAFKA_SASL_USERNAME"] == "admin"
    assert infra.options().security_protocol == "SASL_SSL"
    # the fault harness's own cluster has no PLAINTEXT listener
    harness = faults.Infra(tmp_path, set(), cluster=True)
    assert "ATTESTA_KAFKA_CLUSTER_PLAINTEXT_PORT" not in harness._infra_env()
    with pytest.raises(ValueError):
        faults.Infra(tmp_path, set(), cluster=False, plaintext=True)


class _Nodes:
    """The Infra calls the isr fault makes, recorded; ``refuse``: what the probe meets with two
    nodes down."""

    def __init__(self, refuse: bool) -> None:
        self.calls: list[tuple] = []
        self.running = {1, 2, 3}
        self.refuse = refuse

    def isr_probe(self, create: bool = False) -> tuple[bool, str]:
        self.calls.append(("probe", create, len(self.running)))
        if self.refuse and len(self.running) < 2:
            return False, "not acknowledged: NotEnoughReplicasError (leader 3, ISR [3])"
        return True, "acknowledged (leader 1, ISR [1, 2, 3])"

    def signal_node(self, node: int, sig: int) -> float:
        self.calls.append(("signal", node, sig))
        self.running.discard(node)
        return 0.5

    def up(self) -> None:
        self.calls.append(("up", len(self.running)))
        self.running = {1, 2, 3}


class _Ready:
    keys: list[str] = []
    procs: dict = {}

    def all_ready(self) -> bool:
        return True


@pytest.mark.parametrize("refuse", [True, False])
def test_the_isr_fault_stops_two_nodes_probes_and_starts_them(faults, monkeypatch, refuse):
    monkeypatch.setattr(faults.time, "sleep", lambda _s: None)
    nodes = _Nodes(refuse)
    inj = faults.Injector(nodes, _Ready(), random.Random(3), ["isr"])
    f = inj.inject()
    stops = [c for c in nodes.calls if c[0] == "signal"]
    # two distinct nodes, each a controlled shutdown (SIGTERM), one after the other
    assert len(stops) == 2 and stops[0][1] != stops[1][1]
    assert {c[2] for c in stops} == {signal.SIGTERM}
    assert f.target == f"nodes {stops[0][1]}+{stops[1][1]}"
    # the probe topic made while whole, a probe with one node left, then both started at once
    assert nodes.calls[0] == ("probe", True, 3)
    assert nodes.calls[3] == ("probe", False, 1) and nodes.calls[4] == ("up", 1)
    assert f.refused is refuse and 5 <= f.down_s <= 15 and f.t_ready is not None
    assert ("NotEnoughReplicasError" in f.note) is refuse
    name = "Kafka two of three nodes stopped 5-15 s (below min.insync.replicas)"
    assert "isr" in faults.CLUSTER_KINDS and "isr" not in faults.KINDS
    load = faults.Load("http://x", "k", [], random.Random(1), {})
    rows = faults.table(inj, load, {"lost": [], "doubled": []}, 0.0)
    assert [r["fault"] for r in rows if r["injected"]] == [name]


class _Down:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def down(self) -> None:
        self.calls.append("infra down")

    def stop_all(self) -> None:
        self.calls.append("services stopped")


def test_a_private_system_is_stopped_whatever_happens(faults):
    infra, result = _Down(), {}
    with faults.PrivateSystem(infra, result, "t") as system:
        system.svc = infra
        raise RuntimeError("boom")
    assert infra.calls == ["services stopped", "infra down"]  # and the error did not propagate
    assert "RuntimeError: boom" in result["error"]

    infra, result = _Down(), {}
    with pytest.raises(KeyboardInterrupt), faults.PrivateSystem(infra, result, "t"):
        raise KeyboardInterrupt  # Ctrl-C or SIGTERM: recorded, cleaned up, then on up
    assert infra.calls == ["infra down"] and "KeyboardInterrupt" in result["error"]

    infra, result = _Down(), {}
    with faults.PrivateSystem(infra, result, "t"):
        pass
    assert infra.calls == ["infra down"] and result == {}


def test_the_report_goes_between_its_own_markers(faults, tmp_path):
    page = tmp_path / "reliability.md"
    page.write_text("intro\n<!-- faults:begin -->\nold single\n<!-- faults:end -->\n"
                    "<!-- faults-cluster:begin -->\nold cluster\n<!-- faults-cluster:end -->\n")
    result = {"command": "scripts/faults.py --kafka cluster", "seed": 1, "kafka": "cluster",
              "instances": 2, "load_s": 1.0, "faults_injected": 0, "wall_s": 2.0,
              "table": [], "chat": {}, "ops": {}, "collections": {}, "engine_responses": 0,
              "engine_responses_included": 0, "load_average": None, "runs_acked": 0,
              "evidence_included": 0, "tree_heads_saved": 0, "tree_heads_consistent": 0,
              "all_leaves_verify": True, "dead_letters": {}, "lag_zero_after_load_s": 1.0,
              "lag_zero_after_last_fault_s": 1.0, "problems": []}
    faults.write_report(page, result, "faults-cluster-isr")
    text = page.read_text()
    assert "old single" in text and "old cluster" in text  # both kept
    assert text.count("<!-- faults-cluster-isr:begin -->") == 1
    faults.write_report(page, result)
    text = page.read_text()
    assert "old cluster" not in text and "old single" in text
    assert text.count("three Kafka nodes (SASL_SSL, SCRAM, ACLs)") == 2


def test_an_isr_witness_that_could_not_write_on_the_whole_cluster_gives_no_verdict(faults,
                                                                                     monkeypatch):
    monkeypatch.setattr(faults.time, "sleep", lambda _s: None)

    class NoTopic(_Nodes):
        def isr_probe(self, create: bool = False) -> tuple[bool | None, str]:
            super().isr_probe(create)
            return (None, "probe failed: no topic") if create else \
                (False, "not acknowledged: KafkaTimeoutError (leader None, ISR [])")

    f = faults.Injector(NoTopic(refuse=True), _Ready(), random.Random(3), ["isr"]).inject()
    assert f.refused is None and "probe failed" in f.note  # neither proof nor a problem
