"""Change streams where the deployment refuses them: tell that refusal apart from every other error.

Lessons 05 and 06 open a change stream (``collection.watch(...)``) for a durable asynchronous worker. Two kinds
of deployment refuse to open one, and the lessons then fall back to the batch job they teach next to it:

- a standalone ``mongod`` (no replica set, so no oplog): the ``$changeStream`` stage fails with code 40573,
  "The $changeStream stage is only supported on replica sets" (MongoDB's
  ``src/mongo/db/pipeline/document_source_change_stream.cpp``, ``assertIsLegalSpecification``);
- an Atlas tier that does not offer change streams: Atlas answers a command it does not support on a tier with
  its own error, code 8000 (``AtlasError``), "<command> is not allowed or the syntax is incorrect, see the Atlas
  documentation for more information" (Atlas: "Unsupported Commands in Atlas"). Which tiers that is, is not
  settled by the Atlas docs: the Triggers limitations page says Flex clusters do not support change streams,
  and the same page's table gives Flex a limit of 10 open change streams (INSTRUCTOR.md, "Sizing the cluster").
  Only an 8000 that names ``$changeStream`` counts: Atlas uses 8000 for other refusals too (a full quota).

Anything else (a network error, a bad pipeline, a resume token the oplog no longer holds) is not a refusal and
must reach the learner as it is.
"""
from __future__ import annotations

from pymongo.errors import OperationFailure

#: a standalone mongod: "The $changeStream stage is only supported on replica sets"
STANDALONE_CODE = 40573
#: Atlas's own refusal of a command or stage a tier does not support ("... is not allowed ...")
ATLAS_ERROR_CODE = 8000


def refusal(exc: BaseException) -> str | None:
    """One line saying why the deployment refused to open a change stream, or ``None`` when ``exc`` is any other
    error (re-raise it then).

    ``exc`` is what ``watch()`` raised: a ``pymongo.errors.OperationFailure`` with code 40573 (a standalone
    server) or code 8000 naming ``$changeStream`` (an Atlas tier without change streams) is a refusal.
    """
    if not isinstance(exc, OperationFailure):
        return None
    message = str((exc.details or {}).get("errmsg") or exc)
    if exc.code == STANDALONE_CODE:
        where = "a standalone server has no oplog to read changes from (a replica set or a sharded cluster has)"
    elif exc.code == ATLAS_ERROR_CODE and "changestream" in message.lower():
        where = "this Atlas tier does not offer change streams"
    else:
        return None
    return f"this deployment refuses change streams (code {exc.code}: {message}): {where}"
