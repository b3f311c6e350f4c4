"""What the engine does not model is refused in one wording, readable from Python, mongosh, Compass or any driver.

Facts:

* src/mongo/base/error_codes.yml: CommandNotFound is 59, CommandNotSupported 115; a server answers a command
  name it does not know with 59 "no such command: '<name>'" (src/mongo/db/service_entry_point_common.cpp).
  A command MongoDB 8.0 has (manual "Database Commands", reference/command/) is never "no such command": when
  the engine lacks it, that is a gap of the engine, refused with 115.
* A Community server without mongot refuses the Atlas Search index commands with SearchNotEnabled (31082).
* The refusal says "not modelled by labkit's embedded engine", what to use instead when the engine has something,
  and how to get the real behaviour in words that fit the client: ``set MONGODB_URI`` only for Python on the
  embedded engine; a client of ``labkit serve`` (pymongo over TCP, mongosh) is told to connect to a server.
"""
from __future__ import annotations

import pytest
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient
from labkit.engine.commands.dispatch import SERVER_COMMANDS, HANDLERS

from both_paths import client, server  # noqa: F401 - fixtures
from served_helpers import mongosh_path

NOT_MODELLED = "not modelled by labkit's embedded engine"


def _is_wire(c) -> bool:
    return isinstance(c, MongoClient)


def _advice_fits(c, msg: str) -> None:
    assert NOT_MODELLED in msg and "MongoDB 8.0" in msg
    if _is_wire(c):
        assert "MONGODB_URI" not in msg and "labkit serve" in msg
    else:
        assert "set MONGODB_URI" in msg


def test_feature_gap_is_115_with_advice_for_the_client(client):  # noqa: F811
    db = client["nm"]
    db.c.insert_one({"a": 1})
    with pytest.raises(OperationFailure) as err:
        list(db.c.find({"$where": "this.a == 1"}))
    assert err.value.code == 115
    _advice_fits(client, str(err.value))
    with pytest.raises(OperationFailure) as err:
        db.c.create_index([("body", "text")])
    assert err.value.code == 115 and "Index type 'text'" in str(err.value) and "instead, $regex" in str(err.value)
    _advice_fits(client, str(err.value))


def test_a_mongodb_command_the_engine_lacks_is_not_no_such_command(client):  # noqa: F811
    db = client["nm"]
    with pytest.raises(OperationFailure) as err:
        db.command({"mapReduce": "c", "map": "function() {}", "reduce": "function() {}", "out": {"inline": 1}})
    assert err.value.code == 115 and err.value.details["codeName"] == "CommandNotSupported"
    assert "The 'mapReduce' command is " + NOT_MODELLED in str(err.value)
    _advice_fits(client, str(err.value))
    with pytest.raises(OperationFailure) as err:
        db.command({"surelyNotACommand": 1})
    assert err.value.code == 59 and "no such command: 'surelyNotACommand'" in str(err.value)
    assert NOT_MODELLED not in str(err.value)


def test_search_index_commands_answer_as_a_community_server(client):  # noqa: F811
    db = client["nm"]
    db.c.insert_one({"a": 1})
    with pytest.raises(OperationFailure) as err:
        db.command({"createSearchIndexes": "c", "indexes": [{"definition": {"mappings": {"dynamic": True}}}]})
    assert err.value.code == 31082


def test_every_answered_command_is_a_server_command():
    # the engine's own command (labkitTtlPass) and legacy lowercase aliases aside, what the engine answers is a
    # MongoDB 8.0 command, so the list behind "no such command" vs "not modelled" covers it
    extra = {n for n in HANDLERS if n not in SERVER_COMMANDS and n.lower() == n}
    assert {n for n in HANDLERS if n not in SERVER_COMMANDS} - extra == {"labkitTtlPass", "deleteIndexes"}


def test_in_process_python_gets_the_python_advice():
    from bson.son import SON
    from pymongo.errors import ConfigurationError
    with pytest.raises(ConfigurationError) as err:
        EmbeddedClient(document_class=SON)
    assert NOT_MODELLED in str(err.value) and "documents come back as dict" in str(err.value)
    assert "set MONGODB_URI" in str(err.value)


def test_mongosh_reads_the_served_wording(server, tmp_path):  # noqa: F811
    exe = mongosh_path()
    if exe is None:
        pytest.skip("mongosh is not installed (tools/install_mongosh.sh or SCHEMA_LAB_MONGOSH)")
    from test_mongosh import run_mongosh
    uri = server.uri.rstrip("/") + "/nm_shell"
    results = run_mongosh(exe, uri, ['db.c.insertOne({a: 1}) && db.c.find({$where: "this.a == 1"}).toArray()',
                                     'db.runCommand({mapReduce: "c", map: function() {}, reduce: function() {}, '
                                     'out: {inline: 1}})',
                                     'db.runCommand({surelyNotACommand: 1})'], tmp_path)
    where, mapreduce, unknown = results
    assert not where["ok"] and where["value"]["code"] == 115
    assert NOT_MODELLED in where["value"]["message"] and "MONGODB_URI" not in where["value"]["message"]
    assert mapreduce["value"]["code"] == 115 and "MONGODB_URI" not in mapreduce["value"]["message"]
    assert unknown["value"]["code"] == 59
