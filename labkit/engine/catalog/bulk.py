"""bulk_write over pymongo's operation objects with server-style BulkWriteError details."""
from __future__ import annotations

from typing import Any

from mongomock import BulkWriteError, DuplicateKeyError, WriteError
from mongomock.results import BulkWriteResult
from pymongo.operations import DeleteMany, DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne

from ..base.errors import errmsg_of
from ..service.boundary import note_fact


def _order(requests: list, ordered: bool) -> list[int]:
    """The order pymongo sends the requests in (bulk_shared.py): as given when ordered; otherwise every insert,
    then every update, then every delete (gen_unordered), each kind in the given order."""
    if ordered:
        return list(range(len(requests)))

    def kind(op) -> int:
        if isinstance(op, InsertOne):
            return 0
        if isinstance(op, (DeleteOne, DeleteMany)):
            return 2
        return 1
    return sorted(range(len(requests)), key=lambda i: kind(requests[i]))


def run_bulk(coll, requests: list, ordered: bool, let: dict | None = None) -> BulkWriteResult:
    """Run pymongo's write models in the order pymongo sends them with the server's result and error document
    (``let``: the command's variables, for ``$expr`` in every filter and in pipeline updates). Each request's
    outcome is kept for the command replies of command monitoring (``bulk`` fact)."""
    res: dict[str, Any] = {"writeErrors": [], "writeConcernErrors": [], "nInserted": 0, "nUpserted": 0,
                           "nMatched": 0, "nModified": 0, "nRemoved": 0, "upserted": []}
    outcomes: dict[int, tuple] = {}
    note_fact("bulk", outcomes)
    for i in _order(requests, ordered):
        op = requests[i]
        try:
            if isinstance(op, InsertOne):
                coll._insert_one_doc(op._doc)
                res["nInserted"] += 1
                outcomes[i] = (1, 0, None)
            elif isinstance(op, (UpdateOne, UpdateMany, ReplaceOne)):
                if isinstance(op, ReplaceOne):
                    from mongomock.collection import validate_ok_for_replace
                    validate_ok_for_replace(op._doc)
                r = coll._update(op._filter, op._doc, upsert=op._upsert, multi=isinstance(op, UpdateMany),
                                 hint=getattr(op, "_hint", None), sort=getattr(op, "_sort", None),
                                 collation=getattr(op, "_collation", None),  # handled by rules.LabCollection
                                 array_filters=getattr(op, "_array_filters", None), let=let)
                if not r["updatedExisting"] and r["n"]:  # an upsert (its _id may be None)
                    res["nUpserted"] += 1
                    res["upserted"].append({"index": i, "_id": r["upserted"]})
                    outcomes[i] = (1, 0, r["upserted"])
                else:
                    res["nMatched"] += r["n"]
                    res["nModified"] += r["nModified"]
                    outcomes[i] = (r["n"], r["nModified"], None)
            elif isinstance(op, (DeleteOne, DeleteMany)):
                r = coll._delete(op._filter, hint=getattr(op, "_hint", None), multi=isinstance(op, DeleteMany),
                                 collation=getattr(op, "_collation", None), let=let)
                res["nRemoved"] += r["n"]
                outcomes[i] = (r["n"], 0, None)
            else:
                raise TypeError("%r is not a valid request" % (op,))
        except (WriteError, DuplicateKeyError) as e:
            det = dict(e.details or {})
            det.update({"index": i, "code": e.code, "errmsg": errmsg_of(e)})
            det.setdefault("op", getattr(op, "_doc", None) or getattr(op, "_filter", None))
            res["writeErrors"].append(det)
            outcomes[i] = det
            if ordered:
                break
    res["upserted"].sort(key=lambda u: u["index"])
    res["writeErrors"].sort(key=lambda e: e["index"])
    if res["writeErrors"]:
        raise BulkWriteError(res)
    return BulkWriteResult(res, True)
