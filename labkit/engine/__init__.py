"""The embedded in-process engine behind ``labkit.connect()``: a MongoDB 8.0 look-alike for teaching.

The seam: ``EmbeddedClient`` is a pymongo-compatible client class. Notebooks never import it directly.
Storage, update operators and matching semantics are mongomock's; indexes, the planner, explain,
statistics and the aggregation fast paths are this package's (see docs/performance.md).
"""
from __future__ import annotations

import mongomock

from .store import EngineServerStore
from .database import EmbeddedDatabase
from .collection import EmbeddedCollection, Cursor

MODELED_SERVER_VERSION = "8.0"


class EmbeddedClient(mongomock.MongoClient):
    """A private, in-process MongoDB look-alike (one store per instance)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("_store", EngineServerStore())
        super().__init__(*args, **kwargs)
        self._server_version = "8.0.0"

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
