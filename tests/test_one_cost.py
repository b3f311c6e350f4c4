"""One query, one cost: within a lesson, the same query on the same data and indexes costs the same (issue 25).

The rule (LESSON_CONVENTIONS.md, "One query, one cost"): wherever a lesson reports a query's cost (an
``explain()``, a ledger, a widget, the profiler), the same operation on the same data and indexes shows the
same keys examined, documents examined and documents returned.

How it is checked, at no extra run time: the engine keeps a *plan record* when ``LABKIT_PLAN_RECORD`` names a
file (``labkit/engine/query/explain_doc.py``, ``record_plan``): every explain with execution statistics (those
of the lesson's cells, of its ledgers and widgets, of the checkers) and every operation the profiler records
appends one line: namespace, command, the collection's data version and index set, keys and documents
examined, documents returned, the plan's stages and the cell's execution count. ``notebooks/conftest.py`` sets
that variable for each notebook's kernel when nbval runs the lessons (the README's test command) and adds one
item per notebook after its cells, ``<notebook>::one query, one cost``, which reads the record and applies
:func:`problems_in`:

1. *Same query, same data, same indexes, different cost*: records are grouped by namespace, query shape
   (:func:`shape`), data version and index set; a group with two different (keys examined, documents
   examined, returned) fails. A count is one shape whether it is sent as ``count`` or as ``count_documents``'
   aggregation (``$match`` then ``$group`` with ``$sum: 1``), and there keys and documents are compared (the
   two commands return different things by design). The profiler's records count only when the cursor was
   exhausted (a first batch has done part of the work).
2. *Same query, same indexes, one plan fetches and the other does not*: over any data versions, a query that
   examined something is answered without reading documents (covered, ``COUNT_SCAN``) in one record and by
   reading them in another: the same plan on changed data changes its counts, not that.

Notebooks that do not pass yet are in :data:`KNOWN` (the list only shrinks). The same check runs on a record
file with ``python tests/test_one_cost.py RECORD.jsonl``.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping

import pytest
from bson import json_util

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_checks import LESSON_NAMES, assert_known, assert_known_names  # noqa: E402

#: notebook -> why it does not pass yet (remove the entry when it does; the test says so)
KNOWN: dict[str, str] = {}
DEMO = "demo_dashboard"
#: notebooks that run no costed explain at all, so their record is empty (anywhere else an empty record means the
#: recorder was not switched on)
QUIET = {"07_validation", "20_which_pattern"}
COUNT_GROUP = ({"_id": 1, "n": {"$sum": 1}}, {"_id": None, "n": {"$sum": 1}})


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=False, default=str)


def _count_shape(query: Any, skip: Any, limit: Any, hint: Any, collation: Any) -> tuple:
    return ("count", _canon(query or {}), skip or 0, limit or 0, _canon(hint), _canon(collation))


def shape(record: Mapping[str, Any]) -> tuple | None:
    """The query a record is about, normalized: one shape per operation whatever command carried it; None for
    what has no plan worth comparing."""
    cmd = dict(record.get("command") or {})
    op = record.get("op")
    if record.get("origin") == "profiler" and op in ("update", "remove"):
        return (op, _canon(cmd.get("q")), bool(cmd.get("multi")), cmd.get("limit", 0))
    name = next(iter(cmd), "")
    if name == "find":
        return ("find", _canon(cmd.get("filter") or {}), _canon(cmd.get("sort")), _canon(cmd.get("projection")),
                cmd.get("skip") or 0, abs(cmd.get("limit") or 0), _canon(cmd.get("hint")), _canon(cmd.get("collation")),
                _canon(cmd.get("allowDiskUse")), _canon(cmd.get("let")))
    if name == "count":
        if not cmd.get("query"):
            return ("fast count",)  # the collection's metadata, not a plan
        return _count_shape(cmd.get("query"), cmd.get("skip"), cmd.get("limit"), cmd.get("hint"), cmd.get("collation"))
    if name == "distinct":
        return ("distinct", cmd.get("key"), _canon(cmd.get("query") or {}), _canon(cmd.get("collation")))
    if name == "aggregate":
        pipeline = list(cmd.get("pipeline") or [])
        stages = [next(iter(s), "") for s in pipeline]
        if pipeline and stages[0] == "$match" and stages[-1] == "$group" and pipeline[-1]["$group"] in COUNT_GROUP \
                and set(stages[1:-1]) <= {"$skip", "$limit"}:
            middle = {k[1:]: v for s in pipeline[1:-1] for k, v in s.items()}
            return _count_shape(pipeline[0]["$match"], middle.get("skip"), middle.get("limit"), cmd.get("hint"),
                                cmd.get("collation"))
        return ("aggregate", _canon(pipeline), _canon(cmd.get("hint")), _canon(cmd.get("collation")),
                _canon(cmd.get("allowDiskUse")), _canon(cmd.get("let")))
    if name == "findAndModify":
        return ("findAndModify", _canon(cmd.get("query") or {}), _canon(cmd.get("sort")))
    return None


def _state(record: Mapping[str, Any], shape_: tuple) -> tuple[str, str]:
    """(data version, index set) the record's cost depends on: an aggregate's cover the whole database (its
    ``$lookup`` may read any collection), except a count, which reads its own collection only."""
    data, indexes = record.get("data"), record.get("indexes")
    if shape_[0] == "count" and next(iter(record.get("command") or {}), "") == "aggregate":
        coll = str(record.get("ns", "")).split(".", 1)[-1]
        data = next((d for n, d in data or [] if n == coll), None)
        indexes = next((i for n, i in indexes or [] if n == coll), None)
    return _canon(data), _canon(indexes)


def _cost(record: Mapping[str, Any], kind: str) -> tuple:
    if kind == "count":
        return (record.get("keys"), record.get("docs"))
    return (record.get("keys"), record.get("docs"), record.get("returned"))


def _where(record: Mapping[str, Any]) -> str:
    cell = record.get("cell")
    return f"{record.get('origin')}{f' at `{cell}`' if cell else ''}"


def _describe(shape_: tuple) -> str:
    return f"{shape_[0]} {' '.join(str(x) for x in shape_[1:] if x not in ('null', 0, False, '{}'))}".strip()


def _fmt(record: Mapping[str, Any], kind: str) -> str:
    names = ("keys", "docs", "returned")[:len(_cost(record, kind))]
    figures = ", ".join(f"{record.get(n):,} {n}" if isinstance(record.get(n), int) else f"{record.get(n)} {n}"
                        for n in names)
    return f"{figures} ({record.get('plan')}; {_where(record)})"


def problems_in(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The disagreements of one notebook's plan record (see the module docstring)."""
    same_data: dict[tuple, list] = defaultdict(list)
    same_indexes: dict[tuple, list] = defaultdict(list)
    for r in records:
        s = shape(r)
        if s is None or s == ("fast count",) or (r.get("origin") == "profiler" and not r.get("complete", True)):
            continue
        data, indexes = _state(r, s)
        where = (r.get("ns"), s, indexes)
        same_data[where + (data,)].append(r)
        same_indexes[where].append(r)
    found = []
    for (ns, s, _, _), group in same_data.items():
        costs = {}
        for r in group:
            costs.setdefault(_cost(r, s[0]), r)
        if len(costs) > 1:
            found.append(f"{ns}: {_describe(s)} on the same data and indexes costs "
                         + " vs ".join(_fmt(r, s[0]) for r in costs.values()))
    for (ns, s, _), group in same_indexes.items():
        working = [r for r in group if (r.get("keys") or 0) > 1 or (r.get("docs") or 0) > 0]
        fetching = {bool(r.get("docs")): r for r in working}
        if len(fetching) > 1:
            found.append(f"{ns}: {_describe(s)} with the same indexes reads no document in one plan and documents "
                         f"in another: {_fmt(fetching[False], s[0])} vs {_fmt(fetching[True], s[0])}")
    return found


def read_record(path: Path) -> list[dict]:
    """The plan record a kernel wrote (one JSON line per plan)."""
    if not Path(path).exists():
        return []
    return [json_util.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def with_cells(records: list[dict], notebook: Path) -> list[dict]:
    """The records with each one's line of code prefixed by the number nbval gives its code cell (Cell N)."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    where: dict[str, int] = {}
    for i, cell in enumerate(code):
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for line in text.splitlines():
            where.setdefault(line.strip(), i)
    out = []
    for r in records:
        line = r.get("cell")
        out.append(dict(r, cell=f"Cell {where[line]}: {line}" if line in where else line))
    return out


def check_notebook(name: str, path: Path, notebook: Path) -> None:
    """The item nbval runs after a notebook's cells (notebooks/conftest.py)."""
    records = read_record(path)
    if name in QUIET:
        assert not records, f"{name} explains queries now: remove it from QUIET in tests/test_one_cost.py"
    assert records or name in QUIET, (f"{name}: the kernel wrote no plan record to {path}: was LABKIT_PLAN_RECORD set "
                                      f"before it started? (notebooks/conftest.py)")
    assert_known(name, problems_in(with_cells(records, notebook)), KNOWN, "tests/test_one_cost.py")


def test_known_lists_only_notebooks():
    assert_known_names(KNOWN, LESSON_NAMES + [DEMO])
    assert_known_names(dict.fromkeys(QUIET, ""), LESSON_NAMES + [DEMO])


# --- the rule, on hand-made records and on the engine's own record ----------------------------------------------

def _rec(command: dict, keys: int, docs: int, returned: int = 0, data: Any = (1, 0, 5, 100), origin: str = "explain",
         indexes: Any = ("i",), **extra: Any) -> dict:
    state = (list(data), list(indexes))
    if "aggregate" in command:  # an aggregate's state covers every collection of the database
        state = ([["follows", list(data)], ["users", [2, 0, 1, 10]]], [["follows", list(indexes)], ["users", ["u"]]])
    return {"origin": origin, "ns": "d.follows", "command": command, "data": state[0], "indexes": state[1],
            "cell": "n = count(sam)", "keys": keys, "docs": docs, "returned": returned, "plan": "P", **extra}


COUNT_CMD = {"count": "follows", "query": {"followingId": "sam"}}
COUNT_AGG = {"aggregate": "follows", "pipeline": [{"$match": {"followingId": "sam"}},
                                                  {"$group": {"_id": 1, "n": {"$sum": 1}}}]}


def test_one_count_two_costs_on_the_same_data_fails():
    assert shape(_rec(COUNT_CMD, 1, 0)) == shape(_rec(COUNT_AGG, 1, 0))
    found = problems_in([_rec(COUNT_CMD, 4001, 0), _rec(COUNT_AGG, 4000, 4000, 1)])
    assert len(found) == 2 and "on the same data and indexes costs 4,001 keys, 0 docs" in found[0]
    assert "4,000 keys, 4,000 docs" in found[0] and "reads no document in one plan" in found[1]
    assert problems_in([_rec(COUNT_CMD, 4001, 0), _rec(COUNT_AGG, 4001, 0, 1)]) == []   # returned differs by design


def test_changed_data_may_change_the_counts_but_not_whether_documents_are_read():
    assert problems_in([_rec(COUNT_CMD, 4001, 0), _rec(COUNT_CMD, 4152, 0, data=(1, 0, 9, 100))]) == []
    found = problems_in([_rec(COUNT_CMD, 4001, 0), _rec(COUNT_AGG, 4151, 4151, data=(1, 0, 9, 100))])
    assert len(found) == 1 and "reads no document in one plan and documents in another" in found[0]
    # a query that found nothing examined nothing worth comparing
    assert problems_in([_rec({"find": "follows", "filter": {"a": 1}}, 1, 0),
                        _rec({"find": "follows", "filter": {"a": 1}}, 5, 5, 5, data=(1, 0, 9, 100))]) == []


def test_a_find_differs_by_limit_sort_and_index_set_but_not_by_batch_options():
    find = {"find": "follows", "filter": {"a": 1}}
    assert problems_in([_rec(find, 10, 10, 10), _rec(dict(find, limit=1), 1, 1, 1)]) == []
    assert problems_in([_rec(find, 10, 10, 10), _rec(dict(find, batchSize=2, singleBatch=False), 10, 10, 10)]) == []
    assert len(problems_in([_rec(find, 10, 10, 10), _rec(dict(find, batchSize=2), 10, 10, 9)])) == 1
    assert problems_in([_rec(find, 10, 10, 10), _rec(find, 0, 100, 10, indexes=["i", "j"])]) == []
    assert problems_in([_rec(find, 10, 10, 10), _rec(dict(find, collation={"locale": "en", "strength": 2}), 3, 3, 3),
                        _rec(dict(find, allowDiskUse=False), 0, 100, 10)]) == []


def test_profiled_first_batches_and_fast_counts_are_not_compared():
    find = {"find": "follows", "filter": {"a": 1}}
    partial = _rec(find, 101, 101, 101, origin="profiler", op="query", complete=False)
    assert problems_in([_rec(find, 500, 500, 500), partial]) == []
    whole = _rec(find, 400, 400, 400, origin="profiler", op="query", complete=True)
    assert len(problems_in([_rec(find, 500, 500, 500), whole])) == 1
    assert problems_in([_rec({"count": "follows"}, 0, 0), _rec({"count": "follows", "query": {}}, 0, 100)]) == []


def test_the_engine_records_every_costed_explain(tmp_path, monkeypatch):
    import labkit
    from labkit.engine.query.explain_doc import PLAN_RECORD_ENV

    path = tmp_path / "record.jsonl"
    monkeypatch.setenv(PLAN_RECORD_ENV, str(path))
    db = labkit.connect()["one_cost_record"]
    db.client.drop_database(db.name)
    db.follows.insert_many([{"_id": i, "followingId": "sam" if i < 40 else "x", "followerId": i} for i in range(50)])
    db.follows.create_index([("followingId", 1), ("followerId", 1)])
    db.command("explain", COUNT_CMD, verbosity="executionStats")
    db.follows.find({"followingId": "sam"}).limit(3).explain()
    db.command("explain", {"find": "follows", "filter": {}}, verbosity="queryPlanner")   # no cost: not recorded
    labkit.Ledger({"count": 1}).measure("d", "count", db, lambda d: d.follows.count_documents({"followingId": "sam"}))
    db.client.drop_database(db.name)
    records = read_record(path)
    assert [(next(iter(r["command"])), r["keys"], r["docs"]) for r in records][:2] == [("count", 41, 0), ("find", 3, 3)]
    assert len(records) == 3 and next(iter(records[2]["command"])) == "aggregate"
    assert records[0]["data"] == records[1]["data"] and records[0]["indexes"][1]["key"] == {"followingId": 1,
                                                                                          "followerId": 1}
    assert shape(records[0]) == shape(records[2])
    monkeypatch.delenv(PLAN_RECORD_ENV)
    labkit.connect()["one_cost_record"].command("explain", COUNT_CMD, verbosity="executionStats")
    assert len(read_record(path)) == 3                                              # off: nothing written


def test_a_record_names_the_notebook_line_and_cell(tmp_path, monkeypatch):
    import linecache

    import labkit
    from labkit.engine.query.explain_doc import PLAN_RECORD_ENV

    path = tmp_path / "record.jsonl"
    monkeypatch.setenv(PLAN_RECORD_ENV, str(path))
    db = labkit.connect()["one_cost_cell"]
    db.t.insert_one({"_id": 1})
    source = "x = 1\nplan = db.t.find({'_id': 1}).explain()\n"
    cell_file = str(tmp_path / "ipykernel_4242" / "123.py")        # how ipykernel names a cell's code
    linecache.cache[cell_file] = (len(source), None, source.splitlines(True), cell_file)
    exec(compile(source, cell_file, "exec"), {"db": db})
    db.client.drop_database(db.name)
    (record,) = read_record(path)
    assert record["cell"] == "plan = db.t.find({'_id': 1}).explain()"
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": "x"},
                                              {"cell_type": "code", "source": "y = 2"},
                                              {"cell_type": "code", "source": ["x = 1\n", source.splitlines()[1]]}]}))
    assert with_cells([record], notebook)[0]["cell"] == "Cell 1: plan = db.t.find({'_id': 1}).explain()"


def _main(argv: list[str]) -> int:
    for arg in argv:
        found = problems_in(read_record(Path(arg)))
        print(f"{arg}: {len(found)} problem(s)")
        for p in found:
            print(f"  - {p}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
