"""collStats / dbStats / $collStats storage figures as WiredTiger's file sizes (issue 26).

Facts (MongoDB's and WiredTiger's own material):
* manual, "collStats" > Output (https://www.mongodb.com/docs/manual/reference/command/collStats/): ``size`` is the
  uncompressed data size; ``storageSize`` the storage allocated to the collection, compressed by default, so it
  may be smaller than ``size``; ``freeStorageSize`` the space available for reuse; ``totalSize`` storageSize +
  totalIndexSize; ``scale`` divides the sizes, never ``avgObjSize``. ``src/mongo/db/stats/storage_stats.cpp``
  (``appendCollectionStorageStats``) divides each figure by the scale and ``totalSize`` as
  ``(storageSize + indexSize) / scale``.
* ``src/mongo/db/storage/wiredtiger/wiredtiger_record_store.cpp`` / ``wiredtiger_index.cpp``
  ``generateCreateString``: collections get ``block_compressor=snappy`` (``wiredtiger_global_options.idl``) and
  ``split_pct=90``; indexes ``leaf_page_max=16k``, ``prefix_compression=true`` and no block compressor.
* A new collection and its ``_id`` index are one 4 KB block each (the file's descriptor): ``dbStats`` on a server
  shows ``storageSize: 4096, indexSize: 4096`` for a database with one empty collection. After a checkpoint a file
  with data holds the descriptor, its pages and the checkpoint's three extent lists (WiredTiger
  ``src/block/block_ckpt.c``: alloc, discard, avail), so one small document gives 5 blocks (20480 bytes), the
  figure servers show for a collection of a few documents.
* manual, "compact": deleted documents' space is reused by WiredTiger but not returned to the operating system
  until ``compact`` runs (its reply's ``bytesFreed``).
* KeyString (``src/mongo/db/storage/key_string/key_string.cpp``): a type byte per value (numbers 30-51, strings
  60, ObjectId 100, dates 120), integers in as many bytes as their magnitude shifted left by one needs, strings
  terminated by a 0 byte with 0 bytes escaped as 00 FF, ``kEnd`` (4) after the key, and a record id of 2 + N
  bytes (``_appendRecordIdLong``: 10 bits in the first and last bytes, 8 in each of the N between).
"""
from __future__ import annotations

import random

import pytest
from bson import ObjectId
from pymongo import MongoClient

from labkit.engine import EmbeddedClient
from labkit.engine.s.router import Mongos
from labkit.engine.stats import wiredtiger_sizes as wt
from labkit.engine.transport.wire import serve_in_thread

BLOCK = 4096


@pytest.fixture
def db():
    return EmbeddedClient().get_database("sizes")


@pytest.fixture(scope="module")
def served():
    with serve_in_thread() as srv:
        client = MongoClient(srv.uri)
        yield client
        client.close()


def _users(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    cities = ["Paris", "Lyon", "Nice", "Lille"]
    return [{"_id": i, "name": "user%05d" % i, "email": "user%05d@example.com" % i, "city": rng.choice(cities),
             "bio": "Likes hiking, coffee and schema design. " * 2} for i in range(n)]


def _figures(db, name: str, **kw) -> dict:
    s = db.command("collStats", name, **kw)
    return {k: s[k] for k in ("size", "storageSize", "freeStorageSize", "totalIndexSize", "indexSizes", "totalSize")}


# ---------------------------------------------------------------------------------------------- KeyString
@pytest.mark.parametrize("value, expected", [
    (0, bytes([41])),                          # kNumericZero
    (5, bytes([43, 10])),                      # kNumericPositive1ByteInt, 5 << 1
    (200, bytes([44, 0x01, 0x90])),            # 400 needs two bytes
    (-5, bytes([39, 0xFF - 10])),              # kNumericNegative1ByteInt, inverted magnitude
    (7.0, bytes([43, 14])),                    # an integral double is encoded as the integer
    ("ab", bytes([60]) + b"ab\x00"),            # kStringLike, NUL terminator
    ("a\x00b", bytes([60]) + b"a\x00\xffb\x00"),  # an embedded NUL is escaped as 00 FF
    (None, bytes([20])),                       # kNullish
    (True, bytes([111])), (False, bytes([110])),
])
def test_keystring_bytes_follow_key_string_cpp(value, expected):
    assert wt.keystring(value) == expected


def test_keystring_fixed_width_types_and_order():
    oid = ObjectId("65a000000000000000000001")
    assert wt.keystring(oid) == bytes([100]) + oid.binary
    import datetime
    assert len(wt.keystring(datetime.datetime(2024, 1, 1))) == 9           # kDate + 8 bytes
    assert len(wt.keystring(1.5)) == 9                                      # a fraction: type byte + 8 bytes
    values = [None, -1000, -1.5, -1, 0, 0.25, 1, 1.5, 2, 300, 2 ** 40, "a", "ab", "b", oid, False, True]
    assert sorted(values, key=wt.keystring) == values                       # KeyString order is BSON order


@pytest.mark.parametrize("rid, size", [(1, 2), (1023, 2), (1024, 3), (2 ** 18 - 1, 3), (2 ** 18, 4)])
def test_record_id_takes_two_bytes_plus_one_per_further_eight_bits(rid, size):
    assert wt.record_id_bytes(rid) == size == len(wt.record_id_encoding(rid))


def test_record_id_encoding_carries_its_length_at_both_ends_and_sorts_like_the_record_id():
    assert wt.record_id_encoding(1) == bytes([0x00, 0x08])           # N = 0: value 1 in the last byte's high bits
    assert wt.record_id_encoding(1024) == bytes([0x20, 0x20, 0x01])  # N = 1 in the first byte's top 3 bits and last
    rids = random.Random(4).sample(range(1, 10 ** 9), 2000)
    assert sorted(rids, key=wt.record_id_encoding) == sorted(rids)


# ---------------------------------------------------------------------------------------------- collStats
def test_empty_collection_and_its_id_index_are_one_block_each(db):
    db.create_collection("e")
    f = _figures(db, "e")
    assert f == {"size": 0, "storageSize": BLOCK, "freeStorageSize": 0, "totalIndexSize": BLOCK,
                 "indexSizes": {"_id_": BLOCK}, "totalSize": 2 * BLOCK}
    s = db.command("dbStats")
    assert (s["dataSize"], s["storageSize"], s["indexSize"], s["totalSize"]) == (0, BLOCK, BLOCK, 2 * BLOCK)


def test_one_small_document_is_five_blocks_after_a_checkpoint(db):
    db.one.insert_one({"a": 1})
    f = _figures(db, "one")
    assert f["size"] == 29 and f["storageSize"] == 5 * BLOCK and f["indexSizes"] == {"_id_": 5 * BLOCK}


def test_sizes_are_whole_blocks_and_total_is_storage_plus_indexes(db):
    db.u.insert_many(_users(3000))
    db.u.create_index("city")
    f = _figures(db, "u")
    assert all(v % BLOCK == 0 for v in [f["storageSize"], *f["indexSizes"].values()])
    assert f["totalIndexSize"] == sum(f["indexSizes"].values())
    assert f["totalSize"] == f["storageSize"] + f["totalIndexSize"]


def test_compressible_documents_take_less_than_their_bson_size(db):
    db.u.insert_many(_users(3000))
    f = _figures(db, "u")
    assert f["storageSize"] < f["size"] / 2  # repeated text compresses well with snappy


def test_random_bytes_do_not_compress(db):
    rng = random.Random(3)
    db.r.insert_many([{"_id": i, "blob": rng.randbytes(2000)} for i in range(300)])
    f = _figures(db, "r")
    assert f["storageSize"] >= f["size"]


def test_low_cardinality_index_is_smaller_than_its_raw_keys(db):
    db.u.insert_many(_users(5000))
    db.u.create_index("city")
    raw = sum(len(wt.keystring(d["city"])) + 1 + wt.record_id_bytes(i + 1) for i, d in enumerate(_users(5000)))
    fixed = wt.DESCRIPTOR_BYTES + 3 * BLOCK  # the descriptor and the checkpoint's extent lists
    assert _figures(db, "u")["indexSizes"]["city_1"] - fixed < raw / 2  # prefix compression shares the value


def test_index_on_values_with_long_common_prefixes_is_smaller_than_the_raw_keys(db):
    urls = ["https://shop.example.com/catalog/outdoor/tents/item-%06d" % i for i in range(4000)]
    db.p.insert_many([{"_id": i, "url": u} for i, u in enumerate(urls)])
    db.p.create_index("url", unique=True)
    raw = sum(len(wt.keystring(u)) + 1 for u in urls)
    assert _figures(db, "p")["indexSizes"]["url_1"] < raw * 0.6


def test_unique_and_non_unique_index_on_the_same_values_are_both_modelled(db):
    db.u.insert_many(_users(3000))
    db.u.create_index("email", unique=True, name="unique_email")
    db.u.create_index("email", name="email")
    sizes = _figures(db, "u")["indexSizes"]
    # the record id moves from the value (unique) into the key (non-unique): both near the same size
    assert sizes["unique_email"] > BLOCK * 5 and sizes["email"] > BLOCK * 5
    assert abs(sizes["unique_email"] - sizes["email"]) <= sizes["email"] // 4


def test_deleting_keeps_the_file_size_and_reports_free_space_then_inserts_reuse_it(db):
    db.u.insert_many(_users(4000))
    before = _figures(db, "u")
    db.u.delete_many({"_id": {"$lt": 3000}})
    after = _figures(db, "u")
    assert after["size"] < before["size"] / 3
    assert after["storageSize"] == before["storageSize"]          # the file does not shrink
    assert after["freeStorageSize"] > 0 and after["freeStorageSize"] < after["storageSize"]
    assert after["indexSizes"] == before["indexSizes"]
    db.u.insert_many([{**d, "_id": d["_id"] + 10_000} for d in _users(1000)])
    again = _figures(db, "u")
    assert again["storageSize"] == before["storageSize"]          # new documents reuse the free blocks
    assert again["freeStorageSize"] < after["freeStorageSize"]


def test_compact_gives_the_free_space_back(db):
    db.u.insert_many(_users(4000))
    full = _figures(db, "u")
    db.u.delete_many({"_id": {"$lt": 3000}})
    freed = db.command("compact", "u")
    left = _figures(db, "u")
    assert freed["ok"] == 1.0 and freed["bytesFreed"] > 0
    assert left["freeStorageSize"] == 0 and left["storageSize"] < full["storageSize"]
    assert freed["bytesFreed"] == (full["storageSize"] - left["storageSize"]) + (full["totalIndexSize"]
                                                                                 - left["totalIndexSize"])
    assert db.command("compact", "u")["bytesFreed"] == 0


def test_compact_errors():
    db = EmbeddedClient().get_database("sizes")
    with pytest.raises(Exception) as info:
        db.command("compact", "nothing")
    assert getattr(info.value, "code", None) == 26


def test_drop_forgets_the_high_water_mark(db):
    db.u.insert_many(_users(3000))
    _figures(db, "u")
    db.u.drop()
    db.u.insert_one({"_id": 1})
    assert _figures(db, "u")["storageSize"] == 5 * BLOCK


def test_scale_divides_every_size_but_not_avg_obj_size(db):
    db.u.insert_many(_users(3000))
    db.u.create_index("city")
    one = db.command("collStats", "u")
    k = db.command("collStats", "u", scale=1024)
    for f in ("size", "storageSize", "freeStorageSize", "totalIndexSize"):
        assert k[f] == one[f] // 1024
    assert k["indexSizes"] == {n: v // 1024 for n, v in one["indexSizes"].items()}
    assert k["totalSize"] == (one["storageSize"] + one["totalIndexSize"]) // 1024
    assert k["avgObjSize"] == one["avgObjSize"] and k["scaleFactor"] == 1024


def test_figures_are_recomputed_after_writes_and_remembered_otherwise(db):
    db.u.insert_many(_users(500))
    _figures(db, "u")
    key = db.u._store.wt_files.key
    _figures(db, "u")
    assert db.u._store.wt_files.key == key                       # nothing written: nothing recomputed
    db.u.update_one({"_id": 1}, {"$set": {"bio": "x" * 5000}})
    f = _figures(db, "u")
    assert db.u._store.wt_files.key != key and f["size"] > 500 * 100


def test_labkit_section_says_what_the_sizes_are(db):
    db.u.insert_one({"_id": 1})
    model = db.command("collStats", "u")["labkit"]["sizeModel"]
    assert "uncompressed" in model and "model of WiredTiger's file sizes" in model


# ---------------------------------------------------------------------------------------------- dbStats, $collStats
def test_db_stats_sums_the_files_and_reports_free_space_on_request(db):
    db.u.insert_many(_users(2000))
    db.u.create_index("city")
    db.e.insert_one({"_id": 1})
    _figures(db, "u")  # asking for the figures is the engine's checkpoint: the file reaches this size
    db.u.delete_many({"_id": {"$lt": 1500}})
    u, e = _figures(db, "u"), _figures(db, "e")
    s = db.command("dbStats")
    assert s["storageSize"] == u["storageSize"] + e["storageSize"]
    assert s["indexSize"] == u["totalIndexSize"] + e["totalIndexSize"]
    assert s["totalSize"] == s["storageSize"] + s["indexSize"]
    assert "freeStorageSize" not in s
    f = db.command("dbStats", freeStorage=1)
    assert list(f)[:12] == ["db", "collections", "views", "objects", "avgObjSize", "dataSize", "storageSize",
                            "freeStorageSize", "indexes", "indexSize", "indexFreeStorageSize", "totalSize"]
    assert f["freeStorageSize"] == u["freeStorageSize"] > 0
    assert f["totalFreeStorageSize"] == f["freeStorageSize"] + f["indexFreeStorageSize"]
    k = db.command("dbStats", scale=1024)
    assert k["storageSize"] == s["storageSize"] // 1024 and k["avgObjSize"] == s["avgObjSize"]


def test_coll_stats_stage_storage_stats_match_the_command_with_scale(db):
    db.u.insert_many(_users(1500))
    cmd = db.command("collStats", "u", scale=1024)
    stage = next(db.u.aggregate([{"$collStats": {"storageStats": {"scale": 1024}}}]))["storageStats"]
    for f in ("size", "storageSize", "freeStorageSize", "totalIndexSize", "indexSizes", "totalSize"):
        assert stage[f] == cmd[f]


def test_capped_and_time_series_collections_have_file_sizes(db):
    db.create_collection("cap", capped=True, size=1 << 20)
    db.cap.insert_many([{"i": i, "msg": "hello " * 10} for i in range(500)])
    c = _figures(db, "cap")
    assert c["storageSize"] % BLOCK == 0 and c["storageSize"] < c["size"]
    import datetime
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    t0 = datetime.datetime(2024, 1, 1)
    db.ts.insert_many([{"t": t0 + datetime.timedelta(seconds=i), "m": i % 3, "v": 20.0} for i in range(900)])
    s = db.command("collStats", "ts")
    assert s["storageSize"] % BLOCK == 0 and s["storageSize"] < s["size"]  # zstd blocks of the buckets
    assert "zstd" in s["labkit"]["sizeModel"]


def test_router_sums_the_shards_files():
    m = Mongos(2)
    m.command("admin", {"shardCollection": "lab.u", "key": {"_id": "hashed"}})
    m.command("lab", {"insert": "u", "documents": _users(2000)})
    s = m.command("lab", {"collStats": "u"})
    shards = s["shards"].values()
    assert s["storageSize"] == sum(x["storageSize"] for x in shards)
    assert s["totalSize"] == sum(x["totalSize"] for x in shards)
    assert s["indexSizes"]["_id_"] == sum(x["indexSizes"]["_id_"] for x in shards)
    assert s["storageSize"] < s["size"]


# ---------------------------------------------------------------------------------------------- over TCP
def test_served_engine_reports_the_same_figures(served):
    db = served.get_database("sizes_wire")
    db.drop_collection("u")
    db.u.insert_many(_users(2000))
    db.u.create_index("city")
    f = _figures(db, "u")
    assert f["storageSize"] < f["size"] and f["totalSize"] == f["storageSize"] + f["totalIndexSize"]
    db.u.delete_many({"_id": {"$lt": 1500}})
    g = _figures(db, "u")
    assert g["storageSize"] == f["storageSize"] and g["freeStorageSize"] > 0
    stage = next(db.u.aggregate([{"$collStats": {"storageStats": {"scale": 1024}}}]))["storageStats"]
    assert stage["storageSize"] == g["storageSize"] // 1024
    assert db.command("dbStats", freeStorage=1)["freeStorageSize"] == g["freeStorageSize"]
    assert db.command("compact", "u")["bytesFreed"] > 0
    assert _figures(db, "u")["freeStorageSize"] == 0


def test_review_sums_each_index_over_the_shards():
    """labkit.review reads `$collStats` through a mongos (one document per shard): an index's bytes are the sum of
    its files on every shard, as the router's collStats sums them."""
    import labkit
    from labkit.review import _Coll, _stats
    client = labkit.connect("embedded", shards=2)
    db = labkit.fresh_db("sizes_review", client=client)
    client.admin.command("shardCollection", f"{db.name}.u", key={"_id": "hashed"})
    db.u.insert_many(_users(2000))
    c = _Coll(name="u", options={})
    _stats(db, c)
    per_shard = list(db.u.aggregate([{"$collStats": {"storageStats": {}}}]))
    assert len(per_shard) == 2
    assert c.index_sizes["_id_"] == sum(d["storageStats"]["indexSizes"]["_id_"] for d in per_shard)
    assert c.count == 2000


def test_router_db_stats_sums_the_shards_free_space():
    m = Mongos(2)
    m.command("admin", {"shardCollection": "lab.u", "key": {"_id": "hashed"}})
    m.command("lab", {"insert": "u", "documents": _users(2000)})
    m.command("lab", {"collStats": "u"})  # the figures are read: the files reach this size
    m.command("lab", {"delete": "u", "deletes": [{"q": {"_id": {"$lt": 1500}}, "limit": 0}]})
    s = m.command("lab", {"dbStats": 1, "freeStorage": 1})
    shards = s["raw"].values()
    for k in ("storageSize", "freeStorageSize", "indexFreeStorageSize", "totalFreeStorageSize"):
        assert s[k] == sum(x[k] for x in shards)
    assert s["freeStorageSize"] > 0
    assert list(s).index("freeStorageSize") == list(s).index("storageSize") + 1
    assert "freeStorageSize" not in m.command("lab", {"dbStats": 1})
