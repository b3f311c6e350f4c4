"""The embedded engine's layering: imports go one way, from higher layers to lower ones.

The layer table below is the one place the layers are written down (docs/embedded-engine.md describes them).
Every import of one engine module by another is read with ``ast`` -- also imports inside functions, which hide
a circle but do not remove it -- and the test fails on

- an import from a lower layer into a higher one,
- a circle of imports inside one layer,
- an engine module importing labkit's teaching helpers (anything in ``labkit`` outside ``labkit.engine``),
- a module of the engine missing from the table.

``KNOWN`` lists the imports that still break the rules today, each with what it uses; the test also fails when
one of them is gone, so the list only ever shrinks and stays true.
"""
from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "labkit" / "engine"

# layer number -> modules (lowest first)
LAYERS: dict[int, tuple[str, ...]] = {
    0: ("values", "errors", "docutil", "keys", "entrylist",             # values, BSON order, key strings,
        "stage_names"),                                                 # the server's stage names
    1: ("match", "match_expr", "projection", "update_ops", "expressions",  # matching, projection, updates,
        "variables", "add_fields", "validation", "collation", "limits",    # expressions, server rules,
        "accumulators", "stage_redact", "stage_documents"),                                  # $group accumulators
    2: ("indexes", "bounds", "hashed", "subset", "store"),              # indexes, keys, bounds
    3: ("planner", "stages", "explain_doc", "sbe_explain", "stats", "collate",   # planner, executor, explain,
        "stage_bucket", "stage_window", "stage_densify"),                  # grouping and window stages
    4: ("collection", "aggregation", "extra_stages", "db_aggregate", "bulk", "boundary", "sessions",
        "monitoring", "profiler", "rules",                              # collection and aggregation,
        "capped", "views", "clustered", "timeseries", "ttl"),           # kinds of collections, TTL
    5: ("commands", "database", "client_bulk", "__init__"),             # commands, database, client
    6: ("wire",),                                                       # the wire-protocol server
}

# (importer, imported): what it uses. Imports that break the rules today; remove an entry when it is fixed.
KNOWN: dict[tuple[str, str], str] = {
    # one circle inside layer 4: collection -> sessions/boundary/monitoring -> profiler -> collection, and
    # collection <-> aggregation <-> extra_stages
    ("collection", "aggregation"): "run_pipeline, run_stages (update pipelines), _compile_expr",
    ("collection", "boundary"): "check_deadline, current_op, note, note_execution",
    ("collection", "monitoring"): "MonitoredCommandCursor, get_more, kill_cursor",
    ("collection", "sessions"): "current, resolve_store (a transaction's snapshot)",
    ("aggregation", "boundary"): "note_execution (the profiler's plan summary)",
    ("aggregation", "extra_stages"): "EXTRA_STAGES ($out, $merge, $graphLookup, $replaceWith)",
    ("extra_stages", "aggregation"): "Ctx, run_stages, _compile_expr ($merge/$graphLookup sub-pipelines)",
    ("extra_stages", "sessions"): "bind ($out/$merge writes in a session)",
    ("boundary", "monitoring"): "command events around each operation",
    ("monitoring", "boundary"): "current_op",
    ("monitoring", "profiler"): "profile entries of monitored operations",
    ("profiler", "boundary"): "current_op",
    ("profiler", "collection"): "EmbeddedCollection, new_object_id (system.profile)",
    ("profiler", "sessions"): "bind",
    ("sessions", "boundary"): "SESSION_OPERATIONS, aborts_transaction, guard",
    ("sessions", "collection"): "EmbeddedCollection (a transaction's collections)",
    # the kinds of collections (capped, views, time series) hook into the collection layer and call back into it:
    # one more circle inside layer 4 (rules <-> views/timeseries), and stats (layer 3) asking for their figures
    ("aggregation", "views"): "check_source ($lookup/$unionWith reading a view)",
    ("extra_stages", "views"): "check_source, run_on_base, view_def ($graphLookup/$out on views)",
    ("rules", "aggregation"): "aggregation",
    ("rules", "boundary"): "COLLECTION_OPERATIONS, CURSOR_OPERATIONS, guard",
    ("rules", "collection"): "Cursor, EmbeddedCollection, FLAT_TYPES, NOT_FLAT, distinct_values",
    ("rules", "extra_stages"): "extra_stages",
    ("rules", "sessions"): "sessions",
    ("rules", "timeseries"): "create, list_entry",
    ("rules", "views"): "list_entry, views",
    ("stats", "capped"): "stats_fields (collStats of a capped collection)",
    ("stats", "timeseries"): "coll_stats (collStats.timeseries)",
    ("timeseries", "boundary"): "COLLECTION_OPERATIONS, guard",
    ("timeseries", "rules"): "LabCollection",
    ("timeseries", "sessions"): "current",
    ("views", "aggregation"): "explain_pipeline",
    ("views", "boundary"): "COLLECTION_OPERATIONS, CURSOR_OPERATIONS, current_op, guard",
    ("views", "collection"): "EmbeddedCollection, distinct_values",
    ("views", "rules"): "LabCollection, LabCursor",
    ("views", "sessions"): "bind",
    # layer 1: $jsonSchema in queries and validators' query operators
    ("match", "validation"): "check_schema, schema_matches, _unknown_top_level ($jsonSchema)",
    ("validation", "match"): "filter_applies (query-operator validators)",
    # the engine reporting labkit's version in buildInfo / hello
    ("commands", "labkit"): "labkit.__version__",
}


def _layer_of() -> dict[str, int]:
    return {m: n for n, mods in LAYERS.items() for m in mods}


def engine_imports() -> dict[str, set[str]]:
    """Module -> the engine modules (and ``labkit.*`` helpers, as ``labkit.<name>``) it imports anywhere."""
    out: dict[str, set[str]] = {}
    for path in sorted(ENGINE.glob("*.py")):
        mod = path.stem
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    deps.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
                elif node.level == 0 and node.module and node.module.split(".")[0] == "labkit":
                    parts = node.module.split(".")
                    if parts[:2] == ["labkit", "engine"]:
                        deps.update([parts[2]] if len(parts) > 2 else [a.name for a in node.names])
                    else:
                        deps.add(".".join(parts[:2]) if len(parts) > 1 else "labkit")
                elif node.level > 1:
                    deps.add("labkit." + (node.module or "").split(".")[0])
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("labkit.engine."):
                        deps.add(a.name.split(".")[2])
                    elif a.name.split(".")[0] == "labkit":
                        deps.add(a.name)
        deps.discard(mod)
        out[mod] = deps
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def violations(imports: dict[str, set[str]]) -> tuple[set[tuple[str, str]], list[str]]:
    """(imports breaking the rules, problems that are not single imports: unknown modules)."""
    layer = _layer_of()
    bad: set[tuple[str, str]] = set()
    problems: list[str] = []
    for mod, deps in imports.items():
        if mod not in layer:
            problems.append("labkit/engine/%s.py is in no layer of LAYERS" % mod)
            continue
        for d in deps:
            if d.startswith("labkit"):
                bad.add((mod, d))  # the engine must not import the teaching helpers
            elif d in layer and layer[d] > layer[mod]:
                bad.add((mod, d))
    same_layer = {m: {d for d in deps if d in layer and layer.get(m) == layer[d]} for m, deps in imports.items()}
    for comp in _cycles(same_layer):
        members = set(comp)
        for m in comp:
            for d in same_layer[m] & members:
                bad.add((m, d))
    return bad, problems


def test_every_engine_module_has_a_layer():
    _, problems = violations(engine_imports())
    assert problems == []


def test_imports_go_one_way():
    bad, _ = violations(engine_imports())
    new = sorted(bad - set(KNOWN))
    assert new == [], "imports against the layer table (labkit/engine): %s" % new


def test_known_violations_are_still_real():
    bad, _ = violations(engine_imports())
    fixed = sorted(set(KNOWN) - bad)
    assert fixed == [], "these imports no longer break the rules; remove them from KNOWN: %s" % fixed


def test_the_checker_sees_upward_and_lazy_imports(tmp_path):
    # the checker itself: an upward import inside a function and a circle are both reported
    graph = {"values": {"collection"}, "collection": {"aggregation"}, "aggregation": {"collection"}}
    bad, _ = violations(graph)
    assert ("values", "collection") in bad
    assert {("collection", "aggregation"), ("aggregation", "collection")} <= bad
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from .collection import fast_copy\n", encoding="utf-8")
    node = ast.parse(src.read_text())
    assert any(isinstance(n, ast.ImportFrom) and n.module == "collection" for n in ast.walk(node))
