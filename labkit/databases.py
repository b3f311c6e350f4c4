"""Disposable databases: ``fresh_db`` creates them, marks them, and drops only what labkit created.

Introduced in ``notebooks/00_start_here.ipynb``.

How labkit knows a database is its own:
- on a real server, a marker collection ``_labkit`` holding one document ``{_id: "labkit", ...}`` whose
  ``token`` is new each time labkit creates the database (so a labkit process can tell its own copy from one
  another process re-created under the same name: see :func:`drop_marked`'s ``token``);
- on the embedded engine, a mark tied to the database's lifetime: the engine counts each database's
  incarnations (every ``drop_database`` starts a new one) and labkit records the incarnation it created, so
  the mark vanishes when the database is dropped, exactly as the ``_labkit`` collection does on a server
  (and, the engine being private to the process, no marker collection shows up in listings or ``dbStats``).
A database without the mark that holds any collection is never dropped or changed.
"""
from __future__ import annotations

import datetime as _dt
import getpass
import os
import re
import uuid
from typing import Any

from labkit.connection import cluster_of, connect, is_embedded

MARKER_COLLECTION = "_labkit"
MARKER_ID = "labkit"
ENV_PREFIX = "LABKIT_DB_PREFIX"
MAX_DB_NAME = 63
_FORBIDDEN = set('/\\. "$*<>:|?\0')
_SYSTEM_DBS = {"admin", "local", "config"}


class UnsafeDatabaseError(RuntimeError):
    """labkit refused to drop or change a database it did not create."""


def _check_prefix(prefix: str) -> str:
    bad = sorted(set(prefix) & _FORBIDDEN)
    if bad:
        raise ValueError(
            f"{ENV_PREFIX}={prefix!r} contains characters MongoDB forbids in database names: {''.join(bad)!r}. "
            f"Set {ENV_PREFIX} to letters, digits, '_' and '-' only (for example 'sl_learner07_'), or unset it."
        )
    if len(prefix.encode()) > MAX_DB_NAME - 1:
        raise ValueError(
            f"{ENV_PREFIX}={prefix!r} is {len(prefix.encode())} bytes; database names are at most {MAX_DB_NAME} "
            f"bytes, so leave room for the lesson's name. Set a shorter {ENV_PREFIX}."
        )
    return prefix


def learner_prefix(client: Any = None) -> str:
    """The per-learner database-name prefix for ``client``.

    Embedded engine: no prefix (the engine is private to this process) unless ``$LABKIT_DB_PREFIX`` is set.
    Real server: ``$LABKIT_DB_PREFIX`` if set (may be empty), else ``sl_<os user>_`` so learners sharing one
    cluster never collide. A prefix with characters MongoDB forbids raises ``ValueError`` naming the variable.
    """
    if client is not None and (is_embedded(client) or cluster_of(client) is not None):
        # the embedded engine, or labkit's simulated sharded cluster: private to this process
        return _check_prefix(os.environ.get(ENV_PREFIX, ""))
    if ENV_PREFIX in os.environ:
        prefix = os.environ[ENV_PREFIX]
    else:
        try:
            user = getpass.getuser()
        except Exception:  # noqa: BLE001 - no user name in some containers
            user = "learner"
        prefix = "sl_" + (re.sub(r"[^A-Za-z0-9_-]", "_", user) or "learner") + "_"
    return _check_prefix(prefix)


def db_name(name: str, client: Any = None) -> str:
    """The full database name ``fresh_db(name)`` uses on ``client`` (prefix + name), validated.

    The rules are the manual's "Naming Restrictions": no ``/\\. "$*<>:|?`` or NUL, at most 63 bytes, not a
    system database, and not differing only in case from an existing database (the server refuses that with
    DatabaseDifferCase 13297).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name={name!r}: a database name must be a non-empty string such as '01_embed'")
    bad = sorted(set(name) & _FORBIDDEN)
    if bad:
        raise ValueError(
            f"name={name!r}: database names cannot contain {''.join(bad)!r}; use letters, digits, '_' and '-'"
        )
    full = learner_prefix(client) + name
    if len(full.encode()) > MAX_DB_NAME:
        raise ValueError(
            f"name={name!r}: the database name {full!r} is {len(full.encode())} bytes; MongoDB allows at most "
            f"{MAX_DB_NAME}. Use a shorter name or a shorter {ENV_PREFIX}."
        )
    if full.lower() in _SYSTEM_DBS:
        raise UnsafeDatabaseError(f"'{full}' is a MongoDB system database; labkit never touches it. Choose another name.")
    if client is not None:
        for other in client.list_database_names():
            if other != full and other.lower() == full.lower():
                raise ValueError(
                    f"name={name!r}: a database '{other}' already exists and MongoDB refuses names that differ "
                    f"only in case (DatabaseDifferCase 13297). Use '{other[len(full) - len(name):]}' or another name."
                )
    return full


def _registry(client: Any) -> dict:
    """Embedded engine: database name -> the incarnation labkit created (see the module docstring)."""
    # Stored in the instance dict: attribute access on a client would return a database of that name.
    return client.__dict__.setdefault("_labkit_databases", {})


def _incarnation(client: Any, full_name: str) -> int:
    return client._store[full_name].incarnation


def is_labkit_database(client: Any, full_name: str) -> bool:
    """True when the database ``full_name`` carries labkit's mark."""
    if is_embedded(client):
        return _registry(client).get(full_name) == _incarnation(client, full_name)
    if full_name not in client.list_database_names():
        return False
    marker = client[full_name][MARKER_COLLECTION].find_one({"_id": MARKER_ID})
    return bool(marker and marker.get("createdBy") == "labkit")


def _mark(client: Any, full_name: str, name: str) -> None:
    if is_embedded(client):
        _registry(client)[full_name] = _incarnation(client, full_name)
        return
    client[full_name][MARKER_COLLECTION].insert_one(
        {"_id": MARKER_ID, "createdBy": "labkit", "name": name,
         "createdAt": _dt.datetime.now(_dt.timezone.utc), "token": uuid.uuid4().hex}
    )


def marker_token(client: Any, full_name: str) -> str | None:
    """The ``token`` of the marker labkit wrote when it created ``full_name`` on a server (None on the embedded
    engine, whose marks are private to the process, and for a database without labkit's marker)."""
    if is_embedded(client):
        return None
    marker = client[full_name][MARKER_COLLECTION].find_one({"_id": MARKER_ID}) or {}
    return marker.get("token") if marker.get("createdBy") == "labkit" else None


def _exists(client: Any, full_name: str) -> bool:
    if full_name in client.list_database_names():
        return True
    return bool(client[full_name].list_collection_names())


def _refuse(client: Any, full_name: str, what: str) -> None:
    names = sorted(client[full_name].list_collection_names())
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    raise UnsafeDatabaseError(
        f"Database '{full_name}' already exists and was not created by labkit "
        f"({len(names)} collection(s): {shown}; if labkit made it once, it has since been dropped and "
        f"re-created by someone else). labkit will not {what} it. Choose another name, or drop it yourself "
        f"(client.drop_database('{full_name}')) if you are sure its data is disposable."
    )


def fresh_db(name: str, *, client: Any = None) -> Any:
    """Return a clean, empty database for a lesson, dropping labkit's previous copy if there is one.

    ``name`` is prefixed per learner on a real server (see :func:`learner_prefix`). A database of the same
    name that labkit did not create is never dropped or changed: :class:`UnsafeDatabaseError` is raised.
    """
    if client is None:
        client = connect()
    return recreate(db_name(name, client), client=client, label=name)


def recreate(full_name: str, *, client: Any, label: str | None = None) -> Any:
    """Drop labkit's database ``full_name`` (exact name, no prefix added) if it exists, and create it marked.

    The guard of :func:`fresh_db`: an existing database without labkit's mark raises :class:`UnsafeDatabaseError`.
    """
    if _exists(client, full_name):
        if not is_labkit_database(client, full_name):
            _refuse(client, full_name, "drop or change")
        client.drop_database(full_name)
    _mark(client, full_name, label or full_name)
    return client[full_name]


def drop_marked(full_name: str, *, client: Any, token: str | None = None) -> bool:
    """Drop ``full_name`` (exact name) if it carries labkit's mark; refuse otherwise. False if it is absent.

    With ``token`` (from :func:`marker_token` right after creating it), drop it only if it is still that very
    copy: when another labkit process has re-created it meanwhile (a second kernel of the same learner on the
    same server), it is theirs, and False is returned without touching it.
    """
    if not _exists(client, full_name):
        return False
    if token is not None and marker_token(client, full_name) != token:
        return False
    if not is_labkit_database(client, full_name):
        _refuse(client, full_name, "drop")
    client.drop_database(full_name)
    if is_embedded(client):
        _registry(client).pop(full_name, None)
    return True


def reset_db(name: str, *, client: Any = None) -> bool:
    """Drop labkit's database ``name`` (prefixed as in :func:`fresh_db`). Returns False if it did not exist.

    Guarded exactly like :func:`fresh_db`: a database labkit did not create raises :class:`UnsafeDatabaseError`.
    """
    if client is None:
        client = connect()
    return drop_marked(db_name(name, client), client=client)


def labkit_databases(client: Any = None) -> list[str]:
    """Names of the databases on ``client`` that carry labkit's mark."""
    if client is None:
        client = connect()
    return sorted(n for n in client.list_database_names() if is_labkit_database(client, n))
