"""Lessons 05 and 06 on a deployment that refuses change streams: the worker cells fall back, the rest still runs.

A standalone ``mongod`` refuses ``$changeStream`` with code 40573, "The $changeStream stage is only supported on
replica sets" (MongoDB's ``src/mongo/db/pipeline/document_source_change_stream.cpp``,
``assertIsLegalSpecification``, the first check it makes); Atlas refuses what a tier does not support with its
own code 8000 ("<command> is not allowed or the syntax is incorrect", Atlas "Unsupported Commands in Atlas").
labkit's engine is always a one-member replica set (it has no standalone mode), so these tests make the engine
refuse the stage where the server does, in the change stream cursor's legality check, with the server's error
document (code, codeName, errmsg). Everything else (transactions included, as on an Atlas tier) works as usual.

Over TCP, pymongo's own ``watch()`` gets the refusal as a server sends it, and ``labkit.changestreams.refusal``
recognises it. Each lesson then runs top to bottom in this process on the embedded engine refusing the same way
(``watch()`` raises pymongo's OperationFailure with the same document): its worker says in one line why there
is no change stream and runs the lesson's batch job instead, every later cell runs, and every exercise check in
the lesson (with the solution cells' answers) passes.
"""
from __future__ import annotations

import ast
import contextlib
import io

import jupytext
import pytest
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from labkit import changestreams
from labkit.engine.pipeline import change_stream as engine_change_stream
from labkit.exercises.outcomes import CheckResult

from served_helpers import ROOT, serve_in_thread

STANDALONE = (40573, "Location40573", "The $changeStream stage is only supported on replica sets")
ATLAS = (8000, "AtlasError", "$changeStream is not allowed or the syntax is incorrect, see the Atlas "
                             "documentation for more information.")


@pytest.fixture()
def refuse(monkeypatch):
    """``refuse(error)``: from now on the engine refuses ``$changeStream`` with ``error`` (code, codeName, errmsg),
    in process and served, where the server's assertIsLegalSpecification refuses first."""
    refusal = {}

    def check(self, spec):
        code, name, msg = refusal["error"]
        raise engine_change_stream._fail(msg, code, name)

    monkeypatch.setattr(engine_change_stream.ChangeStreamCursor, "_check_namespace", check)
    return lambda error: refusal.__setitem__("error", error)


@pytest.fixture()
def refusing_server(refuse):
    """A served engine that refuses ``$changeStream`` (``.refuse(error)``)."""
    with serve_in_thread() as srv:
        srv.refuse = refuse
        yield srv


@pytest.mark.parametrize("error", [STANDALONE, ATLAS], ids=["standalone", "atlas"])
def test_refusal_over_the_wire_is_recognised(refusing_server, error):
    refusing_server.refuse(error)
    with MongoClient(refusing_server.uri, serverSelectionTimeoutMS=5000) as client:
        with pytest.raises(OperationFailure) as info:
            client.sl_fallback.c.watch([{"$match": {"operationType": "insert"}}])
    assert info.value.code == error[0]
    line = changestreams.refusal(info.value)
    assert line is not None and f"code {error[0]}: {error[2]}" in line
    assert ("standalone server" in line) == (error is STANDALONE)
    assert ("Atlas tier" in line) == (error is ATLAS)


@pytest.mark.parametrize("exc", [
    OperationFailure("you are over your space quota, using 513 MB of 512 MB", 8000),  # Atlas, not a refusal
    OperationFailure("Resume of change stream was not possible, as the resume point may no longer be in the "
                     "oplog.", 286),
    OperationFailure("Unrecognized pipeline stage name: '$changeStreem'", 40324),
    ValueError("not a server error"),
], ids=["quota", "history-lost", "typo", "not-a-server-error"])
def test_other_errors_are_not_refusals(exc):
    assert changestreams.refusal(exc) is None


def _run_lesson(name: str) -> tuple[dict, list[tuple[str, object, str]]]:
    """Run every code cell of lesson ``name`` in one namespace; return it and, per cell, (source, value of its
    last expression, what it printed)."""
    ns: dict = {"__name__": "__lesson__"}
    cells = []
    for cell in jupytext.read(ROOT / "notebooks" / "src" / f"{name}.py").cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(tree, f"{name} cell", "exec"), ns)  # noqa: S102 - the lesson's own cells
            value = eval(compile(ast.Expression(last.value), f"{name} cell", "eval"), ns) if last else None
        cells.append((cell.source, value, out.getvalue()))
    return ns, cells


def _checks_pass(cells):
    results = [value for _, value, _ in cells if isinstance(value, CheckResult)]
    assert results, "the lesson checks its exercises"
    for result in results:
        assert result.correct, repr(result)


def test_lesson_05_falls_back_to_reconciliation_on_a_standalone(refuse, monkeypatch):
    refuse(STANDALONE)
    monkeypatch.delenv("MONGODB_URI", raising=False)
    ns, cells = _run_lesson("05_two_way")
    printed = "".join(out for _, _, out in cells)
    line = ("this deployment refuses change streams (code 40573: The $changeStream stage is only supported on "
            "replica sets): a standalone server has no oplog to read changes from (a replica set or a sharded "
            "cluster has); the reconciliation job repairs the copies instead")
    assert printed.count(line) == 2  # the first start and the restart
    source, value, out = next(c for c in cells if "changes applied by the restarted worker" in c[0])
    assert "changes applied by the restarted worker: 0" in out
    assert value["users out of step"] == 0  # the copies match the edges, as with the stream
    assert ns["drift"](ns["db"])["users out of step"] == 0
    _checks_pass(cells)


def test_lesson_06_falls_back_to_the_rebuild_job_on_an_atlas_tier(refuse, monkeypatch):
    refuse(ATLAS)
    monkeypatch.delenv("MONGODB_URI", raising=False)
    ns, cells = _run_lesson("06_denormalization")
    printed = "".join(out for _, _, out in cells)
    assert printed.count("this deployment refuses change streams (code 8000: $changeStream is not allowed") == 1
    assert "this Atlas tier does not offer change streams; the rebuild job refreshes the previews instead" in printed
    _, _, out = next(c for c in cells if "previews with the old name after the worker ran" in c[0])
    assert "previews with the old name after the rename: 9" in out  # as in the stored outputs
    assert "previews with the old name after the worker ran: 0" in out
    _checks_pass(cells)
