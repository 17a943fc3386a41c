"""``/brokers/ids/<id>``: a broker's registration, versions 1 to 5.

Decoding follows ``BrokerIdZNode.decode`` (Kafka 3.9): v1 carries only ``host``/``port``
(one PLAINTEXT endpoint); v2+ carry ``endpoints``, resolved through
``listener_security_protocol_map`` (v4+) or, without one, listeners named after a protocol.
Kafka 3.9 accepts any version >= 1; this decoder accepts only the five that exist, so a
future format is reported instead of half-read.

Encoding writes v4 by default, or v2 for a fleet with 0.9.0.0 clients: 0.9.0.0's
``Broker.createBroker`` throws on any version but 1 and 2, 0.9.0.1 and later read any
version >= 1 (v1: ``host``/``port``, else ``endpoints``), 0.8 reads only ``host``/``port``
(docs/compatibility.md). v2 is what 0.9 brokers wrote: ``version``, ``host``, ``port``,
``endpoints``, ``jmx_port``, ``timestamp``, with no protocol map (so every listener must be
named after its security protocol) and no rack (v3). As Kafka does, the top-level
``host``/``port`` are taken from the first PLAINTEXT endpoint (else ``null``/``-1``),
``timestamp`` is a string, ``rack`` appears only when set and ``features`` only in v5.
Keys come in the order Kafka 3.9 (Scala 2.13 build) writes them, checked against
``kafka_2.13-3.9.1``, so the bytes match what a real broker would hold. (0.10-2.x
brokers, built with Scala 2.11/2.12, used another order; readers do not care.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zkpaths._decode import INT32_MAX, INT32_MIN, INT64_MAX, MAX_NODE_BYTES, Decoder
from zkpaths.codecs._json import dumps
from zkpaths.codecs.endpoints import (
    SECURITY_PROTOCOLS,
    Endpoint,
    parse_endpoint,
    security_protocol,
)

BROKER_VERSIONS = (1, 2, 3, 4, 5)
WRITABLE_BROKER_VERSIONS = (2, 4, 5)

_KEY_ORDER = (
    "features",
    "listener_security_protocol_map",
    "endpoints",
    "rack",
    "jmx_port",
    "port",
    "host",
    "version",
    "timestamp",
)
_INT16_MAX = 2**15 - 1


@dataclass(frozen=True)
class BrokerRegistration:
    """What a broker registration says; ``endpoints`` are ``LISTENER://host:port`` strings.

    ``host``/``port`` are the top-level fields old clients read (``None``/``-1`` when the
    broker has no PLAINTEXT endpoint). ``listener_security_protocol_map`` is empty when the
    node had none (before v4). ``features`` maps a feature name to its version labels
    (``min_version``, ``max_version``, ...), v5 only.
    """

    broker_id: int
    host: str | None
    port: int
    endpoints: tuple[str, ...]
    jmx_port: int = -1
    timestamp_ms: int = 0
    rack: str | None = None
    listener_security_protocol_map: dict[str, str] = field(default_factory=dict, hash=False)
    features: dict[str, dict[str, int]] = field(default_factory=dict, hash=False)
    version: int = 4

    def __post_init__(self) -> None:
        # Accept any sequence/mapping from callers, but hold immutable-ish copies.
        if isinstance(self.endpoints, str):
            raise TypeError("endpoints must be a sequence of strings, not one string")
        object.__setattr__(self, "endpoints", tuple(self.endpoints))
        object.__setattr__(
            self, "listener_security_protocol_map", dict(self.listener_security_protocol_map)
        )
        object.__setattr__(self, "features", {k: dict(v) for k, v in self.features.items()})

    @classmethod
    def from_endpoints(
        cls,
        broker_id: int,
        endpoints: Sequence[str],
        *,
        listener_security_protocol_map: Mapping[str, str] | None = None,
        jmx_port: int = -1,
        timestamp_ms: int = 0,
        rack: str | None = None,
        features: Mapping[str, Mapping[str, int]] | None = None,
        version: int = 4,
    ) -> BrokerRegistration:
        """A registration exactly as :func:`encode_broker` writes and decode reads it back.

        ``host``/``port`` and the protocol map are derived from ``endpoints`` the way the
        broker derives them; endpoint strings are put in Kafka's canonical spelling.
        """
        parsed, protocols = _resolve(endpoints, listener_security_protocol_map or {})
        plaintext = _first_plaintext(parsed, protocols)
        return cls(
            broker_id=broker_id,
            host=plaintext.host if plaintext else None,
            port=plaintext.port if plaintext else -1,
            endpoints=tuple(str(e) for e in parsed),
            jmx_port=jmx_port,
            timestamp_ms=timestamp_ms,
            rack=rack,
            listener_security_protocol_map={
                e.listener: p for e, p in zip(parsed, protocols, strict=True)
            },
            features={k: dict(v) for k, v in (features or {}).items()},
            version=version,
        )

    def parsed_endpoints(self) -> tuple[Endpoint, ...]:
        """The endpoints, parsed (:class:`ValueError` if one is malformed)."""
        return tuple(parse_endpoint(e) for e in self.endpoints)

    def security_protocol(self, listener: str) -> str | None:
        """The security protocol of ``listener`` on this broker, or ``None`` if unknown."""
        return security_protocol(listener.upper(), self.listener_security_protocol_map)

    def plaintext_endpoint(self) -> Endpoint | None:
        """The first PLAINTEXT endpoint: the one old clients (0.8-0.10) can talk to."""
        parsed, protocols = _resolve(self.endpoints, self.listener_security_protocol_map)
        return _first_plaintext(parsed, protocols)


def _resolve(
    endpoints: Sequence[str], protocol_map: Mapping[str, str]
) -> tuple[list[Endpoint], list[str]]:
    parsed = [parse_endpoint(e) for e in endpoints]
    protocols: list[str] = []
    for endpoint in parsed:
        protocol = security_protocol(endpoint.listener, protocol_map)
        if protocol is None or protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"no security protocol known for listener {endpoint.listener!r}")
        protocols.append(protocol)
    return parsed, protocols


def _first_plaintext(parsed: list[Endpoint], protocols: list[str]) -> Endpoint | None:
    return next((e for e, p in zip(parsed, protocols, strict=True) if p == "PLAINTEXT"), None)


# -- encode ------------------------------------------------------------------------------------


def encode_broker(reg: BrokerRegistration, *, version: int | None = None) -> bytes:
    """The JSON a broker writes for ``reg``: v4 unless ``version`` (or ``reg.version``) is 2
    or 5.

    ``reg.host``/``reg.port`` are not written as given: like Kafka, the encoder derives them
    from the first PLAINTEXT endpoint. Raises :class:`ValueError` naming the bad field (v2:
    also a rack or a listener not named after its security protocol, which v2 cannot say).
    """
    if version is None:
        version = reg.version if reg.version in WRITABLE_BROKER_VERSIONS else 4
    if version not in WRITABLE_BROKER_VERSIONS:
        raise ValueError(f"broker registrations are written as v2, v4 or v5, not v{version}")
    _check_int(reg.broker_id, "broker_id", 0, INT32_MAX)
    _check_int(reg.jmx_port, "jmx_port", INT32_MIN, INT32_MAX)
    _check_int(reg.timestamp_ms, "timestamp_ms", 0, INT64_MAX)
    if reg.rack is not None and not isinstance(reg.rack, str):
        raise ValueError(f"rack must be a string or None, not {type(reg.rack).__name__}")
    parsed, protocols = _resolve(reg.endpoints, reg.listener_security_protocol_map)
    plaintext = _first_plaintext(parsed, protocols)
    doc: dict[str, Any] = {
        "listener_security_protocol_map": {
            e.listener: p for e, p in zip(parsed, protocols, strict=True)
        },
        "endpoints": [str(e) for e in parsed],
        "jmx_port": reg.jmx_port,
        "host": plaintext.host if plaintext else None,
        "timestamp": str(reg.timestamp_ms),
        "port": plaintext.port if plaintext else -1,
        "version": version,
    }
    if version == 2:
        _check_v2(reg, parsed, protocols)
        del doc["listener_security_protocol_map"]
    if reg.rack is not None:
        doc["rack"] = reg.rack
    if version >= 5:
        doc["features"] = {name: _check_feature(name, v) for name, v in reg.features.items()}
    return dumps({key: doc[key] for key in _KEY_ORDER if key in doc})


def _check_v2(reg: BrokerRegistration, parsed: list[Endpoint], protocols: list[str]) -> None:
    """v2 has no ``rack`` (v3) and no protocol map (v4): readers take the listener name as
    the security protocol."""
    if reg.rack is not None:
        raise ValueError(f"broker JSON v2 has no rack (v3+), got rack {reg.rack!r}")
    for endpoint, protocol in zip(parsed, protocols, strict=True):
        if endpoint.listener != protocol:
            raise ValueError(
                f"broker JSON v2 has no listener_security_protocol_map: listener "
                f"{endpoint.listener!r} is not named after its protocol {protocol}"
            )


def _check_int(value: object, name: str, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an int in {lo}..{hi}, got {value!r}")


def _check_feature(name: str, labels: Mapping[str, int]) -> dict[str, int]:
    for label, value in labels.items():
        _check_int(value, f"feature {name!r} {label}", 0, _INT16_MAX)
    lo, hi = labels.get("min_version"), labels.get("max_version")
    if lo is None or hi is None or hi < lo:
        raise ValueError(f"feature {name!r} needs min_version <= max_version, got {labels!r}")
    return dict(labels)


# -- decode ------------------------------------------------------------------------------------


def decode_broker(
    broker_id: int, data: bytes, *, path: str | None = None, limit: int = MAX_NODE_BYTES
) -> BrokerRegistration:
    """The registration of broker ``broker_id`` from its node data; only raises CodecError."""
    d = Decoder("broker registration", data, path or f"/brokers/ids/{broker_id}", limit)
    obj = d.json_object()
    version = d.version(obj, BROKER_VERSIONS)
    jmx_port = d.integer(d.require(obj, "jmx_port"), "jmx_port")
    timestamp_ms = d.timestamp(d.require(obj, "timestamp"))
    rack = d.optional_string(obj.get("rack"), "rack")
    features = _decode_features(d, obj.get("features"))

    if version == 1:
        host = d.string(d.require(obj, "host"), "host")
        port = d.integer(d.require(obj, "port"), "port")
        endpoint = Endpoint("PLAINTEXT", host or None, port)
        return BrokerRegistration(
            broker_id, host, port, (str(endpoint),), jmx_port, timestamp_ms, rack, {}, features, 1
        )

    protocol_map = _decode_protocol_map(d, obj)
    raw = d.require(obj, "endpoints")
    if not isinstance(raw, list):
        d.fail("endpoints must be an array of strings")
    endpoints = tuple(d.string(e, "endpoint") for e in raw)
    for text in endpoints:
        try:
            endpoint = parse_endpoint(text)
        except ValueError as exc:
            d.fail(str(exc))
        if protocol_map is None:
            if endpoint.listener not in SECURITY_PROTOCOLS:
                d.fail(f"listener {endpoint.listener!r} has no security protocol (no map)")
        elif endpoint.listener not in protocol_map:
            d.fail(f"listener {endpoint.listener!r} is not in listener_security_protocol_map")
    host = d.optional_string(obj.get("host"), "host")
    port = d.integer(obj.get("port", -1), "port")
    return BrokerRegistration(
        broker_id,
        host,
        port,
        endpoints,
        jmx_port,
        timestamp_ms,
        rack,
        protocol_map or {},
        features,
        version,
    )


def _decode_protocol_map(d: Decoder, obj: dict[str, Any]) -> dict[str, str] | None:
    if "listener_security_protocol_map" not in obj:
        return None
    raw = d.obj(obj["listener_security_protocol_map"], "listener_security_protocol_map")
    result: dict[str, str] = {}
    for listener, protocol in raw.items():
        protocol = d.string(protocol, f"security protocol of listener {listener!r}")
        if protocol.upper() not in SECURITY_PROTOCOLS:
            d.fail(f"listener {listener!r} has unknown security protocol {protocol!r}")
        result[listener] = protocol
    return result


def _decode_features(d: Decoder, raw: Any) -> dict[str, dict[str, int]]:
    if raw is None:
        return {}
    features: dict[str, dict[str, int]] = {}
    for name, labels in d.obj(raw, "features").items():
        labels = d.obj(labels, f"feature {name!r}")
        values = {
            k: d.integer(v, f"feature {name!r} {k}", 0, _INT16_MAX) for k, v in labels.items()
        }
        lo, hi = values.get("min_version"), values.get("max_version")
        if lo is None or hi is None:
            d.fail(f"feature {name!r} lacks min_version or max_version")
        if hi < lo:
            d.fail(f"feature {name!r} has max_version {hi} below min_version {lo}")
        features[name] = values
    return features
