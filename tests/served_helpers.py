"""The served engine for tests: labkit's embedded engine behind MongoDB's wire protocol on loopback.

Used by tests/test_server_path.py, tests/test_notebooks_served.py and tests/test_mongosh.py, which drive
labkit's real-server path (pymongo over TCP, mongosh) through ``labkit.engine.transport.wire.serve_in_thread``.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def in_ci() -> bool:
    """True when running under CI (``CI=true``): missing tools fail instead of skipping."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def unavailable(message: str) -> None:
    """Skip (locally) or fail (CI=true) because something the test needs is missing."""
    if in_ci():
        pytest.fail(f"{message}. CI=true, so this is a failure, not a skip.", pytrace=False)
    pytest.skip(message)


def serve_in_thread():
    """``labkit.engine.transport.wire.serve_in_thread`` on 127.0.0.1 and a free port (a context manager)."""
    try:
        from labkit.engine.transport.wire import serve_in_thread as serve
    except ModuleNotFoundError as exc:
        if exc.name != "labkit.engine.transport.wire":
            raise
        unavailable("the served engine (labkit.engine.transport.wire, `python -m labkit serve`) is not in this checkout")
    return serve(host="127.0.0.1", port=0)


def mongosh_path() -> str | None:
    """mongosh to use: ``$SCHEMA_LAB_MONGOSH``, else ``.tools/`` (tools/install_mongosh.sh), else PATH."""
    env = os.environ.get("SCHEMA_LAB_MONGOSH", "").strip()
    if env:
        return env if os.access(env, os.X_OK) else None
    local = ROOT / ".tools" / "node_modules" / ".bin" / "mongosh"
    if os.access(local, os.X_OK):
        return str(local)
    return shutil.which("mongosh")


def node_modules() -> Path:
    """The Node.js driver installed with mongosh (tools/install_mongosh.sh: npm package ``mongodb`` in
    ``.tools/node_modules``); skipped locally, a failure under CI=true, when it or ``node`` is missing."""
    path = mongosh_path()
    if path is None or shutil.which("node") is None:
        unavailable("mongosh (and with it the Node.js driver) or node is not installed (tools/install_mongosh.sh)")
    modules = Path(path).parent.parent  # .tools/node_modules/.bin/mongosh -> .tools/node_modules
    if not (modules / "mongodb" / "package.json").is_file():
        unavailable("the Node.js driver (npm package mongodb) is not next to mongosh in %s" % modules)
    return modules
