"""Configuration: one TOML file, then ``ZK_BRIDGE__SECTION__KEY`` env overrides, then flags.

Validated once at start with pydantic; every error names the key, the bad value and what
is allowed, so an operator can fix the file without reading code. Secret values are
``SecretStr`` and print as ``**********``.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

ENV_PREFIX = "ZK_BRIDGE__"

_HOSTPORT = re.compile(r"^[A-Za-z0-9._\-\[\]:]+:\d{1,5}$")


class ConfigError(ValueError):
    """The configuration is invalid; the message lists every bad key."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _check_hostports(value: str, what: str) -> str:
    hosts = value.split(",")
    bad = [h for h in hosts if not _HOSTPORT.match(h.strip())]
    if not value.strip() or bad:
        raise ValueError(f"expected {what} as HOST:PORT[,HOST:PORT...], bad part: {bad or value!r}")
    return ",".join(h.strip() for h in hosts)


class ZooKeeperSettings(_Section):
    connect: str = Field("127.0.0.1:2181", description="HOST:PORT[,HOST:PORT...][/chroot]")
    session_timeout_s: float = Field(10.0, ge=1.0, le=600.0)
    connection_timeout_s: float = Field(15.0, gt=0)
    auth_scheme: Literal["digest", "sasl", None] = None
    username: str | None = None
    password: SecretStr | None = None

    @field_validator("connect")
    @classmethod
    def _connect(cls, v: str) -> str:
        hosts, _, chroot = v.partition("/")
        _check_hostports(hosts, "ZooKeeper servers")
        return hosts + ("/" + chroot if chroot else "")


class KafkaSettings(_Section):
    bootstrap_servers: str = "127.0.0.1:9092"
    client_id: str = "kafka-zk-bridge"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", None] = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: Path | None = None
    request_timeout_ms: int = Field(10000, ge=1000, le=300000)

    @field_validator("bootstrap_servers")
    @classmethod
    def _bootstrap(cls, v: str) -> str:
        return _check_hostports(v, "Kafka bootstrap servers")

    def client_options(self) -> dict[str, Any]:
        """kafka-python keyword arguments (secrets unwrapped only here)."""
        opts: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers.split(","),
            "client_id": self.client_id,
            "security_protocol": self.security_protocol,
            "request_timeout_ms": self.request_timeout_ms,
        }
        if self.sasl_mechanism:
            opts["sasl_mechanism"] = self.sasl_mechanism
            opts["sasl_plain_username"] = self.sasl_username
            if self.sasl_password is not None:
                opts["sasl_plain_password"] = self.sasl_password.get_secret_value()
        if self.ssl_cafile:
            opts["ssl_cafile"] = str(self.ssl_cafile)
        return opts


class BridgeSettings(_Section):
    root: str = Field("/kafka-zk-bridge", pattern=r"^/[^/].*[^/]$|^/[^/]$")
    id: str | None = Field(None, description="name of this bridge process in the election")
    #: every flow re-reads its whole ZooKeeper tree this often, to heal drift
    resync_interval_s: float = Field(60.0, gt=0)


class RegistrySettings(_Section):
    enabled: bool = True
    poll_interval_s: float = Field(0.5, gt=0, le=60)


class GroupsSettings(_Section):
    enabled: bool = True
    #: regexes (full match) of group ids to mirror, and of group ids never to touch
    include: list[str] = Field(default_factory=lambda: [".*"])
    exclude: list[str] = Field(default_factory=list)
    #: what happens to mirrored offsets when a group is deleted in Kafka
    on_group_deleted: Literal["keep-offsets", "delete"] = "keep-offsets"
    #: how often committed offsets are fetched and mirrored (one OffsetFetch per coordinator)
    poll_interval_s: float = Field(0.1, gt=0, le=60)
    #: how often groups, members and assignments are re-described in full
    full_interval_s: float = Field(1.0, gt=0, le=600)

    @field_validator("include", "exclude")
    @classmethod
    def _regexes(cls, v: list[str]) -> list[str]:
        for pattern in v:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a valid regex: {exc}") from None
        return v


class CoexistenceSettings(_Section):
    """Old ZooKeeper consumers and new Kafka members in one group (see docs/coexistence.md)."""

    enabled: bool = True
    #: how long a leader proxy may hold SyncGroup waiting for old owners to release
    max_hold_s: float = Field(15.0, gt=0, le=300)
    #: session timeout of proxy members; longer than a bridge fail-over
    proxy_session_timeout_ms: int = Field(30000, ge=6000, le=1800000)


class Settings(_Section):
    zookeeper: ZooKeeperSettings = ZooKeeperSettings()
    kafka: KafkaSettings = KafkaSettings()
    bridge: BridgeSettings = BridgeSettings()
    registry: RegistrySettings = RegistrySettings()
    groups: GroupsSettings = GroupsSettings()
    coexistence: CoexistenceSettings = CoexistenceSettings()


def _env_overrides(environ: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        parts = key[len(ENV_PREFIX) :].lower().split("__")
        if len(parts) != 2:
            raise ConfigError(f"environment variable {key}: expected {ENV_PREFIX}SECTION__KEY")
        out.setdefault(parts[0], {})[parts[1]] = value
    return out


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    for section, values in extra.items():
        if isinstance(values, dict) and isinstance(base.get(section), dict):
            base[section] = {**base[section], **values}
        else:
            base[section] = values
    return base


def _describe(err: ValidationError, source: str) -> str:
    lines = [f"invalid configuration ({source}):"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        value = e.get("input")
        shown = "**********" if "password" in key else repr(value)
        if e["type"] == "extra_forbidden":
            section = e["loc"][0] if len(e["loc"]) > 1 else None
            model = Settings.model_fields[section].annotation if section else Settings
            allowed = ", ".join(model.model_fields) if section and model else ""
            allowed = allowed or ", ".join(Settings.model_fields)
            lines.append(f"  {key}: unknown key; allowed: {allowed}")
        else:
            lines.append(f"  {key}: {e['msg']} (got {shown})")
    return "\n".join(lines)


def load(
    path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Build the settings from file, environment and flags, in that order of precedence."""
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text())
        except FileNotFoundError:
            raise ConfigError(f"config file {p} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {p} is not valid TOML: {exc}") from None
        source = str(p)
    _merge(data, _env_overrides(dict(os.environ if environ is None else environ)))
    _merge(data, overrides or {})
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source)) from None
