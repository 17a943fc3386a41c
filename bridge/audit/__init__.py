"""The migration audit: ``__consumer_offsets`` and a ZooKeeper snapshot, compared per group.

* :mod:`bridge.audit.records` (with :mod:`~bridge.audit.consumer_protocol` and
  :mod:`~bridge.audit.wire`) - the one decoder of ``__consumer_offsets``, pure;
* :mod:`bridge.audit.verdict` - the per-group verdict rules, pure;
* :mod:`bridge.audit.snapshot` - writes the ZooKeeper side to files (kazoo);
* :mod:`bridge.audit.dump` - a file dump of ``__consumer_offsets`` and log-end offsets;
* :mod:`bridge.audit.pipeline` - the PySpark job; :mod:`bridge.audit.report` - the HTML report.
"""
