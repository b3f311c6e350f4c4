"""Errors every layer of the engine raises (the lowest layer: it imports nothing of the engine).

A feature MongoDB 8.0 has and the engine does not model is refused with CommandNotSupported (115) and one wording,
whoever asks: "<feature> is not modelled by labkit's embedded engine (MongoDB 8.0 supports it)", what to use
instead when the engine has an alternative, and how to get the real thing. That last part depends on the client:
Python on the embedded engine points labkit at a server (``MONGODB_URI``); a client of the served engine
(mongosh, Compass, a driver talking to ``labkit serve``) connects to a server instead, so the wire server passes
every reply through :func:`for_served_client`.
"""
from __future__ import annotations

from typing import Any

from pymongo.errors import OperationFailure

COMMAND_NOT_SUPPORTED = 115

NOT_MODELLED = "not modelled by labkit's embedded engine"
# how to get the real behaviour: in Python on the embedded engine ...
USE_A_SERVER = "to use it, connect labkit to a MongoDB 8.0 server (set MONGODB_URI)"
# ... and for a client of the served engine, which has no MONGODB_URI to set
USE_A_SERVER_SERVED = ("to use it, connect this client to a MongoDB 8.0 server (Atlas or mongod) instead of "
                       "labkit's engine (`labkit serve`)")
# the same two audiences for an engine fault (code 1): where the server's own answer can be had
SERVER_ANSWERS = "a MongoDB 8.0 server (set MONGODB_URI) gives the server's answer"
SERVER_ANSWERS_SERVED = "a MongoDB 8.0 server (Atlas or mongod) gives the server's answer"


def not_modelled(what: str, instead: str | None = None) -> str:
    """The message for a feature MongoDB 8.0 has and the engine does not model: the feature, then what to use
    instead on the embedded engine (``instead``, when there is something), then how to use the real thing."""
    msg = "%s is %s (MongoDB 8.0 supports it)" % (what, NOT_MODELLED)
    if instead:
        msg += "; instead, %s" % instead
    return "%s; %s" % (msg, USE_A_SERVER)


def unsupported(what: str, instead: str | None = None) -> OperationFailure:
    """CommandNotSupported (115) for something MongoDB 8.0 does that the embedded engine does not model."""
    return OperationFailure(not_modelled(what, instead), COMMAND_NOT_SUPPORTED)


def for_served_client(reply: Any) -> Any:
    """A reply of the served engine with its error messages worded for the client at the other end of the
    wire: the Python-only advice (``MONGODB_URI``) becomes advice that holds in mongosh, Compass or any driver.
    Looks at ``errmsg`` at the top and in ``writeErrors`` / ``writeConcernError`` (where a write's error goes);
    returns the same dict, changed in place, or ``reply`` as it is when it is not a dict."""
    if not isinstance(reply, dict):
        return reply
    _reword(reply)
    for err in reply.get("writeErrors") or ():
        _reword(err)
    _reword(reply.get("writeConcernError"))
    return reply


def _reword(doc: Any) -> None:
    if isinstance(doc, dict) and isinstance(doc.get("errmsg"), str):
        doc["errmsg"] = doc["errmsg"].replace(USE_A_SERVER, USE_A_SERVER_SERVED).replace(
            SERVER_ANSWERS, SERVER_ANSWERS_SERVED)


def errmsg_of(e: Exception) -> str:
    """The server's ``errmsg`` of a pymongo error, as a write error reports it: the error's own ``errmsg``, without
    the ``", full error: {...}"`` that ``str()`` of an OperationFailure appends."""
    details = getattr(e, "details", None)
    msg = details.get("errmsg") if isinstance(details, dict) else None
    return msg if isinstance(msg, str) and msg else str(e).split(", full error: ", 1)[0]
