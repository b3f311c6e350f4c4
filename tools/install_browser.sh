#!/usr/bin/env bash
# Install what the browser tests (tests/browser/) need from Debian: the chromium package (/usr/bin/chromium).
# Idempotent and quiet: does nothing when chromium is already there. Needs root (or sudo) on Debian/Ubuntu.
# Playwright for Python comes from pip (the [test] extra); `playwright install` is NOT used: the tests drive
# Debian's chromium through executable_path.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -n 1)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_browser.sh: no apt-get here; install Chromium yourself and set SCHEMA_LAB_CHROMIUM=/path/to/it" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "install_browser.sh: need root to run apt-get install chromium" >&2; exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
echo "Installing chromium with apt-get (about 35 s) ..."
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -n 1)"
