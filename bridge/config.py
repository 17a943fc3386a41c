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

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from bridge.config_sources import ConfigError, Origins, describe, env_overrides, merge

_HOSTPORT = re.compile(r"^(?P<host>[A-Za-z0-9._\-]+|\[[0-9A-Fa-f:.]+\]):(?P<port>\d{1,5})$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def split_hostport(value: str, min_port: int = 1) -> tuple[str, int]:
    """``HOST:PORT`` (IPv6 as ``[::1]:PORT``) into its parts; ValueError says what is wrong."""
    m = _HOSTPORT.match(value.strip())
    if not m:
        raise ValueError(f"{value!r} is not HOST:PORT")
    port = int(m["port"])
    if not min_port <= port <= 65535:
        raise ValueError(f"port {port} in {value!r} is outside {min_port}-65535")
    return m["host"].strip("[]"), port


def _check_hostports(value: str, what: str) -> str:
    hosts = [h.strip() for h in value.split(",")]
    problems = []
    for h in hosts:
        try:
            split_hostport(h)
        except ValueError as exc:
            problems.append(str(exc))
    if not value.strip() or problems:
        raise ValueError(
            f"expected {what} as HOST:PORT[,HOST:PORT...]; {'; '.join(problems) or 'empty'}"
        )
    return ",".join(hosts)


class ZooKeeperSettings(_Section):
    connect: str = Field("127.0.0.1:2181", description="HOST:PORT[,HOST:PORT...][/chroot]")
    session_timeout_s: float = Field(10.0, ge=1.0, le=600.0)
    connection_timeout_s: float = Field(15.0, gt=0)
    auth_scheme: Literal["digest", "sasl", None] = None
    username: str | None = None
    password: SecretStr | None = None
    #: a file holding the password (one trailing newline ignored), instead of password
    password_file: Path | None = None
    #: ACLs of the nodes the bridge creates (docs/security.md); unset: "bridge-writable" when
    #: credentials are set, else "open"
    acl: Literal["bridge-writable", "open", None] = Field(None, validate_default=True)

    @field_validator("connect")
    @classmethod
    def _connect(cls, v: str) -> str:
        hosts, _, chroot = v.partition("/")
        _check_hostports(hosts, "ZooKeeper servers")
        return hosts + ("/" + chroot if chroot else "")

    @field_validator("password_file")
    @classmethod
    def _password_file(cls, v: Path | None, info) -> Path | None:
        if v is None:
            return v
        if info.data.get("password") is not None:
            raise ValueError("set zookeeper.password or zookeeper.password_file, not both")
        read_secret_file(v, "ZooKeeper password", ValueError)
        return v

    @field_validator("acl")
    @classmethod
    def _acl(cls, v: str | None, info) -> str | None:
        d = info.data
        if v == "bridge-writable" and not (d.get("auth_scheme") and d.get("username")):
            raise ValueError(
                "'bridge-writable' needs credentials to write as: set zookeeper.auth_scheme, "
                "zookeeper.username and a password, or acl = 'open'"
            )
        return v

    @model_validator(mode="after")
    def _credentials(self) -> ZooKeeperSettings:
        if self.auth_scheme and not (
            self.username and (self.password is not None or self.password_file is not None)
        ):
            raise ValueError(
                f"auth_scheme {self.auth_scheme!r} needs zookeeper.username and a password "
                "(zookeeper.password, zookeeper.password_file or ZK_BRIDGE__ZOOKEEPER__PASSWORD)"
            )
        return self

    def secret(self) -> str | None:
        """The password, from ``password`` or read now from ``password_file``."""
        if self.password is not None:
            return self.password.get_secret_value()
        if self.password_file is not None:
            return read_secret_file(self.password_file, "ZooKeeper password", ConfigError)
        return None

    def acl_mode(self) -> str:
        """The ACL policy in effect: ``acl``, or its default for the credentials given."""
        if self.acl is not None:
            return self.acl
        return "bridge-writable" if self.auth_scheme and self.username else "open"


def read_secret_file(path: Path, what: str, error: type[Exception]) -> str:
    """The secret in ``path`` (one trailing newline ignored); ``error`` names ``what`` and the
    file, never its content, when it cannot be read or is empty."""
    try:
        secret = path.read_text().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise error(f"{what} file {path} cannot be read: {reason}") from None
    if not secret:
        raise error(f"{what} file {path} is empty")
    return secret


class KafkaSettings(_Section):
    bootstrap_servers: str = "127.0.0.1:9092"
    client_id: str = "kafka-zk-bridge"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", None] = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    #: a file holding the SASL password (one trailing newline ignored), instead of sasl_password
    sasl_password_file: Path | None = None
    ssl_cafile: Path | None = None
    request_timeout_ms: int = Field(10000, ge=1000, le=300000)

    @field_validator("bootstrap_servers")
    @classmethod
    def _bootstrap(cls, v: str) -> str:
        return _check_hostports(v, "Kafka bootstrap servers")

    @field_validator("sasl_password_file")
    @classmethod
    def _password_file(cls, v: Path | None, info) -> Path | None:
        if v is None:
            return v
        if info.data.get("sasl_password") is not None:
            raise ValueError("set kafka.sasl_password or kafka.sasl_password_file, not both")
        read_secret_file(v, "SASL password", ValueError)
        return v

    def sasl_secret(self) -> str | None:
        """The SASL password, from ``sasl_password`` or read now from ``sasl_password_file``."""
        if self.sasl_password is not None:
            return self.sasl_password.get_secret_value()
        if self.sasl_password_file is not None:
            return read_secret_file(self.sasl_password_file, "SASL password", ConfigError)
        return None

    def client_options(self) -> dict[str, Any]:
        """kafka-python keyword arguments (secrets unwrapped only here)."""
        opts: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers.split(","),
            "client_id": self.client_id,
            "security_protocol": self.security_protocol,
            "request_timeout_ms": self.request_timeout_ms,
            # kafka-python backs off up to 30 s by default; a restarted broker should be
            # used again within a second, as Java clients do
            "reconnect_backoff_max_ms": 1000,
        }
        if self.sasl_mechanism:
            opts["sasl_mechanism"] = self.sasl_mechanism
            opts["sasl_plain_username"] = self.sasl_username
            secret = self.sasl_secret()
            if secret is not None:
                opts["sasl_plain_password"] = secret
        if self.ssl_cafile:
            opts["ssl_cafile"] = str(self.ssl_cafile)
        return opts


class BridgeSettings(_Section):
    root: str = "/kafka-zk-bridge"
    id: str | None = Field(None, description="name of this bridge process in the election")
    #: every flow re-reads its whole ZooKeeper tree this often, to heal drift
    resync_interval_s: float = Field(60.0, gt=0)

    @field_validator("root")
    @classmethod
    def _root(cls, v: str) -> str:
        if not re.fullmatch(r"(/[^/\s]+)+", v):
            raise ValueError("expected an absolute ZooKeeper path without a trailing '/'")
        return v


class ScaleSettings(_Section):
    """Several active bridges sharing the groups (docs/operations.md, "Scale-out")."""

    #: "single": one active bridge, the others standbys (the election); "shares": every
    #: bridge active, each on the shares (partitions of __consumer_offsets) Kafka's group
    #: coordinator deals it as a member of ``group_id``
    mode: Literal["single", "shares"] = "single"
    #: the consumer group the bridges of one root form on __consumer_offsets
    group_id: str = Field("kafka-zk-bridge", min_length=1)
    #: a dead bridge's shares move after this (its heartbeats are every tenth of it)
    session_timeout_ms: int = Field(10000, ge=1000, le=300000)


class RegistrySettings(_Section):
    enabled: bool = True
    poll_interval_s: float = Field(0.5, gt=0, le=60)
    #: PLAINTEXT listener(s) old clients use, HOST:PORT[,...]; when set, /brokers/ids holds
    #: each broker's endpoint on that listener, not on the one the bridge connects through
    legacy_bootstrap_servers: str | None = None
    #: whose endpoints /brokers/ids publishes: the brokers' own (or legacy_bootstrap_servers'),
    #: or the legacy gateway's (flow F6: old clients then talk to the gateway only)
    advertise: Literal["brokers", "gateway"] = "brokers"
    #: the /brokers/ids JSON version written: 4 (0.8.x and 0.9.0.1+ read it, as do current
    #: tools), or 2 when 0.9.0.0 clients run (its parser throws on versions other than 1
    #: and 2); v2 has no rack and no listener map (docs/compatibility.md)
    broker_json_version: int = 4

    @field_validator("legacy_bootstrap_servers")
    @classmethod
    def _legacy_bootstrap(cls, v: str | None) -> str | None:
        return None if v is None else _check_hostports(v, "the legacy PLAINTEXT listener")

    @field_validator("broker_json_version")
    @classmethod
    def _broker_json_version(cls, v: int) -> int:
        if v not in (2, 4):
            raise ValueError(f"expected 2 (0.9.0.0 clients run) or 4, got {v}")
        return v


class GatewaySettings(_Section):
    """The legacy gateway (flow F6): old clients' request versions answered from the cluster."""

    enabled: bool = False
    #: HOST:PORT the gateway listens on (port 0 picks a free one)
    listen: str | None = None
    #: the host /brokers/ids publishes for the gateway; unset: the listen host
    advertised_host: str | None = None
    #: unset: every broker id at the one ``listen`` port; set: each broker id also gets a
    #: port of its own, this base + the broker id (0: a free port each), for clients that
    #: key brokers by address (kafka-node 3.x)
    broker_port_base: int | None = Field(None, ge=0, le=65535)
    #: a request larger than this closes the connection (Kafka's socket.request.max.bytes)
    max_request_bytes: int = Field(104857600, ge=1024, le=2147483647)
    #: connections beyond this are closed as they arrive (Kafka's max.connections)
    max_connections: int = Field(1000, ge=1, le=1000000)
    #: a connection idle this long is closed (Kafka's connections.max.idle.ms, in seconds)
    idle_timeout_s: float = Field(600.0, gt=0, le=86400)
    #: an old consumer's commit at generation -1 into a group where this bridge's proxies
    #: are members is committed as the proxy of the partition's ZooKeeper owner (Kafka would
    #: refuse it); false: passed through as sent (and refused)
    rewrite_simple_commits: bool = True

    @field_validator("listen")
    @classmethod
    def _listen(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            split_hostport(v, min_port=0)
        except ValueError as exc:
            raise ValueError(f"expected HOST:PORT (port 0 picks a free one): {exc}") from None
        return v.strip()

    @field_validator("advertised_host")
    @classmethod
    def _advertised_host(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z0-9._\-]+|[0-9A-Fa-f:.]+", v):
            raise ValueError("expected a host name or address, without a port")
        return v


class GroupsSettings(_Section):
    enabled: bool = True
    #: regexes (full match) of group ids to mirror, and of group ids never to touch
    include: list[str] = Field(default_factory=lambda: [".*"])
    exclude: list[str] = Field(default_factory=list)
    #: what happens to mirrored offsets when a group is deleted in Kafka
    on_group_deleted: Literal["keep-offsets", "delete"] = "keep-offsets"
    #: how often committed offsets are fetched and mirrored (one OffsetFetch per coordinator)
    poll_interval_s: float = Field(0.1, gt=0, le=60)
    #: how often groups, members and assignments are re-described in full (with
    #: follow_offsets_log: how often topics and storage modes are read again)
    full_interval_s: float = Field(1.0, gt=0, le=600)
    #: follow __consumer_offsets and ask the group APIs only about the groups its records
    #: name, every group at each bridge.resync_interval_s (docs/concepts.md)
    follow_offsets_log: bool = True

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


class StormSpout(_Section):
    """One storm-kafka ``KafkaSpout`` whose offsets the bridge reads (docs/migration.md)."""

    #: the spout's ``SpoutConfig.zkRoot`` as the bridge sees it (inside its chroot, if any)
    zk_root: str
    #: ``SpoutConfig.id``: the offsets are at ``<zk_root>/<spout_id>/partition_<n>``
    spout_id: str
    #: the one topic the spout reads (``SpoutConfig.topic``)
    topic: str
    #: the name of the group in ``zk-bridge groups`` and of its Kafka consumer group
    group: str

    @model_validator(mode="after")
    def _paths(self) -> StormSpout:
        from zkpaths.dialects.storm import spout_path
        from zkpaths.errors import ZkPathError
        from zkpaths.names import topic_problem

        try:
            spout_path(self.zk_root, self.spout_id)
        except ZkPathError as exc:
            raise ValueError(f"{exc.path!r}: {exc.reason}") from None
        if topic_problem(self.topic):
            raise ValueError(f"topic {self.topic!r}: {topic_problem(self.topic)}")
        return self


class StormSettings(_Section):
    """storm-kafka spouts, named explicitly: the bridge never scans ZooKeeper for them."""

    spouts: list[StormSpout] = Field(default_factory=list)

    @field_validator("spouts")
    @classmethod
    def _unique(cls, v: list[StormSpout]) -> list[StormSpout]:
        groups = [s.group for s in v]
        twice = sorted({g for g in groups if groups.count(g) > 1})
        if twice:
            raise ValueError(f"group names used by two spouts: {', '.join(twice)}")
        return v


class MetricsSettings(_Section):
    """The HTTP endpoint with ``/metrics``, ``/healthz`` and ``/readyz`` (docs/operations.md)."""

    enabled: bool = True
    #: HOST:PORT to listen on; loopback by default so nothing is exposed by accident
    address: str = "127.0.0.1:9308"
    #: a leader is ready while every flow succeeded within this many of its poll intervals...
    ready_ticks: float = Field(20.0, ge=1, le=10000)
    #: ...but never less than this many seconds (a slow tick is not a failed one)
    ready_floor_s: float = Field(10.0, gt=0, le=3600)

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        try:
            split_hostport(v, min_port=0)
        except ValueError as exc:
            raise ValueError(f"expected HOST:PORT (port 0 picks a free one): {exc}") from None
        return v.strip()


class Settings(_Section):
    zookeeper: ZooKeeperSettings = ZooKeeperSettings()
    kafka: KafkaSettings = KafkaSettings()
    bridge: BridgeSettings = BridgeSettings()
    registry: RegistrySettings = RegistrySettings()
    groups: GroupsSettings = GroupsSettings()
    coexistence: CoexistenceSettings = CoexistenceSettings()
    metrics: MetricsSettings = MetricsSettings()
    gateway: GatewaySettings = GatewaySettings()
    storm: StormSettings = StormSettings()
    scale: ScaleSettings = ScaleSettings()

    @model_validator(mode="after")
    def _gateway_rules(self) -> Settings:
        """Rules across keys; each message names the keys involved."""
        if self.storm.spouts and not self.groups.enabled:
            raise ValueError(
                "storm.spouts are reconciled by the groups flow: set groups.enabled = true "
                "or remove the spouts"
            )
        if self.scale.mode == "shares" and self.storm.spouts:
            raise ValueError(
                "storm.spouts are not shared between bridges yet: use scale.mode = 'single' "
                "or remove the spouts"
            )
        if self.scale.mode == "shares" and not self.groups.follow_offsets_log:
            raise ValueError(
                "scale.mode = 'shares' deals the shares as partitions of __consumer_offsets: "
                "set groups.follow_offsets_log = true"
            )
        if self.gateway.enabled and self.gateway.listen is None:
            raise ValueError(
                "gateway.enabled = true needs gateway.listen = 'HOST:PORT' "
                "(or run with --gateway-listen HOST:PORT)"
            )
        if self.registry.advertise != "gateway":
            return self
        if not self.gateway.enabled:
            raise ValueError(
                "registry.advertise = 'gateway' needs the gateway on: set gateway.enabled = "
                "true and gateway.listen (or run with --gateway-listen HOST:PORT)"
            )
        if self.registry.legacy_bootstrap_servers is not None:
            raise ValueError(
                "registry.legacy_bootstrap_servers has no effect with registry.advertise = "
                "'gateway' (/brokers/ids then publishes the gateway): unset one of them"
            )
        return self


def load(
    path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    overrides_origin: str = "the command line",
) -> Settings:
    """Build the settings from file, environment and flags, in that order of precedence."""
    data: dict[str, Any] = {}
    source = "no config file"
    if path is not None:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text())
        except FileNotFoundError:
            raise ConfigError(f"config file {p} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {p} cannot be read: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {p} is not valid TOML: {exc}") from None
        source = str(p)
    origins: Origins = {}
    env = env_overrides(Settings, dict(os.environ if environ is None else environ), origins)
    merge(data, env, origins, "")
    merge(data, overrides or {}, origins, overrides_origin)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe(exc, source, origins, Settings)) from None
