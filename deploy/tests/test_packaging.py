"""Each Attesta package builds a wheel that carries what the installed service needs (Alembic
migrations, data files), and declares dependencies the runtime lock satisfies; test tools stay
out of that lock. Images install these wheels, not the source tree, so a file missing here is
missing in production (the classifier's migrations once lived outside its package)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
# Every package, including ones added later (a new service is checked without editing this file).
PACKAGES = sorted(str(p.parent.relative_to(REPO)) for pattern in ("libs/*/pyproject.toml",
                  "services/*/pyproject.toml") for p in REPO.glob(pattern))
TEST_TOOLS = {"pytest", "pytest-asyncio", "pytest-timeout", "hypothesis", "schemathesis",
              "testcontainers", "docker", "psutil"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line)
        if m:
            pins[_norm(m.group(1))] = m.group(2)
    return pins


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, zipfile.ZipFile]:
    out = tmp_path_factory.mktemp("wheels")
    built = {}
    for pkg in PACKAGES:
        dest = out / pkg.replace("/", "-")
        # --no-isolation: the venv's pinned setuptools, no download.
        subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                        str(dest), str(REPO / pkg)], check=True, capture_output=True, timeout=300)
        (whl,) = dest.glob("*.whl")
        built[pkg] = zipfile.ZipFile(whl)
    # build leaves build/ and *.egg-info next to the sources: remove what this test made.
    for pkg in PACKAGES:
        subprocess.run(["git", "-C", str(REPO), "clean", "-fdXq", "--", f"{pkg}/build",
                        f"{pkg}/src"], check=False, capture_output=True)
    return built


def test_classifier_wheel_carries_its_migrations(wheels: dict[str, zipfile.ZipFile]) -> None:
    names = set(wheels["services/classifier"].namelist())
    assert "attesta_classifier/migrations/env.py" in names
    assert "attesta_classifier/migrations/script.py.mako" in names
    versions = sorted(n for n in names if n.startswith("attesta_classifier/migrations/versions/")
                      and n.endswith(".py"))
    assert versions, "no classifier migration revisions in the wheel"
    # The migrate adapter finds them inside the package, not through the source tree.
    src = (REPO / "services/classifier/src/attesta_classifier/adapters/migrate.py").read_text()
    assert "parents[3]" not in src and "parents[1]" in src


@pytest.mark.parametrize("pkg,module", [("services/gateway", "attesta_gateway"),
                                        ("services/evidence", "attesta_evidence")])
def test_service_wheels_carry_migrations(wheels: dict[str, zipfile.ZipFile], pkg: str,
                                         module: str) -> None:
    names = set(wheels[pkg].namelist())
    assert f"{module}/migrations/env.py" in names
    assert any(n.startswith(f"{module}/migrations/versions/") and n.endswith(".py") for n in names)


@pytest.mark.parametrize("pkg", PACKAGES)
def test_every_tracked_source_file_is_in_the_wheel(wheels: dict[str, zipfile.ZipFile],
                                                   pkg: str) -> None:
    """Code and data alike (KB cards, labelled runs, schemas): what git tracks under src/."""
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", f"{pkg}/src"], check=True,
                             capture_output=True, text=True).stdout.split()
    expected = {t.split("/src/", 1)[1] for t in tracked}
    assert expected, pkg
    missing = sorted(expected - set(wheels[pkg].namelist()))
    assert not missing, f"{pkg}: not in the wheel (add them to package-data): {missing}"


def test_runtime_lock_is_the_dev_lock_without_test_tools() -> None:
    dev = _pins(REPO / "requirements/lock.txt")
    runtime = _pins(REPO / "requirements/runtime.txt")
    assert not (TEST_TOOLS & runtime.keys()), TEST_TOOLS & runtime.keys()
    differing = {n: (v, dev.get(n)) for n, v in runtime.items() if dev.get(n) != v}
    assert not differing, f"runtime.txt pins differ from lock.txt: {differing}"


@pytest.mark.parametrize("pkg", PACKAGES)
def test_declared_dependencies_are_pinned_in_the_runtime_lock(pkg: str) -> None:
    project = tomllib.loads((REPO / pkg / "pyproject.toml").read_text())["project"]
    runtime = _pins(REPO / "requirements/runtime.txt")
    ours = {_norm(tomllib.loads((REPO / p / "pyproject.toml").read_text())["project"]["name"])
            for p in PACKAGES}
    names = {_norm(re.split(r"[\[<>=!~ ;]", d, maxsplit=1)[0]) for d in project["dependencies"]}
    assert names, pkg
    unpinned = sorted(n for n in names - ours if n not in runtime)
    assert not unpinned, f"{pkg} depends on {unpinned}, which requirements/runtime.txt lacks"
