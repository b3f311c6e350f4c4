"""collStats / dbStats / $collStats / $indexStats.

Sizes (documented in docs/performance.md):
* ``size`` = sum of ``len(bson.encode(doc))`` over documents: the uncompressed data size (manual, "collStats" >
  Output: ``size``); ``avgObjSize`` = size / count, never scaled.
* ``storageSize``, ``freeStorageSize``, ``indexSizes``, ``totalIndexSize``: the engine's model of the WiredTiger
  files a server would hold for the same data (snappy-compressed 32 KB leaf pages for documents, prefix-compressed
  KeyString entries in 16 KB pages for each index, 4 KB allocation units, the file's high-water mark kept after
  deletes); ``wiredtiger_sizes.py`` has the rules and their sources.
* ``totalSize`` = (storageSize + totalIndexSize) / scale, each size divided by ``scale`` as
  ``src/mongo/db/stats/storage_stats.cpp`` (``appendCollectionStorageStats``) divides it.
"""
from __future__ import annotations

import datetime
from typing import Any

from ..base import hooks  # the kinds of collections give their own figures (capped.py, timeseries.py register them)
from . import wiredtiger_sizes as wt

SIZE_MODEL = ("size: uncompressed BSON bytes; storageSize, freeStorageSize, indexSizes: the engine's model of "
              "WiredTiger's file sizes (snappy-compressed pages, prefix-compressed KeyString index entries, 4 KB "
              "blocks), as after a checkpoint")
BUCKETS_PREFIX = "system.buckets."


def _compressor(coll) -> str:
    """The block compressor a server gives the collection's file: zstd for time-series buckets (8.0's
    ``kDefaultTimeseriesCollectionCompressor``), else the snappy default."""
    return "zstd" if coll.name.startswith(BUCKETS_PREFIX) else "snappy"


def coll_stats(coll, scale: int = 1) -> dict:
    if getattr(coll._db_store._collections.get(coll.name), "ts", None) is not None:
        return hooks.get("timeseries_coll_stats")(coll, scale)  # buckets' sizes + the timeseries section
    st = coll._store
    n = len(st.docs)
    if st.is_created:
        files = wt.file_sizes(st, _compressor(coll))
        size = files.size
        storage, free = files.storage()
        unscaled = {name: s for name, (s, _) in files.index_sizes().items()}
    else:
        size = storage = free = 0
        unscaled = {}
    index_sizes = {name: s // scale for name, s in unscaled.items()}
    total_ix = sum(unscaled.values())
    return {"ns": "%s.%s" % (coll.database.name, coll.name), "count": n, "size": size // scale,
            "avgObjSize": (size // n) if n else 0, "storageSize": storage // scale, "freeStorageSize": free // scale,
            "nindexes": len(index_sizes), "indexSizes": index_sizes, "totalIndexSize": total_ix // scale,
            "totalSize": (storage + total_ix) // scale, "scaleFactor": scale,
            **hooks.get("capped_stats_fields")(st, scale),
            "labkit": {"engine": "embedded", "sizeModel": SIZE_MODEL}, "ok": 1.0}


def index_free_bytes(coll) -> int:
    """Bytes available for reuse in the collection's index files (dbStats ``indexFreeStorageSize``)."""
    st = coll._store
    if getattr(coll._db_store._collections.get(coll.name), "ts", None) is not None:
        return index_free_bytes(coll._buckets())
    if not st.is_created:
        return 0
    return sum(free for _, free in wt.file_sizes(st, _compressor(coll)).index_sizes().values())


def compact(coll) -> int:
    """``compact``: the collection's files give their free space back; returns the bytes freed."""
    if getattr(coll._db_store._collections.get(coll.name), "ts", None) is not None:
        coll = coll._buckets()
    st = coll._store
    return wt.compact(st, _compressor(coll)) if st.is_created else 0


def db_stats(db, scale: int = 1, free_storage: bool = False) -> dict:
    """dbStats: the collections' sums in bytes, then divided by ``scale`` (``avgObjSize`` never is);
    ``totalSize`` = storageSize + indexSize; with ``freeStorage`` the free space of the files too (the field
    order of ``src/mongo/db/commands/dbstats.cpp``)."""
    names = db.list_collection_names()
    colls = [n for n in names if "viewOn" not in db._store[n].options]
    n_views = len(names) - len(colls)
    objects = data = storage = free = ix_total = ix_free = nix = 0
    for name in colls:
        coll = db.get_collection(name)
        s = coll_stats(coll, 1)
        objects += s.get("count", s.get("timeseries", {}).get("bucketCount", 0))
        data += s["size"]
        storage += s["storageSize"]
        free += s["freeStorageSize"]
        ix_total += s["totalIndexSize"]
        nix += s["nindexes"]
        if free_storage:
            ix_free += index_free_bytes(coll)
    out: dict[str, Any] = {"db": db.name, "collections": len(colls), "views": n_views, "objects": objects,
                           "avgObjSize": (data / objects) if objects else 0, "dataSize": data // scale,
                           "storageSize": storage // scale}
    if free_storage:
        out["freeStorageSize"] = free // scale
    out.update({"indexes": nix, "indexSize": ix_total // scale})
    if free_storage:
        out["indexFreeStorageSize"] = ix_free // scale
    out["totalSize"] = (storage + ix_total) // scale
    if free_storage:
        out["totalFreeStorageSize"] = (free + ix_free) // scale
    out.update({"scaleFactor": scale, "ok": 1.0})
    return out


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
