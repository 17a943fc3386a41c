"""Flow F1's decision: the legacy ``/brokers`` registry a Kafka cluster view implies.

Pure. Given the cluster view and what ZooKeeper holds, returns the desired nodes, or a
refusal when a live ZooKeeper-mode cluster owns the registry (the bridge never fights real
brokers). Foreign nodes that do not even decode are reported as bad input (I5) and left
alone; the rest of the registry is still mirrored.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

import zkpaths
from bridge.decide.plan import Desired, Node
from bridge.kafka.views import BrokerView, ClusterView

#: every path the registry flow may own lives under one of these
SCOPE = ("/brokers", "/controller", "/controller_epoch", "/cluster")


@dataclass(frozen=True)
class BadNode:
    """A node written by someone else that is not valid legacy data."""

    path: str
    reason: str


def with_legacy_endpoints(view: ClusterView, legacy: Mapping[int, BrokerView]) -> ClusterView:
    """``view`` with each broker's endpoint on the legacy listener (``legacy``, read through
    ``registry.legacy_bootstrap_servers``) instead of the one the bridge connects through.

    Which brokers are live, and their racks, still come from ``view``. A live broker missing
    from ``legacy`` (that listener's answer lags, or the broker has no such listener) becomes
    unsettled: its registration is kept as it is, never published with the wrong endpoint."""
    brokers = {
        bid: replace(
            b,
            host=legacy[bid].host,
            port=legacy[bid].port,
            security_protocol=legacy[bid].security_protocol,
        )
        for bid, b in view.brokers.items()
        if bid in legacy
    }
    missing = frozenset(view.brokers) - frozenset(brokers)
    return replace(view, brokers=brokers, unsettled_brokers=view.unsettled_brokers | missing)


def with_gateway_endpoints(
    view: ClusterView, gateway: Mapping[int, tuple[str, int]]
) -> ClusterView:
    """``view`` with each broker published at its legacy gateway endpoint (``gateway``: broker
    id -> the gateway's HOST, PORT for it, ``registry.advertise = "gateway"``), PLAINTEXT.

    The same substitution as ``with_legacy_endpoints``: broker ids, liveness and racks come
    from ``view``; a live broker the gateway has no endpoint for (yet) is unsettled, its
    registration kept as it is, never published with the broker's own endpoint."""
    legacy = {
        bid: BrokerView(bid, host, port, security_protocol="PLAINTEXT")
        for bid, (host, port) in gateway.items()
    }
    return with_legacy_endpoints(view, legacy)


@dataclass
class RegistryDecision:
    desired: dict[str, Desired] = field(default_factory=dict)
    #: set when the bridge must not write the registry at all, with the reason
    refusal: str | None = None
    bad_nodes: list[BadNode] = field(default_factory=list)


def _structural(*paths: str) -> dict[str, Desired]:
    return {p: Desired(structural=True) for p in paths}


def _timestamp(current: Node | None, fresh: bytes, now_ms: int, broker_id: int) -> int:
    """Keep the timestamp of an unchanged registration, as a re-registering broker would not."""
    if current is None:
        return now_ms
    try:
        old = zkpaths.decode_broker(broker_id, current.data)
        new = zkpaths.decode_broker(broker_id, fresh)
    except zkpaths.CodecError:
        return now_ms
    same = old.endpoints == new.endpoints and old.rack == new.rack and old.host == new.host
    return old.timestamp_ms if same else now_ms


def foreign_brokers(
    current: Mapping[str, Node], owned: AbstractSet[str]
) -> tuple[list[int], list[BadNode]]:
    """Live broker registrations the bridge did not write, and foreign garbage under /ids."""
    live: list[int] = []
    bad: list[BadNode] = []
    prefix = zkpaths.BROKER_IDS + "/"
    for path, node in sorted(current.items()):
        if not path.startswith(prefix) or path in owned or "/" in path[len(prefix) :]:
            continue
        name = path[len(prefix) :]
        try:
            broker_id = int(name)
            zkpaths.decode_broker(broker_id, node.data)
        except ValueError:
            bad.append(BadNode(path, f"broker id {name!r} is not a number"))
            continue
        except zkpaths.CodecError as exc:
            bad.append(BadNode(path, str(exc)))
            continue
        live.append(broker_id)
    return live, bad


def _brokers(
    view: ClusterView,
    current: Mapping[str, Node],
    owned: AbstractSet[str],
    bad_paths: AbstractSet[str],
    now_ms: int,
    version: int,
) -> dict[str, Desired]:
    """A registration per live broker (v``version``); an unsettled broker's is kept."""
    d: dict[str, Desired] = {}
    for broker in view.brokers.values():
        path = zkpaths.broker_path(broker.broker_id)
        if path in bad_paths:
            continue  # someone else's garbage sits there; reported, left alone
        reg = zkpaths.BrokerRegistration.from_endpoints(
            broker.broker_id,
            [f"{broker.security_protocol}://{broker.host}:{broker.port}"],
            listener_security_protocol_map={broker.security_protocol: broker.security_protocol},
            timestamp_ms=now_ms,
            rack=broker.rack if version >= 3 else None,
            version=version,
        )
        fresh = zkpaths.encode_broker(reg)
        ts = _timestamp(current.get(path), fresh, now_ms, broker.broker_id)
        if ts != now_ms:
            fresh = zkpaths.encode_broker(replace(reg, timestamp_ms=ts))
        d[path] = Desired(fresh, ephemeral=True)
    for broker_id in view.unsettled_brokers - set(view.brokers):
        path = zkpaths.broker_path(broker_id)
        if path in owned and path in current:
            d[path] = Desired(current[path].data, ephemeral=True)  # kept, not rewritten
    return d


def _topics(
    view: ClusterView, current: Mapping[str, Node], owned: AbstractSet[str]
) -> dict[str, Desired]:
    """Each topic's assignment and partition states; an unsettled topic's nodes are kept."""
    d: dict[str, Desired] = {}
    for topic in view.topics.values():
        assignment = zkpaths.TopicAssignment(
            partitions={p: pv.replicas for p, pv in topic.partitions.items()},
            topic_id=topic.topic_id,
        )
        d[zkpaths.topic_path(topic.name)] = Desired(zkpaths.encode_topic(assignment))
        d[zkpaths.partitions_path(topic.name)] = Desired(b"")
        for p, pv in topic.partitions.items():
            d[zkpaths.partition_path(topic.name, p)] = Desired(b"")
            state = zkpaths.PartitionState(
                leader=pv.leader,
                leader_epoch=pv.leader_epoch,
                isr=pv.isr,
                controller_epoch=view.controller_epoch,
            )
            d[zkpaths.partition_state_path(topic.name, p)] = Desired(
                zkpaths.encode_partition_state(state)
            )
    for name in view.unsettled - set(view.topics):
        root = zkpaths.BROKER_TOPICS + "/" + name
        for path, node in current.items():
            if (path == root or path.startswith(root + "/")) and path in owned:
                d[path] = Desired(node.data)  # a transient metadata error deletes nothing
    return d


def _controller(view: ClusterView, current: Mapping[str, Node], now_ms: int) -> dict[str, Desired]:
    """/controller (its timestamp kept while the same controller leads), /controller_epoch
    and /cluster/id."""
    d: dict[str, Desired] = {}
    if view.controller_id >= 0:
        old = current.get(zkpaths.CONTROLLER)
        ts = now_ms
        if old is not None:
            try:
                prev = zkpaths.decode_controller(old.data)
                if prev.broker_id == view.controller_id:
                    ts = prev.timestamp_ms
            except zkpaths.CodecError:
                pass
        d[zkpaths.CONTROLLER] = Desired(
            zkpaths.encode_controller(zkpaths.ControllerRegistration(view.controller_id, ts)),
            ephemeral=True,
        )
    d[zkpaths.CONTROLLER_EPOCH] = Desired(zkpaths.encode_controller_epoch(view.controller_epoch))
    if view.cluster_id:
        d[zkpaths.CLUSTER_ID] = Desired(zkpaths.encode_cluster_id(view.cluster_id))
    return d


def decide_registry(
    view: ClusterView,
    current: Mapping[str, Node],
    owned: AbstractSet[str],
    now_ms: int,
    *,
    broker_json_version: int = 4,
) -> RegistryDecision:
    """The registry nodes for ``view``; ``current`` and ``owned`` come from ZooKeeper.

    ``broker_json_version`` (``registry.broker_json_version``): 4, or 2 for a fleet with
    0.9.0.0 clients, whose parser throws on anything but v1 and v2; v2 carries no rack."""
    decision = RegistryDecision()
    live, decision.bad_nodes = foreign_brokers(current, owned)
    if live:
        decision.refusal = (
            f"live broker registrations not written by the bridge under {zkpaths.BROKER_IDS} "
            f"(ids {live}): a ZooKeeper-mode Kafka cluster owns this registry, "
            "so the bridge will not write it"
        )
        return decision
    bad_paths = {b.path for b in decision.bad_nodes}
    d = decision.desired
    d.update(_structural("/brokers", zkpaths.BROKER_IDS, zkpaths.BROKER_TOPICS, "/cluster"))
    d.update(_brokers(view, current, owned, bad_paths, now_ms, broker_json_version))
    d.update(_topics(view, current, owned))
    d.update(_controller(view, current, now_ms))
    return decision
