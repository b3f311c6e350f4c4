"""One test, two paths: pymongo's API on labkit's embedded engine in-process, and real pymongo over TCP against
the same engine served by ``labkit.engine.transport.wire.serve_in_thread`` (what mongosh, Compass and other
drivers talk to). A test module imports ``server`` and ``client`` and gets every test run both ways."""
from __future__ import annotations

import pytest
from pymongo import MongoClient

from labkit.engine import EmbeddedClient

from served_helpers import serve_in_thread


@pytest.fixture(scope="module")
def server():
    """The served engine on loopback, one per test module."""
    with serve_in_thread() as srv:
        yield srv


@pytest.fixture(params=["in-process", "wire"])
def client(request):
    """An ``EmbeddedClient`` (in-process) or a ``pymongo.MongoClient`` on the served engine (wire)."""
    if request.param == "in-process":
        yield EmbeddedClient()
        return
    srv = request.getfixturevalue("server")
    with MongoClient(srv.uri, serverSelectionTimeoutMS=5000) as c:
        yield c
