"""bulk_write over pymongo's operation objects with server-style BulkWriteError details."""
from __future__ import annotations

from typing import Any

from mongomock import BulkWriteError, DuplicateKeyError, WriteError
from mongomock.results import BulkWriteResult
from pymongo.operations import DeleteMany, DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne

from ..base.errors import errmsg_of


def run_bulk(coll, requests: list, ordered: bool, let: dict | None = None) -> BulkWriteResult:
    """Run pymongo's write models in order with the server's result and error document (``let``: the
    command's variables, for ``$expr`` in every filter and in pipeline updates)."""
    res: dict[str, Any] = {"writeErrors": [], "writeConcernErrors": [], "nInserted": 0, "nUpserted": 0,
                           "nMatched": 0, "nModified": 0, "nRemoved": 0, "upserted": []}
    for i, op in enumerate(requests):
        try:
            if isinstance(op, InsertOne):
                coll._insert_one_doc(op._doc)
                res["nInserted"] += 1
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
                else:
                    res["nMatched"] += r["n"]
                    res["nModified"] += r["nModified"]
            elif isinstance(op, (DeleteOne, DeleteMany)):
                r = coll._delete(op._filter, hint=getattr(op, "_hint", None), multi=isinstance(op, DeleteMany),
                                 collation=getattr(op, "_collation", None), let=let)
                res["nRemoved"] += r["n"]
            else:
                raise TypeError("%r is not a valid request" % (op,))
        except (WriteError, DuplicateKeyError) as e:
            det = dict(e.details or {})
            det.update({"index": i, "code": e.code, "errmsg": errmsg_of(e)})
            det.setdefault("op", getattr(op, "_doc", None) or getattr(op, "_filter", None))
            res["writeErrors"].append(det)
            if ordered:
                break
    if res["writeErrors"]:
        raise BulkWriteError(res)
    return BulkWriteResult(res, True)
