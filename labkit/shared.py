"""Shared-cluster safe mode (``LABKIT_SHARED=1``): lessons scale their heaviest demonstrations down.

Introduced in ``INSTRUCTOR.md`` ("Running the workshop on a shared cluster"); ``python -m labkit workshop
prepare`` prints the setting. With it, a room of learners on one cluster does not inflict on that cluster the
anti-patterns the lessons demonstrate:

- lesson 34 creates 4 tenants × 15 days of per-tenant-per-day collections instead of 20 × 15;
- lesson 31 pushes its 16 MiB document against the embedded engine on the learner's machine (same limit, same
  error code) instead of storing a 16 MiB document per learner on the cluster;
- index builds issued in bursts (lesson 31's 64 indexes, lesson 34's per-collection indexes) pause between
  builds on a real server (:func:`create_index`), so 30 learners do not queue behind the primary's
  ``maxNumActiveUserIndexBuilds`` (3 by default) all at once.

Every lesson prints what it scaled (:func:`note`); the conclusions are the same at either scale.
"""
from __future__ import annotations

import os
import time
from typing import Any, TypeVar

ENV_SHARED = "LABKIT_SHARED"
BUILD_PAUSE_S = 0.5  # between two index builds of one burst, on a real server in shared mode
_TRUE = {"1", "true", "yes", "on"}
T = TypeVar("T")
LOCAL_DATABASES: set[str] = set()  # databases local_db put on this machine (not on the cluster) in shared mode


def shared_mode() -> bool:
    """True when ``LABKIT_SHARED`` is set to 1/true/yes/on (case-insensitive)."""
    return os.environ.get(ENV_SHARED, "").strip().lower() in _TRUE


def scale(full: T, shared: T) -> T:
    """``shared`` in shared-cluster mode, else ``full`` (e.g. ``scale(20, 4)`` tenants)."""
    return shared if shared_mode() else full


def note(what: str) -> str:
    """Print (and return) one line saying what this lesson scaled down in shared mode; "" otherwise."""
    if not shared_mode():
        return ""
    line = f"Shared-cluster mode ({ENV_SHARED}=1): {what}. The conclusion is the same at full scale."
    print(line)
    return line


def local_db(name: str, client: Any) -> Any:
    """A fresh database for a heavy demonstration: on the embedded engine in shared mode, else on ``client``.

    The embedded engine enforces the same limits with the server's error codes, so a 16 MiB document can be
    shown failing without storing one per learner on the shared cluster."""
    from labkit.connection import embedded_client
    from labkit.databases import fresh_db

    if not shared_mode():
        return fresh_db(name, client=client)
    db = fresh_db(name, client=embedded_client())
    LOCAL_DATABASES.add(db.name)
    return db


def create_index(collection: Any, keys: Any, **kwargs: Any) -> str:
    """``collection.create_index(keys, **kwargs)``; in shared mode on a real server, pause afterwards.

    The pause (:data:`BUILD_PAUSE_S`) staggers a burst of builds so a room of learners does not hold the
    primary's build slots all at once. On the embedded engine there is nothing to protect and no pause."""
    from labkit.connection import is_embedded

    name = collection.create_index(keys, **kwargs)
    if shared_mode() and not is_embedded(collection.database.client):
        time.sleep(BUILD_PAUSE_S)
    return name
