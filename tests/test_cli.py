"""python -m labkit: doctor, seed, reset and their --help."""
import subprocess
import sys

import pytest

from labkit.__main__ import main


@pytest.mark.parametrize("cmd", [[], ["doctor"], ["seed"], ["reset"], ["workshop"]])
def test_help(cmd, capsys):
    with pytest.raises(SystemExit) as info:
        main([*cmd, "--help"])
    assert info.value.code == 0
    assert "usage" in capsys.readouterr().out


def test_doctor_embedded(monkeypatch, capsys):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert "embedded engine" in out and "pymongo" in out
    assert code in (0, 1)


def test_doctor_unreachable_server_redacts(monkeypatch, capsys):
    monkeypatch.setenv("MONGODB_URI", "mongodb://alice:TopSecret@127.0.0.1:9/")
    assert main(["doctor", "--timeout-ms", "300"]) == 1
    out = capsys.readouterr().out
    assert "TopSecret" not in out and "alice:****@" in out and "NOT reachable" in out


def test_reset_refuses_user_database(monkeypatch, capsys):
    from labkit.connection import embedded_client
    monkeypatch.delenv("MONGODB_URI", raising=False)
    embedded_client()["precious"].c.insert_one({"a": 1})
    assert main(["reset", "precious"]) == 1
    assert "not created by labkit" in capsys.readouterr().err
    assert embedded_client()["precious"].c.count_documents({}) == 1


def test_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "labkit", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "doctor" in out.stdout


@pytest.mark.parametrize("uri, secrets", [
    ("mongodb://bob:pa/ss@127.0.0.1:9/?tls=true&tlsCertificateKeyFile=/no/such.pem"
     "&tlsCertificateKeyFilePassword=KeyPass99", ["pa/ss", "KeyPass99"]),
    ("mongodb://alice:S3cr@t!@127.0.0.1:9/", ["S3cr", "t!"]),
    ("mongodb://a:Pw12345@[::1", ["Pw12345"]),
    ("mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:Tok3nValue", ["Tok3nValue"]),
])
def test_doctor_bad_uri_one_line_no_secret(monkeypatch, capsys, uri, secrets):
    # issue 17 item 5: doctor never prints a secret nor a traceback, and exits non-zero.
    monkeypatch.setenv("MONGODB_URI", uri)
    assert main(["doctor", "--timeout-ms", "300"]) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    for s in secrets:
        assert s not in out
    assert "Traceback" not in out
    assert sum("engine" in line for line in out.splitlines()) == 1


def test_server_errors_are_one_line_without_secret(monkeypatch, capsys):
    from pymongo.errors import OperationFailure
    from labkit import seed

    def refuse(*a, **k):
        raise OperationFailure("not authorized on mongodb://eve:Hunter22@h/ to execute command", 13)

    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.setattr(seed, "social", refuse)
    assert main(["seed", "social", "--users", "10", "--db", "refused"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: OperationFailure:") and "Hunter22" not in err and "Traceback" not in err
