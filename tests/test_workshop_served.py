"""A workshop end to end against the served engine (`python -m labkit serve`, labkit.engine.transport.wire), several
learners in parallel: prepare, check, learners working and checking exercises, progress, cleanup.

Skipped until the wire-protocol server (branch `wire`) is merged. Each learner is its own process with its own
MONGODB_URI / LABKIT_DB_PREFIX, exactly as INSTRUCTOR.md tells learners to start Jupyter.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

wire = pytest.importorskip("labkit.engine.transport.wire")

from pymongo import MongoClient  # noqa: E402

import labkit  # noqa: E402
from labkit.__main__ import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

LEARNER = r"""
import os, sys
import labkit
from labkit import tracking
ids = labkit.exercises.ids()
n = int(sys.argv[1])
db = labkit.fresh_db("02_one_to_many")            # lands in this learner's own database
db.posts.insert_many([{"_id": i, "learner": n} for i in range(5)])
tracking.record(ids[0], labkit.exercises.get(ids[0]).lesson, "incorrect")
if n % 2:                                         # odd learners pass the first exercise
    tracking.record(ids[0], labkit.exercises.get(ids[0]).lesson, "correct")
tracking.record(ids[1], labkit.exercises.get(ids[1]).lesson, "error")
print("ok", db.name)
"""


def test_workshop_end_to_end_over_the_wire(tmp_path, capsys):
    with wire.serve_in_thread() as server:
        uri = server.uri
        assert main(["workshop", "prepare", "--uri", uri, "--learners", "3", "--users", "20"]) == 0
        assert "LABKIT_SHARED=1" in capsys.readouterr().out
        assert main(["workshop", "check", "--uri", uri, "--learners", "3"]) == 0
        capsys.readouterr()
        procs = []
        for n in (1, 2, 3):
            env = dict(os.environ, PYTHONPATH=str(ROOT), MONGODB_URI=uri, LABKIT_DB_PREFIX=f"sl_learner{n:02d}_",
                       LABKIT_SHARED="1", LABKIT_PROGRESS_FILE=str(tmp_path / f"p{n}.json"))
            procs.append(subprocess.Popen([sys.executable, "-c", LEARNER, str(n)], cwd=ROOT, env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for n, p in enumerate(procs, 1):
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0 and f"ok sl_learner{n:02d}_02_one_to_many" in out, err
        client = MongoClient(uri, serverSelectionTimeoutMS=5000)
        assert client["sl_learner02_02_one_to_many"].posts.distinct("learner") == [2]

        assert main(["workshop", "check", "--uri", uri, "--learners", "3"]) == 0
        out = capsys.readouterr().out
        assert out.count("3 database(s)") == 3                   # ready, the lesson, progress

        table = labkit.workshop.room_progress(client, 3)
        first, second = labkit.exercises.ids()[:2]
        assert list(table[first]) == ["passed", "attempted", "passed"]
        assert list(table[second]) == ["attempted"] * 3
        assert main(["workshop", "progress", "--uri", uri, "--learners", "3"]) == 0
        out = capsys.readouterr().out
        rows = {line.split()[1]: line.split()[-2:] for line in out.splitlines() if line.startswith("learner ")}
        assert rows == {"01": ["1", "1"], "02": ["0", "2"], "03": ["1", "1"]}

        assert main(["workshop", "cleanup", "--uri", uri]) == 0
        assert "Dropped 9 database(s)" in capsys.readouterr().out
        assert not [n for n in client.list_database_names() if n.startswith("sl_learner")]
        client.close()
