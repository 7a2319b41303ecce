"""Database access: which server, connections, migrations and what the server offers."""

from garage.db.connect import DatabaseError, connect, resolve_url, scalar

__all__ = ["DatabaseError", "connect", "resolve_url", "scalar"]
