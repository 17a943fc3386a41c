"""Why a SASL connection fails, in the broker's own words.

When a broker refuses a SASL login it answers SaslAuthenticate with an error and closes the
connection; kafka-python 3.0 drops that last answer together with the closed socket, so all
the bridge sees is a bootstrap timeout. This probe, run only after a failed connect, logs in
to each bootstrap server once over a plain socket (SaslHandshake v1, SaslAuthenticate v0, the
tokens from kafka-python's own mechanisms) and returns the refusal, naming the server and
never the password.
"""

from __future__ import annotations

import logging
import socket
import ssl
import struct
from collections.abc import Mapping
from typing import Any

from bridge.config import split_hostport

log = logging.getLogger(__name__)

_HANDSHAKE, _AUTHENTICATE = 17, 36
_ILLEGAL_SASL_STATE, _UNSUPPORTED_MECHANISM, _AUTHENTICATION_FAILED = 34, 33, 58


class _Answer(Exception):
    """A definitive refusal by one server (the message is for the operator)."""


def _request(api_key: int, version: int, correlation: int, body: bytes) -> bytes:
    client = b"kafka-zk-bridge-probe"
    msg = struct.pack(">hhih", api_key, version, correlation, len(client)) + client + body
    return struct.pack(">i", len(msg)) + msg


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


def _response(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", _read(sock, 4))
    return _read(sock, size)[4:]  # without the correlation id


def _string(buf: bytes, at: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from(">h", buf, at)
    if n < 0:
        return None, at + 2
    return buf[at + 2 : at + 2 + n].decode(errors="replace"), at + 2 + n


def _login(sock: socket.socket, server: str, options: Mapping[str, Any]) -> None:
    """Raise ``_Answer`` when ``server`` refuses the login; return when it accepts."""
    from kafka.net.sasl import get_sasl_mechanism  # kafka-python's token generators

    name = options["sasl_mechanism"]
    user = options.get("sasl_plain_username")
    mech = name.encode()
    sock.sendall(_request(_HANDSHAKE, 1, 1, struct.pack(">h", len(mech)) + mech))
    body = _response(sock)
    (error,) = struct.unpack_from(">h", body, 0)
    if error == _ILLEGAL_SASL_STATE:
        raise _Answer(
            f"Kafka at {server} does not expect a SASL login (IllegalSaslState): is it a "
            f"PLAINTEXT or SSL listener? kafka.security_protocol is "
            f"{options.get('security_protocol')}"
        )
    if error == _UNSUPPORTED_MECHANISM:
        (count,) = struct.unpack_from(">i", body, 2)
        at, offered = 6, []
        for _ in range(max(count, 0)):
            value, at = _string(body, at)
            offered.append(value)
        raise _Answer(
            f"Kafka at {server} does not enable SASL mechanism {name} "
            f"(kafka.sasl_mechanism); it offers {', '.join(map(str, offered)) or 'none'}"
        )
    if error:
        raise _Answer(f"Kafka at {server} refused SaslHandshake with error code {error}")
    mechanism = get_sasl_mechanism(name)(host=server.rsplit(":", 1)[0], **options)
    correlation = 2
    while not mechanism.is_done():
        token = mechanism.auth_bytes()
        sock.sendall(_request(_AUTHENTICATE, 0, correlation, struct.pack(">i", len(token)) + token))
        correlation += 1
        body = _response(sock)
        (error,) = struct.unpack_from(">h", body, 0)
        message, at = _string(body, 2)
        if error:
            text = message or f"error code {error}"
            secret = options.get("sasl_plain_password")
            if secret:
                text = text.replace(secret, "**********")
            raise _Answer(
                f"Kafka at {server} rejected the SASL {name} login of user {user!r}: {text}; "
                "check kafka.sasl_username and the password"
            )
        (size,) = struct.unpack_from(">i", body, at)
        mechanism.receive(body[at + 4 : at + 4 + max(size, 0)])
    if not mechanism.is_authenticated():
        raise _Answer(f"Kafka at {server} did not complete the SASL {name} login of {user!r}")


def sasl_refusal(options: Mapping[str, Any], timeout_s: float = 5.0) -> str | None:
    """The first bootstrap server's refusal of the SASL login in ``options`` (kafka-python
    client options), or None when a server accepted it or none gave a definitive answer."""
    protocol = options.get("security_protocol", "PLAINTEXT")
    if not str(protocol).startswith("SASL_") or not options.get("sasl_mechanism"):
        return None
    for server in options["bootstrap_servers"]:
        try:
            host, port = split_hostport(server)
            with socket.create_connection((host, port), timeout=timeout_s) as raw:
                raw.settimeout(timeout_s)
                if protocol == "SASL_SSL":
                    ctx = ssl.create_default_context(cafile=options.get("ssl_cafile"))
                    with ctx.wrap_socket(raw, server_hostname=host) as tls:
                        _login(tls, server, options)
                else:
                    _login(raw, server, options)
            return None  # this server accepted the login: the problem is elsewhere
        except _Answer as answer:
            return str(answer)
        except Exception as exc:  # noqa: BLE001 - no answer from this server; try the next
            log.debug("SASL probe of %s: %s", server, type(exc).__name__)
    return None
