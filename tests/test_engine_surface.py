"""The pymongo API surface on the embedded engine (issue 13): every method and option either behaves as against a
MongoDB 8.0 one-member replica set or fails with a clear OperationFailure (115 where the server would support it);
nothing is silently ignored and no bare Python exception escapes (pymongo's own argument errors excepted).

Sources are named per test: the pymongo 4 API docs (pymongo.readthedocs.io, "collection", "cursor", "database",
"mongo_client", "results") and the MongoDB manual's command / reference pages."""
from __future__ import annotations

import pytest
from pymongo import InsertOne, UpdateOne
from pymongo.errors import (BulkWriteError, ConfigurationError, InvalidOperation, OperationFailure,
                            WriteConcernError)
from pymongo.write_concern import WriteConcern

from labkit.engine import EmbeddedClient


@pytest.fixture
def coll():
    c = EmbeddedClient().surface.c
    c.insert_many([{"_id": i, "a": i, "b": "x%d" % i} for i in range(5)])
    c.create_index("a")
    return c


def _code(exc_info) -> int | None:
    return getattr(exc_info.value, "code", None)


# ---------------------------------------------------------------------------------------------- write concern
def test_unacknowledged_writes_return_unacknowledged_results(coll):
    # pymongo docs, results.InsertOneResult / UpdateResult: "acknowledged" is False for w=0 and the counts raise
    # InvalidOperation; the manual "Write Concern" (w: 0): no acknowledgment, errors are not reported.
    w0 = coll.with_options(write_concern=WriteConcern(w=0))
    r = w0.insert_one({"q": 1})
    assert r.acknowledged is False and r.inserted_id is not None
    assert coll.count_documents({"q": 1}) == 1
    u = w0.update_one({"a": 1}, {"$set": {"z": 1}})
    assert u.acknowledged is False
    with pytest.raises(InvalidOperation):
        u.matched_count
    assert coll.find_one({"a": 1})["z"] == 1
    assert w0.delete_one({"a": 2}).acknowledged is False
    assert coll.count_documents({"a": 2}) == 0
    assert w0.bulk_write([InsertOne({"q": 2})]).acknowledged is False


def test_unacknowledged_write_errors_are_not_reported(coll):
    # manual "Write Concern": with w: 0 the server returns no error; an ordered insert still stops at the error.
    w0 = coll.with_options(write_concern=WriteConcern(w=0))
    assert w0.insert_one({"_id": 1}).acknowledged is False  # duplicate key: not reported
    r = w0.insert_many([{"_id": 50}, {"_id": 1}, {"_id": 51}])
    assert r.acknowledged is False and r.inserted_ids == [50, 1, 51]
    assert coll.count_documents({"_id": {"$in": [50, 51]}}) == 1  # ordered: stopped at the duplicate


def test_unacknowledged_with_explicit_session_is_pymongo_configuration_error(coll):
    # pymongo docs, client_session: "Explicit sessions are incompatible with unacknowledged write concern".
    w0 = coll.with_options(write_concern=WriteConcern(w=0))
    with coll.database.client.start_session() as s:
        with pytest.raises(ConfigurationError):
            w0.insert_one({"q": 1}, session=s)


def test_write_concern_beyond_the_one_member_set(coll):
    # manual "Write Concern" (w: <number>, custom names): the write is applied, then a writeConcernError:
    # UnsatisfiableWriteConcern 100 for more members than the set has, UnknownReplWriteConcern 79 for a tag.
    with pytest.raises(WriteConcernError) as e:
        coll.with_options(write_concern=WriteConcern(w=2, wtimeout=100)).insert_one({"_id": 100})
    assert _code(e) == 100
    assert coll.count_documents({"_id": 100}) == 1
    with pytest.raises(WriteConcernError) as e:
        coll.with_options(write_concern=WriteConcern(w="dc1")).update_one({"_id": 1}, {"$set": {"t": 1}})
    assert _code(e) == 79
    assert coll.find_one({"_id": 1})["t"] == 1
    with pytest.raises(BulkWriteError) as e:
        coll.with_options(write_concern=WriteConcern(w=3)).insert_many([{"_id": 101}])
    assert e.value.details["writeConcernErrors"][0]["code"] == 100
    # majority and j are satisfiable on the one-member set
    assert coll.with_options(write_concern=WriteConcern(w="majority", j=True)).insert_one({}).acknowledged


def test_database_write_concern_is_inherited(coll):
    # pymongo docs, database.Database.with_options / MongoClient.get_database(write_concern=...): collections
    # obtained from the database use its write concern.
    client = coll.database.client
    db0 = client.get_database("surface", write_concern=WriteConcern(w=0))
    assert db0.write_concern.document == {"w": 0}
    assert db0.c.insert_one({"q": 1}).acknowledged is False
    assert coll.database.with_options(write_concern=WriteConcern(w=0)).c.insert_one({}).acknowledged is False
    assert coll.database.c.insert_one({}).acknowledged is True


# ---------------------------------------------------------------------------------------------- find / Cursor
def test_find_removed_options_are_server_errors(coll):
    # pymongo sends max_scan / snapshot as the find command's maxScan / snapshot; MongoDB 4.2 / 4.0 removed them
    # (manual "find" command fields: neither is listed), so an 8.0 server refuses the unknown field (40415).
    for kw in ({"max_scan": 3}, {"snapshot": True}):
        with pytest.raises(OperationFailure) as e:
            list(coll.find({}, **kw))
        assert _code(e) == 40415


def test_find_argument_errors_are_pymongos(coll):
    # pymongo docs, cursor.Cursor: batch_size must be a non-negative int (TypeError / ValueError).
    with pytest.raises(ValueError):
        coll.find({}, batch_size=-1)
    with pytest.raises(TypeError):
        coll.find({}, batch_size="2")


def test_cursor_flags(coll):
    # pymongo docs, cursor.Cursor.add_option / remove_option; manual "find" (noCursorTimeout, allowPartialResults
    # change nothing on an unsharded set; tailable cursors need a capped collection and are not modelled).
    cur = coll.find().add_option(16).add_option(128)
    assert len(list(cur)) == 5
    with pytest.raises(OperationFailure) as e:
        coll.find().add_option(2)
    assert _code(e) == 115
    with pytest.raises(TypeError):
        coll.find().add_option("2")
    assert len(list(coll.find().add_option(16).remove_option(16))) == 5
    cur = coll.find()
    list(cur)
    with pytest.raises(InvalidOperation):
        cur.add_option(16)


def test_cursor_retrieved_cursor_id_session(coll):
    # pymongo docs, cursor.Cursor.retrieved ("The number of documents retrieved so far") and cursor_id (None
    # before the first batch, 0 once the server closed the cursor); manual "find" batchSize (first batch 101).
    cur = coll.find().batch_size(2)
    assert cur.retrieved == 0 and cur.cursor_id is None
    next(cur)
    assert cur.retrieved == 2 and cur.cursor_id not in (None, 0)
    next(cur)
    next(cur)
    assert cur.retrieved == 4
    list(cur)
    assert cur.retrieved == 5 and cur.cursor_id == 0
    cur = coll.find()
    next(cur)
    assert cur.retrieved == 5 and cur.cursor_id == 0  # everything fit in the first batch
    assert coll.find().session is None
    with coll.database.client.start_session() as s:
        assert coll.find({}, session=s).session is s


def test_cursor_max_await_time_ms(coll):
    # pymongo docs, cursor.Cursor.max_await_time_ms: "For all other types of cursor max_await_time_ms is ignored";
    # TypeError for a non-int.
    assert len(list(coll.find().max_await_time_ms(10))) == 5
    with pytest.raises(TypeError):
        coll.find().max_await_time_ms("10")


# ---------------------------------------------------------------------------------------------- other commands
def test_find_and_modify_unknown_option_is_server_error(coll):
    # pymongo docs, collection.find_one_and_update(**kwargs: "additional command arguments"); manual
    # "findAndModify": an unknown field fails IDL parsing (40415).
    with pytest.raises(OperationFailure) as e:
        coll.find_one_and_update({"a": 1}, {"$set": {"z": 1}}, foo=1)
    assert _code(e) == 40415
    assert "z" not in coll.find_one({"a": 1})


def test_aggregate_unknown_option_is_server_error(coll):
    # pymongo docs, collection.aggregate(**kwargs: sent as aggregate command options); manual "aggregate".
    with pytest.raises(OperationFailure) as e:
        coll.aggregate([], bogus=1)
    assert _code(e) == 40415


def test_create_index_max_time_ms_and_version(coll):
    # pymongo docs, collection.create_index: maxTimeMS is a command option, not part of the index spec;
    # manual "Index Versions": v: 1 is valid (not modelled: 115), v: 3 is refused (67 CannotCreateIndex).
    assert coll.create_index("d", maxTimeMS=1000) == "d_1"
    assert coll.index_information()["d_1"]["v"] == 2
    with pytest.raises(OperationFailure) as e:
        coll.create_index("e", v=1)
    assert _code(e) == 115
    with pytest.raises(OperationFailure) as e:
        coll.create_index("e", v=3)
    assert _code(e) == 67
    assert "e_1" not in coll.index_information()


def test_rename_options(coll):
    # pymongo docs, collection.rename(new_name, session, comment, **kwargs: dropTarget); manual "renameCollection".
    db = coll.database
    db.other.insert_one({})
    with pytest.raises(OperationFailure) as e:
        coll.rename("other")
    assert _code(e) == 48  # NamespaceExists, "target namespace exists"
    with pytest.raises(OperationFailure) as e:
        db.missing.rename("x")
    assert _code(e) == 26  # NamespaceNotFound, "source namespace does not exist"
    coll.rename("other", dropTarget=True, comment="move")
    assert db.other.count_documents({}) == 5
    with pytest.raises(OperationFailure) as e:
        db.other.rename("third", bogus=1)
    assert _code(e) == 40415


def test_change_streams_open_on_every_level(coll):
    # manual "Change Streams": a collection, a database or the deployment can be watched (tests/test_change_streams.py)
    for target in (coll, coll.database, coll.database.client):
        with target.watch(max_await_time_ms=1) as stream:
            assert stream.alive and stream.try_next() is None and "_data" in stream.resume_token


def test_raw_batches_refused_clearly(coll):
    # pymongo docs, collection.find_raw_batches / aggregate_raw_batches: not modelled, 115.
    for call in (lambda: coll.find_raw_batches({}), lambda: coll.aggregate_raw_batches([])):
        with pytest.raises(OperationFailure) as e:
            call()
        assert _code(e) == 115


def test_search_indexes_as_community_server(coll):
    # manual "createSearchIndexes": Atlas Search needs Atlas / mongot; a Community server refuses (SearchNotEnabled).
    for call in (coll.list_search_indexes, lambda: coll.create_search_index({"definition": {}}),
                 lambda: coll.drop_search_index("x")):
        with pytest.raises(OperationFailure) as e:
            call()
        assert _code(e) == 31082


def test_bulk_write_let_is_used(coll):
    # the example: bulk_write(let=...) must not be dropped. manual "update" command, let.
    r = coll.bulk_write([UpdateOne({"$expr": {"$eq": ["$a", "$$x"]}}, {"$set": {"z": 1}})], let={"x": 2})
    assert r.modified_count == 1 and coll.find_one({"z": 1})["_id"] == 2


# ---------------------------------------------------------------------------------------------- database / client
def test_list_databases_filter_and_name_only(coll):
    # pymongo docs, mongo_client.MongoClient.list_databases(**kwargs: filter, nameOnly); manual "listDatabases".
    client = coll.database.client
    client.other.x.insert_one({})
    rows = list(client.list_databases())
    # a replica-set member always lists admin, config and local too (manual "listDatabases" example output)
    assert {r["name"] for r in rows} == {"surface", "other", "admin", "config", "local"}
    assert all(set(r) == {"name", "sizeOnDisk", "empty"} for r in rows)
    assert [r["name"] for r in client.list_databases(filter={"name": "other"})] == ["other"]
    assert list(client.list_databases(nameOnly=True, filter={"name": "surface"})) == [{"name": "surface"}]
    with pytest.raises(OperationFailure) as e:
        client.list_databases(bogus=1)
    assert _code(e) == 40415


def test_list_collection_names_filter_and_unknown_fields(coll):
    # pymongo docs, database.Database.list_collection_names(filter, **kwargs sent to listCollections);
    # manual "listCollections".
    db = coll.database
    db.create_collection("other")
    assert db.list_collection_names(filter={"name": "c"}) == ["c"]
    assert sorted(db.list_collection_names()) == ["c", "other"]
    for call in (lambda: db.list_collection_names(bogus=1), lambda: list(db.list_collections(bogus=1))):
        with pytest.raises(OperationFailure) as e:
            call()
        assert _code(e) == 40415


def test_validate(coll):
    # manual "validate" (output: nrecords, nIndexes, keysPerIndex, valid); NamespaceNotFound 26 for a missing one.
    coll.update_one({"_id": 1}, {"$set": {"a": [1, 2, 3]}})  # multikey: three keys for one document
    r = coll.database.validate_collection("c")
    assert r["valid"] is True and r["nrecords"] == 5 and r["nIndexes"] == 2
    assert r["keysPerIndex"] == {"_id_": 5, "a_1": 7}
    assert coll.database.command("validate", "c", full=True)["ns"] == "surface.c"
    with pytest.raises(OperationFailure) as e:
        coll.database.command("validate", "missing")
    assert _code(e) == 26


def test_cursor_command(coll):
    # pymongo docs, database.Database.cursor_command: runs a cursor-returning command and iterates its cursor.
    docs = list(coll.database.cursor_command("find", "c", filter={"a": {"$gte": 3}}))
    assert [d["_id"] for d in docs] == [3, 4]
    with pytest.raises(InvalidOperation):
        coll.database.cursor_command("ping")


def test_command_cursor_api(coll):
    # pymongo docs, command_cursor.CommandCursor: alive, cursor_id, try_next, to_list, batch_size, session.
    cur = coll.aggregate([{"$sort": {"_id": 1}}])
    assert cur.alive and cur.session is None
    assert cur.to_list(2) == [{"_id": 0, "a": 0, "b": "x0"}, {"_id": 1, "a": 1, "b": "x1"}]
    assert cur.try_next()["_id"] == 2
    assert len(list(cur)) == 2
    assert not cur.alive and cur.cursor_id == 0 and cur.try_next() is None
    with pytest.raises(ValueError):
        coll.aggregate([]).batch_size(-1)
    with pytest.raises(TypeError):
        coll.list_indexes().batch_size("1")


def test_not_iterable_and_topology_of_one_member(coll):
    # pymongo docs, MongoClient / Database / Collection ("object is not iterable"); primary, secondaries,
    # arbiters, nodes of a one-member replica set; write_concern from MongoClient(w=...).
    client = coll.database.client
    for obj in (client, coll.database, coll):
        with pytest.raises(TypeError):
            next(obj)
    assert client.primary == client.address or client.primary == ("localhost", 27017)
    assert client.secondaries == set() and client.arbiters == set()
    assert client.nodes == frozenset({client.primary})
    with pytest.raises(OperationFailure) as e:
        client.topology_description
    assert _code(e) == 115
    c0 = EmbeddedClient(w=0)
    assert c0.write_concern.document == {"w": 0}
    assert c0.db.c.insert_one({}).acknowledged is False
    assert EmbeddedClient(readConcernLevel="majority").read_concern.level == "majority"


def test_cursor_max_scan_method(coll):
    # pymongo docs, cursor.Cursor.max_scan: sent as maxScan, which MongoDB 4.2 removed (manual "find" fields).
    with pytest.raises(OperationFailure) as e:
        coll.find().max_scan(3)
    assert _code(e) == 40415


# ---------------------------------------------------------------------------------------------- sessions
def test_causal_consistency_times(coll):
    # pymongo docs, client_session.ClientSession.operation_time / cluster_time / advance_*; manual "Causal
    # Consistency": each operation's reply carries operationTime and $clusterTime, and they only advance.
    from bson import Timestamp
    client = coll.database.client
    with client.start_session(causal_consistency=True) as s:
        assert s.operation_time is None and s.cluster_time is None
        coll.insert_one({"q": 1}, session=s)
        t1 = s.operation_time
        assert isinstance(t1, Timestamp) and s.cluster_time["clusterTime"] == t1
        coll.find_one({"q": 1}, session=s)
        assert s.operation_time > t1
        s.advance_operation_time(Timestamp(1, 1))  # an older time does not move it back
        assert s.operation_time > t1
        later = Timestamp(t1.time + 1000, 1)
        s.advance_operation_time(later)
        assert s.operation_time == later
        s.advance_cluster_time({"clusterTime": later})
        assert s.cluster_time["clusterTime"] == later
        with pytest.raises(TypeError):
            s.advance_operation_time(5)
        with pytest.raises(ValueError):
            s.advance_cluster_time({"clusterTime": 5})
    other = client.start_session()
    other.advance_operation_time(later)  # a second session is causally after the first (manual's pattern)
    assert other.operation_time == later


def test_session_bind_refused_clearly(coll):
    # pymongo docs, ClientSession.bind (4.17): not modelled, 115.
    with coll.database.client.start_session() as s:
        with pytest.raises(OperationFailure) as e:
            s.bind()
        assert _code(e) == 115


def test_index_command_options(coll):
    # pymongo docs, collection.create_indexes / drop_index / drop_indexes (**kwargs: command options such as
    # maxTimeMS); manual "createIndexes" (commitQuorum), "dropIndexes": other fields are unknown (40415).
    from pymongo import IndexModel
    assert coll.create_indexes([IndexModel("d")], maxTimeMS=1000, commitQuorum="majority") == ["d_1"]
    with pytest.raises(OperationFailure) as e:
        coll.create_indexes([IndexModel("e")], bogus=1)
    assert _code(e) == 40415 and "e_1" not in coll.index_information()
    with pytest.raises(OperationFailure) as e:
        coll.drop_index("d_1", bogus=1)
    assert _code(e) == 40415 and "d_1" in coll.index_information()
    coll.drop_index("d_1", maxTimeMS=1000)
    with pytest.raises(OperationFailure) as e:
        coll.drop_indexes(bogus=1)
    assert _code(e) == 40415 and "a_1" in coll.index_information()


# ---------------------------------------------------------------------------------------------- argument errors
def test_pymongo_client_side_argument_errors(coll):
    # pymongo 4 checks these before sending (pymongo/synchronous/collection.py, helpers_shared._index_document,
    # common.validate_boolean, client_session_shared.SessionOptions, bulk "No operations to execute"):
    # the same exception classes here, never the engine's InternalError.
    for call in (lambda: coll.find({}, sort=5), lambda: coll.find({}, hint=5),
                 lambda: coll.update_one({}, {"$set": {"z": 1}}, hint=5),
                 lambda: coll.delete_one({}, hint=5),
                 lambda: coll.find_one_and_update({}, {"$set": {"z": 1}}, sort=5),
                 lambda: coll.find_one_and_update({}, {"$set": {"z": 1}}, return_document="after"),
                 lambda: coll.update_one({}, {"$set": {"z": 1}}, upsert="yes"),
                 lambda: coll.create_index(5), lambda: coll.drop_index(5),
                 lambda: coll.database.command(5), lambda: coll.database.create_collection(5),
                 lambda: coll.database.drop_collection(5)):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(ValueError):
        coll.aggregate([], batchSize="x")
    with pytest.raises(InvalidOperation):
        coll.bulk_write([])
    with pytest.raises(ConfigurationError):
        coll.database.client.start_session(snapshot=True, causal_consistency=True)
    assert coll.database.client.start_session(snapshot=True).options.causal_consistency is False
    assert "z" not in coll.find_one({"_id": 0})  # nothing was written by the refused calls


def test_server_side_type_errors(coll):
    # The server's IDL / index validation (index_key_validate.cpp validateExpireAfterSeconds; manual "distinct",
    # "listDatabases", "renameCollection"): TypeMismatch 14, CannotCreateIndex 67, IllegalOperation 20.
    cases = ((lambda: coll.distinct("a", [1]), 14), (lambda: coll.create_index("d", expireAfterSeconds="1"), 67),
             (lambda: coll.create_index("d", name=5), 14),
             (lambda: coll.database.client.list_databases(filter=5), 14), (lambda: coll.rename("c"), 20))
    for call, code in cases:
        with pytest.raises(OperationFailure) as e:
            call()
        assert _code(e) == code
    assert "d_1" not in coll.index_information()


def test_read_preference_and_read_concern_on_one_member(coll):
    # manual "Read Preference": secondary needs a secondary (none in a one-member set: pymongo's
    # ServerSelectionTimeoutError); secondaryPreferred falls back to the primary; nearest with tag sets the
    # primary lacks selects nothing. manual "Read Concern": local/majority/linearizable/available/snapshot.
    from pymongo import ReadPreference
    from pymongo.errors import ServerSelectionTimeoutError
    from pymongo.read_concern import ReadConcern
    from pymongo.read_preferences import Nearest, SecondaryPreferred
    sec = coll.with_options(read_preference=ReadPreference.SECONDARY)
    for call in (lambda: list(sec.find()), lambda: sec.count_documents({}), lambda: sec.distinct("a"),
                 lambda: list(sec.aggregate([])),
                 lambda: list(coll.with_options(read_preference=Nearest([{"dc": "x"}])).find())):
        with pytest.raises(ServerSelectionTimeoutError):
            call()
    assert len(list(coll.with_options(read_preference=SecondaryPreferred([{"dc": "x"}])).find())) == 5
    assert coll.with_options(read_preference=ReadPreference.NEAREST).count_documents({}) == 5
    for level in ("local", "majority", "linearizable", "available", "snapshot"):
        assert len(list(coll.with_options(read_concern=ReadConcern(level)).find())) == 5
    with pytest.raises(OperationFailure) as e:
        list(coll.with_options(read_concern=ReadConcern("bogus")).find())
    assert _code(e) == 2


def test_client_options_are_checked_as_pymongo_checks_them():
    # pymongo.common.validate: unknown option names (ConfigurationError) and bad values (ValueError) fail at
    # construction on a real MongoClient; document_class other than dict would be ignored, so it is refused
    from bson.son import SON
    from pymongo.errors import ConfigurationError
    with pytest.raises(ConfigurationError, match="Unknown option"):
        EmbeddedClient(bogusOption=1)
    with pytest.raises(ValueError, match="maxPoolSize"):
        EmbeddedClient(maxPoolSize=-1)
    with pytest.raises(ConfigurationError, match="document_class=SON"):
        EmbeddedClient(document_class=SON)
    c = EmbeddedClient(tz_aware=True, serverSelectionTimeoutMS=5, appname="lab", w=1)
    c.t.c.insert_one({"_id": 1})
    assert c.t.c.find_one() == {"_id": 1}
