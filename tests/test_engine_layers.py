"""The embedded engine's layering: imports go one way, from higher layers to lower ones.

The layer table below is the layering; docs/embedded-engine.md, "Layers of the engine", shows the same table (checked).
Every import of one engine module by another is read with ``ast`` -- also imports inside functions, which hide
a circle but do not remove it -- and the test fails on

- an import from a lower layer into a higher one,
- a circle of imports inside one layer,
- an engine module importing labkit's teaching helpers (anything in ``labkit`` outside ``labkit.engine``),
- a module of the engine missing from the table.

Layer 4 (collection and aggregation) is split into ordered sub-layers 40..49. Where a lower module must call
something a higher one defines, the higher module registers it in ``labkit/engine/hooks.py`` (the engine's one,
documented registry) when the engine is imported; ``test_importing_the_engine_fills_its_registry`` checks that.

``KNOWN`` lists imports that break the rules (now none), each with what it uses; the test also fails when one of
them is gone, so the list only ever shrinks and stays true.
"""
from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "labkit" / "engine"

# layer number -> modules (lowest first)
LAYERS: dict[int, tuple[str, ...]] = {
    0: ("values", "errors", "docutil", "keys", "entrylist", "_version", "hooks",
        "stage_names"),  # the server's stage names  # values, BSON order, key strings
    10: ("match", "match_expr", "projection", "update_ops", "expressions",  # matching, projection, updates,
         "variables", "add_fields", "validation", "collation", "limits",   # expressions, server rules
         "expr_base", "expr_arith", "expr_string", "expr_array", "expr_date", "expr_type",  # expression families
         "update_fast",  # scalar operator updates without the general walk
         "accumulators", "stage_redact", "stage_documents"),  # $group accumulators, $redact, $documents
    20: ("indexes", "bounds", "hashed", "subset", "store"),             # indexes, keys, bounds
    30: ("planner", "stages", "explain_doc", "sbe_explain", "stats", "collate",  # planner, executor, explain,
         "stage_bucket", "stage_window", "stage_densify"),  # grouping and window stages
    # collection and aggregation, in sub-layers: the services every operation passes through first
    40: ("boundary",),                                                  # the operation boundary
    41: ("sessions",),                                                  # sessions and transactions
    42: ("profiler",),                                                  # system.profile
    43: ("monitoring",),                                                # command monitoring
    44: ("capped", "clustered", "bulk"),                                # storage kinds the collection calls
    45: ("aggregation",),                                               # the stage loop
    46: ("extra_stages",),                                              # $out, $merge, $graphLookup ...
    47: ("collection",),                                                # the plain collection
    48: ("rules",),                                                     # validation, DDL, LabCollection
    49: ("views", "timeseries", "ttl", "db_aggregate"),                 # kinds built on collections, TTL
    50: ("commands", "database", "client_bulk", "__init__"),            # commands, database, client
    60: ("wire",),                                                      # the wire-protocol server
}

# (importer, imported): what it uses. Imports that break the rules today; remove an entry when it is fixed.
KNOWN: dict[tuple[str, str], str] = {}


def _layer_of() -> dict[str, int]:
    return {m: n for n, mods in LAYERS.items() for m in mods}


def _package_names(names: list[ast.alias]) -> list[str]:
    """``from . import x, Y``: a module ``x`` of the engine, or a name ``Y`` of the package (its ``__init__``)."""
    return [a.name if (ENGINE / (a.name + ".py")).exists() else "__init__" for a in names]


def engine_imports() -> dict[str, set[str]]:
    """Module -> the engine modules (and ``labkit.*`` helpers, as ``labkit.<name>``) it imports anywhere."""
    out: dict[str, set[str]] = {}
    for path in sorted(ENGINE.glob("*.py")):
        mod = path.stem
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    deps.update([node.module.split(".")[0]] if node.module else _package_names(node.names))
                elif node.level == 0 and node.module and node.module.split(".")[0] == "labkit":
                    parts = node.module.split(".")
                    if parts[:2] == ["labkit", "engine"]:
                        deps.update([parts[2]] if len(parts) > 2 else _package_names(node.names))
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
    graph = {"values": {"collection"}, "collection": {"aggregation"}, "aggregation": {"collection"},
             "capped": {"clustered"}, "clustered": {"capped"}}
    bad, _ = violations(graph)
    assert ("values", "collection") in bad
    assert ("aggregation", "collection") in bad and ("collection", "aggregation") not in bad  # sub-layers 45 < 47
    assert {("capped", "clustered"), ("clustered", "capped")} <= bad  # a circle inside one (sub-)layer
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from .collection import fast_copy\n", encoding="utf-8")
    node = ast.parse(src.read_text())
    assert any(isinstance(n, ast.ImportFrom) and n.module == "collection" for n in ast.walk(node))
    # ``from . import EmbeddedClient`` imports the package itself (layer 50): an upward import from ttl (49)
    names = ast.parse("from . import EmbeddedClient, hooks\n").body[0].names
    assert _package_names(names) == ["__init__", "hooks"]
    assert ("ttl", "__init__") in violations({"ttl": {"__init__"}})[0]


def _table(section: str) -> dict[int, tuple[str, ...]]:
    table: dict[int, tuple[str, ...]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            table[int(cells[0])] = tuple(m.strip().strip("`") for m in cells[1].split(","))
    return table


def test_the_documented_table_is_this_table():
    # docs/embedded-engine.md "Layers of the engine" shows the layers and which module sits where
    doc = (ENGINE.parent.parent / "docs" / "embedded-engine.md").read_text(encoding="utf-8")
    assert _table(doc.split("## Layers of the engine", 1)[1].split("\n## ", 1)[0]) == LAYERS


def test_the_engine_folder_shows_its_layers():
    # labkit/engine/README.md: the same table, where the files are (every file of the folder in one row)
    table = _table((ENGINE / "README.md").read_text(encoding="utf-8"))
    assert table == LAYERS
    files = {p.stem for p in ENGINE.glob("*.py")}
    assert files == {m for mods in table.values() for m in mods}


def test_importing_the_engine_fills_its_registry():
    # hooks.py: every higher module that plugs into a lower one registers when labkit.engine is imported, and
    # registers only names hooks.py documents (a fresh interpreter, so no other test has imported anything)
    import subprocess
    import sys
    code = ("import labkit.engine.hooks as h; import labkit.engine; "
            "print(h.missing(), '$out' in h.EXTRA_STAGES, h.get('collection_class').__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ENGINE.parent.parent, env={**__import__("os").environ,
                                                        "PYTHONPATH": str(ENGINE.parent.parent)}).stdout
    assert out.strip() == "[] True EmbeddedCollection"
    doc = (ENGINE / "hooks.py").read_text(encoding="utf-8")
    from labkit.engine import hooks
    assert all(name in doc for name in hooks.NAMES)


def test_one_version_for_labkit_and_the_engine():
    # the engine reads labkit's version from labkit/engine/_version.py (layer 0); labkit re-exports it, and
    # pyproject.toml states the same number
    import tomllib

    import labkit
    from labkit.engine import _version, commands
    meta = tomllib.loads((ENGINE.parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert labkit.__version__ is _version.__version__
    assert meta["project"]["version"] == _version.__version__
    assert commands.build_info()["labkit"]["version"] == _version.__version__
