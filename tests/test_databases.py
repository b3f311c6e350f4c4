"""fresh_db / reset_db: labkit only ever drops databases it created; user data survives."""
import pytest

import labkit
from labkit.databases import learner_prefix
from labkit.engine import EmbeddedClient


@pytest.fixture
def client():
    return EmbeddedClient()


def test_fresh_db_is_empty_and_recreated(client):
    db = labkit.fresh_db("lesson", client=client)
    db.users.insert_one({"_id": "user:112", "name": "Sam"})
    db2 = labkit.fresh_db("lesson", client=client)
    assert db2.name == "lesson"
    assert db2.list_collection_names() == []


def test_user_database_is_never_dropped(client):
    client["mine"].important.insert_many([{"_id": i} for i in range(3)])
    with pytest.raises(labkit.UnsafeDatabaseError, match="'mine'"):
        labkit.fresh_db("mine", client=client)
    with pytest.raises(labkit.UnsafeDatabaseError, match="not created by labkit"):
        labkit.reset_db("mine", client=client)
    assert client["mine"].important.count_documents({}) == 3


def test_reset_db(client):
    db = labkit.fresh_db("tmp", client=client)
    db.t.insert_one({"x": 1})
    assert labkit.reset_db("tmp", client=client) is True
    assert "tmp" not in client.list_database_names()
    assert labkit.reset_db("tmp", client=client) is False


@pytest.mark.parametrize("bad", ["", "a.b", "a/b", "a b", "x$", None, 3, "n" * 70])
def test_bad_names(client, bad):
    with pytest.raises(ValueError, match="name="):
        labkit.fresh_db(bad, client=client)


@pytest.mark.parametrize("system", ["admin", "local", "config"])
def test_system_databases_refused(client, system):
    with pytest.raises(labkit.UnsafeDatabaseError, match="system database"):
        labkit.fresh_db(system, client=client)


def test_prefix_on_embedded_is_empty_by_default(client, monkeypatch):
    monkeypatch.delenv("LABKIT_DB_PREFIX", raising=False)
    assert learner_prefix(client) == ""
    assert labkit.db_name("x", client) == "x"


def test_learner_prefix_for_real_servers(monkeypatch):
    monkeypatch.delenv("LABKIT_DB_PREFIX", raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: "ada.lovelace")
    assert learner_prefix(None) == "sl_ada_lovelace_"
    monkeypatch.setenv("LABKIT_DB_PREFIX", "team3_")
    assert learner_prefix(None) == "team3_"
    monkeypatch.setenv("LABKIT_DB_PREFIX", "bad.")
    with pytest.raises(ValueError, match="LABKIT_DB_PREFIX"):
        learner_prefix(None)


def test_prefix_applies_on_embedded_when_set(client, monkeypatch):
    monkeypatch.setenv("LABKIT_DB_PREFIX", "l07_")
    db = labkit.fresh_db("feed", client=client)
    assert db.name == "l07_feed"


class _FakeServerClient:
    """A real-server stand-in (not the embedded engine): the mark is a marker collection."""

    def __init__(self):
        import mongomock
        self._m = mongomock.MongoClient()

    def __getitem__(self, name):
        return self._m[name]

    def list_database_names(self):
        return self._m.list_database_names()

    def drop_database(self, name):
        self._m.drop_database(name)


def test_marker_collection_on_servers(monkeypatch):
    monkeypatch.setenv("LABKIT_DB_PREFIX", "p_")
    fake = _FakeServerClient()
    db = labkit.fresh_db("one", client=fake)
    assert db.name == "p_one"
    assert db["_labkit"].find_one({"_id": "labkit"})["createdBy"] == "labkit"
    db.data.insert_one({"a": 1})
    db = labkit.fresh_db("one", client=fake)
    assert db.list_collection_names() == ["_labkit"]
    fake["p_two"].keep.insert_one({"a": 1})
    with pytest.raises(labkit.UnsafeDatabaseError):
        labkit.fresh_db("two", client=fake)
    assert fake["p_two"].keep.count_documents({}) == 1


def test_a_copy_recreated_by_another_process_is_not_dropped(monkeypatch):
    """An exercise's sandbox (labkit/exercises/observe.py) drops its own copy only: when a second kernel of the
    same learner re-created the database meanwhile, that copy is theirs and stays."""
    from labkit.databases import drop_marked, marker_token

    monkeypatch.setenv("LABKIT_DB_PREFIX", "p_")
    fake = _FakeServerClient()
    mine = labkit.fresh_db("check_x", client=fake)
    token = marker_token(fake, mine.name)
    assert token
    theirs = labkit.fresh_db("check_x", client=fake)  # the other kernel, same name
    theirs.data.insert_one({"a": 1})
    assert marker_token(fake, mine.name) != token
    assert drop_marked(mine.name, client=fake, token=token) is False
    assert fake["p_check_x"].data.count_documents({}) == 1
    assert drop_marked(mine.name, client=fake, token=marker_token(fake, mine.name)) is True
    assert "p_check_x" not in fake.list_database_names()


# --- hostile input (issue 17 item 5) ---------------------------------------------------------------------

def test_mark_dies_with_the_database(client):
    # On a server the mark is the _labkit collection, which dropDatabase removes; the embedded mark must too.
    labkit.fresh_db("notes", client=client).t.insert_one({"x": 1})
    client.drop_database("notes")
    client["notes"].mine.insert_many([{"_id": i} for i in range(4)])
    with pytest.raises(labkit.UnsafeDatabaseError, match="'notes'.*drop it yourself"):
        labkit.fresh_db("notes", client=client)
    assert client["notes"].mine.count_documents({}) == 4
    with pytest.raises(labkit.UnsafeDatabaseError):
        labkit.reset_db("notes", client=client)


def test_mark_dies_with_the_database_even_when_empty(client):
    db = labkit.fresh_db("notes", client=client)
    client.drop_database(db)  # a Database object, and the database never held a collection
    client["notes"].mine.insert_one({"_id": 1})
    with pytest.raises(labkit.UnsafeDatabaseError):
        labkit.fresh_db("notes", client=client)


def test_mark_survives_fresh_db_cycles(client):
    for _ in range(3):
        labkit.fresh_db("cycle", client=client).t.insert_one({"x": 1})
    from labkit.databases import labkit_databases
    assert labkit_databases(client) == ["cycle"]


@pytest.mark.parametrize("bad", ["a\\b", 'a"b', "a\0b", "$x", "a*b", "a:b", "a?b"])
def test_more_bad_names(client, bad):
    # Manual "Naming Restrictions": /\\. "$ and (Windows) *<>:|? and NUL are refused; labkit refuses all.
    with pytest.raises(ValueError, match="name="):
        labkit.fresh_db(bad, client=client)


def test_name_differing_only_in_case_refused(client):
    # Manual "Naming Restrictions": case cannot be the only difference between database names (13297).
    client["Notes"].t.insert_one({"_id": 1})
    with pytest.raises(ValueError, match="name='notes'.*'Notes'.*13297"):
        labkit.fresh_db("notes", client=client)
    assert client["Notes"].t.count_documents({}) == 1


@pytest.mark.parametrize("system", ["Admin", "LOCAL", "Config"])
def test_system_database_in_other_case_refused(client, system):
    with pytest.raises(labkit.UnsafeDatabaseError, match="system database"):
        labkit.fresh_db(system, client=client)


@pytest.mark.parametrize("prefix", ["bad.", "a b_", "x/", "$p_", "p" * 63])
def test_bad_prefix_refused_on_embedded(client, monkeypatch, prefix):
    monkeypatch.setenv("LABKIT_DB_PREFIX", prefix)
    with pytest.raises(ValueError, match="LABKIT_DB_PREFIX"):
        labkit.fresh_db("x", client=client)


# The engine refuses what pymongo and the server refuse (pymongo/database_shared.py _check_name; the server's
# DatabaseName checks: "db name must be at most 63 characters" InvalidNamespace 73; DatabaseDifferCase 13297,
# jstests/core/dbcase.js).
@pytest.mark.parametrize("bad", ["", "a.b", "$x", "a/b", "a\\b", "a b", 'a"b', "a\0b"])
def test_engine_refuses_invalid_database_names(client, bad):
    from pymongo.errors import InvalidName
    with pytest.raises(InvalidName):
        client[bad].t.insert_one({"a": 1})
    assert bad not in client.list_database_names()


def test_engine_refuses_long_and_case_names(client):
    from pymongo.errors import OperationFailure
    with pytest.raises(OperationFailure, match="at most 63 characters, found: 64") as info:
        client["x" * 64].t.insert_one({})
    assert info.value.code == 73
    client["x" * 63].t.insert_one({})
    client["dbcase"].t.insert_one({})
    with pytest.raises(OperationFailure, match=r"already have: \[dbcase\] trying to create \[dbCase\]") as info:
        client["dbCase"].t.insert_one({})
    assert info.value.code == 13297
    assert "dbCase" not in client.list_database_names()
    client.drop_database("dbcase")
    client["dbCase"].t.insert_one({})  # allowed once the other is gone


@pytest.mark.parametrize("bad", ["", "a.b", "a b", "a/b", "a\0b"])
def test_engine_server_side_name_check_is_invalid_namespace(bad):
    # For commands that arrive without a driver's check (the wire server): the server's 73.
    from pymongo.errors import OperationFailure
    from labkit.engine import check_database_name
    with pytest.raises(OperationFailure, match="Invalid database name") as info:
        check_database_name(bad, [], as_server=True)
    assert info.value.code == 73
