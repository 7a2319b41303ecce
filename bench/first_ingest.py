"""One first ingest of a tree into an empty database, by the Garage code found at ``--code``.

    python bench/first_ingest.py --code DIR --tree DIR --url URL

``bench/ingest.py`` runs this once per side (this checkout, and a baseline checkout such as
main's) in a process of its own, so each side runs its own library and its own migrations on the
same tree. Prints one JSON line: files seen, chunks stored, seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, required=True)
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--url", required=True)
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))

    import psycopg

    from garage.config import SourceConfig, load_config
    from garage.db.migrate import ensure_migrated
    from garage.ingest import ingest_source

    assert Path(sys.modules["garage"].__file__ or "").is_relative_to(args.code.resolve())
    base = load_config(Path(tempfile.mkdtemp()) / "none.json", env={})
    config = base.model_copy(
        update={
            "sources": [SourceConfig(name="bench", roots=[str(args.tree)])],
            "limits": base.limits.model_copy(update={"max_chunks_per_document": 100000}),
        }
    )
    ensure_migrated(args.url)
    with psycopg.connect(args.url, autocommit=True) as conn:
        report = ingest_source(conn, config, config.sources[0])
    print(json.dumps({"seen": report.seen, "chunks": report.chunks_new, "seconds": report.seconds}))


if __name__ == "__main__":
    main()
