"""collStats / dbStats / $collStats / $indexStats with honest size estimates.

Formulas (documented in docs/performance.md):
* ``size`` = sum of ``len(bson.encode(doc))`` over documents (the true uncompressed BSON size);
  ``avgObjSize`` = size / count.
* ``storageSize`` = size (no compression or padding is modeled).
* each index size = sum over its entries of (encoded key bytes + 24 bytes: 8-byte record id + 16 bytes per-entry
  overhead); ``totalIndexSize`` is their sum.
"""
from __future__ import annotations

import datetime
from typing import Any

import bson

from ..base import hooks  # the kinds of collections give their own figures (capped.py, timeseries.py register them)


def _sizes(coll) -> tuple[int, int]:
    st = coll._store
    n = len(st.docs)
    size = 0
    for d in st.docs.values():
        size += len(bson.encode(d))
    return n, size


def coll_stats(coll, scale: int = 1) -> dict:
    if getattr(coll._db_store._collections.get(coll.name), "ts", None) is not None:
        return hooks.get("timeseries_coll_stats")(coll, scale)  # buckets' sizes + the timeseries section
    st = coll._store
    n, size = _sizes(coll)
    index_sizes = {name: ix.key_size_bytes() // scale for name, ix in st.ix.items()} if st.is_created else {}
    total_ix = sum(index_sizes.values())
    return {"ns": "%s.%s" % (coll.database.name, coll.name), "count": n, "size": size // scale,
            "avgObjSize": (size // n) if n else 0, "storageSize": size // scale,
            "nindexes": len(index_sizes), "indexSizes": index_sizes, "totalIndexSize": total_ix,
            "totalSize": size // scale + total_ix, "scaleFactor": scale, **hooks.get("capped_stats_fields")(st, scale),
            "labkit": {"engine": "embedded", "sizeModel": "BSON bytes; index = key bytes + 24 B/entry"},
            "ok": 1.0}


def db_stats(db, scale: int = 1) -> dict:
    names = db.list_collection_names()
    colls = [n for n in names if "viewOn" not in db._store[n].options]
    n_views = len(names) - len(colls)
    objects = data = ix_total = nix = 0
    for name in colls:
        s = coll_stats(db.get_collection(name), scale)
        objects += s.get("count", s.get("timeseries", {}).get("bucketCount", 0))
        data += s["size"]
        ix_total += s["totalIndexSize"]
        nix += s["nindexes"]
    return {"db": db.name, "collections": len(colls), "views": n_views, "objects": objects,
            "avgObjSize": (data / objects) if objects else 0, "dataSize": data, "storageSize": data,
            "indexes": nix, "indexSize": ix_total, "totalSize": data + ix_total, "scaleFactor": scale,
            "ok": 1.0}


def index_stats(coll) -> list[dict]:
    out = []
    for name, ix in coll._store.ix.items():
        d = {"name": name, "key": dict(ix.spec.key), "host": "labkit-embedded:0",
             "accesses": {"ops": ix.accesses, "since": ix.since}, "spec": ix.spec.info()}
        out.append(d)
    return out


def coll_stats_stage(coll, options: dict) -> dict:
    out: dict[str, Any] = {"ns": "%s.%s" % (coll.database.name, coll.name), "host": "labkit-embedded:0",
                           "localTime": datetime.datetime.utcnow()}
    if "storageStats" in options:
        s = coll_stats(coll, (options.get("storageStats") or {}).get("scale", 1))
        s.pop("ok", None)
        s.pop("labkit", None)
        out["storageStats"] = s
    if "count" in options:
        out["count"] = len(coll._store.docs)
    for k in options:
        if k not in ("storageStats", "count"):
            from ..base.errors import unsupported
            raise unsupported("$collStats option '%s'" % k)
    return out
