"""The embedded in-process engine behind ``labkit.connect()``: a MongoDB 8.0 look-alike for teaching.

The seam: ``EmbeddedClient`` is a pymongo-compatible client class. Notebooks never import it directly.
Storage, update operators and matching semantics are mongomock's; indexes, the planner, explain,
statistics and the aggregation fast paths are this package's (see docs/performance.md).
"""
from __future__ import annotations

import mongomock

from .boundary import CLIENT_OPERATIONS, guard, lock_for_store
from .store import EngineServerStore
from .database import EmbeddedDatabase
from .collection import EmbeddedCollection, Cursor

MODELED_SERVER_VERSION = "8.0"


@guard(CLIENT_OPERATIONS)
class EmbeddedClient(mongomock.MongoClient):
    """A private, in-process MongoDB look-alike (one store per instance, unless ``_store`` shares one).

    Thread safe: every operation holds the store's re-entrant lock (labkit/engine/boundary.py).
    ``event_listeners=[...]`` (pymongo ``CommandListener`` objects) receive the command events a driver
    would publish (labkit/engine/monitoring.py); ``appname`` is shown in profiler entries."""

    def __init__(self, *args, event_listeners=None, appname=None, **kwargs) -> None:
        from .monitoring import init_client
        kwargs.setdefault("_store", EngineServerStore())
        super().__init__(*args, **kwargs)
        self._server_version = "8.0.0"
        lock_for_store(self._store)
        init_client(self, event_listeners)
        self._lab_appname = appname

    def get_database(self, name=None, codec_options=None, read_preference=None, write_concern=None,
                     read_concern=None):
        if name is None:
            return super().get_database(name, codec_options, read_preference, write_concern, read_concern)
        db = self._database_accesses.get(name)
        if db is None:
            db = self._database_accesses[name] = EmbeddedDatabase(
                self, name, read_preference=read_preference or self.read_preference,
                codec_options=codec_options or self._codec_options, _store=self._store[name],
                read_concern=read_concern)
        return db

    def start_session(self, causal_consistency=None, default_transaction_options=None, snapshot=False):
        """A session with transactions (see labkit/engine/sessions.py and docs/embedded-engine.md)."""
        from .sessions import start_session
        return start_session(self, causal_consistency, default_transaction_options, snapshot)

    def __repr__(self) -> str:
        return "EmbeddedClient(engine='labkit-embedded', models='MongoDB %s')" % MODELED_SERVER_VERSION


__all__ = ["EmbeddedClient", "EmbeddedDatabase", "EmbeddedCollection", "Cursor", "MODELED_SERVER_VERSION"]
