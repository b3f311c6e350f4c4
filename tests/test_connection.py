"""labkit.connect: embedded by default, fast and password-free failures for unreachable servers."""
import socket
import time

import pytest

import labkit
from labkit.connection import redact_uri, scrub
from labkit.engine import EmbeddedClient


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens here now
    return port


def test_default_is_embedded(monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    client = labkit.connect()
    assert isinstance(client, EmbeddedClient)
    assert client is labkit.connect(), "one embedded engine per process, like one local server"
    assert "embedded" in labkit.describe(client)


def test_explicit_embedded_wins_over_env(monkeypatch):
    monkeypatch.setenv("MONGODB_URI", "mongodb://127.0.0.1:1")
    assert isinstance(labkit.connect("embedded"), EmbeddedClient)


def test_unreachable_server_fails_fast_without_password(monkeypatch):
    port = _closed_port()
    uri = f"mongodb://alice:Sup3r-S3cret@127.0.0.1:{port}/?authSource=admin"
    monkeypatch.setenv("MONGODB_URI", uri)
    start = time.monotonic()
    with pytest.raises(labkit.LabConnectionError) as info:
        labkit.connect(timeout_ms=500)
    elapsed = time.monotonic() - start
    msg = str(info.value)
    assert "Sup3r-S3cret" not in msg
    assert f"127.0.0.1:{port}" in msg
    assert "unset MONGODB_URI" in msg and "Start the server" in msg
    assert elapsed < 10, "must not wait for pymongo's 30 s default"
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_not_a_mongodb_uri():
    with pytest.raises(labkit.LabConnectionError, match="mongodb://"):
        labkit.connect("http://bob:pw123@example.org")
    try:
        labkit.connect("http://bob:pw123@example.org")
    except labkit.LabConnectionError as exc:
        assert "pw123" not in str(exc)


@pytest.mark.parametrize("bad", [0, -5, True, "3000", 10**9])
def test_bad_timeout(bad):
    with pytest.raises(ValueError, match="timeout_ms"):
        labkit.connect(timeout_ms=bad)


@pytest.mark.parametrize(
    "uri, expected",
    [
        ("mongodb://alice:pw@h:27017/db", "mongodb://alice:****@h:27017/db"),
        ("mongodb+srv://bob:p%40ss@cluster0.example.net/", "mongodb+srv://bob:****@cluster0.example.net/"),
        ("mongodb://h1:1,h2:2/?replicaSet=rs", "mongodb://h1:1,h2:2/?replicaSet=rs"),
        ("mongodb://onlyuser@h/", "mongodb://onlyuser@h/"),
    ],
)
def test_redact(uri, expected):
    assert redact_uri(uri) == expected


def test_scrub_removes_decoded_password_too():
    uri = "mongodb://bob:p%40ss@h/"
    assert "p@ss" not in scrub("auth failed for bob with p@ss", uri)
