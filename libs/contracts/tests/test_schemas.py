"""The committed schema snapshots are the code's schemas, and no topic changed incompatibly."""

from __future__ import annotations

import json

import pytest

from attesta_contracts import all_topics
from attesta_contracts.compat import breaking_changes
from attesta_contracts.schemas import (
    SNAPSHOT_DIR,
    check_snapshots,
    envelope_schema,
    load_snapshot,
    main,
    render,
    snapshot_path,
    write_snapshots,
)

pytestmark = pytest.mark.unit

TOPICS = sorted(all_topics().values(), key=lambda t: t.name)


@pytest.mark.parametrize("topic", TOPICS, ids=lambda t: t.name)
def test_committed_snapshot_equals_code(topic):
    path = snapshot_path(topic)
    assert path.exists(), f"no snapshot for {topic.name}: run python -m attesta_contracts.schemas --write"
    assert path.read_text(encoding="utf-8") == render(envelope_schema(topic)), (
        f"{path.name} is out of date: run `python -m attesta_contracts.schemas --write`, "
        "review the diff, and bump the topic version if the change is breaking"
    )


@pytest.mark.parametrize("topic", TOPICS, ids=lambda t: t.name)
def test_no_breaking_change_against_committed_snapshot(topic):
    assert breaking_changes(load_snapshot(topic), envelope_schema(topic)) == []


def test_no_stray_snapshots():
    names = {p.name for p in SNAPSHOT_DIR.glob("*.json")}
    assert names == {f"{t.name}.json" for t in TOPICS}
    assert check_snapshots() == []


@pytest.mark.parametrize("topic", TOPICS, ids=lambda t: t.name)
def test_schema_is_validation_mode_envelope(topic):
    schema = envelope_schema(topic)
    assert set(schema["required"]) >= {"event_type", "schema_version", "correlation_id",
                                       "producer", "payload"}
    payload = schema["properties"]["payload"]["$ref"].rsplit("/", 1)[-1]
    assert payload == topic.payload.__name__
    assert payload in schema["$defs"]


def test_snapshot_format(tmp_path):
    write_snapshots(tmp_path)
    text = (tmp_path / "chat.answered.v1.json").read_text(encoding="utf-8")
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_check_cli_detects_drift(tmp_path, capsys):
    assert main(["--write", "--dir", str(tmp_path)]) == 0
    assert main(["--check", "--dir", str(tmp_path)]) == 0
    path = tmp_path / "chat.answered.v1.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    schema["$defs"]["Citation"]["properties"]["card_id"]["maxLength"] = 5
    path.write_text(render(schema), encoding="utf-8")
    (tmp_path / "kb.cards.v1.json").unlink()
    capsys.readouterr()
    assert main(["--check", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "out of date" in err and "chat.answered.v1.json" in err
    assert "missing snapshot" in err and "kb.cards.v1.json" in err
    assert "maxLength" in err  # the diff itself is shown
