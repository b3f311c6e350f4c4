"""Errors every layer of the engine raises (the lowest layer: it imports nothing of the engine)."""
from __future__ import annotations

from pymongo.errors import OperationFailure

COMMAND_NOT_SUPPORTED = 115


def unsupported(what: str) -> OperationFailure:
    """CommandNotSupported (115) for something MongoDB 8.0 does that the embedded engine does not model."""
    return OperationFailure("%s is not supported on the embedded engine; use a real server (set MONGODB_URI)"
                            % what, COMMAND_NOT_SUPPORTED)


def errmsg_of(e: Exception) -> str:
    """The server's ``errmsg`` of a pymongo error, as a write error reports it: the error's own ``errmsg``, without
    the ``", full error: {...}"`` that ``str()`` of an OperationFailure appends."""
    details = getattr(e, "details", None)
    msg = details.get("errmsg") if isinstance(details, dict) else None
    return msg if isinstance(msg, str) and msg else str(e).split(", full error: ", 1)[0]
