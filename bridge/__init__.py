"""kafka-zk-bridge: keeps Kafka's legacy ZooKeeper layout true beside a modern cluster."""

__version__ = "0.1.0"
