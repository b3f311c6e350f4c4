"""labkit's real-server path, driven with real pymongo over TCP against the served engine (issue 17, item 2).

``labkit.engine.transport.wire.serve_in_thread`` serves an embedded engine on loopback; labkit gets a
``mongodb://127.0.0.1:PORT`` URI and treats it as any MongoDB server: ``connect`` pings it, ``fresh_db``
writes ``_labkit`` marker collections under the learner prefix, the CLI seeds and prepares workshops in
another process and the data stay on the server. What the README ("Using a real MongoDB server", "Databases
are disposable", "Shared workshop clusters", "Command line") promises is checked here against a server.
Server behaviour relied on: the manual's listDatabases / dropDatabase pages (a dropped database is no longer
listed) and jstests/core/administrative/ (ping answers {ok: 1}).
"""
from __future__ import annotations

import getpass
import os
import re
import socket
import subprocess
import sys

import pymongo
import pytest
from pymongo import MongoClient

import labkit
from labkit import workshop
from labkit.__main__ import main
from labkit.connection import is_embedded
from labkit.databases import MARKER_COLLECTION, MARKER_ID, labkit_databases, learner_prefix

from served_helpers import ROOT, serve_in_thread


@pytest.fixture(scope="module")
def server():
    with serve_in_thread() as srv:
        yield srv


@pytest.fixture()
def raw(server):
    """A plain pymongo client on the served engine, for looking behind labkit's back."""
    with MongoClient(server.uri, serverSelectionTimeoutMS=5000) as client:
        yield client


@pytest.fixture()
def env(server, monkeypatch):
    """MONGODB_URI points at the served engine; no LABKIT_DB_PREFIX (the default prefix applies)."""
    monkeypatch.setenv("MONGODB_URI", server.uri)
    monkeypatch.delenv("LABKIT_DB_PREFIX", raising=False)
    return server


def _default_prefix() -> str:
    return "sl_" + re.sub(r"[^A-Za-z0-9_-]", "_", getpass.getuser()) + "_"


def _host_port(server) -> str:
    return f"127.0.0.1:{server.port}"


def _cli(*args: str, uri: str | None = None, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m labkit ARGS`` in a separate process (its data must outlive it: they live on the server)."""
    env = dict(os.environ)
    env.pop("MONGODB_URI", None)
    env.pop("LABKIT_DB_PREFIX", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    env.update(extra_env or {})
    argv = [sys.executable, "-m", "labkit", *args] + (["--uri", uri] if uri else [])
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)


# ---------------------------------------------------------------- connect, ping, describe, redaction


def test_server_uri_is_loopback(server):
    assert server.uri.startswith("mongodb://127.0.0.1:") and str(server.port) in server.uri
    assert isinstance(server.port, int) and server.port > 0


def test_connect_uses_the_server_and_pings_it(env):
    client = labkit.connect()
    try:
        assert isinstance(client, pymongo.MongoClient) and not is_embedded(client)
        assert client.admin.command("ping")["ok"] == 1
        text = labkit.describe(client)
        assert _host_port(env) in text and "embedded engine (in-process" not in text
        version = client.server_info()["version"]
        assert version.startswith("8.0") and version in text
        # The served engine says what it is (buildInfo's labkit field): not mistaken for a MongoDB server.
        assert "served over the wire" in text and not text.startswith("MongoDB server")
    finally:
        client.close()


def test_one_client_per_uri_so_sessions_work_across_lesson_databases(env):
    """Lesson 05 starts a session on one fresh_db's client and writes to another fresh_db database in it;
    pymongo only accepts a session on the MongoClient that started it."""
    a, b = labkit.fresh_db("sp_client_a"), labkit.fresh_db("sp_client_b")
    assert a.client is b.client is labkit.connect()
    with a.client.start_session() as session:
        session.with_transaction(lambda s: b.t.insert_one({"_id": 1}, session=s))
    assert b.t.find_one() == {"_id": 1}
    a.client.close()  # closed by its user: the next connect() makes a working one
    fresh = labkit.connect()
    assert fresh is not a.client and fresh.admin.command("ping")["ok"] == 1


def test_connect_explicit_uri_and_embedded_override(server, monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    client = labkit.connect(server.uri)
    try:
        assert not is_embedded(client)
    finally:
        client.close()
    monkeypatch.setenv("MONGODB_URI", server.uri)
    assert is_embedded(labkit.connect("embedded"))


def test_closed_port_names_host_and_redacts_password(monkeypatch):
    """A server that stopped: its port is closed, connect fails fast and never shows the password."""
    with serve_in_thread() as srv:
        port = srv.port
        assert MongoClient(srv.uri, serverSelectionTimeoutMS=3000).admin.command("ping")["ok"] == 1
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0, "stop() closes the listening socket"
    uri = f"mongodb://alice:Sup3r-S3cret@127.0.0.1:{port}/?authSource=admin"
    monkeypatch.setenv("MONGODB_URI", uri)
    with pytest.raises(labkit.LabConnectionError) as info:
        labkit.connect(timeout_ms=500)
    msg = str(info.value)
    assert f"127.0.0.1:{port}" in msg and "Sup3r-S3cret" not in msg
    assert "alice:****@" in msg and "unset MONGODB_URI" in msg


def test_wrong_credentials_are_refused_without_showing_them(server):
    """The served engine has no users, like a mongod whose user does not exist: authentication fails
    (AuthenticationFailed, code 18; manual "Authentication" / jstests/auth/) and labkit says so without
    printing the password."""
    uri = server.uri.replace("mongodb://", "mongodb://bob:Hunter2-Pw@", 1)
    with pytest.raises(labkit.LabConnectionError) as info:
        labkit.connect(uri, timeout_ms=2000)
    msg = str(info.value)
    assert "Hunter2-Pw" not in msg and "bob:****@" in msg and _host_port(server) in msg
    assert "refused" in msg and "user name and password" in msg


# ---------------------------------------------------------------- fresh_db, markers, prefixes


def test_fresh_db_marks_and_prefixes_on_the_server(env, raw):
    prefix = _default_prefix()
    assert learner_prefix(labkit.connect()) == prefix
    db = labkit.fresh_db("sp_lesson")
    assert db.name == prefix + "sp_lesson"
    marker = raw[db.name][MARKER_COLLECTION].find_one({"_id": MARKER_ID})
    assert marker["createdBy"] == "labkit" and marker["name"] == "sp_lesson"
    assert marker["createdAt"].year >= 2024
    db.posts.insert_many([{"_id": i} for i in range(5)])
    assert raw[db.name].posts.count_documents({}) == 5, "written through TCP, visible to any client"
    assert db.name in labkit_databases()
    again = labkit.fresh_db("sp_lesson")
    assert raw[again.name].list_collection_names() == [MARKER_COLLECTION], "previous copy dropped, re-marked"


def test_explicit_learner_prefix(env, raw, monkeypatch):
    monkeypatch.setenv("LABKIT_DB_PREFIX", "table7_")
    db = labkit.fresh_db("sp_prefixed")
    assert db.name == "table7_sp_prefixed" and "table7_sp_prefixed" in raw.list_database_names()
    monkeypatch.setenv("LABKIT_DB_PREFIX", "bad.prefix_")
    with pytest.raises(ValueError, match="LABKIT_DB_PREFIX"):
        labkit.fresh_db("sp_prefixed")


def test_database_labkit_did_not_create_is_never_touched(env, raw):
    name = _default_prefix() + "sp_mine"
    raw[name].notes.insert_many([{"_id": 1, "text": "precious"}, {"_id": 2}])
    with pytest.raises(labkit.UnsafeDatabaseError) as info:
        labkit.fresh_db("sp_mine")
    assert name in str(info.value) and "notes" in str(info.value)
    with pytest.raises(labkit.UnsafeDatabaseError):
        labkit.reset_db("sp_mine")
    assert raw[name].notes.count_documents({}) == 2 and MARKER_COLLECTION not in raw[name].list_collection_names()
    assert name not in labkit_databases()


def test_marker_is_what_counts_not_the_name(env, raw):
    """A database with a foreign document in ``_labkit`` is not labkit's."""
    name = _default_prefix() + "sp_fake_marker"
    raw[name][MARKER_COLLECTION].insert_one({"_id": MARKER_ID, "createdBy": "someone else"})
    with pytest.raises(labkit.UnsafeDatabaseError):
        labkit.fresh_db("sp_fake_marker")
    assert raw[name][MARKER_COLLECTION].count_documents({}) == 1


# ---------------------------------------------------------------- command line against the server


def test_reset_cli(env, raw, capsys):
    db = labkit.fresh_db("sp_reset")
    db.t.insert_one({"x": 1})
    assert main(["reset", "sp_reset", "--uri", env.uri]) == 0
    assert f"Dropped labkit database '{db.name}'" in capsys.readouterr().out
    assert db.name not in raw.list_database_names()
    assert main(["reset", "sp_reset", "--uri", env.uri]) == 0
    assert "Nothing to do" in capsys.readouterr().out
    mine = _default_prefix() + "sp_reset_mine"
    raw[mine].keep.insert_one({"x": 1})
    assert main(["reset", "sp_reset_mine", "--uri", env.uri]) == 1
    assert "not created by labkit" in capsys.readouterr().err
    assert raw[mine].keep.count_documents({}) == 1


def test_seed_learners_in_another_process(server, raw):
    out = _cli("seed", "social", "--db", "spseed", "--learners", "3", "--users", "40", uri=server.uri,
               extra_env={"LABKIT_DB_PREFIX": "sp7_"})
    assert out.returncode == 0, out.stderr
    names = [f"sp7_spseed_{i:02d}" for i in (1, 2, 3)]
    for name in names:
        assert f"  {name}: " in out.stdout
    assert _host_port(server) in out.stdout
    # The seeding process has exited; its data are on the server, marked, one database per learner.
    listed = raw.list_database_names()
    firsts = []
    for name in names:
        assert name in listed
        db = raw[name]
        assert db[MARKER_COLLECTION].find_one({"_id": MARKER_ID})["createdBy"] == "labkit"
        assert db.users.count_documents({}) == 40 and db.follows.count_documents({}) > 0
        firsts.append(db.users.find_one(sort=[("_id", 1)]))
    assert firsts[0] == firsts[1] == firsts[2], "same seed, same documents"


def test_seed_refuses_database_it_did_not_create(server, raw):
    raw["sp8_spseed"].users.insert_one({"_id": "mine"})
    out = _cli("seed", "social", "--db", "spseed", "--users", "10", uri=server.uri,
               extra_env={"LABKIT_DB_PREFIX": "sp8_"})
    assert out.returncode == 1 and "sp8_spseed" in out.stderr and "not created by labkit" in out.stderr
    assert list(raw["sp8_spseed"].users.find()) == [{"_id": "mine"}]


def test_workshop_prepare_check_cleanup(server, raw):
    base = "spws"
    raw["spws02_mine"].notes.insert_one({"keep": True})  # a learner's own database, not labkit's
    out = _cli("workshop", "prepare", "--learners", "3", "--base", base, "--users", "20", uri=server.uri)
    assert out.returncode == 0, out.stderr
    assert "LABKIT_DB_PREFIX=spws01_" in out.stdout and _host_port(server) in out.stdout
    for n in (1, 2, 3):
        ready = raw[f"spws{n:02d}_ready"]
        assert ready[MARKER_COLLECTION].find_one({"_id": MARKER_ID})["createdBy"] == "labkit"
        assert ready.users.count_documents({}) == 20
    out = _cli("workshop", "check", "--learners", "3", "--base", base, uri=server.uri)
    assert out.returncode == 0 and "3 of 3 learners ready" in out.stdout, out.stdout + out.stderr
    # Learner 2 runs a lesson with their prefix against the cluster.
    client = labkit.connect(server.uri)
    os.environ["LABKIT_DB_PREFIX"] = "spws02_"
    try:
        lesson = labkit.fresh_db("01_embed_one_to_few", client=client)
    finally:
        del os.environ["LABKIT_DB_PREFIX"]
    assert lesson.name == "spws02_01_embed_one_to_few"
    lesson.users.insert_one({"_id": "user:112"})
    out = _cli("workshop", "check", "--learners", "3", "--base", base, uri=server.uri)
    assert re.search(r"learner +2: spws02_ +ready, 3 database\(s\)", out.stdout), out.stdout
    raw.drop_database("spws03_ready")
    out = _cli("workshop", "check", "--learners", "3", "--base", base, uri=server.uri)
    assert out.returncode == 1 and "NOT READY" in out.stdout and "2 of 3 learners ready" in out.stdout
    out = _cli("workshop", "cleanup", "--base", base, uri=server.uri)
    assert out.returncode == 0, out.stderr
    assert "kept spws02_mine (not created by labkit)" in out.stdout and "Dropped 3 database(s)" in out.stdout
    left = [n for n in raw.list_database_names() if n.startswith(base)]
    assert left == ["spws02_mine"] and raw["spws02_mine"].notes.count_documents({}) == 1
    client.close()


def test_workshop_prepare_refuses_before_writing(server, raw):
    raw["spwr02_ready"].t.insert_one({"mine": 1})
    client = labkit.connect(server.uri)
    with pytest.raises(labkit.UnsafeDatabaseError, match="spwr02_ready"):
        workshop.prepare(client, 3, base="spwr")
    client.close()
    assert "spwr01_ready" not in raw.list_database_names()
    assert raw["spwr02_ready"].t.count_documents({}) == 1


def test_doctor_with_uri(server, capsys, monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    code = main(["doctor", "--uri", server.uri])
    out = capsys.readouterr().out
    assert "answers ping" in out and _host_port(server) in out and "embedded engine (in-process" not in out
    widgets_ok = "widgets     yes" in out
    assert code == (0 if widgets_ok else 1)


def test_doctor_env_uri_redacts_and_reports_unreachable(monkeypatch, capsys):
    with serve_in_thread() as srv:
        port = srv.port
    monkeypatch.setenv("MONGODB_URI", f"mongodb://alice:TopSecret@127.0.0.1:{port}/")
    assert main(["doctor", "--timeout-ms", "300"]) == 1
    out = capsys.readouterr().out
    assert "TopSecret" not in out and "alice:****@" in out and "NOT reachable" in out


def test_doctor_cli_process(server):
    out = _cli("doctor", uri=server.uri)
    assert "answers ping" in out.stdout and _host_port(server) in out.stdout, out.stdout + out.stderr


def test_describe_tells_a_real_server_from_the_served_engine():
    """Only a buildInfo with labkit's ``engine: embedded-served`` marks the served engine; a MongoDB server's
    buildInfo (manual: buildInfo command output) has no ``labkit`` field."""

    class _Client:
        nodes = frozenset({("db.example.net", 27017)})

        def __init__(self, info):
            self._info = info

        def server_info(self):
            return self._info

    assert labkit.describe(_Client({"version": "8.0.4", "ok": 1.0})) == "MongoDB server 8.0.4 at db.example.net:27017"
    served = labkit.describe(_Client({"version": "8.0.0", "labkit": {"engine": "embedded-served"}}))
    assert served.startswith("labkit's embedded engine served over the wire")
    assert labkit.describe(_Client({"version": "8.0.4", "labkit": "x"})).startswith("MongoDB server")
