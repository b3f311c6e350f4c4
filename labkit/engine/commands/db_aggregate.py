"""``Database.aggregate``: database-level (collection-less) pipelines, ``{aggregate: 1, pipeline: [...]}``.

A database-level pipeline must start with a stage that produces its own documents (manual "db.aggregate()"):
``$documents`` (manual "$documents": an expression that resolves to an array of objects; the following stages
run on those documents and may ``$lookup`` / ``$unionWith`` collections of the same database). The other
collection-less stages ``$currentOp`` and ``$listLocalSessions`` report on the engine as a server reports on
itself (current_op.py); the others (``$changeStream``, ``$querySettings``, ...) are refused with a clear error;
any other first stage is the server's InvalidNamespace (73) "a collection is required".
"""
from __future__ import annotations

import time
from typing import Any

from mongomock import OperationFailure

from ..query.planner import unsupported

INVALID_NAMESPACE = 73
# Collection-less first stages of MongoDB 8.0 the embedded engine does not model.
_SERVER_STAGES = ("$changeStream", "$querySettings", "$listCatalog",
                  "$listClusterCatalog", "$shardedDataDistribution", "$listSessions")


def _documents(spec: Any) -> list[dict]:
    """Evaluate a ``$documents`` argument into its documents (each a copy; stage_documents.py)."""
    from ..pipeline.aggregation import _compile_expr
    from ..pipeline.stage_documents import documents
    return documents(spec, _compile_expr)


def run_database_pipeline(db: Any, pipeline: Any, let: Any = None, server: tuple | None = None) -> list[dict]:
    """Run a database-level pipeline on ``db`` (an ``EmbeddedDatabase``); ``let``: the command's variables;
    ``server``: (ServerContext, this command's currentOp entry) when the command layer runs it; returns the
    result documents."""
    from ..pipeline.aggregation import Ctx, run_stages
    from ..catalog.collection import fast_copy
    from ..pipeline.expression.match_expr import let_variables
    from ..pipeline.expression.variables import bind_pipeline
    if not isinstance(pipeline, list):
        raise TypeError("pipeline must be a list")
    pipeline = bind_pipeline(pipeline, let_variables(let))
    if not pipeline:
        msg = "{aggregate: 1} is not valid for an empty pipeline; a collection is required."
        raise OperationFailure(msg, INVALID_NAMESPACE)
    first = pipeline[0]
    if not isinstance(first, dict) or len(first) != 1:
        raise OperationFailure("A pipeline stage specification object must contain exactly one field.", 40323)
    name = next(iter(first))
    if name in ("$currentOp", "$listLocalSessions"):
        for stage in pipeline[1:]:
            if isinstance(stage, dict) and name in stage:
                raise OperationFailure("%s is only valid as the first stage in a pipeline" % name, 40602)
        docs = _server_documents(db, name, first[name], server)
        out = run_stages(_holder(db), pipeline[1:], Ctx(), input_docs=docs)
        return [fast_copy(d) for d in out]
    if name in _SERVER_STAGES:
        raise unsupported("Database.aggregate with %s (it reports on a running server)" % name)
    if name != "$documents":
        msg = "{aggregate: 1} is not valid for '%s'; a collection is required." % name
        raise OperationFailure(msg, INVALID_NAMESPACE)
    for stage in pipeline[1:]:
        if isinstance(stage, dict) and "$documents" in stage:
            raise OperationFailure("$documents is only valid as the first stage in a pipeline", 40602)
    docs = _documents(first["$documents"])
    out = run_stages(_holder(db), pipeline[1:], Ctx(), input_docs=docs)
    return [fast_copy(d) for d in out]


def _server_documents(db: Any, name: str, spec: Any, server: tuple | None) -> list[dict]:
    """The documents ``$currentOp`` / ``$listLocalSessions`` start from (current_op.py); in-process the
    operation asking is this aggregate and the sessions are the client's started, not ended, sessions."""
    from . import current_op
    if server is None:
        ctx = db.client.__dict__.get("_labkit_command_ctx")
        me = {"conn": 0, "db": db.name, "opid": 1, "t0": time.time(),
              "cmd": {"aggregate": 1, "pipeline": [{name: spec}], "cursor": {}, "$db": db.name}}
        local = list(db.client._store.__dict__.get("_lab_sessions", ()))
    else:
        ctx, me = server
        local = None
    if name == "$currentOp":
        if db.name != "admin":
            raise OperationFailure("$currentOp must be run against the 'admin' database with {aggregate: 1}",
                                   INVALID_NAMESPACE)
        return current_op.current_op_documents(ctx, spec, me)
    return current_op.list_local_sessions(ctx, spec, local)


def _holder(db: Any) -> Any:
    """A collection object of ``db`` that the stages can refer to (``$lookup`` reads ``holder.database``);
    it is never created, so it shows up nowhere."""
    from ..catalog.rules import LabCollection
    return LabCollection(db, name="$cmd.aggregate", _db_store=db._store)
