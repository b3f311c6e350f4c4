"""MongoDB server limits on documents, as the embedded engine enforces them.

Pure helpers, independent of the engine: they take plain Python documents (dicts,
``bson.SON``...) and raise the pymongo exception a MongoDB 8.0 deployment would make
the driver raise.

Sources
-------
* ``MAX_BSON_SIZE``: "The maximum BSON document size is 16 mebibytes" (MongoDB manual,
  *MongoDB Limits and Thresholds* > BSON Document Size); it is also what ``hello``
  reports as ``maxBsonObjectSize`` (16777216).
* ``MAX_NESTING_DEPTH``: "MongoDB supports no more than 100 levels of nesting for BSON
  documents. Each object or array adds a level." (same page, *Nested Depth for BSON
  Documents*): the documented design limit, which lessons teach as the bound to design
  within. What an 8.0 server *enforces* on stored documents is more lenient:
  ``BSONDepth::kDefaultMaxAllowableDepth`` is 200 (``src/mongo/bson/bson_depth.h``, server
  parameter ``maxBSONDepth``) and user storage gets ``kExtraSystemDepthLevels`` (20) less,
  ``getMaxDepthForUserStorage()`` = 180, the room the server keeps for embedding a document
  in an oplog entry or a reply. The engine enforces what the server does:
  ``SERVER_MAX_USER_STORAGE_DEPTH`` (180) is ``check_depth``'s default, so 101..180 levels
  are stored as on a server (``jstests/replsets/v2_delta_oplog_entries.js`` stores and
  updates a document 147 levels deep; ``src/mongo/db/ops/insert_test.cpp`` accepts exactly
  ``getMaxDepthForUserStorage()`` levels and refuses one more).
* Too-deep errors (``ErrorCodes::Overflow``, code 15): an insert fails in
  ``fixDocumentForInsert`` (``src/mongo/db/ops/insert.cpp``) with "cannot insert document
  because it exceeds 180 levels of nesting"; an update whose result is too deep fails in
  ``storageValid`` (``src/mongo/db/update/storage_validation.cpp``) with "Document exceeds
  maximum nesting depth of 180". Empty embedded documents/arrays do not count toward the
  depth there, and neither do they here. (The wire-level BSON validator's "BSONObj exceeds
  maximum nested object depth" applies past 200 levels.)
* Too-large insert: the server's ``fixDocumentForInsert`` answers BadValue "object to
  insert too large. size in bytes: N, max size: 16777216" (``check_insert_size(...,
  as_server=True)``); pymongo refuses oversized documents itself with
  ``DocumentTooLarge`` ("BSON document too large (N bytes) - the connected server supports
  BSON document sizes up to 16777216 bytes.", ``_raise_document_too_large`` in
  ``pymongo/message.py``), the default here. (A real acknowledged ``insert_one`` only gets
  the driver's error once the whole command exceeds 16 MiB + 16382 bytes; below that the
  server's write error comes back.)
* Update growth: the server's update path fails with code 17419 and the message
  "Resulting document after update is larger than 16777216".

Depth convention (the server's): the top-level document is level 1 and every *non-empty*
embedded document or array adds one level, so ``{"a": {"b": 1}}`` has depth 2,
``{"a": [[1]]}`` depth 3 and ``{"a": {}}`` depth 1.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import bson
from pymongo.errors import DocumentTooLarge, WriteError

__all__ = [
    "MAX_BSON_SIZE",
    "MAX_NESTING_DEPTH",
    "SERVER_MAX_BSON_DEPTH",
    "SERVER_MAX_USER_STORAGE_DEPTH",
    "ERR_BAD_VALUE",
    "ERR_OVERFLOW",
    "ERR_UPDATE_TOO_LARGE",
    "bson_size",
    "nesting_depth",
    "check_depth",
    "check_insert_size",
    "check_update_size",
]

MAX_BSON_SIZE = 16 * 1024 * 1024
"""Maximum BSON document size in bytes (16 MiB, ``maxBsonObjectSize``)."""

MAX_NESTING_DEPTH = 100
"""Documented nesting limit ("no more than 100 levels of nesting")."""

SERVER_MAX_BSON_DEPTH = 200
"""``BSONDepth::kDefaultMaxAllowableDepth`` (server parameter ``maxBSONDepth``)."""

SERVER_MAX_USER_STORAGE_DEPTH = SERVER_MAX_BSON_DEPTH - 20
"""``BSONDepth::getMaxDepthForUserStorage()``: 200 minus ``kExtraSystemDepthLevels``."""

ERR_BAD_VALUE = 2
ERR_OVERFLOW = 15
ERR_UPDATE_TOO_LARGE = 17419


def _is_container(value: Any) -> bool:
    return isinstance(value, (Mapping, list, tuple))


def _children(value: Any):
    if isinstance(value, Mapping):
        return value.values()
    return value


def nesting_depth(doc: Any, stop_after: int | None = None) -> int:
    """Return the nesting depth of ``doc`` (top-level document = 1), iteratively.

    Empty embedded documents and arrays do not add a level (server rule). Never recurses,
    so it is safe on documents nested 10,000+ levels deep. With ``stop_after`` it returns
    as soon as the depth is known to exceed that bound.
    """
    if not _is_container(doc):
        return 0
    deepest = 1
    stack = [(iter(_children(doc)), 1)]
    while stack:
        iterator, depth = stack[-1]
        for child in iterator:
            if _is_container(child) and len(child):
                child_depth = depth + 1
                if child_depth > deepest:
                    deepest = child_depth
                    if stop_after is not None and deepest > stop_after:
                        return deepest
                stack.append((iter(_children(child)), child_depth))
                break
        else:
            stack.pop()
    return deepest


def check_depth(doc: Mapping[str, Any], max_depth: int = SERVER_MAX_USER_STORAGE_DEPTH,
                update: bool = False) -> None:
    """Raise WriteError (code 15, Overflow) if ``doc`` nests deeper than ``max_depth``: the insert path's
    message, or with ``update`` the update path's (``storageValid``)."""
    if nesting_depth(doc, stop_after=max_depth) > max_depth:
        message = (f"Document exceeds maximum nesting depth of {max_depth}" if update
                   else f"cannot insert document because it exceeds {max_depth} levels of nesting")
        raise WriteError(
            message,
            ERR_OVERFLOW,
            {"index": 0, "code": ERR_OVERFLOW, "codeName": "Overflow", "errmsg": message},
        )


def bson_size(doc: Mapping[str, Any]) -> int:
    """Return the BSON-encoded size of ``doc`` in bytes (``bson.encode`` length).

    Documents too deep for the BSON encoder's recursion (~1,000 levels) raise the depth
    error (code 15) of ``check_depth`` instead of a ``RecursionError``.
    """
    try:
        return len(bson.encode(doc))
    except RecursionError:
        check_depth(doc)
        raise  # pragma: no cover - the encoder's limit is far above SERVER_MAX_USER_STORAGE_DEPTH


def check_insert_size(doc: Mapping[str, Any], max_size: int = MAX_BSON_SIZE,
                      as_server: bool = False) -> int:
    """Refuse a document bigger than ``max_size`` bytes; return its size otherwise.

    By default raise pymongo's ``DocumentTooLarge`` (the driver's wording); with
    ``as_server=True`` raise the server's write error instead (code 2, "object to insert
    too large. size in bytes: N, max size: 16777216").
    """
    size = bson_size(doc)
    if size > max_size:
        if as_server:
            message = f"object to insert too large. size in bytes: {size}, max size: {max_size}"
            raise WriteError(message, ERR_BAD_VALUE,
                             {"index": 0, "code": ERR_BAD_VALUE, "codeName": "BadValue",
                              "errmsg": message})
        raise DocumentTooLarge(
            f"BSON document too large ({size} bytes) - the connected server supports"
            f" BSON document sizes up to {max_size} bytes."
        )
    return size


def check_update_size(doc: Mapping[str, Any], max_size: int = MAX_BSON_SIZE) -> int:
    """Raise WriteError 17419 if the post-update ``doc`` exceeds ``max_size``.

    Returns the document's size.
    """
    size = bson_size(doc)
    if size > max_size:
        message = f"Resulting document after update is larger than {max_size}"
        raise WriteError(
            message,
            ERR_UPDATE_TOO_LARGE,
            {"index": 0, "code": ERR_UPDATE_TOO_LARGE, "errmsg": message},
        )
    return size
