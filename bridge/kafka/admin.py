"""Admin clients for one-off jobs outside the bridge's loop (the audit's sources).

The bridge and its commands connect through ``bridge.connect`` (retries, the commands'
short wait, the SASL refusal probe); a job that is handed a bootstrap list and client
options opens its client here, so that no module outside ``bridge/kafka`` builds one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka import KafkaAdminClient


def open_admin(
    bootstrap: str, options: Mapping[str, Any], bound_ms: int | None = None
) -> KafkaAdminClient:
    """An admin client for ``bootstrap`` (comma separated) with kafka-python ``options``
    (their own ``bootstrap_servers`` ignored). With ``bound_ms``, requests that set no
    ``request_timeout_ms`` get it, and bootstrapping waits that long at most."""
    opts = {k: v for k, v in options.items() if k != "bootstrap_servers"}
    if bound_ms is not None:
        opts.setdefault("request_timeout_ms", bound_ms)
        opts["bootstrap_timeout_ms"] = opts["request_timeout_ms"]
    return KafkaAdminClient(bootstrap_servers=bootstrap.split(","), **opts)
