"""An old client in a few lines: kafka-python's protocol classes at old versions, plain socket.

The requests are encoded by kafka-python (generated from Kafka's own schemas, which still
describe v0), so what the gateway gets is what a 0.8/0.10 client puts on the wire.
"""

from __future__ import annotations

import socket
import struct

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import MetadataRequest


class OldClient:
    """One connection; ``send`` returns the decoded answer (None for Produce acks=0)."""

    def __init__(
        self, address: tuple[str, int], client_id: str = "old-client", timeout: float = 30.0
    ):
        self.sock = socket.create_connection(address, timeout=timeout)
        self.client_id = client_id
        self._correlation = 0

    def send(self, request: ApiMessage):
        self.write(request)
        if not request.expect_response():
            return None
        return self.read(request)

    def write(self, request: ApiMessage) -> None:
        self._correlation += 1
        request.with_header(correlation_id=self._correlation, client_id=self.client_id)
        self.sock.sendall(request.encode(header=True, framed=True))

    def read(self, request: ApiMessage):
        size = struct.unpack(">i", self._exactly(4))[0]
        body = self._exactly(size)
        correlation = struct.unpack_from(">i", body)[0]
        assert correlation == self._correlation, (correlation, self._correlation)
        return request.header.get_response_class().decode(body[4:])

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {n} bytes")
            data += chunk
        return data

    def closed_by_peer(self, timeout: float = 10.0) -> bool:
        """True if the other side closed this connection (EOF or reset) within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1 << 16) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()


def known_everywhere(admin, topic: str, partitions: int) -> bool:
    """Every broker has ``topic`` with its leaders (brokers learn of a topic one by one:
    a client asking another broker a moment after the topic was made may not see it)."""
    for broker in admin.describe_cluster()["brokers"]:
        c = OldClient((broker["host"], broker["port"]))
        try:
            answer = c.send(
                MetadataRequest[4](topics=[MetadataRequest.MetadataRequestTopic(name=topic)])
            )
        finally:
            c.close()
        parts = answer.topics[0].partitions
        if len(parts) != partitions or any(p.leader_id < 0 for p in parts):
            return False
    return True
