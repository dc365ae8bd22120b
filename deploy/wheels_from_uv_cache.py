"""Re-packs wheels the host already has, unpacked, in uv's cache, so the image wheelhouse does not
download the runtime lock a second time (3 GB with torch's CUDA libraries).

    python3 deploy/wheels_from_uv_cache.py REQUIREMENTS OUT_DIR [--uv-cache DIR]

uv keeps every wheel it installed unpacked under <cache>/archive-v0/<id>/, as the wheel's own
files (its *.dist-info carries WHEEL, METADATA and RECORD). A wheel is that tree zipped, named
<name>-<version>-<tags>.whl. Each file is checked against RECORD's sha256 while it is copied, so
a re-packed wheel holds exactly the files of the one the host installed; a tree that does not
match is skipped (wheelhouse.sh then fetches that wheel). Prints the requirement lines it could
not re-pack, one a line, for the caller to fetch.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import sys
import zipfile
from email.parser import HeaderParser
from pathlib import Path


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _pins(requirements: Path) -> list[tuple[str, str, str]]:
    """(line, normalised name, version) for each `name==version` line."""
    pins = []
    for line in requirements.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        if m:
            pins.append((line.strip(), _norm(m.group(1)), m.group(2)))
    return pins


def _unpacked(cache: Path) -> dict[tuple[str, str], list[Path]]:
    """(normalised name, version) -> the dist-info folders of unpacked wheels in the cache."""
    found: dict[tuple[str, str], list[Path]] = {}
    archive = cache / "archive-v0"
    if not archive.is_dir():
        return found
    for entry in archive.iterdir():
        for info in entry.glob("*.dist-info"):
            meta = info / "METADATA"
            if not meta.is_file() or not (info / "WHEEL").is_file():
                continue
            headers = HeaderParser().parsestr(meta.read_text(errors="replace"), headersonly=True)
            key = (_norm(headers.get("Name", "")), headers.get("Version", ""))
            found.setdefault(key, []).append(info)
    return found


def _wheel_name(info: Path, name: str, version: str) -> str | None:
    """The PEP 427 file name from WHEEL's tags (py/abi/platform parts joined with dots)."""
    tags = [v.strip() for k, v in (line.split(":", 1) for line in
            (info / "WHEEL").read_text().splitlines() if ":" in line) if k.strip() == "Tag"]
    if not tags:
        return None
    parts = [sorted({t.split("-")[i] for t in tags}) for i in range(3)]
    return f"{name}-{version}-{'-'.join('.'.join(p) for p in parts)}.whl"


def _compatible(wheel: str) -> bool:
    """Only CPython 3.11 / pure-Python builds for x86-64 Linux: what the images run."""
    py, abi, plat = wheel[:-4].split("-")[-3:]
    pys, abis = py.split("."), abi.split(".")
    # abi3: built for CPython 3.N, and it runs on 3.N and later.
    stable = "abi3" in abis and any(re.fullmatch(r"cp3(\d+)", p) and int(p[3:]) <= 11 for p in pys)
    return ((stable or (any(p in {"py3", "cp311", "py311"} for p in pys)
                        and any(a in {"none", "cp311"} for a in abis)))
            and any(p == "any" or p.endswith("x86_64") and "linux" in p for p in plat.split(".")))


def _repack(info: Path, dest: Path) -> bool:
    """Zips the tree above `info` into `dest`; False (and no file) if RECORD does not match."""
    root = info.parent
    record = {}
    for row in (info / "RECORD").read_text().splitlines():
        path, _, rest = row.partition(",")
        digest = rest.partition(",")[0]
        record[path] = digest
    tmp = dest.with_suffix(".tmp")
    ok = True
    # Stored, not deflated: the files are read once more by the image build and then unpacked;
    # compressing 3 GB here would only cost CPU on a shared machine.
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zf:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for fn in sorted(filenames):
                full = Path(dirpath) / fn
                rel = full.relative_to(root).as_posix()
                if rel not in record:
                    ok = False  # a file the wheel did not have
                    break
                data = full.read_bytes()
                want = record.pop(rel)
                if want:
                    algo, _, b64 = want.partition("=")
                    got = base64.urlsafe_b64encode(hashlib.new(algo, data).digest()).rstrip(b"=")
                    if got.decode() != b64:
                        ok = False
                        break
                zi = zipfile.ZipInfo.from_file(full, rel)
                zf.writestr(zi, data)
            if not ok:
                break
    # Every file RECORD names must have been found (RECORD lists itself without a hash).
    if ok and any(record):
        ok = False
    if ok:
        tmp.rename(dest)
    else:
        tmp.unlink(missing_ok=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("requirements", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--uv-cache", type=Path,
                    default=Path(os.environ.get("UV_CACHE_DIR") or Path.home() / ".cache" / "uv"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    unpacked = _unpacked(args.uv_cache)
    repacked = 0
    for line, name, version in _pins(args.requirements):
        done = False
        for info in unpacked.get((name, version), []):
            wheel = _wheel_name(info, name, version)
            if wheel is None or not _compatible(wheel):
                continue
            if (args.out / wheel).exists() or _repack(info, args.out / wheel):
                done = True
                repacked += 1
                break
        if not done:
            print(line)
    print(f"[wheelhouse] {repacked} wheels re-packed from {args.uv_cache}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
