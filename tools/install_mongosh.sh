#!/usr/bin/env bash
# Install mongosh (the MongoDB shell) from the npm registry into .tools/ (git-ignored), for tests/test_mongosh.py
# and `python3 dev.py mongosh`. Idempotent: nothing to do when a mongosh is already there ($SCHEMA_LAB_MONGOSH,
# .tools/, or mongosh on PATH). Needs Node.js >= 18 with npm. The work is done by `python3 dev.py mongosh`, which
# also turns mongosh's telemetry off (see README: Serve the engine to mongosh and Compass).
set -euo pipefail
exec python3 "$(dirname "$0")/../dev.py" mongosh --version
