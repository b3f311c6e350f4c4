"""Converting an index to unique (MongoDB 6.0+): ``prepareUnique`` on createIndexes and collMod, then collMod
``unique: true`` (with ``dryRun``), and ``forceNonUnique``, in-process and over the wire (pymongo against
``serve_in_thread()``).

Facts from MongoDB's manual ("collMod": "Convert an Existing Index to a Unique Index"; the dry-run example) and
jstests/core/ddl/index_prepareUnique.js, collmod_convert_index_uniqueness.js,
collmod_convert_to_unique_violations.js, collMod_index_invalid_option.js; the error texts and reply fields from
src/mongo/db/catalog/coll_mod.cpp (parseCollModRequest, _processCollModDryRunMode),
src/mongo/db/catalog/coll_mod_index.cpp (processCollModIndexRequest, buildConvertUniqueErrorStatus) and
src/mongo/db/index/index_key_validate.cpp (unique with prepareUnique)."""
from __future__ import annotations

import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure

from both_paths import client, server  # noqa: F401 - the fixtures: every test below runs both ways


@pytest.fixture
def db(client):
    """The test database, emptied, on ``client`` (both_paths: in-process, and pymongo on the served engine)."""
    client.drop_database("pu")
    return client.pu


def _fails(db, cmd, code):
    with pytest.raises(OperationFailure) as e:
        db.command(cmd)
    assert e.value.code == code, (cmd, e.value)
    return e.value


def _index(coll, name):
    return next(ix for ix in coll.list_indexes() if ix["name"] == name)


def test_prepare_unique_refuses_new_duplicates_and_keeps_the_old_ones(db):
    # index_prepareUnique.js
    c = db.c
    c.insert_many([{"_id": 0, "a": 1}, {"_id": 1, "a": 1}])
    assert c.create_index("a", prepareUnique=True) == "a_1"
    assert _index(c, "a_1")["prepareUnique"] is True and "unique" not in _index(c, "a_1")
    with pytest.raises(OperationFailure) as e:  # another index on the key with a different option
        c.create_index("a", prepareUnique=False)
    assert e.value.code == 85
    with pytest.raises(DuplicateKeyError) as e:
        c.insert_one({"_id": 2, "a": 1})
    assert e.value.code == 11000 and "a_1 dup key: { a: 1 }" in str(e.value)
    c.insert_one({"_id": 3, "a": 2})
    c.update_one({"_id": 0}, {"$set": {"b": 1}})  # the document keeps its (old, duplicated) key: allowed
    with pytest.raises(DuplicateKeyError):
        c.update_one({"_id": 3}, {"$set": {"a": 1}})  # a new duplicate through an update
    with pytest.raises(OperationFailure) as e:
        c.insert_many([{"_id": 4, "a": 9}, {"_id": 5, "a": 9}])  # a duplicate within the batch
    assert c.count_documents({"a": 9}) == 1
    # collMod prepareUnique: false: a plain index again, the field gone from listIndexes
    reply = db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "prepareUnique": False}})
    assert reply["prepareUnique_old"] is True and reply["prepareUnique_new"] is False
    assert "prepareUnique" not in _index(c, "a_1")
    c.insert_one({"_id": 2, "a": 1})
    assert c.count_documents({"a": 1}) == 3


def test_prepare_unique_with_unique(db):
    # index_prepareUnique.js: both options at creation is CannotCreateIndex; on a unique index a no-op
    e = _fails(db, {"createIndexes": "c3", "indexes": [{"key": {"a": 1}, "name": "a_1", "unique": True,
                                                          "prepareUnique": True}]}, 67)
    assert "'unique' option and the 'prepareUnique' option" in str(e)
    db.c4.create_index("a", unique=True, prepareUnique=False)
    assert "prepareUnique" not in _index(db.c4, "a_1")
    db.c2.create_index("a", unique=True)
    reply = db.command({"collMod": "c2", "index": {"keyPattern": {"a": 1}, "prepareUnique": True}})
    assert "prepareUnique_new" not in reply
    assert "prepareUnique" not in _index(db.c2, "a_1")


def test_convert_an_index_to_unique(db):
    # collmod_convert_index_uniqueness.js, step by step
    c = db.c
    db.create_collection("c")
    c.create_index("a")
    e = _fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}}, 72)
    assert "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first." in str(e)
    db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "prepareUnique": True}})
    _fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": "100"}}, 14)
    assert "Cannot make index non-unique" in str(
        _fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": False}}, 2))
    _fails(db, {"collMod": "c_missing", "index": {"keyPattern": {"a": 1}, "unique": True}}, 26)
    # existing duplicates: CannotConvertIndexToUnique with the violations
    db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "prepareUnique": False}})
    c.insert_many([{"_id": 1, "a": 100}, {"_id": 2, "a": 100}])
    db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "prepareUnique": True}})
    e = _fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}}, 359)
    assert e.details["codeName"] == "CannotConvertIndexToUnique"
    assert e.details["violations"] == [{"ids": [1, 2]}]
    assert str(e).startswith("Cannot convert the index to unique. Please resolve conflicting documents")
    c.delete_one({"_id": 2})
    # dry run: only a unique conversion, alone; it changes nothing
    _fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "hidden": True}, "dryRun": True}, 72)
    _fails(db, {"collMod": "c", "validationLevel": "off", "dryRun": True}, 72)
    _fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "hidden": True, "unique": True},
                "dryRun": True}, 72)
    _fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}, "validationLevel": "off",
                "dryRun": True}, 72)
    assert db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}, "dryRun": True})["ok"]
    assert "unique" not in _index(c, "a_1")
    db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "prepareUnique": False}})
    c.insert_one({"_id": 3, "a": 100})
    db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "prepareUnique": True}})
    _fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}, "dryRun": True}, 359)
    c.delete_one({"_id": 3})
    # the conversion: unique_new in the reply, unique in listIndexes, prepareUnique reset
    reply = db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "unique": True}})
    assert reply["unique_new"] is True
    ix = _index(c, "a_1")
    assert ix["unique"] is True and "prepareUnique" not in ix
    with pytest.raises(DuplicateKeyError):
        c.insert_one({"_id": 100, "a": 100})
    # and back: forceNonUnique
    _fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "forceNonUnique": False}}, 2)
    reply = db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "forceNonUnique": True}})
    assert reply["forceNonUnique_new"] is True
    c.insert_one({"_id": 100, "a": 100})
    assert "unique" not in _index(c, "a_1")


def test_violations_list_each_run_of_equal_keys(db):
    # collmod_convert_to_unique_violations.js
    c = db.v
    c.create_index("a")
    c.create_index([("a", 1), ("b", 1)])

    def violations(key):
        db.command({"collMod": "v", "index": {"keyPattern": key, "prepareUnique": True}})
        e = _fails(db, {"collMod": "v", "index": {"keyPattern": key, "unique": True}}, 359)
        db.command({"collMod": "v", "index": {"keyPattern": key, "prepareUnique": False}})
        # one run per duplicated key in index (key) order, each in record (insertion) order, as the server scans
        # the index; the jstest sorts them because it does not rely on that order
        return [v["ids"] for v in e.details["violations"]]

    c.insert_many([{"_id": 1, "a": 100, "b": 1}, {"_id": 2, "a": 100, "b": 2}, {"_id": 3, "a": 100, "b": 3},
                   {"_id": 4, "a": 101, "b": 4}, {"_id": 5, "a": 105, "b": 5}, {"_id": 6, "a": 105, "b": 6}])
    assert violations({"a": 1}) == [[1, 2, 3], [5, 6]]
    c.insert_many([{"_id": 7, "a": 105, "b": 6}, {"_id": 8, "a": 105, "b": 6}, {"_id": 9, "a": 101, "b": 4},
                   {"_id": "10", "a": 101, "b": 4}])
    assert violations({"a": 1, "b": 1}) == [[4, 9, "10"], [6, 7, 8]]


def test_collmod_index_option_errors(db):
    db.e.create_index("a")
    # collMod_index_invalid_option.js: IDLUnknownField, nothing changed
    _fails(db, {"collMod": "e", "index": {"keyPattern": {"a": 1}, "hidden": True, "invalidOption": 1}}, 40415)
    assert "hidden" not in _index(db.e, "a_1")
    # coll_mod.cpp: an index document with nothing to change; unique with forceNonUnique; prepareUnique with
    # another modification
    _fails(db, {"collMod": "e", "index": {"keyPattern": {"a": 1}}}, 72)
    _fails(db, {"collMod": "e", "index": {"keyPattern": {"a": 1}, "unique": True, "forceNonUnique": True}}, 72)
    e = _fails(db, {"collMod": "e", "index": {"keyPattern": {"a": 1}, "prepareUnique": True, "hidden": True}}, 72)
    assert "prepareUnique cannot be combined with any other modification." in str(e)
    assert "hidden" not in _index(db.e, "a_1") and "prepareUnique" not in _index(db.e, "a_1")
    _fails(db, {"collMod": "e", "index": {"keyPattern": {"zz": 1}, "prepareUnique": True}}, 27)
