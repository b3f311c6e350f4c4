#!/usr/bin/env bash
# Install mongosh (the MongoDB shell) for tests/test_mongosh.py from the npm registry into .tools/ (git-ignored).
# Idempotent and quiet: does nothing when .tools/node_modules/.bin/mongosh already runs. Needs Node.js >= 18 and npm.
# The test finds it at .tools/node_modules/.bin/mongosh (or $SCHEMA_LAB_MONGOSH, or mongosh on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."

MONGOSH=".tools/node_modules/.bin/mongosh"
VERSION="${SCHEMA_LAB_MONGOSH_VERSION:-2}"
if [ -x "$MONGOSH" ] && "$MONGOSH" --version >/dev/null 2>&1; then
    echo "mongosh: $("$MONGOSH" --version)"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install_mongosh.sh: npm not found; install Node.js (>= 18) with npm, e.g. apt-get install nodejs npm" >&2
    exit 1
fi
echo "Installing mongosh@$VERSION with npm into .tools/ (about a minute) ..."
npm install --prefix .tools --no-audit --no-fund --loglevel=error "mongosh@$VERSION" >/dev/null
echo "mongosh: $("$MONGOSH" --version)"
