"""Broker endpoints as Kafka spells them in a registration: ``LISTENER://host:port``.

Parsing follows Kafka's ``SocketServerConfigs.listenerListToEndPoints`` (3.9): the listener
name is upper-cased, an IPv6 host is bracketed, and an empty host means "all interfaces"
and is kept as ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

#: Kafka's ``SecurityProtocol`` names
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_ENDPOINT = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Endpoint:
    """One advertised listener of a broker."""

    listener: str
    host: str | None
    port: int

    def __str__(self) -> str:
        if self.host is None:
            hostport = f":{self.port}"
        elif ":" in self.host:
            hostport = f"[{self.host}]:{self.port}"
        else:
            hostport = f"{self.host}:{self.port}"
        return f"{self.listener}://{hostport}"


def parse_endpoint(text: str) -> Endpoint:
    """``text`` as an endpoint; :class:`ValueError` naming it when Kafka could not parse it."""
    match = _ENDPOINT.fullmatch(text)
    if match is None:
        raise ValueError(f"endpoint {text!r} is not LISTENER://host:port")
    listener, host, port_text = match.groups()
    if not listener:
        raise ValueError(f"endpoint {text!r} has no listener name")
    port = int(port_text)
    if not -(2**31) <= port <= _INT32_MAX:
        raise ValueError(f"endpoint {text!r} has a port outside the int32 range")
    return Endpoint(listener.upper(), host or None, port)


def security_protocol(listener: str, protocol_map: Mapping[str, str]) -> str | None:
    """The security protocol of ``listener``, as a broker with ``protocol_map`` resolves it.

    Without a map (registrations before v4) only listeners named after a protocol resolve.
    """
    if protocol_map:
        found = protocol_map.get(listener)
        return found.upper() if found is not None else None
    return listener if listener in SECURITY_PROTOCOLS else None
