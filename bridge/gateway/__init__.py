"""Legacy gateway (flow F6): old clients' protocol in front of a Kafka 4.x cluster."""
