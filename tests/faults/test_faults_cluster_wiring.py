"""The fault harness's cluster wiring, without starting anything: with ``--instances 2`` every
consumer service runs as two processes with a port each, retrieval's second instance has an index
folder of its own, each process connects as its service's own Kafka principal while the CLI keeps
the admin's, evidence's instances fit its intake topics' partitions, and the fault deck kills
every process. The single node's wiring stays what it was (one process per service, no
principal). The cluster run itself (minutes, three brokers and eleven processes) is
`scripts/faults.py --kafka cluster --instances 2`: docs/scaling.md."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def faults():
    spec = importlib.util.spec_from_file_location("attesta_faults_harness",
                                                  ROOT / "scripts" / "faults.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _wired(faults, tmp_path: Path, cluster: bool, instances: int):
    infra = faults.Infra(tmp_path, set(), cluster=cluster)
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
