"""What the local stack's servers are: their ports, Kafka lines, configs and saved state.

Data, config text and ``stack.json``: the processes themselves are started by
:mod:`bridge.devstack.stack` through :mod:`bridge.devstack.processes`.
"""

from __future__ import annotations

import base64
import json
import os
import random
import secrets
import socket
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

KAFKA_NODES = (1, 2, 3)

#: the user of the SASL_PLAINTEXT listener (its password is generated per stack)
SASL_USERNAME = "bridge"
SASL_MECHANISM = "PLAIN"

LOG4J = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${logfile}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
"""


class StackError(RuntimeError):
    """The stack could not be started or is not healthy; the message says which process."""


@dataclass
class Ports:
    """Loopback ports of the stack. Defaults avoid the well-known 2181/9092."""

    zookeeper: int = 22181
    brokers: tuple[int, int, int] = (29092, 29093, 29094)
    controllers: tuple[int, int, int] = (29192, 29193, 29194)
    #: the SASL_PLAINTEXT (SASL/PLAIN) listener of each broker
    sasl_brokers: tuple[int, int, int] = (29292, 29293, 29294)

    @classmethod
    def free(cls) -> Ports:
        """Ten currently free loopback ports, for test stacks beside a dev stack.

        Chosen below the kernel's ephemeral range: a port from that range, once its server
        stops for a restart, can be taken as the source port of any outgoing connection,
        and the restarted server then cannot bind it.
        """
        try:
            low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            low = 32768
        rng = random.SystemRandom()
        socks: list[socket.socket] = []
        try:
            while len(socks) < 10:
                s = socket.socket()
                try:
                    s.bind(("127.0.0.1", rng.randrange(10000, max(low, 10001))))
                except OSError:
                    s.close()
                    continue
                socks.append(s)
            p = [s.getsockname()[1] for s in socks]
        finally:
            for s in socks:
                s.close()
        return cls(
            zookeeper=p[0],
            brokers=(p[1], p[2], p[3]),
            controllers=(p[4], p[5], p[6]),
            sasl_brokers=(p[7], p[8], p[9]),
        )


#: the Kafka lines a stack can run, each with its classpath (``bridge/jars/poms/<name>``):
#: 3.9, the last with the old request versions and message formats, and the newest 4.x
KAFKA_VERSIONS = {"3.9": "kafka", "4": "kafka4"}


#: Kafka 4's next-generation groups (KIP-848) on the 4.x stack: members heartbeat every
#: second (default 5 s) and one that dies is fenced after 6 s (default 45 s, which is also
#: the default minimum), as the stack's classic groups are configured by their clients.
#: These settings touch only ``consumer``-type groups, so no other test changes speed.
#: ``range`` first: the server assignor that agrees with old consumers in a mixed group
#: (docs/coexistence.md, what operators set); a group whose members name none uses it.
NEXT_GEN_GROUPS = {
    "group.consumer.assignors": "range,uniform",
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.heartbeat.interval.ms": 1000,
    "group.consumer.min.session.timeout.ms": 6000,
    "group.consumer.session.timeout.ms": 6000,
}


def kafka_line(version: str) -> str:
    """``3.9``/``3.9.x`` or ``4``/``4.x``/``4.4.0`` -> the line's key in ``KAFKA_VERSIONS``."""
    for line in sorted(KAFKA_VERSIONS, key=len, reverse=True):
        if version == line or version.startswith(line + "."):
            return line
    raise StackError(f"Kafka version {version!r}: the local stack runs 3.9 or 4.x")


@dataclass
class StackState:
    ports: Ports
    cluster_id: str
    pids: dict[str, int] = field(default_factory=dict)
    #: password of the SASL_PLAINTEXT listener's user (a local dev credential)
    sasl_password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    #: the Kafka line the stack's data was formatted with (a key of KAFKA_VERSIONS)
    kafka_version: str = "3.9"

    @classmethod
    def load(cls, path: Path) -> StackState:
        raw = json.loads(path.read_text())
        p = raw["ports"]
        # a stack.json from before the SASL listener: default ports, a fresh password
        # (the brokers get the listener at their next start)
        sasl = tuple(p.get("sasl_brokers", Ports.sasl_brokers))
        ports = Ports(p["zookeeper"], tuple(p["brokers"]), tuple(p["controllers"]), sasl)
        state = cls(
            ports=ports,
            cluster_id=raw["cluster_id"],
            pids=raw.get("pids", {}),
            kafka_version=raw.get("kafka_version", "3.9"),
        )
        if raw.get("sasl_password"):
            state.sasl_password = raw["sasl_password"]
        return state

    def save(self, path: Path) -> None:
        # it holds the dev stack's SASL password: readable by its owner only
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(asdict(self), indent=2))
        os.chmod(path, 0o600)


def zookeeper_config(home: Path, port: int) -> str:
    """The ``zoo.cfg`` of the stack's ZooKeeper: loopback only, short ticks for tests."""
    return "\n".join(
        [
            "tickTime=500",
            f"dataDir={home / 'data'}",
            f"clientPort={port}",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "minSessionTimeout=1000",
            "maxSessionTimeout=60000",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr,stat,mntr,cons",
            "",
        ]
    )


def kafka_properties(node: int, state: StackState, home: Path) -> dict[str, object]:
    """``server.properties`` of KRaft node ``node`` (broker and controller in one)."""
    p = state.ports
    voters = ",".join(f"{n}@127.0.0.1:{p.controllers[n - 1]}" for n in KAFKA_NODES)
    plain = f"PLAINTEXT://127.0.0.1:{p.brokers[node - 1]}"
    sasl = f"SASL_PLAINTEXT://127.0.0.1:{p.sasl_brokers[node - 1]}"
    user, password = SASL_USERNAME, state.sasl_password
    props: dict[str, object] = {
        "process.roles": "broker,controller",
        "node.id": node,
        "controller.quorum.voters": voters,
        "listeners": f"{plain},{sasl},CONTROLLER://127.0.0.1:{p.controllers[node - 1]}",
        "advertised.listeners": f"{plain},{sasl}",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT",
        # SASL/PLAIN on the SASL_PLAINTEXT listener, users inline (no JAAS file)
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": SASL_MECHANISM,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{user}" password="{password}" user_{user}="{password}";'
        ),
        "log.dirs": home / "data",
        "num.network.threads": 2,
        "num.io.threads": 2,
        "num.partitions": 1,
        "offsets.topic.replication.factor": 3,
        "offsets.topic.num.partitions": 50,
        "transaction.state.log.replication.factor": 3,
        "transaction.state.log.min.isr": 2,
        "group.initial.rebalance.delay.ms": 0,
        "auto.create.topics.enable": "false",
        "delete.topic.enable": "true",
        "broker.session.timeout.ms": 6000,
        "broker.heartbeat.interval.ms": 1000,
        "log.segment.bytes": 16 * 1024 * 1024,
    }
    if state.kafka_version == "4":
        props.update(NEXT_GEN_GROUPS)
    return props


def _new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, url-safe base64 without padding (22 chars), never
    starting with ``-``, as Kafka's own ``Uuid.randomUuid`` draws again for one: the storage
    tool's argument parser takes ``-t -xyz`` for two options (one stack in 64 failed to
    format its brokers, "argument --cluster-id/-t: expected one argument", seen in CI)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
