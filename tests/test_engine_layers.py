"""The embedded engine's layering: folders named after the server's subsystems, imports going one way.

The table below is the layering; labkit/engine/README.md and docs/embedded-engine.md ("Layers of the engine") show
the same table (checked). Every import of one engine module by another is read with ``ast`` -- also imports inside
functions, which hide a circle but do not remove it -- and the test fails on

- an import from a folder of a lower rank into a folder of a higher one,
- a circle of imports inside one folder (and, in :func:`test_no_import_circles_in_labkit`, anywhere in labkit),
- an engine module importing labkit's teaching helpers (anything in ``labkit`` outside ``labkit.engine``),
- a module of the engine missing from the table, or a folder without a docstring saying what it may import.

Where a lower module must call something a higher one defines, the higher module registers it in
``labkit/engine/base/hooks.py`` (the engine's one, documented registry) when the engine is imported;
``test_importing_the_engine_fills_its_registry`` checks that.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "labkit" / "engine"

#: (rank, folder, modules): a module may import modules of its own folder (without circles) and of lower ranks.
#: Folder "." is the engine package itself: its version file sits at the bottom, its client near the top.
LAYERS: list[tuple[int, str, tuple[str, ...]]] = [
    (0, "base/", ("errors", "hooks", "docutil")),
    (0, ".", ("_version",)),
    (1, "bson/", ("values", "keys", "limits")),
    (2, "collation/", ("collator",)),
    (3, "pipeline/expression/", ("match_expr", "expr_base", "expr_arith", "expr_array", "expr_date", "expr_string",
                                 "expr_type", "expressions", "variables")),
    (4, "matcher/", ("match", "validation", "subset")),
    (5, "update/", ("update_ops", "update_fast")),
    (6, "index/", ("entrylist", "indexes", "bounds", "hashed")),
    (7, "exec/", ("stages",)),
    (8, "query/", ("planner", "explain_doc", "sbe_explain", "collate", "projection")),
    (9, "service/", ("boundary",)),
    (9, "repl/", ("oplog",)),
    (10, "session/", ("history", "sessions")),
    (11, "stats/", ("wiredtiger_sizes", "storage_stats", "profiler", "monitoring")),
    (12, "pipeline/", ("accumulators", "add_fields", "stage_redact", "stage_documents", "stage_bucket",
                       "stage_window", "stage_densify", "stage_names", "dependencies", "aggregation", "extra_stages",
                       "change_stream")),
    (13, "catalog/", ("store", "bulk", "clustered", "capped", "collection", "rules", "views", "timeseries", "ttl",
                      "system_dbs")),
    (14, "commands/", ("dispatch", "database", "db_aggregate", "client_bulk", "current_op")),
    (15, ".", ("__init__", "change_streams")),
    (16, "s/", ("shard_key", "catalog", "cluster", "agg_plan", "cluster_explain", "router")),
    (17, "transport/", ("wire",)),
]

#: (importer, imported): imports that break the rules today, with what they use; the list only shrinks.
KNOWN: dict[tuple[str, str], str] = {}


def _key(folder: str, mod: str) -> str:
    """A module's name in the table: ``matcher/match``, ``./__init__``."""
    return ("./" if folder == "." else folder) + mod


def _rank_of() -> dict[str, int]:
    return {_key(f, m): r for r, f, mods in LAYERS for m in mods}


def _module_key(path: Path) -> str:
    rel = path.relative_to(ENGINE)
    folder = "." if len(rel.parts) == 1 else "/".join(rel.parts[:-1]) + "/"
    return _key(folder, path.stem)


def _dotted(key: str) -> str:
    folder, mod = (key[:key.rindex("/") + 1], key[key.rindex("/") + 1:])
    pkg = "labkit.engine" + ("" if folder in ("./", ".") else "." + folder.rstrip("/").replace("/", "."))
    return pkg if mod == "__init__" else pkg + "." + mod


def _by_dotted() -> dict[str, str]:
    return {_dotted(_module_key(p)): _module_key(p) for p in ENGINE.rglob("*.py") if p.stem != "__init__"
            or p.parent == ENGINE}


def _package_of(path: Path) -> str:
    rel = path.relative_to(ENGINE.parent.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1])


def _import_nodes(path: Path) -> list:
    """The import statements of ``path``, anywhere in it (parsed once per file version: several tests ask)."""
    stat = path.stat()
    return _parsed_imports(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=None)
def _parsed_imports(path: str, mtime_ns: int, size: int) -> list:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def imports_of(path: Path, modules: dict[str, str]) -> set[str]:
    """The engine modules (table keys) and labkit helpers (``labkit.<name>``) that one file imports anywhere."""
    deps: set[str] = set()
    pkg = _package_of(path)
    packages = {d for d in modules}  # dotted module names
    for node in _import_nodes(path):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), pkg) if node.level \
                else (node.module or "")
            for alias in node.names:
                targets.append(base + "." + alias.name if base + "." + alias.name in packages
                               or (ENGINE.parent.parent / (base + "." + alias.name).replace(".", "/")).is_dir()
                               else base)
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        for t in targets:
            if t in modules:
                deps.add(modules[t])
            elif t == "labkit.engine":
                deps.add("./__init__")
            elif t.startswith("labkit.engine."):
                # a sub-package's __init__ (docstring only): part of its folder
                folder = t[len("labkit.engine."):].replace(".", "/") + "/"
                deps.add(folder + "__init__")
            elif t.split(".")[0] == "labkit":
                deps.add(".".join(t.split(".")[:2]))
    return deps


def engine_imports() -> dict[str, set[str]]:
    """Module key -> the engine modules (and ``labkit.*`` helpers) it imports anywhere."""
    modules = _by_dotted()
    out: dict[str, set[str]] = {}
    for path in sorted(ENGINE.rglob("*.py")):
        key = _module_key(path)
        if path.stem == "__init__" and path.parent != ENGINE:
            continue  # a folder's docstring
        deps = imports_of(path, modules)
        deps.discard(key)
        out[key] = deps
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
    """(imports breaking the rules, problems that are not single imports: modules in no row of the table)."""
    rank = _rank_of()
    folder_rank = {f: r for r, f, _ in LAYERS if f != "."}
    bad: set[tuple[str, str]] = set()
    problems: list[str] = []

    def rank_of(key: str) -> int | None:
        if key in rank:
            return rank[key]
        if key.endswith("/__init__"):
            return folder_rank.get(key[:-len("__init__")])
        return None

    for mod, deps in imports.items():
        if mod not in rank:
            problems.append("labkit/engine/%s.py is in no row of LAYERS" % mod.lstrip("./"))
            continue
        for d in deps:
            if d.startswith("labkit"):
                bad.add((mod, d))  # the engine must not import the teaching helpers
            elif rank_of(d) is not None and rank_of(d) > rank[mod]:
                bad.add((mod, d))
    same = {m: {d for d in deps if d in rank and rank[d] == rank.get(m)} for m, deps in imports.items()}
    for comp in _cycles(same):
        members = set(comp)
        for m in comp:
            for d in same[m] & members:
                bad.add((m, d))
    return bad, problems


def test_every_engine_module_has_a_row():
    _, problems = violations(engine_imports())
    assert problems == []
    listed = {_key(f, m) for _, f, mods in LAYERS for m in mods}
    assert listed == set(engine_imports()), "rows of LAYERS naming no file: %s" % sorted(listed - set(engine_imports()))


def test_imports_go_one_way():
    bad, _ = violations(engine_imports())
    new = sorted(bad - set(KNOWN))
    assert new == [], "imports against the layer table (labkit/engine): %s" % new


def test_known_violations_are_still_real():
    bad, _ = violations(engine_imports())
    assert sorted(set(KNOWN) - bad) == [], "these imports no longer break the rules; remove them from KNOWN"


def test_the_checker_sees_upward_imports_and_circles(tmp_path):
    graph = {"bson/values": {"catalog/collection"}, "catalog/collection": {"pipeline/aggregation"},
             "pipeline/aggregation": {"catalog/collection"},
             "catalog/capped": {"catalog/clustered"}, "catalog/clustered": {"catalog/capped"},
             "catalog/ttl": {"./__init__"}, "matcher/match": {"labkit.review"}}
    bad, _ = violations(graph)
    assert ("bson/values", "catalog/collection") in bad
    assert ("pipeline/aggregation", "catalog/collection") in bad
    assert ("catalog/collection", "pipeline/aggregation") not in bad  # pipeline (12) is below catalog (13)
    assert {("catalog/capped", "catalog/clustered"), ("catalog/clustered", "catalog/capped")} <= bad  # a circle
    assert ("catalog/ttl", "./__init__") in bad  # the client (15) is above the catalog
    assert ("matcher/match", "labkit.review") in bad
    # imports inside functions count, and relative imports resolve against the file's own package
    folder = ENGINE / "matcher"
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from ..catalog.collection import fast_copy\n    from .. import EmbeddedClient\n")
    fake = folder / "_layers_probe.py"
    try:
        fake.write_text(src.read_text())
        assert imports_of(fake, _by_dotted()) == {"catalog/collection", "./__init__"}
    finally:
        fake.unlink()


def test_every_folder_says_what_it_is_and_may_import():
    for init in ENGINE.rglob("__init__.py"):
        if init.parent == ENGINE:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "Server:" in doc and "May import:" in doc, init
        assert [n for n in ast.parse(init.read_text(encoding="utf-8")).body if not isinstance(n, ast.Expr)] == [], \
            "%s: a folder's __init__ holds only its docstring" % init


def _table(section: str) -> list[tuple[int, str, tuple[str, ...]]]:
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].isdigit():
            rows.append((int(cells[0]), cells[1].strip("`"), tuple(m.strip().strip("`") for m in cells[2].split(","))))
    return rows


def test_the_documented_table_is_this_table():
    doc = (ROOT / "docs" / "embedded-engine.md").read_text(encoding="utf-8")
    assert _table(doc.split("## Layers of the engine", 1)[1].split("\n## ", 1)[0]) == LAYERS


def test_the_engine_folder_shows_its_layers():
    assert _table((ENGINE / "README.md").read_text(encoding="utf-8")) == LAYERS


def labkit_imports() -> dict[str, set[str]]:
    """Every labkit module (dotted) -> the labkit modules it imports anywhere (engine modules included)."""
    pkg_root = ROOT / "labkit"
    files = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
             for p in pkg_root.rglob("*.py")}
    out: dict[str, set[str]] = {}
    for name, path in files.items():
        pkg = name if path.stem == "__init__" else name.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in _import_nodes(path):
            if isinstance(node, ast.ImportFrom):
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), pkg) if node.level \
                    else (node.module or "")
                for a in node.names:
                    deps.add(base + "." + a.name if base + "." + a.name in files else base)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        out[name] = {d for d in deps if d in files and d != name}
    return out


#: circles in labkit outside the engine that are still to be broken (each with what it uses); only shrinks
KNOWN_CIRCLES: list[list[str]] = []


def test_no_import_circles_in_labkit():
    # a package importing its own submodules (``labkit`` -> ``labkit.connection``) is no circle: a submodule
    # importing its package's __init__ back is (as ``labkit.exercises`` <-> ``labkit.tracking`` once was)
    graph = labkit_imports()
    cycles = [c for c in _cycles(graph)]
    found = [c for c in cycles if not any(set(k) <= set(c) for k in KNOWN_CIRCLES)]
    assert found == [], "import circles in labkit: %s" % found
    stale = [k for k in KNOWN_CIRCLES if not any(set(k) <= set(c) for c in cycles)]
    assert stale == [], "no longer circles; remove from KNOWN_CIRCLES: %s" % stale


def test_importing_the_engine_fills_its_registry():
    # hooks.py: every higher module that plugs into a lower one registers when labkit.engine is imported, and
    # registers only names hooks.py documents (a fresh interpreter, so no other test has imported anything)
    import os
    import subprocess
    import sys
    code = ("import labkit.engine.base.hooks as h; import labkit.engine; "
            "print(h.missing(), '$out' in h.EXTRA_STAGES, h.get('collection_class').__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.strip() == "[] True EmbeddedCollection"
    doc = (ENGINE / "base" / "hooks.py").read_text(encoding="utf-8")
    from labkit.engine.base import hooks
    assert all(name in doc for name in hooks.NAMES)


def test_one_version_for_labkit_and_the_engine():
    # the engine reads labkit's version from labkit/engine/_version.py (rank 0); labkit re-exports it, and
    # pyproject.toml states the same number
    import tomllib

    import labkit
    from labkit.engine import _version
    from labkit.engine.commands import dispatch
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert labkit.__version__ is _version.__version__
    assert meta["project"]["version"] == _version.__version__
    assert dispatch.build_info()["labkit"]["version"] == _version.__version__
