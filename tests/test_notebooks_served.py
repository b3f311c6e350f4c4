"""Every notebook runs top to bottom with MONGODB_URI pointing at the served engine (issue 17, item 3).

This is labkit's real-server path end to end: each notebook runs in its own kernel, talks to
``labkit.engine.transport.wire.serve_in_thread`` over TCP with pymongo, gets ``_labkit`` marker collections and the
learner prefix ``sl_served_``. Outputs are not compared (nbval does that on the embedded engine); any cell
error fails the test, naming the notebook and the cell. Same runner as ``python tools/run_notebooks_served.py``.
"""
from __future__ import annotations

import importlib.util
import os
import queue
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from pymongo import MongoClient

from served_helpers import ROOT, serve_in_thread

_spec = importlib.util.spec_from_file_location("run_notebooks_served", ROOT / "tools" / "run_notebooks_served.py")
runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runner)

NOTEBOOKS = runner.notebooks()
PREFIX = runner.DEFAULT_PREFIX


# Notebooks run this many at a time, each in its own kernel and against its own served engine (the served
# engine answers one command at a time: sharing one, a notebook's connect() ping would wait behind another
# notebook's long $merge and could time out).
JOBS = max(1, int(os.environ.get("SCHEMA_LAB_SERVED_JOBS", "0") or "0") or min(2, os.cpu_count() or 1))
# Lessons that fail on any MongoDB server (not only on the served engine) and need a change in the lesson
# itself; each entry says what. strict: once the lesson is fixed the test reports XPASS as a failure.
KNOWN_LESSON_BUGS: dict[str, str] = {}  # none today (34's '_labkit' marker bug was fixed in the lesson)


@pytest.fixture(scope="module")
def server():
    with serve_in_thread() as srv:
        yield srv


@pytest.fixture(scope="module")
def runs(request) -> dict:
    """Start the selected notebooks, JOBS at a time, in test order; each test waits for its own result:
    the URI of the served engine the notebook ran against."""
    selected = [item.callspec.params["path"] for item in request.session.items
                if getattr(item, "originalname", "") == "test_notebook_runs_against_served_engine"]
    if not selected:
        yield {}
        return
    servers = [serve_in_thread() for _ in range(min(JOBS, len(selected)))]
    free: queue.Queue = queue.Queue()
    for srv in servers:
        free.put(srv)

    def run(path):
        srv = free.get()
        try:
            runner.run_notebook(path, srv.uri, PREFIX)
            return srv.uri
        finally:
            free.put(srv)

    pool = ThreadPoolExecutor(max_workers=len(servers), thread_name_prefix="served-notebook")
    futures = {path: pool.submit(run, path) for path in selected}
    try:
        yield futures
    finally:
        for future in futures.values():
            future.cancel()
        pool.shutdown(wait=True)
        for srv in servers:
            srv.stop()


def test_every_notebook_is_listed():
    names = {p.stem for p in NOTEBOOKS}
    sources = {p.stem for p in (ROOT / "notebooks" / "src").glob("*.py")}
    assert names == sources, "each py:percent source has a notebook that this test runs"
    assert set(KNOWN_LESSON_BUGS) <= names


def _param(path):
    reason = KNOWN_LESSON_BUGS.get(path.stem)
    marks = [pytest.mark.xfail(strict=True, raises=runner.NotebookRunError, reason=reason)] if reason else []
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", [_param(p) for p in NOTEBOOKS])
def test_notebook_runs_against_served_engine(runs, path):
    future: Future = runs[path]
    uri = future.result()  # raises NotebookRunError naming the notebook and the cell
    # The notebook really used the server: its databases carry the learner prefix and labkit's marker.
    with MongoClient(uri, serverSelectionTimeoutMS=5000) as client:
        ours = [n for n in client.list_database_names() if n.startswith(PREFIX)]
        for name in ours:
            assert client[name]["_labkit"].find_one({"_id": "labkit"}), f"{name} lacks labkit's marker"


def test_failure_names_notebook_and_cell(server, tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# x"),
                nbformat.v4.new_code_cell("import labkit\ndb = labkit.fresh_db('served_fail')"),
                nbformat.v4.new_code_cell("db.c.insert_one({'_id': 1})\ndb.c.insert_one({'_id': 1})")]
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(runner.NotebookRunError) as info:
        runner.run_notebook(path, server.uri, PREFIX)
    msg = str(info.value)
    assert "broken.ipynb" in msg and "code cell 2" in msg and "db.c.insert_one" in msg
    assert "DuplicateKeyError" in msg
    with MongoClient(server.uri, serverSelectionTimeoutMS=5000) as client:  # the kernel wrote to the server
        assert client[PREFIX + "served_fail"]["c"].find_one({"_id": 1}) == {"_id": 1}
