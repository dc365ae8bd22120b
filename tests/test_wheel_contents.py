"""What the runtime wheels hold: the packages the services' images install (read from
deploy/docker/Dockerfile), each built here as a wheel from a copy of its source, the way the
image build does. No tests, no test helpers or fakes (they live in tests/support, the
attesta-testing package), no evaluation data and no KB generator or brand-site server ships in a
service's image; attesta-kb's file list is pinned exactly.

Building the ten wheels takes about 5 s (setuptools from the venv, no network, no isolation).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "deploy" / "docker" / "Dockerfile"
# The one image for one-shot jobs and the demo's client; the only one allowed the dev packages.
TOOLS_STAGE = "tools"
# Packages for development, tests, benchmarks and the demo, never a service's image.
DEV_PACKAGES = {"libs/kb-tools", "eval/classifier", "tests/support"}

# attesta-kb: the loaders and the data the services read at run time, nothing else. The
# generator, its seeds, the scale-out, the brand sites and the degraded-card fixture are in
# libs/kb-tools. queries.jsonl is read at run time by retrieval's reranker training
# (`attesta retrieval train-reranker`, service_layer/reranker_training.py); it leaves with that
# training (issue #27 item 6).
KB_FILES = {
    "attesta_kb/__init__.py",
    "attesta_kb/dataset.py",
    "attesta_kb/text.py",
    "attesta_kb/written_forms.py",  # a question's spelled names and numbers in words, read by retrieval and answer
    "attesta_kb/py.typed",
    "attesta_kb/data/__init__.py",
    "attesta_kb/data/brands.json",
    "attesta_kb/data/cards.jsonl",
    "attesta_kb/data/queries.jsonl",
}

# Test helpers and fakes live in tests/support (the attesta-testing package: infra, chat_server,
# collector, evidence, llm; issue #27 item 6 moved them out of the runtime packages), the
# gateway's in tests/gateway_fakes.py. None is left in a runtime wheel.
#
# A module whose name says "fake" but that is a feature of the product's demo, not a test
# helper: the local OpenAI-compatible engine that scripts/demo.py starts (in the tools image,
# sharing the collector's network; `scripts/up.sh` runs the demo) so a fresh install collects
# answers without an outside engine. Tests and the benchmark use it too. Exactly these; one that
# is gone fails too.
DEMO_FEATURES = {"attesta_collector/fake_engine.py"}

_TEST_FILE = re.compile(r"(^test_.*\.py$)|(_test\.py$)|(^conftest\.py$)")
_FAKE_MODULE = re.compile(r"(^|_)(fake|fakes|testing|mock|mocks|stub|stubs)(_|\.py$)")
_EVAL_DATA = re.compile(r"heldout|held_out|never_tune|labell?ed|degraded|golden|judge_dev", re.I)
_GENERATOR = re.compile(r"^(builder|sites|generate|_vocab|_brands_seed)\.py$")


def _stages() -> dict[str, list[str]]:
    """Each Dockerfile stage's local packages (the ./paths its venv-install lines name)."""
    stages: dict[str, list[str]] = {}
    current = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        start = re.match(r"FROM\s+\S+\s+AS\s+(\S+)", line, re.I)
        if start:
            current = start.group(1)
            stages[current] = []
            continue
        if current:
            stages[current] += [p.rstrip("/") for p in re.findall(r"(?<=\s)\./([\w./-]+)", line)]
    return stages


def _runtime_packages() -> list[str]:
    stages = _stages()
    return sorted({p for name, paths in stages.items() if name != TOOLS_STAGE for p in paths})


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, list[str]]:
    """{package path: the file names in its wheel (dist-info apart)}."""
    work = tmp_path_factory.mktemp("wheels")
    out = {}
    for package in _runtime_packages():
        source = work / "src" / package
        source.mkdir(parents=True)
        for name in ("pyproject.toml", "README.md", "setup.cfg", "setup.py"):
            if (ROOT / package / name).is_file():
                shutil.copy2(ROOT / package / name, source / name)
        shutil.copytree(ROOT / package / "src", source / "src",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
        dist = work / "dist" / package
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from setuptools import build_meta as b;"
             " print(b.build_wheel(sys.argv[1]))", str(dist)],
            cwd=source, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{package}: the wheel did not build:\n{done.stderr[-2000:]}"
        wheel = dist / done.stdout.strip().splitlines()[-1]
        with zipfile.ZipFile(wheel) as z:
            out[package] = sorted(n for n in z.namelist() if ".dist-info/" not in n)
    return out


def test_the_service_images_install_no_dev_package():
    stages = _stages()
    assert stages.get(TOOLS_STAGE), "the Dockerfile has no tools stage"
    runtime = _runtime_packages()
    assert "libs/kb" in runtime and "services/gateway" in runtime, runtime
    wrong = {name: sorted(DEV_PACKAGES & set(paths)) for name, paths in stages.items()
             if name != TOOLS_STAGE and DEV_PACKAGES & set(paths)}
    assert not wrong, f"development packages in a service's image: {wrong}"


def test_attesta_kb_holds_only_what_services_read(wheels):
    assert set(wheels["libs/kb"]) == KB_FILES


def test_no_tests_fakes_eval_data_or_generator_in_a_runtime_wheel(wheels):
    problems = []
    for package, files in wheels.items():
        for name in files:
            path = PurePosixPath(name)
            if "tests" in path.parts[:-1] or _TEST_FILE.search(path.name):
                problems.append(f"{package}: test file {name}")
            if _EVAL_DATA.search(name):
                problems.append(f"{package}: evaluation data or fixture {name}")
            if path.parts[0] in ("attesta_kb_tools", "attesta_classifier_eval") or (
                    path.parts[0] == "attesta_kb" and _GENERATOR.match(path.name)):
                problems.append(f"{package}: development package {name}")
            if _FAKE_MODULE.search(path.name) and name not in DEMO_FEATURES:
                problems.append(f"{package}: test helper or fake {name}")
    assert not problems, "\n".join(problems)


def test_the_only_fake_named_modules_shipped_are_the_demo_features(wheels):
    shipped = {name for files in wheels.values() for name in files}
    assert DEMO_FEATURES <= shipped, f"gone from the wheels: {sorted(DEMO_FEATURES - shipped)}"
    fakes = {name for name in shipped if _FAKE_MODULE.search(PurePosixPath(name).name)}
    assert fakes == DEMO_FEATURES, f"fake-named modules in the runtime wheels: {sorted(fakes)}"


def test_no_runtime_module_imports_pytest(wheels):
    importing = []
    for package, files in wheels.items():
        for name in files:
            if not name.endswith(".py"):
                continue
            text = (ROOT / package / "src" / name).read_text(encoding="utf-8")
            if re.search(r"^\s*(import pytest|from pytest\b|from _pytest\b)", text, re.M):
                importing.append(f"{package}: {name}")
    assert not importing, f"runtime modules importing pytest: {importing}"
