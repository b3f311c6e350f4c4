"""The embedded in-process engine behind ``labkit.connect()`` (placeholder: plain mongomock).

The seam: ``EmbeddedClient`` is a pymongo-compatible client class. Notebooks never import it directly.
"""
from __future__ import annotations

import mongomock

MODELED_SERVER_VERSION = "8.0"


class EmbeddedClient(mongomock.MongoClient):
    """A private, in-process MongoDB look-alike (one store per instance)."""

    def __repr__(self) -> str:
        return "EmbeddedClient(engine='labkit-embedded', models='MongoDB %s')" % MODELED_SERVER_VERSION


__all__ = ["EmbeddedClient", "MODELED_SERVER_VERSION"]
