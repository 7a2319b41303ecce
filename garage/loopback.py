"""What counts as this machine: one meaning of loopback for every guard that asks.

The egress guard (may a request carrying mail or chats go to this model host?), the key sent
only to a llama-server on this machine, the MCP server's binding (no token needed on
loopback) and the Dagster UI's (loopback only) all ask the same question of a host, and it is
answered here, once.

Loopback is ``localhost``, 127.0.0.0/8 and ``::1``, decided from the name or address alone,
never from DNS: a name that resolves to loopback today may not tomorrow. Names under
``.localhost`` (``api.localhost``) do not count. RFC 6761 reserves them for loopback, but a
name is only loopback if it resolves there, and whether one does depends on the resolver: glibc
looks in /etc/hosts, which names ``localhost`` alone, and then asks DNS, which the network
answers. A privacy rule must not hang on how the resolver happens to be configured.
"""

from __future__ import annotations

import ipaddress

MIN_TOKEN_CHARS = 16


class NotLoopback(ValueError):
    """A server with no login of its own asked to listen beyond this machine."""


class TokenRequired(ValueError):
    """Serving beyond loopback without a bearer token (or with a weak one)."""


def is_loopback_address(host: str) -> bool:
    """Whether a host (a name, or an address, IPv6 with or without brackets) is this machine."""
    host = host.strip().strip("[]").lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(
    host: str, token: str | None = None, *, token_variable: str | None = None
) -> None:
    """Refuse a binding the index should not be served on.

    A server that takes a bearer token (read from the environment variable ``token_variable``)
    needs one beyond loopback, and a strong one whenever it is given. A server with no login
    of its own (``token_variable`` None) listens on loopback only; over SSH, a forwarded port
    reaches it from elsewhere without opening it to the network.
    """
    if token_variable is None:
        if not is_loopback_address(host):
            raise NotLoopback(
                f"this server has no authentication and listens only on loopback, not {host}; "
                "reach it from another machine through an SSH tunnel "
                "(ssh -L PORT:127.0.0.1:PORT)"
            )
        return
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise TokenRequired(f"the bearer token must be at least {MIN_TOKEN_CHARS} characters")
    if token is None and not is_loopback_address(host):
        raise TokenRequired(
            f"serving on {host}, beyond this machine, needs a bearer token: set {token_variable} "
            f"(e.g. `export {token_variable}=$(python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')`) and send it as `Authorization: Bearer …`"
        )
