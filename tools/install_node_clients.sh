#!/usr/bin/env bash
# Install the Node.js clients tests/test_node_clients.py points at `labkit serve`: the Node.js driver (mongodb),
# Mongoose, and MongoDB Compass's libraries (mongodb-data-service, @mongodb-js/explain-plan-helper, mongodb-schema),
# from the npm registry into .tools/node/ (git-ignored). Idempotent and quiet: does nothing when they are there.
# --ignore-scripts: none of them needs an install script for what the tests call (Compass's data service pulls in
# optional native modules and an Electron helper whose scripts would build or download binaries). Needs Node.js
# >= 20.19 (the driver 7 and Mongoose 9 require it) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX=".tools/node"
PACKAGES=("mongodb@7" "mongoose@9" "mongodb-data-service@22" "@mongodb-js/explain-plan-helper@1" "mongodb-schema@12")
have() {
    [ -f "$PREFIX/node_modules/mongodb/package.json" ] && [ -f "$PREFIX/node_modules/mongoose/package.json" ] &&
    [ -f "$PREFIX/node_modules/mongodb-data-service/package.json" ] &&
    [ -f "$PREFIX/node_modules/@mongodb-js/explain-plan-helper/package.json" ] &&
    [ -f "$PREFIX/node_modules/mongodb-schema/package.json" ]
}
if have; then
    echo "node clients: present in $PREFIX"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install_node_clients.sh: npm not found; install Node.js (>= 20.19) with npm" >&2
    exit 1
fi
echo "Installing ${PACKAGES[*]} with npm into $PREFIX (under a minute) ..."
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error --ignore-scripts "${PACKAGES[@]}" >/dev/null
have
echo "node clients: installed in $PREFIX"
