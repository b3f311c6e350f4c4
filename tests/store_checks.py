"""Checks on the embedded engine's storage that several test modules share."""
from __future__ import annotations

from pymongo.errors import PyMongoError


def consistent(coll) -> None:
    """Every index of ``coll`` holds exactly the keys its documents give (an engine invariant: the server's
    indexes are updated in the same write as the documents)."""
    st = coll._store
    for ix in st.ix.values():
        expected = []
        for rid, d in st.docs.items():
            keys, _ = ix.keys_for(d)
            expected.extend((k, rid) for k in keys)
        assert sorted(expected) == ix.entries, ix.spec.name


PROFILE_FIELDS = ("keysInserted", "keysDeleted", "nMatched", "nModified", "docsExamined", "keysExamined",
                  "errCode", "errMsg")


def update_and_profile(db, coll, flt, upd, many: bool, fields=PROFILE_FIELDS) -> tuple:
    """Run one update (``update_many`` or ``update_one``) with the profiler on: its outcome (counts, or the
    error's type, code and text) and the profiler's figures ``fields`` of each update entry."""
    db.command("profile", 2)
    try:
        r = (coll.update_many if many else coll.update_one)(flt, upd)
        out = ("ok", r.matched_count, r.modified_count)
    except PyMongoError as e:
        out = ("error", type(e).__name__, getattr(e, "code", None), str(e))
    prof = [{k: v for k, v in p.items() if k in fields} for p in db.system.profile.find({"op": "update"})]
    return out, prof
