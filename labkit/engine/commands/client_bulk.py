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

from bson import ObjectId
from bson.raw_bson import RawBSONDocument
from pymongo import common
from pymongo.errors import (ClientBulkWriteException, InvalidName, InvalidOperation, OperationFailure,
                            WriteError)
from pymongo.results import ClientBulkWriteResult, DeleteResult, InsertOneResult, UpdateResult

from ..base.errors import not_modelled
from ..bson.values import type_name
from ..pipeline.expression.match_expr import let_variables

MAX_WRITE_BATCH = 100_000
# generic command fields (driver bookkeeping) a bulkWrite may carry besides its own
_GENERIC_FIELDS = {"lsid", "txnNumber", "autocommit", "startTransaction", "readConcern", "writeConcern", "comment",
                   "maxTimeMS", "apiVersion", "apiStrict", "apiDeprecationErrors", "txnRetryCounter"}

INVALID_NAMESPACE = 73


class _Ops:
    """Collects pymongo's write models the way pymongo's ``_ClientBulk`` does (``model._add_to_client_bulk``)."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, dict]] = []
        self.namespaces: list[str] = []
        self._ns_index: dict[str, int] = {}

    def _add(self, kind: str, namespace: str, cmd: dict) -> None:
        # pymongo numbers the namespaces in the order they first appear (its nsInfo) and writes that index
        # into the operation (``{"insert": 0, ...}``), which a write error's ``op`` shows
        cmd[next(iter(cmd))] = self._ns_index.setdefault(namespace, len(self._ns_index))
        self.ops.append((kind, cmd))
        self.namespaces.append(namespace)

    def add_insert(self, namespace: str, document: Any) -> None:
        common.validate_is_document_type("document", document)
        if not (isinstance(document, RawBSONDocument) or "_id" in document):
            document["_id"] = ObjectId()  # generated client side, as pymongo does
        self._add("insert", namespace, {"insert": -1, "document": document})

    def add_update(self, namespace: str, selector: Mapping, update: Any, multi: bool, upsert: bool | None = None,
                   collation: Mapping | None = None, array_filters: list | None = None, hint: Any = None,
                   sort: Mapping | None = None) -> None:
        from pymongo.common import validate_ok_for_update
        validate_ok_for_update(update)
        cmd = {"update": -1, "filter": selector, "updateMods": update, "multi": multi}
        for key, value in (("upsert", upsert), ("arrayFilters", array_filters), ("hint", hint),
                           ("collation", collation), ("sort", sort)):
            if value is not None:
                cmd[key] = value
        self._add("update", namespace, cmd)

    def add_replace(self, namespace: str, selector: Mapping, replacement: Mapping, upsert: bool | None = None,
                    collation: Mapping | None = None, hint: Any = None, sort: Mapping | None = None) -> None:
        from pymongo.common import validate_ok_for_replace
        validate_ok_for_replace(replacement)
        cmd = {"update": -1, "filter": selector, "updateMods": replacement, "multi": False}
        for key, value in (("upsert", upsert), ("hint", hint), ("collation", collation), ("sort", sort)):
            if value is not None:
                cmd[key] = value
        self._add("replace", namespace, cmd)

    def add_delete(self, namespace: str, selector: Mapping, multi: bool, collation: Mapping | None = None,
                   hint: Any = None) -> None:
        cmd = {"delete": -1, "filter": selector, "multi": multi}
        for key, value in (("hint", hint), ("collation", collation)):
            if value is not None:
                cmd[key] = value
        self._add("delete", namespace, cmd)


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
    unacknowledged = write_concern is not None and not write_concern.acknowledged
    if unacknowledged and verbose_results:  # pymongo's own checks (mongo_client.py bulk_write)
        raise InvalidOperation("Cannot request unacknowledged write concern and verbose results")
    if unacknowledged and ordered:
        raise InvalidOperation("Cannot request unacknowledged write concern and ordered writes")
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
        colls = [_collection(client, ns) for ns in collected.namespaces]
        items, counts = execute(colls, collected.ops, ordered, session, bool(bypass_document_validation), comment,
                                let)
    except OperationFailure as exc:
        if unacknowledged:
            return ClientBulkWriteResult(full, acknowledged=False, has_verbose_results=False)
        full["error"] = exc
        raise ClientBulkWriteException(full, verbose_results) from exc
    if unacknowledged:  # the driver gets no reply (moreToCome): nothing is known of the outcome
        return ClientBulkWriteResult(full, acknowledged=False, has_verbose_results=False)
    for key in ("nInserted", "nUpserted", "nMatched", "nModified", "nDeleted"):
        full[key] = counts[key]
    for item in items:
        idx = item["idx"]
        kind, cmd = collected.ops[idx]
        if not item["ok"]:
            err = dict(item)
            err["op"] = cmd  # pymongo adds the operation to each write error (client_bulk.py)
            full["writeErrors"].append(err)
            continue
        full["anySuccessful"] = True
        if not verbose_results:
            continue
        if kind == "insert":
            full["insertResults"][idx] = InsertOneResult(cmd["document"]["_id"], acknowledged=True)
        elif kind in ("update", "replace"):
            full["updateResults"][idx] = UpdateResult(item, acknowledged=True, in_client_bulk=True)
        else:
            full["deleteResults"][idx] = DeleteResult(item, acknowledged=True)
    if full["writeErrors"]:
        raise ClientBulkWriteException(full, verbose_results)
    return ClientBulkWriteResult(full, acknowledged=True, has_verbose_results=verbose_results)


def execute(colls: Sequence[Any], ops: Sequence[tuple[str, dict]], ordered: bool, session: Any, bypass: bool,
            comment: Any, let: Mapping[str, Any] | None) -> tuple[list[dict], dict]:
    """Run the operations ``ops`` (``(kind, op)`` with kind insert / update / replace / delete, each on the
    collection at the same place in ``colls``) as the server's bulkWrite does (bulk_write.cpp): in order, stopping
    at the first error when ``ordered`` (or inside a transaction, which that error aborts).

    Returns the reply items (bulk_write_parser.cpp ``BulkWriteReplyItem``: ``ok``, ``idx``, then ``code``,
    ``errmsg`` and the error's extra fields for a failure, ``n``, ``nModified`` for updates, ``upserted``) and the
    command's counts (``nErrors``, ``nInserted``, ``nMatched`` (upserts not counted, SERVER-83138),
    ``nModified``, ``nUpserted``, ``nDeleted``). ``let`` errors raise before any operation runs."""
    variables = let_variables(dict(let) if let is not None else None)
    # evaluated once for the whole command ($$NOW is one instant), handed to each write as constants
    constants = {k: {"$literal": v} for k, v in variables.items()} if variables else None
    counts = {"nErrors": 0, "nInserted": 0, "nMatched": 0, "nModified": 0, "nUpserted": 0, "nDeleted": 0}
    items: list[dict] = []
    in_txn = bool(session is not None and getattr(session, "in_transaction", False))
    for idx, ((kind, cmd), coll) in enumerate(zip(ops, colls)):
        try:
            reply = _run_one(coll, kind, cmd, session, bypass, comment, constants)
        except (WriteError, OperationFailure) as exc:
            err: dict[str, Any] = {"ok": 0.0, "idx": idx, "code": exc.code, "errmsg": _errmsg(exc)}
            details = exc.details if isinstance(exc.details, dict) else {}
            for key in ("keyPattern", "keyValue", "errInfo"):
                if key in details:
                    err[key] = details[key]
            err["n"] = 0
            items.append(err)
            counts["nErrors"] += 1
            if ordered or in_txn:  # a failed write aborts the transaction: nothing after it can run
                break
            continue
        item: dict[str, Any] = {"ok": 1.0, "idx": idx, **{k: v for k, v in reply.items() if k != "ok"}}
        items.append(item)
        if kind == "insert":
            counts["nInserted"] += 1
        elif kind in ("update", "replace"):
            upserted = "upserted" in reply
            counts["nUpserted"] += 1 if upserted else 0
            counts["nMatched"] += 0 if upserted else reply["n"]
            counts["nModified"] += reply["nModified"]
        else:
            counts["nDeleted"] += reply["n"]
    return items, counts


_OP_FIELDS = {
    "insert": {"insert", "document"},
    "update": {"update", "filter", "sort", "multi", "updateMods", "upsert", "upsertSupplied", "arrayFilters",
               "hint", "constants", "collation", "sampleId"},
    "delete": {"delete", "filter", "multi", "hint", "collation", "sampleId"},
}
_COMMAND_FIELDS = {"bulkWrite", "ops", "nsInfo", "cursor", "bypassDocumentValidation", "ordered", "stmtId",
                   "stmtIds", "let", "errorsOnly", "bypassEmptyTsReplacement"}


_CODE_NAMES = {2: "BadValue", 9: "FailedToParse", 14: "TypeMismatch", 16: "InvalidLength", 73: "InvalidNamespace",
               115: "CommandNotSupported"}


def _bad(msg: str, code: int) -> OperationFailure:
    name = _CODE_NAMES.get(code, "Location%d" % code)
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code, "codeName": name})


def _parse_op(i: int, op: Any, n_ns: int) -> tuple[str, int, dict]:
    """(kind, nsInfo index, op) of one ``ops`` entry, checked as the server's IDL parser checks it."""
    if not isinstance(op, Mapping) or not op:
        raise _bad("BSON field 'bulkWrite.ops' is the wrong type, expected type 'object'", 14)
    op = dict(op)
    kind = next(iter(op))
    if kind not in _OP_FIELDS:
        raise _bad("Unrecognized bulkWrite operation: %s" % kind, 2)  # bulk_write_parser.cpp (op type)
    for key in op:
        if key not in _OP_FIELDS[kind]:
            raise _bad("BSON field 'bulkWrite.ops.%s' is an unknown field." % key, 40415)
    idx = op[kind]
    if isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
        raise _bad("BSON field 'bulkWrite.ops.%s' must be a non-negative integer" % kind, 2)
    required = {"insert": ("document",), "update": ("filter", "updateMods"), "delete": ("filter",)}[kind]
    for key in required:
        if key not in op:
            raise _bad("BSON field 'bulkWrite.ops.%s' is missing but a required field" % key, 40414)
    if kind == "update" and op.get("sort") is not None and op.get("multi"):
        raise _bad("Cannot specify sort with multi=true", 9)  # bulk_write_common.cpp
    if kind == "update" and op.get("constants") is not None:
        raise _bad(not_modelled("Update constants ('constants' of a bulkWrite update)",
                                "write the values into the update pipeline itself ($literal where needed)"), 115)
    if idx >= n_ns:
        from ..bson.keys import fmt_value
        raise _bad("BulkWrite ops entry %s has an invalid nsInfo index." % fmt_value(op), 2)
    if kind == "update" and isinstance(op["updateMods"], Mapping) and \
            not any(isinstance(k, str) and k.startswith("$") for k in op["updateMods"]):
        if op.get("multi"):
            raise _bad("multi update is not supported for replacement-style update", 9)
        kind = "replace"
    op.setdefault("multi", False)
    return kind, idx, op


def bulk_write_command(client: Any, cmd: Mapping[str, Any], session: Any = None) -> dict:
    """The ``bulkWrite`` command (run on ``admin``) as MongoDB 8.0 answers it: the reply items (all of them, or
    only the errors with ``errorsOnly``) under ``items`` and the counts; the caller puts the items in a cursor
    (``admin.$cmd.bulkWrite``). The whole command is parsed and its namespaces checked before anything runs
    (bulk_write_common.cpp ``validateRequest``)."""
    for key in cmd:
        if key not in _COMMAND_FIELDS and not key.startswith("$") and key not in _GENERIC_FIELDS:
            raise _bad("BSON field 'bulkWrite.%s' is an unknown field." % key, 40415)
    ops, ns_info = cmd.get("ops"), cmd.get("nsInfo")
    for name, value in (("ops", ops), ("nsInfo", ns_info)):
        if value is None:
            raise _bad("BSON field 'bulkWrite.%s' is missing but a required field" % name, 40414)
        if not isinstance(value, list):
            raise _bad("BSON field 'bulkWrite.%s' is the wrong type '%s', expected type 'array'"
                       % (name, type_name(value)), 14)
    if not ops or len(ops) > MAX_WRITE_BATCH:
        raise _bad("Write batch sizes must be between 1 and %d. Got %d operations." % (MAX_WRITE_BATCH, len(ops)),
                   16)
    for key in ("ordered", "errorsOnly", "bypassDocumentValidation"):
        if key in cmd and not isinstance(cmd[key], (bool, int, float)):
            raise _bad("BSON field 'bulkWrite.%s' is the wrong type '%s', expected type 'bool'"
                       % (key, type_name(cmd[key])), 14)
    let = cmd.get("let")
    if let is not None and not isinstance(let, Mapping):
        raise _bad("BSON field 'bulkWrite.let' is the wrong type '%s', expected type 'object'" % type_name(let), 14)
    namespaces = []
    for entry in ns_info:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("ns"), str):
            raise _bad("BSON field 'bulkWrite.nsInfo.ns' is missing but a required field", 40414)
        for key in entry:
            if key not in ("ns", "collectionUUID", "encryptionInformation", "isTimeseriesNamespace"):
                raise _bad("BSON field 'bulkWrite.nsInfo.%s' is an unknown field." % key, 40415)
        db_name, dot, coll_name = entry["ns"].partition(".")
        if not dot or not db_name or not coll_name:
            raise _bad("Invalid namespace specified for bulkWrite: '%s'" % entry["ns"], INVALID_NAMESPACE)
        namespaces.append(entry["ns"])
    parsed = [_parse_op(i, op, len(namespaces)) for i, op in enumerate(ops)]
    colls = []
    for _kind, idx, _op in parsed:
        try:
            colls.append(_collection(client, namespaces[idx]))
        except OperationFailure:
            raise _bad("Invalid namespace specified for bulkWrite: '%s'" % namespaces[idx], INVALID_NAMESPACE) \
                from None
    items, counts = execute(colls, [(k, op) for k, _i, op in parsed], bool(cmd.get("ordered", True)), session,
                            bool(cmd.get("bypassDocumentValidation")), cmd.get("comment"), let)
    if cmd.get("errorsOnly"):
        items = [it for it in items if not it["ok"]]
    return {"items": items, **counts}


def _errmsg(exc: OperationFailure) -> str:
    """The server's ``errmsg`` of an engine error (pymongo's str() appends ", full error: {...}")."""
    details = exc.details if isinstance(exc.details, dict) else {}
    return str(details.get("errmsg") or str(exc).split(", full error: ")[0])
