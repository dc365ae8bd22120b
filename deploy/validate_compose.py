"""Static validation of docker-compose.yml and deploy/docker/Dockerfile: quick checks before
anything is built (CI then builds and runs the stack for real with deploy/compose.sh).

    .venv/bin/python deploy/validate_compose.py [--compose docker-compose.yml]

Exit 0 when every check passes; 1 with a list of problems otherwise.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import yaml

REPO = Path(__file__).resolve().parent.parent

REQUIRED_SERVICES = {"kafka", "postgres", "redis", "chroma", "retrieval", "answer", "classifier", "evidence", "gateway"}
DOCKERFILE = REPO / "deploy" / "docker" / "Dockerfile"
# Made by deploy/build-images.sh before a build (git-ignored), so absent in a fresh clone.
GENERATED_CONTEXT = ("deploy/.build", "deploy/.kafka-libs")
APP_ENV = ("KAFKA_BOOTSTRAP_SERVERS", "ATTESTA_PG_ADMIN_URL", "REDIS_URL", "ATTESTA_CHROMA_URL")
DEPENDS_CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
SERVICE_CONTAINER_PORTS = {"kafka": 9092, "postgres": 5432, "redis": 6379, "chroma": 8000}

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$\$")


class Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.passed = 0

    def check(self, ok: bool, what: str) -> bool:
        if ok:
            self.passed += 1
        else:
            self.problems.append(what)
        return ok


def interpolate(value, env: dict[str, str], unset: set[str]):
    """Compose-style ${VAR}, ${VAR:-default}, ${VAR-default}, $$ substitution (enough for checks)."""
    if isinstance(value, str):
        def sub(m: re.Match) -> str:
            if m.group(0) == "$$":
                return "$"
            name, default = m.group(1), m.group(2)
            if name in env:
                return env[name]
            if default is None:
                unset.add(name)
                return ""
            return default
        return _VAR.sub(sub, value)
    if isinstance(value, list):
        return [interpolate(v, env, unset) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env, unset) for k, v in value.items()}
    return value


def as_env_dict(env) -> dict[str, str]:
    if env is None:
        return {}
    if isinstance(env, dict):
        return {str(k): "" if v is None else str(v) for k, v in env.items()}
    out = {}
    for item in env:
        k, _, v = str(item).partition("=")
        out[k] = v
    return out


def depends_on_names(dep) -> dict[str, str]:
    if dep is None:
        return {}
    if isinstance(dep, list):
        return {str(d): "service_started" for d in dep}
    return {str(k): (v or {}).get("condition", "service_started") for k, v in dep.items()}


def command_words(cmd) -> list[str]:
    if cmd is None:
        return []
    if isinstance(cmd, str):
        return cmd.split()
    return [str(c) for c in cmd]


def known_python_services() -> set[str]:
    """Services that `attesta run X` can name: a package under services/X/ with its module."""
    out = set()
    for d in (REPO / "services").iterdir() if (REPO / "services").is_dir() else []:
        if (d / "pyproject.toml").is_file() and (d / "src" / f"attesta_{d.name}").is_dir():
            out.add(d.name)
    return out


def check_dockerfile(c: Checker, dockerfile: Path, context: Path) -> None:
    text = dockerfile.read_text()
    # Join continuation lines, drop comments.
    lines, buf = [], ""
    for raw in text.splitlines():
        s = raw.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        buf += " " + s.rstrip("\\").strip() if buf else s.rstrip("\\").strip()
        if not s.endswith("\\"):
            lines.append(buf)
            buf = ""
    args = {}
    stages: list[str] = []
    saw_cmd = False
    for line in lines:
        instr, _, rest = line.partition(" ")
        instr = instr.upper()
        if instr == "ARG" and not stages:
            k, _, v = rest.partition("=")
            args[k.strip()] = v.strip()
        elif instr == "FROM":
            m = re.match(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            c.check(bool(m), f"{dockerfile}: unparsable FROM: {line}")
            if m:
                image = re.sub(r"\$\{?(\w+)\}?", lambda mm: args.get(mm.group(1), ""), m.group(1))
                c.check(bool(image) and (image in stages or ":" in image or "@" in image),
                        f"{dockerfile}: FROM {m.group(1)} resolves to '{image}', not a pinned image or earlier stage")
                stages.append(m.group(2) or f"#{len(stages)}")
        elif instr in ("COPY", "ADD"):
            parts = rest.split()
            from_stage = next((p.split("=", 1)[1] for p in parts if p.startswith("--from=")), None)
            paths = [p for p in parts if not p.startswith("--")]
            if from_stage is not None:
                c.check(from_stage in stages[:-1], f"{dockerfile}: COPY --from={from_stage} names no earlier stage")
                continue
            for src in paths[:-1]:
                if src.startswith(GENERATED_CONTEXT):
                    continue
                c.check((context / src).exists(), f"{dockerfile}: COPY source '{src}' missing in build context {context}")
        elif instr == "RUN":
            for pkg in re.findall(r"\./((?:libs|services)/[\w.-]+)", rest):
                c.check((context / pkg / "pyproject.toml").is_file(),
                        f"{dockerfile}: installs ./{pkg}, which has no pyproject.toml")
        elif instr in ("CMD", "ENTRYPOINT"):
            saw_cmd = True
    c.check(len(stages) >= 2, f"{dockerfile}: expected a multi-stage build, found {len(stages)} stage(s)")
    c.check(saw_cmd, f"{dockerfile}: no CMD/ENTRYPOINT")
    # Every package that scripts/install.sh installs should be in the image too.
    install_sh = (REPO / "scripts" / "install.sh")
    if install_sh.is_file():
        for pkg in re.findall(r"-e\s+((?:libs|services)/[\w.-]+)", install_sh.read_text()):
            c.check(f"./{pkg}" in text, f"{dockerfile}: scripts/install.sh installs {pkg} but the image does not")


def dockerfile_stage_cmds(dockerfile: Path) -> dict[str, list[str]]:
    """{stage name: its CMD as a list} (a stage inherits its parent's CMD)."""
    cmds: dict[str, list[str]] = {}
    current = None
    for line in dockerfile.read_text().splitlines():
        m = re.match(r"FROM\s+(\S+)\s+AS\s+(\S+)", line.strip(), re.I)
        if m:
            current = m.group(2)
            cmds[current] = list(cmds.get(m.group(1), []))
        elif current and line.startswith("CMD "):
            try:
                cmds[current] = json.loads(line[4:])
            except ValueError:
                cmds[current] = line[4:].split()
    return cmds


def check_kafka_cluster_id(c: Checker, cid: str) -> None:
    ok = len(cid) == 22 and not cid.startswith("-")
    if ok:
        try:
            ok = len(base64.urlsafe_b64decode(cid + "==")) == 16
        except Exception:  # noqa: BLE001
            ok = False
    c.check(ok, f"kafka: CLUSTER_ID '{cid}' is not a 22-character base64 UUID")


def docker_compose_config(compose: Path) -> tuple[str, str]:
    """Try the real compose parser. Returns (status, detail)."""
    candidates = []
    if shutil.which("docker"):
        candidates.append(["docker", "compose"])
    if shutil.which("docker-compose"):
        candidates.append(["docker-compose"])
    for base in candidates:
        try:
            ver = subprocess.run([*base, "version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if ver.returncode != 0:
            continue
        res = subprocess.run([*base, "-f", str(compose), "config", "-q"], capture_output=True, text=True,
                             timeout=60, cwd=compose.parent)
        if res.returncode == 0:
            return "ok", f"`{' '.join(base)} config -q` accepted the file ({ver.stdout.strip().splitlines()[0]})"
        return "fail", f"`{' '.join(base)} config -q` rejected the file:\n{res.stderr.strip()}"
    return "unavailable", "no docker compose plugin or docker-compose binary here; real compose parsing skipped"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compose", default=str(REPO / "docker-compose.yml"))
    args = ap.parse_args()
    compose = Path(args.compose).resolve()
    c = Checker()

    raw = yaml.safe_load(compose.read_text())
    c.check(isinstance(raw, dict) and isinstance(raw.get("services"), dict), "compose: no services mapping")
    unset: set[str] = set()
    env = {k: v for k, v in os.environ.items() if k == "ATTESTA_PG_ADMIN_PASSWORD"}
    doc = interpolate(raw, env, unset)
    c.check(not unset, f"compose: variables without defaults would be empty: {sorted(unset)}")
    services: dict = doc["services"]
    names = set(services)
    c.check(REQUIRED_SERVICES <= names, f"compose: missing services {sorted(REQUIRED_SERVICES - names)}")
    for key in doc:
        c.check(key in {"services", "volumes", "networks", "configs", "secrets", "name"} or key.startswith("x-"),
                f"compose: unknown top-level key '{key}'")

    known = known_python_services()
    stage_cmds = dockerfile_stage_cmds(DOCKERFILE)
    dockerfiles: set[tuple[Path, Path]] = {(DOCKERFILE, REPO)}
    c.check(bool(known), "no services/<name>/ packages found to match `attesta run` against")
    declared_volumes = set((doc.get("volumes") or {}).keys())
    graph: dict[str, set[str]] = {}

    for name, svc in services.items():
        where = f"service '{name}'"
        c.check(isinstance(svc, dict) and ("image" in svc or "build" in svc), f"{where}: needs image or build")
        image = str(svc.get("image", ""))
        repo_, _, tag_ = image.partition(":")
        target = repo_.removeprefix("attesta/")
        if c.check(repo_.startswith("attesta/") and bool(tag_) and tag_ != "latest",
                   f"{where}: image should be attesta/<Dockerfile target>:<tag>, is '{image}'"):
            c.check(target in stage_cmds, f"{where}: image {image} names no target of {DOCKERFILE}")
        build = svc.get("build")
        if build is not None:
            ctx = build if isinstance(build, str) else build.get("context", ".")
            ctx_path = (compose.parent / ctx).resolve()
            dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
            df_path = (ctx_path / dockerfile).resolve()
            if c.check(ctx_path.is_dir(), f"{where}: build context {ctx_path} does not exist") and \
               c.check(df_path.is_file(), f"{where}: Dockerfile {df_path} does not exist"):
                dockerfiles.add((df_path, ctx_path))

        deps = depends_on_names(svc.get("depends_on"))
        graph[name] = set(deps)
        for dep, cond in deps.items():
            c.check(dep in names, f"{where}: depends_on '{dep}', which is not a service")
            c.check(cond in DEPENDS_CONDITIONS, f"{where}: depends_on {dep} has unknown condition '{cond}'")
            if cond == "service_healthy" and dep in services:
                c.check(bool((services[dep].get("healthcheck") or {}).get("test")),
                        f"{where}: waits for {dep} to be healthy, but {dep} has no healthcheck")

        hc = svc.get("healthcheck") or {}
        one_shot = str(svc.get("restart", "")) == "no"  # a set-up job that exits: nothing to probe
        if not one_shot:
            c.check(bool(hc.get("test")) and not hc.get("disable"), f"{where}: no healthcheck")
        if isinstance(hc.get("test"), list) and hc["test"]:
            c.check(hc["test"][0] in ("CMD", "CMD-SHELL", "NONE"), f"{where}: healthcheck test must start with CMD or CMD-SHELL")

        words = command_words(svc.get("command"))
        if "attesta" in words and not one_shot:
            i = words.index("attesta")
            ok = len(words) > i + 2 and words[i + 1] == "run"
            if c.check(ok, f"{where}: command {words} is not `attesta run <service>`"):
                target = words[i + 2]
                c.check(target in known, f"{where}: `attesta run {target}` names no known service ({sorted(known)})")
                c.check(target == name, f"{where}: runs `attesta run {target}`; expected it to run '{name}'")
        if name in known:
            run = words or stage_cmds.get(target, [])
            c.check(run[-3:] == ["attesta", "run", name],
                    f"{where}: a Python service should run `attesta run {name}` (command or image CMD)")
            senv = as_env_dict(svc.get("environment"))
            for var in APP_ENV:
                c.check(bool(senv.get(var)), f"{where}: environment lacks {var}")
            for var in APP_ENV:
                val = senv.get(var, "")
                if not val:
                    continue
                u = urlsplit(val if "://" in val else f"kafka://{val}")
                c.check(u.hostname in names, f"{where}: {var}={val} points at host '{u.hostname}', not a compose service")
                if u.hostname in SERVICE_CONTAINER_PORTS:
                    c.check(u.port == SERVICE_CONTAINER_PORTS[u.hostname],
                            f"{where}: {var} uses port {u.port}, {u.hostname} listens on {SERVICE_CONTAINER_PORTS[u.hostname]}")
            pg = urlsplit(senv.get("ATTESTA_PG_ADMIN_URL", ""))
            pg_env = as_env_dict(services.get("postgres", {}).get("environment"))
            c.check(pg.username == pg_env.get("POSTGRES_USER") and pg.password == pg_env.get("POSTGRES_PASSWORD"),
                    f"{where}: ATTESTA_PG_ADMIN_URL credentials differ from the postgres service's POSTGRES_USER/PASSWORD")
            for other in senv.values():
                m = re.match(r"https?://([\w-]+):(\d+)", other)
                if m and m.group(1) in known:
                    target_env = as_env_dict(services[m.group(1)].get("environment"))
                    # The internal APIs name their own port variable (ATTESTA_<SERVICE>_HTTP_PORT).
                    port_var = f"ATTESTA_{m.group(1).upper()}_HTTP_PORT"
                    port = target_env.get(port_var, target_env.get("ATTESTA_HTTP_PORT"))
                    c.check(port == m.group(2),
                            f"{where}: calls {m.group(0)}, but {m.group(1)} has {port_var}={port}")

        for vol in svc.get("volumes") or []:
            src = vol.split(":", 1)[0] if isinstance(vol, str) else (vol or {}).get("source", "")
            if src and not src.startswith((".", "/", "~")):
                c.check(src in declared_volumes, f"{where}: named volume '{src}' not declared under volumes:")

    # gateway published on 8080
    gw_ports = [str(p) for p in (services.get("gateway", {}).get("ports") or [])]
    c.check(any(p.split(":")[-2:] == ["8080", "8080"] or p == "8080:8080" for p in gw_ports),
            f"gateway: port 8080 not published (ports={gw_ports})")

    # depends_on cycles
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for d in graph.get(n, ()):
            if state.get(d) == 1:
                c.check(False, f"compose: depends_on cycle {' -> '.join(path + [d])}")
            elif d in graph and not state.get(d):
                visit(d, path + [d])
        state[n] = 2

    for n in graph:
        if not state.get(n):
            visit(n, [n])
    c.check(True, "depends_on graph is acyclic")

    # Kafka one-node settings
    kenv = as_env_dict(services.get("kafka", {}).get("environment"))
    # (one KRaft node: the image's entrypoint writes the settings, as scripts/infra does)
    check_kafka_cluster_id(c, kenv.get("KAFKA_CLUSTER_ID", ""))
    c.check(kenv.get("KAFKA_ADVERTISED_ADDRESS") == "kafka:9092",
            "kafka: KAFKA_ADVERTISED_ADDRESS must be kafka:9092 for the other containers")

    for df, ctx in sorted(dockerfiles):
        check_dockerfile(c, df, ctx)
        ignore = df.with_name(df.name + ".dockerignore")
        c.check(ignore.is_file() or (ctx / ".dockerignore").is_file(),
                f"{df}: no .dockerignore: .venv and .state would be sent to the build")

    status, detail = docker_compose_config(compose)
    if status == "fail":
        c.check(False, detail)
    print(f"[compose] {detail}")

    if c.problems:
        print(f"[compose] INVALID: {len(c.problems)} problem(s), {c.passed} checks ok:")
        for p in c.problems:
            print(f"  - {p}")
        return 1
    print(f"[compose] OK: {c.passed} static checks over {len(services)} services and "
          f"{len(dockerfiles)} Dockerfile(s) (deploy/compose.sh builds and runs them for real)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
