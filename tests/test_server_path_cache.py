"""connect() hands out one client per URI, so a session started on it works with every lesson database.

Found by running lesson 05 against the served engine: fresh_db() without a client made a second MongoClient, and
pymongo refuses a session from another client ("Can only use session with the MongoClient that started it")."""
from __future__ import annotations

import labkit
from labkit.engine.transport.wire import serve_in_thread


def test_same_uri_same_client_and_sessions_span_databases(monkeypatch):
    with serve_in_thread() as server:
        monkeypatch.setenv("MONGODB_URI", server.uri)
        monkeypatch.setenv("LABKIT_DB_PREFIX", "t_cache_")
        a = labkit.fresh_db("cache_a")
        b = labkit.fresh_db("cache_b")
        assert a.client is b.client
        with a.client.start_session() as s:
            b.things.insert_one({"_id": 1}, session=s)
        a.client.close()  # a learner closing it: the next connect() makes a fresh one
        c = labkit.connect()
        assert c is not a.client and c.admin.command("ping")["ok"] == 1
        for name in ("cache_a", "cache_b"):
            labkit.reset_db(name, client=c)
