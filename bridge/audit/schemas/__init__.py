"""The next-generation consumer group records of ``__consumer_offsets`` (KIP-848), in
Kafka's own JSON message format, read by kafka-python 3's ``ApiData`` (``next_gen.py``).

Each file follows the layout of Kafka 4.4.0's ``group-coordinator`` record of that name
field for field (types, versions, nullability, tags); the descriptions are the bridge's.
Kafka declares them as ``coordinator-key``/``coordinator-value`` messages whose key starts
with the record type (3-8) and whose value starts with its version (0); here they are
plain ``data`` messages at version 0, the record type read before the key's fields.
"""
