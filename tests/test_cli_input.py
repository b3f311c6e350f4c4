"""Bad input to every `python -m labkit` command (issue 28): one line naming the argument and the allowed values,
exit status 2, no traceback, nothing written (checked on the embedded engine of this process and on a served
engine)."""
from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.__main__ import main
from labkit.connection import embedded_client

ROOT = Path(__file__).resolve().parents[1]

# (command line, the argument the error must name, a word of the allowed values it must give)
BAD = [
    ("serve --port 99999", "--port", "65,535"),
    ("serve --port -1", "--port", "0 to 65,535"),
    ("serve --port http", "--port", "whole number"),
    ("serve --shards 0", "--shards", "1 to 16"),
    ("serve --shards 17", "--shards", "1 to 16"),
    ("serve --shards three", "--shards", "whole number"),
    ("seed social --users -5", "--users", "2 to 1,000,000"),
    ("seed social --users 1", "--users", "2 to"),
    ("seed social --learners 0", "--learners", "1 to 500"),
    ("seed social --learners 501", "--learners", "1 to 500"),
    ("seed social --db bad/name", "--db", "none of /"),
    ('seed social --db ""', "--db", "1 to 63 bytes"),
    ("seed social --seed -1", "--seed", "0 to"),
    ("seed sensors --sensors 0", "--sensors", "1 to 100,000"),
    ("seed sensors --hours 0", "--hours", "1 to 8,784"),
    ("seed tweets", "dataset", "social"),
    ("seed", "dataset", "social, sensors"),
    ("reset a.b", "name", "none of /"),
    ("reset " + "x" * 64, "name", "64 bytes"),
    ("reset", "name", "required"),
    ("review --db bad/name", "--db", "none of /"),
    ("review", "--db", "required"),
    ("review --db shop --sample 0", "--sample", "1 to 100,000"),
    ("review --db shop --format yaml", "--format", "table"),
    ("review --db shop --query-log /no/such/log.jsonl", "--query-log", "no such file"),
    ("review --db shop --output /no/such/folder/review.md", "--output", "existing folder"),
    ("workshop plan --tier m5", "--tier", "flex"),
    ("workshop plan --lessons 30,99", "--lessons", "lesson numbers"),
    ("workshop plan --learners 0", "--learners", "1 to 500"),
    ("workshop prepare --users 1", "--users", "0 (seed nothing)"),
    ("workshop prepare --base 'a b'", "--base", "letters, digits"),
    ("workshop teleport", "action", "plan"),
    ("workshop", "action", "plan, prepare, check, progress, cleanup"),
    ("progress --lesson 77", "--lesson", "00"),
    ("doctor --uri http://example.net", "--uri", "mongodb://"),
    ("doctor --timeout-ms 0", "--timeout-ms", "1 to 600,000"),
    ("frobnicate", "command", "doctor"),
]


@pytest.mark.parametrize("line, argument, allowed", BAD, ids=[b[0][:40] for b in BAD])
def test_bad_input_is_one_line_exit_2(line, argument, allowed, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    before = sorted(embedded_client().list_database_names())
    with pytest.raises(SystemExit) as info:
        main(shlex.split(line))
    assert info.value.code == 2
    out = capsys.readouterr()
    assert out.out == "", "nothing but the error"
    err = out.err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err and ": error: " in err
    assert argument in err and allowed in err, err
    assert sorted(embedded_client().list_database_names()) == before, "nothing written"
    assert list(tmp_path.iterdir()) == [], "no file written"


def test_served_engine_sees_nothing_of_a_refused_command(tmp_path):
    """The same refusals against a server: not one database appears (checked over the wire)."""
    from pymongo import MongoClient

    from served_helpers import serve_in_thread

    with serve_in_thread() as server, MongoClient(server.uri, serverSelectionTimeoutMS=5000) as client:
        before = client.list_database_names()
        for line in ("seed social --users -5 --learners 3", "workshop prepare --users 1", "seed social --db a.b",
                     "workshop prepare --learners 600", "review --db x --sample 0"):
            out = subprocess.run([sys.executable, "-m", "labkit", *shlex.split(line), "--uri", server.uri],
                                 capture_output=True, text=True, cwd=tmp_path, timeout=120)
            assert out.returncode == 2 and out.stderr.count("\n") == 1 and not out.stdout, (line, out.stderr)
        assert client.list_database_names() == before


def test_the_error_names_the_command_as_typed_through_dev_py(tmp_path):
    env = {"LABKIT_PROG": "python3 dev.py", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "labkit", "serve", "--port", "99999"], capture_output=True,
                         text=True, cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 2
    assert out.stderr.startswith("python3 dev.py serve: error: argument --port: 99,999 is out of range")
