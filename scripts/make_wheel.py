#!/usr/bin/env python3
"""Assembles the `worldloom` wheel around a `worldloom` binary already built.

The wheel holds what `maturin build` (pyproject.toml, binary bindings) puts
in it: the package python/worldloom (with py.typed) and the binary as a
script (`worldloom-VERSION.data/scripts/worldloom`, so pip puts it on the
environment's PATH). The tests use it to package the binary their build made
instead of compiling the command a second time; releases use maturin.

Usage: scripts/make_wheel.py --binary PATH [--out DIR] [--no-strip]
Writes DIR/worldloom-VERSION-py3-none-PLATFORM.whl (the wheel file name
format of the binary distribution format spec, PEP 427/491) and prints its path.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def version() -> str:
    text = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    m = re.search(r'^version = "([^"]+)"', text, re.M)
    if not m:
        raise SystemExit("Cargo.toml: no workspace version")
    return m.group(1)


def platform_tag() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True, type=Path, help="the built `worldloom` binary")
    ap.add_argument("--out", type=Path, default=Path("."), help="folder for the wheel")
    ap.add_argument("--no-strip", action="store_true", help="keep the binary's debug information")
    args = ap.parse_args()
    if not args.binary.is_file():
        raise SystemExit(f"{args.binary}: no such binary (build it: cargo build -p worldloom-cli)")
    ver = version()
    tag = f"py3-none-{platform_tag()}"
    dist = f"worldloom-{ver}"
    args.out.mkdir(parents=True, exist_ok=True)
    wheel = args.out / f"worldloom-{ver}-{tag}.whl"

    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "worldloom"
        shutil.copyfile(args.binary, binary)
        if not args.no_strip and shutil.which("strip"):
            subprocess.run(["strip", "--strip-debug", str(binary)], check=True)
        files: list[tuple[str, bytes, int]] = []
        pkg = ROOT / "python" / "worldloom"
        for f in sorted(pkg.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                files.append((f"worldloom/{f.relative_to(pkg).as_posix()}", f.read_bytes(), 0o644))
        files.append((f"{dist}.data/scripts/worldloom", binary.read_bytes(), 0o755))
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        metadata = (
            "Metadata-Version: 2.1\n"
            "Name: worldloom\n"
            f"Version: {ver}\n"
            "Summary: A studio for language world models: real and predicted observations side by side, fidelity, branching, recording agent loops.\n"
            "License: Apache-2.0\n"
            "Requires-Python: >=3.9\n"
            "Description-Content-Type: text/markdown\n\n"
            f"{readme}"
        )
        files.append((f"{dist}.dist-info/METADATA", metadata.encode(), 0o644))
        wheel_meta = f"Wheel-Version: 1.0\nGenerator: worldloom make_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n"
        files.append((f"{dist}.dist-info/WHEEL", wheel_meta.encode(), 0o644))
        record = "\n".join(record_line(n, d) for n, d, _ in files)
        record += f"\n{dist}.dist-info/RECORD,,\n"
        files.append((f"{dist}.dist-info/RECORD", record.encode(), 0o644))
        tmp_wheel = Path(tmp) / wheel.name
        with zipfile.ZipFile(tmp_wheel, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for name, data, mode in files:
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, data)
        shutil.move(str(tmp_wheel), wheel)
    print(wheel)


if __name__ == "__main__":
    main()
