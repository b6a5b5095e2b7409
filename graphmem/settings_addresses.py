"""What the ``[server]`` settings that name the network may hold: the address the daemon binds
(``host``, and ``graphmem serve --host`` in its place), the ``Host`` names (``allowed_hosts``) and
the browser origins (``allowed_origins``) it answers.

Each is checked where the settings are read, so that a value is refused in one line naming the
variable, key or flag that gave it (``settings_sources.invalid_settings``, ``checked_host``), not
by ``socket.bind`` with a traceback, and never bound as something it does not say: an empty host
is every interface to a socket.
"""

from __future__ import annotations

import ipaddress
import re

from graphmem.errors import ConfigError
from graphmem.locate import shown_value

# RFC 1035: a name is at most 253 characters as written (255 octets on the wire), a label 63.
MAX_HOST_CHARS = 253
# A label of a host name: ASCII letters, digits and inner hyphens (RFC 1123), at most 63; an
# underscore too, which resolvers take and some local names hold.
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?", re.ASCII | re.IGNORECASE)
# A label the resolver reads as a number (``inet_aton``): as the last one, the name is read as an
# IPv4 address it does not look like (``0`` is 0.0.0.0, ``127.1`` and ``0x7f000001`` 127.0.0.1).
_NUMBER = re.compile(r"0x[0-9a-f]*|[0-9]+", re.ASCII | re.IGNORECASE)
_EXAMPLE = "e.g. 127.0.0.1, ::1 or graphmem.lan (0.0.0.0 or :: for every interface)"


def host_problem(host: str) -> str | None:
    """Why the daemon may not bind ``host``, said after the value, or None: it may bind an IPv4 or
    IPv6 address written in full, or a host name. An empty host would bind every interface
    without saying so (``0.0.0.0`` or ``::`` say it); a NUL, blanks, a URL, a port or a name no
    resolver takes would fail in ``socket.bind``; a name of numbers would bind what it does not
    say."""
    if not host:
        return f"is empty, which would listen on every interface: give an address, {_EXAMPLE}"
    if len(host.removesuffix(".")) > MAX_HOST_CHARS:
        return f"is over {MAX_HOST_CHARS} characters, longer than any host name: give an address, {_EXAMPLE}"
    if not host.isprintable() or any(char.isspace() for char in host):
        return "holds a blank or a control character, which no address holds: remove it"
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    if "/" in host or "@" in host:
        return f"is a URL, not an address: give only the host, {_EXAMPLE}"
    if host.startswith("["):
        return "has brackets, which only a URL puts around an IPv6 address: remove them (e.g. ::1)"
    if host.count(":") == 1:
        return "holds a port: give the address alone, and the port as --port or [server] port"
    if ":" in host:
        return f"is no IPv6 address: give one written in full, {_EXAMPLE}"
    labels = host.removesuffix(".").split(".")
    if not all(_LABEL.fullmatch(label) for label in labels):
        return (
            "is neither an IP address nor a host name (ASCII letters, digits and inner '-' between dots, "
            f"at most 63 a label; an international name in its xn-- form): give one, {_EXAMPLE}"
        )
    if _NUMBER.fullmatch(labels[-1]):
        return (
            "ends in a number, so it would be read as an IPv4 address: write the address in full (127.0.0.1)"
        )
    return None


def listen_host(host: str) -> str:
    """``[server] host`` as the settings take it: a ``ValueError`` (said with the variable or key
    that gave it) for one ``host_problem`` refuses."""
    problem = host_problem(host)
    if problem:
        raise ValueError(f"host {shown_value(host)} {problem}")
    return host


def checked_host(host: str, flag: str) -> str:
    """``host`` as given by ``flag`` (``--host``) in place of ``[server] host``: a ``ConfigError``
    (exit 9, as the setting's) for one ``host_problem`` refuses."""
    problem = host_problem(host)
    if problem:
        raise ConfigError(f"{flag} {shown_value(host)} {problem}; or leave {flag} out for [server] host.")
    return host


def host_names(hosts: list[str]) -> list[str]:
    """``[server] allowed_hosts``: names a ``Host`` header holds, never a URL or blanks."""
    for host in hosts:
        if not host.strip() or "/" in host or any(c.isspace() for c in host):
            raise ValueError(
                f"allowed_hosts takes host names such as 'graphmem.lan', not {shown_value(host)}"
            )
    return hosts


def origins(given: list[str]) -> list[str]:
    """``[server] allowed_origins``: ``http(s)://host[:port]`` each, or ``*``."""
    for origin in given:
        scheme, sep, rest = origin.partition("://")
        if origin != "*" and (scheme not in ("http", "https") or not sep or not rest or "/" in rest):
            raise ValueError(
                "allowed_origins takes origins such as 'https://tools.example.com', not "
                + shown_value(origin)
            )
    return given
