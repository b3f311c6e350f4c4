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
  Documents*). The server source is more lenient: ``BSONDepth::kDefaultMaxAllowableDepth``
  is 200 (``src/mongo/bson/bson_depth.h``) and user storage gets 20 levels less
  (``getMaxDepthForUserStorage()`` = 180). The lab teaches the *documented* limit, so
  ``check_depth`` uses 100 by default; pass ``max_depth=SERVER_MAX_USER_STORAGE_DEPTH``
  to model the binary instead.
* Too-deep error: ``uassert(ErrorCodes::Overflow, "BSONObj exceeds maximum nested object
  depth", ...)`` in the server's BSON validator (``src/mongo/bson/bson_validate.cpp``);
  ``Overflow`` is error code 15.
* Update growth: the server's update path fails with code 17419 and the message
  "Resulting document after update is larger than 16777216".
* ``DocumentTooLarge``: message copied from pymongo's ``_raise_document_too_large``
  (``pymongo/message.py``), the client-side check.

Depth convention: the top-level document is level 1, and every embedded document or
array adds one level, so ``{"a": {"b": 1}}`` has depth 2 and ``{"a": [[1]]}`` depth 3.
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

ERR_OVERFLOW = 15
ERR_UPDATE_TOO_LARGE = 17419

_DEPTH_MESSAGE = "BSONObj exceeds maximum nested object depth"


def _is_container(value: Any) -> bool:
    return isinstance(value, (Mapping, list, tuple))


def _children(value: Any):
    if isinstance(value, Mapping):
        return value.values()
    return value


def nesting_depth(doc: Any, stop_after: int | None = None) -> int:
    """Return the nesting depth of ``doc`` (top-level document = 1), iteratively.

    Never recurses, so it is safe on documents nested 10,000+ levels deep. With
    ``stop_after`` it returns as soon as the depth is known to exceed that bound.
    """
    if not _is_container(doc):
        return 0
    deepest = 1
    stack = [(iter(_children(doc)), 1)]
    while stack:
        iterator, depth = stack[-1]
        for child in iterator:
            if _is_container(child):
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


def check_depth(doc: Mapping[str, Any], max_depth: int = MAX_NESTING_DEPTH) -> None:
    """Raise WriteError (code 15, Overflow) if ``doc`` nests deeper than ``max_depth``."""
    if nesting_depth(doc, stop_after=max_depth) > max_depth:
        raise WriteError(
            _DEPTH_MESSAGE,
            ERR_OVERFLOW,
            {"index": 0, "code": ERR_OVERFLOW, "codeName": "Overflow", "errmsg": _DEPTH_MESSAGE},
        )


def bson_size(doc: Mapping[str, Any]) -> int:
    """Return the BSON-encoded size of ``doc`` in bytes (``bson.encode`` length).

    Documents too deep for the BSON encoder's recursion raise the server's depth
    error (code 15) instead of a ``RecursionError``.
    """
    try:
        return len(bson.encode(doc))
    except RecursionError:
        check_depth(doc, max_depth=SERVER_MAX_BSON_DEPTH)
        raise  # pragma: no cover - encoder recursion limit below the server's depth


def check_insert_size(doc: Mapping[str, Any], max_size: int = MAX_BSON_SIZE) -> int:
    """Raise ``DocumentTooLarge`` (pymongo's wording) if ``doc`` exceeds ``max_size``.

    Returns the document's size so callers can reuse it.
    """
    size = bson_size(doc)
    if size > max_size:
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
