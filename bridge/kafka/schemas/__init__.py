"""Kafka wire schemas kafka-python 3 does not ship, in Kafka's own JSON message format.

kafka-python 3 builds every request and response class from such a file
(``kafka.protocol.schemas.load_json``); the files here are read the same way, by name, from
this package. Each one follows the schema of the Kafka release named in it field for field
(names, types, versions, nullability, defaults); only the descriptions are the bridge's.
"""
