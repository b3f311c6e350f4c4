"""``MongoClient.bulk_write``: MongoDB 8.0's client-level ``bulkWrite`` command on the embedded engine.

pymongo >= 4.9 sends one ``bulkWrite`` command (admin database) holding operations on any namespaces and turns
the reply into a :class:`pymongo.results.ClientBulkWriteResult` or raises
:class:`pymongo.errors.ClientBulkWriteException` (``pymongo/synchronous/client_bulk.py``). Here the operations
run through the engine's own collection methods, so every rule of a single write (validation, unique indexes,
sessions and transactions, collation, limits) applies, and the summary is built the way pymongo builds it from
a server reply: ``nInserted``, ``nMatched`` (upserts not counted, SERVER-83138), ``nModified``, ``nUpserted``,
``nDeleted``; with ``verbose_results`` the per-operation results; write errors carry ``idx``, ``code``,
``errmsg`` and the operation (``op``). Manual: "bulkWrite" command and ``Mongo.bulkWrite()``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from pymongo import common
from pymongo.errors import (ClientBulkWriteException, InvalidName, InvalidOperation, OperationFailure,
                            WriteError)
from pymongo.results import ClientBulkWriteResult, DeleteResult, InsertOneResult, UpdateResult

from ..pipeline.expression.match_expr import let_variables
from ..stats.monitoring import ClientBulkOps
from ..query.planner import unsupported

INVALID_NAMESPACE = 73


# pymongo's write models as its ``_ClientBulk`` collects them (stats/monitoring.py: command monitoring builds the
# ``bulkWrite`` command from the same collection)
_Ops = ClientBulkOps


def _collection(client: Any, namespace: str) -> Any:
    """The collection of a ``"db.coll"`` namespace (the database is the part before the first dot)."""
    db_name, dot, coll_name = namespace.partition(".") if isinstance(namespace, str) else ("", "", "")
    if not dot or not db_name or not coll_name:
        msg = "Invalid namespace specified '%s'" % (namespace,)
        raise OperationFailure(msg, INVALID_NAMESPACE, {"ok": 0.0, "errmsg": msg, "code": INVALID_NAMESPACE,
                                                        "codeName": "InvalidNamespace"})
    try:
        return client[db_name][coll_name]
    except InvalidName:
        msg = "Invalid namespace specified '%s'" % namespace
        raise OperationFailure(msg, INVALID_NAMESPACE, {"ok": 0.0, "errmsg": msg, "code": INVALID_NAMESPACE,
                                                        "codeName": "InvalidNamespace"}) from None


def _run_one(coll: Any, kind: str, cmd: dict, session: Any, bypass: bool, comment: Any,
             let: dict | None = None) -> dict:
    """Run one operation (``let``: the command's variables, for ``$expr`` in filters and update pipelines);
    return its reply as the server's bulkWrite cursor holds it (``ok``, ``n`` ...)."""
    if kind == "insert":
        coll.insert_one(cmd["document"], bypass_document_validation=bypass, session=session, comment=comment)
        return {"ok": 1.0, "n": 1}
    if kind in ("update", "replace"):
        kw: dict[str, Any] = {"upsert": bool(cmd.get("upsert", False)), "hint": cmd.get("hint"),
                              "collation": cmd.get("collation"), "session": session,
                              "bypass_document_validation": bypass, "comment": comment, "let": let}
        if kind == "replace":
            res = coll.replace_one(cmd["filter"], cmd["updateMods"], sort=cmd.get("sort"), **kw)
        elif cmd["multi"]:
            res = coll.update_many(cmd["filter"], cmd["updateMods"], array_filters=cmd.get("arrayFilters"), **kw)
        else:
            res = coll.update_one(cmd["filter"], cmd["updateMods"], array_filters=cmd.get("arrayFilters"),
                                  sort=cmd.get("sort"), **kw)
        reply = {"ok": 1.0, "n": res.raw_result.get("n", 0), "nModified": res.raw_result.get("nModified", 0)}
        if res.upserted_id is not None:
            reply["upserted"] = {"_id": res.upserted_id}
        return reply
    kw = {"hint": cmd.get("hint"), "collation": cmd.get("collation"), "session": session, "comment": comment,
          "let": let}
    res = coll.delete_many(cmd["filter"], **kw) if cmd["multi"] else coll.delete_one(cmd["filter"], **kw)
    return {"ok": 1.0, "n": res.deleted_count}


def client_bulk_write(client: Any, models: Sequence[Any], session: Any = None, ordered: bool = True,
                      verbose_results: bool = False, bypass_document_validation: bool | None = None,
                      comment: Any = None, let: Mapping[str, Any] | None = None,
                      write_concern: Any = None) -> ClientBulkWriteResult:
    """``MongoClient.bulk_write`` on ``client`` (an ``EmbeddedClient``), with pymongo's result and errors."""
    if write_concern is not None and not write_concern.acknowledged:
        raise unsupported("MongoClient.bulk_write with an unacknowledged write concern")
    if let is not None:
        common.validate_is_document_type("let", let)
    common.validate_list("models", models)
    common.validate_boolean("ordered", ordered)
    common.validate_boolean("verbose_results", verbose_results)
    collected = _Ops()
    for model in models:
        try:
            model._add_to_client_bulk(collected)
        except AttributeError:
            raise TypeError(f"{model!r} is not a valid request") from None
    if not collected.ops:
        raise InvalidOperation("No operations to execute")
    full: dict[str, Any] = {"anySuccessful": False, "error": None, "writeErrors": [], "writeConcernErrors": [],
                            "nInserted": 0, "nUpserted": 0, "nMatched": 0, "nModified": 0, "nDeleted": 0,
                            "insertResults": {}, "updateResults": {}, "deleteResults": {}}
    try:  # the server checks the let variables and every namespace before running anything (nsInfo)
        variables = let_variables(let)
        colls = [_collection(client, ns) for ns in collected.namespaces]
    except OperationFailure as exc:
        full["error"] = exc
        raise ClientBulkWriteException(full, verbose_results) from exc
    bypass = bool(bypass_document_validation)
    # evaluated once for the whole command ($$NOW is one instant), handed to each write as constants
    constants = {k: {"$literal": v} for k, v in variables.items()} if variables else None
    in_txn = bool(session is not None and getattr(session, "in_transaction", False))
    for idx, ((kind, cmd), coll) in enumerate(zip(collected.ops, colls)):
        try:
            reply = _run_one(coll, kind, cmd, session, bypass, comment, constants)
        except (WriteError, OperationFailure) as exc:
            err = {"ok": 0.0, "idx": idx, "code": exc.code, "errmsg": _errmsg(exc)}
            details = exc.details if isinstance(exc.details, dict) else {}
            for key in ("codeName", "keyPattern", "keyValue", "errInfo"):
                if key in details:
                    err[key] = details[key]
            err["op"] = cmd
            full["writeErrors"].append(err)
            if ordered or in_txn:  # a failed write aborts the transaction: nothing after it can run
                break
            continue
        full["anySuccessful"] = True
        reply["idx"] = idx
        if kind == "insert":
            full["nInserted"] += 1
            if verbose_results:
                full["insertResults"][idx] = InsertOneResult(cmd["document"]["_id"], acknowledged=True)
        elif kind in ("update", "replace"):
            upserted = "upserted" in reply
            full["nUpserted"] += 1 if upserted else 0
            full["nMatched"] += 0 if upserted else reply["n"]
            full["nModified"] += reply["nModified"]
            if verbose_results:
                full["updateResults"][idx] = UpdateResult(reply, acknowledged=True, in_client_bulk=True)
        else:
            full["nDeleted"] += reply["n"]
            if verbose_results:
                full["deleteResults"][idx] = DeleteResult(reply, acknowledged=True)
    if full["writeErrors"]:
        raise ClientBulkWriteException(full, verbose_results)
    return ClientBulkWriteResult(full, acknowledged=True, has_verbose_results=verbose_results)


def _errmsg(exc: OperationFailure) -> str:
    """The server's ``errmsg`` of an engine error (pymongo's str() appends ", full error: {...}")."""
    details = exc.details if isinstance(exc.details, dict) else {}
    return str(details.get("errmsg") or str(exc).split(", full error: ")[0])
