"""Golden vectors produced by the Kafka 3.9 jars (``scripts/golden_vectors.py``).

The JSON files here are generated, never edited: each vector holds the bytes Kafka's own
classes wrote and the fields Kafka reads back from them. The codec tests decode those bytes
with our codecs and compare; ``tests/integration/test_golden_vectors.py`` re-runs the
generator and checks the files are what the jars produce today.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent


@cache
def load(name: str) -> dict:
    """The vectors of ``tests/golden/<name>.json`` (without the header)."""
    data = json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))
    data.pop("_", None)
    return data
