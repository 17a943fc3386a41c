"""The migration audit: ``__consumer_offsets`` and a ZooKeeper snapshot, compared per group.

* :mod:`bridge.audit.records` (with :mod:`~bridge.audit.consumer_protocol` and
  :mod:`~bridge.audit.wire`) - the one decoder of ``__consumer_offsets``, pure;
* :mod:`bridge.audit.verdict` - the per-group verdict rules, pure;
* :mod:`bridge.audit.snapshot` - writes the ZooKeeper side to files (kazoo);
* :mod:`bridge.audit.dump` - a file dump of ``__consumer_offsets`` and log-end offsets;
* :mod:`bridge.audit.pipeline` - the PySpark job, stage by stage, over
  :mod:`~bridge.audit.session` (Spark session, Kafka source jars),
  :mod:`~bridge.audit.sources` (Kafka source, dump and snapshot readers, Kafka metadata),
  :mod:`~bridge.audit.compaction` (stage 1 on Spark), :mod:`~bridge.audit.decode` (its
  Python workers, pure) and :mod:`~bridge.audit.compare` (both stores side by side,
  verdicts, activity); :mod:`bridge.audit.report` - the HTML report.
"""
