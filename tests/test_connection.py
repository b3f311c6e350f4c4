"""labkit.connect: embedded by default, fast and password-free failures for unreachable servers."""
import os
import socket

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

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
    import pymongo
    seen: list[dict] = []
    real = pymongo.MongoClient

    def recording(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(pymongo, "MongoClient", recording)
    with pytest.raises(labkit.LabConnectionError) as info:
        labkit.connect(timeout_ms=500)
    msg = str(info.value)
    assert "Sup3r-S3cret" not in msg
    assert f"127.0.0.1:{port}" in msg
    assert "unset MONGODB_URI" in msg and "Start the server" in msg
    # it gives up after timeout_ms, not after pymongo's 30 s default server selection
    assert seen and seen[-1]["serverSelectionTimeoutMS"] == 500 and seen[-1]["connectTimeoutMS"] == 500
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


# --- hostile URI shapes (issue 17 item 5). The URI grammar is the manual's "Connection Strings" page:
# scheme://[username:password@]host[:port][,...][/[defaultauthdb][?options]]; the secrets are the password and
# option values such as tlsCertificateKeyFilePassword, authMechanismProperties and proxyPassword.
@pytest.mark.parametrize(
    "uri, secret, kept",
    [
        ("mongodb://bob:pa/ss@h", "pa/ss", "mongodb://bob:****@h"),
        ("mongodb://alice:S3cr@t!@h:27017/db", "S3cr@t!", "mongodb://alice:****@h:27017/db"),
        ("mongodb://alice:S3cr@t!@h", "t!", "@h"),
        ("mongodb://u:a?b/c@d@h1:1,h2:2/?replicaSet=rs", "a?b/c@d", "@h1:1,h2:2/?replicaSet=rs"),
        ("mongodb+srv://carol:x:y:z@cluster0.example.net/app", "x:y:z", "mongodb+srv://carol:****@cluster0"),
        ("mongodb://h/?tls=true&tlsCertificateKeyFilePassword=KeyPass99", "KeyPass99", "tls=true"),
        ("mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:Tok3nValue",
         "Tok3nValue", "authMechanism=MONGODB-AWS"),
        ("mongodb://h/?proxyHost=p&proxyUsername=pu&proxyPassword=Prox1Pass", "Prox1Pass", "proxyUsername=pu"),
        ("mongodb://h/?password=OptPass1", "OptPass1", "mongodb://h/?password=****"),
        ("mongodb://h/?sslClientCertificateKeyPassword=OldStyle1", "OldStyle1", "mongodb://h/"),
        ("mongodb://u:p%2Fw%40x@h/", "p%2Fw%40x", "mongodb://u:****@h/"),
    ],
)
def test_redact_hostile_shapes(uri, secret, kept):
    out = redact_uri(uri)
    assert secret not in out
    assert kept in out
    assert secret not in scrub(f"error talking to {uri}: auth failed", uri)


def test_redact_in_free_text():
    text = "could not reach mongodb://bob:pa/ss@h1:27017 (tried 'mongodb+srv://x:y@z.example.net')"
    out = redact_uri(text)
    assert "pa/ss" not in out and "x:y@" not in out and "h1:27017" in out


def test_unescaped_password_error_names_no_secret():
    with pytest.raises(labkit.LabConnectionError) as info:
        labkit.connect("mongodb://alice:S3cr@t!@127.0.0.1:9/", timeout_ms=200)
    msg = str(info.value)
    assert "S3cr" not in msg and "t!" not in msg and "alice:****@" in msg


def test_missing_certificate_file_is_a_lab_error():
    uri = ("mongodb://127.0.0.1:9/?tls=true&tlsCertificateKeyFile=/no/such/file.pem"
           "&tlsCertificateKeyFilePassword=KeyPass99")
    with pytest.raises(labkit.LabConnectionError, match="file named in the MongoDB URI") as info:
        labkit.connect(uri, timeout_ms=200)
    assert "KeyPass99" not in str(info.value)
    assert info.value.__cause__ is None


_PW_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%^*()-_+=[]{}|;:'\",.<>/?@~` "


@given(password=st.text(alphabet=_PW_CHARS, min_size=6, max_size=24),
       shape=st.sampled_from([
           "mongodb://user:{pw}@db.example.net:27017/app?retryWrites=true",
           "mongodb+srv://user:{pw}@cluster0.example.net/",
           "mongodb://user:{pw}@h1:1,h2:2/?replicaSet=rs",
           "mongodb://user:{pw}@127.0.0.1",
           "mongodb://h/?tlsCertificateKeyFilePassword={opt}",
           "mongodb://user:{pw}@h/?authMechanismProperties=AWS_SESSION_TOKEN:{opt}&appname=me",
           "mongodb://h/?proxyHost=p&proxyPassword={opt}",
       ]))
@settings(max_examples=int(os.environ.get("LABKIT_HYPOTHESIS_EXAMPLES", "300")), deadline=None)
def test_random_password_never_printed(password, shape):
    # Option values end at '&' / ';' / '#' for every driver, so the option secret is drawn without them.
    opt = "".join(c for c in password if c not in "&;#") or "Zq9"
    uri = shape.format(pw=password, opt=opt)
    frame = shape.format(pw="", opt="")
    out = redact_uri(uri)
    secrets = ({password} if "{pw}" in shape else set()) | ({opt} if "{opt}" in shape else set())
    for secret in secrets - {"Zq9"}:
        assume(secret not in frame)
        assert secret not in out, (uri, out)
        assert secret not in scrub(f"auth failed: {uri} / {secret}", uri)


@pytest.mark.parametrize("uri", ["bob:Secret99@host:27017", "mongodb:/bob:Secret99@host", "mongodb//bob:Secret99@h"])
def test_uri_without_a_proper_scheme_is_redacted(uri):
    assert "Secret99" not in redact_uri(uri)
    with pytest.raises(labkit.LabConnectionError) as info:
        labkit.connect(uri)
    assert "Secret99" not in str(info.value)
