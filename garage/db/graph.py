"""The Apache AGE graph, where the server has AGE.

The graph is not a migration: the embedded default has no AGE, and a server that gains the
extension later should get its graph on the next migrate without a new file.
"""

from __future__ import annotations

from typing import Any

import psycopg

from garage.db.introspect import available_extensions

# AGE refuses graph names shorter than three characters.
GRAPH_NAME = "garage"


def ensure_graph(conn: psycopg.Connection[Any]) -> str:
    """Create the extension and the graph when the server has AGE; say what happened."""
    if "age" not in available_extensions(conn):
        return "absent: the server has no Apache AGE extension"
    conn.execute("CREATE EXTENSION IF NOT EXISTS age")
    exists = conn.execute(
        "SELECT 1 FROM ag_catalog.ag_graph WHERE name = %s", (GRAPH_NAME,)
    ).fetchone()
    if exists:
        return "present"
    # create_graph needs AGE loaded in this session; reset the search path afterwards so the
    # rest of the connection's work resolves names in public first.
    conn.execute("LOAD 'age'")
    conn.execute("SELECT ag_catalog.create_graph(%s)", (GRAPH_NAME,))
    conn.execute("RESET search_path")
    return "created"
