#!/usr/bin/env bash
# The whole test suite from a fresh machine: install, then pytest (unit, integration and
# end-to-end; the fixtures start and stop the real servers themselves). Extra arguments
# go to pytest. Exit 5 (no tests collected) counts as failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/ruff check bridge zkpaths tests bench
exec .venv/bin/python -m pytest "$@"
