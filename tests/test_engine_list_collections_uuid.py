"""``listCollections`` gives every collection ``info: {readOnly: false, uuid: UUID(...)}``, in-process and over TCP.

Facts from MongoDB: src/mongo/db/commands/list_collections.cpp (``buildCollectionBson``: ``info`` holds ``readOnly``
and the collection's ``uuid``, which ``options`` leaves out; ``buildViewBson``: a view's ``info`` is
``{readOnly: true}``; ``buildTimeseriesBson``: a time-series namespace's ``info`` is ``{readOnly: false}``, its
buckets collection is a collection with a ``uuid``); src/mongo/db/catalog/rename_collection.cpp (a rename within
one database renames the catalog entry: the same collection, the same UUID; SERVER-62455's ``collectionUUID``
check of renameCollection names that UUID); a dropped and re-created collection is a new collection with a new
UUID; ``collStats`` shows no uuid.
"""
from __future__ import annotations

import datetime
import itertools

from bson.binary import Binary

from both_paths import client, server  # noqa: F401 - fixtures

_NAMES = itertools.count()


def _entries(db) -> dict:
    return {e["name"]: e for e in db.list_collections()}


def test_uuid_in_info_kept_by_rename_new_on_recreate(client):
    db = client["lcu_%d" % next(_NAMES)]
    db.a.insert_one({"x": 1})
    db.create_collection("other")
    first = _entries(db)
    info = first["a"]["info"]
    assert list(info) == ["readOnly", "uuid"] and info["readOnly"] is False
    assert isinstance(info["uuid"], Binary) and info["uuid"].subtype == 4 and len(info["uuid"]) == 16
    assert "uuid" not in first["a"]["options"]
    assert first["other"]["info"]["uuid"] != info["uuid"]  # one per collection
    db.a.insert_one({"x": 2})
    db.a.create_index("x")
    assert _entries(db)["a"]["info"]["uuid"] == info["uuid"]  # writes and indexes keep it
    client.admin.command({"renameCollection": db.name + ".a", "to": db.name + ".b"})
    assert _entries(db)["b"]["info"]["uuid"] == info["uuid"]  # a rename keeps it
    db.b.drop()
    db.create_collection("b")
    again = _entries(db)["b"]["info"]["uuid"]
    assert isinstance(again, Binary) and again != info["uuid"]  # a new collection, a new UUID
    assert "uuid" not in db.command("collStats", "b")


def test_views_and_time_series(client):
    db = client["lcu_%d" % next(_NAMES)]
    db.base.insert_one({"x": 1})
    db.command({"create": "v", "viewOn": "base", "pipeline": []})
    db.create_collection("ts", timeseries={"timeField": "t"})
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1), "v": 1})
    e = _entries(db)
    assert e["v"]["info"] == {"readOnly": True}
    assert e["ts"]["type"] == "timeseries" and e["ts"]["info"] == {"readOnly": False}
    buckets = e["system.buckets.ts"]["info"]
    assert buckets["readOnly"] is False and isinstance(buckets["uuid"], Binary) and buckets["uuid"].subtype == 4
