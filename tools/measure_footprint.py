#!/usr/bin/env python3
"""Measure what each lesson leaves on (and peaks at on) a server, for ``python -m labkit workshop plan``.

    python3 tools/measure_footprint.py              # every lesson -> data/workshop_footprint.json
    python3 tools/measure_footprint.py 31 34        # only these lessons (others kept from the file)
    python3 tools/measure_footprint.py --shared 31 34   # the same with LABKIT_SHARED=1 -> "shared_lessons"
    python3 tools/measure_footprint.py --check      # exit 1 when a lesson source changed since measuring

Each lesson's source (``notebooks/src/NN_name.py``) is executed with nbclient in its own kernel on the embedded
engine. A hook registered in the kernel runs after every cell and reads ``dbStats`` of every database the lesson
created (on the embedded engine, and through the mongos of every simulated sharded cluster it connected to, whose
``dbStats`` sums the shards; such a lesson's entry records ``shards``, the cluster's shard count); it keeps the peak (largest value after any cell) and the final state, and counts
``create_index``/``create_indexes`` calls (index builds), the largest number of them issued by one cell, and
the commands the lesson sends (operations, as a server counts them: pymongo's command monitoring, which the
embedded engine delivers) and the most sent by one cell.
The result is cached in ``data/workshop_footprint.json`` together with a hash of each source, so
``tests/test_workshop_plan.py`` can tell when the cache is stale without re-running anything.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
DATA = ROOT / "data" / "workshop_footprint.json"
sys.path.insert(0, str(_HERE))

# Runs inside the lesson's kernel before its first cell. Names start with _fp_ to stay out of the lesson's way.
_HOOK = r'''
import json as _fp_json
from labkit.connection import embedded_client as _fp_client
from labkit.engine.catalog import collection as _fp_coll_mod
from labkit import shared as _fp_shared
from labkit import connection as _fp_connection

import pymongo.monitoring as _fp_monitoring

_fp = {"builds": 0, "cell_builds": 0, "max_builds_in_cell": 0, "peak": {}, "final": {},
       "ops": 0, "cell_ops": 0, "max_ops_in_cell": 0, "counting": True}


class _FpOps(_fp_monitoring.CommandListener):
    """Counts the commands the lesson sends (what a server counts as operations), not the hook's own reads."""

    def started(self, event):
        if _fp["counting"]:
            _fp["ops"] += 1
            _fp["cell_ops"] += 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


_fp_monitoring.register(_FpOps())  # clients created from here on (the lesson's) deliver their commands to it

def _fp_wrap(name):
    original = getattr(_fp_coll_mod.EmbeddedCollection, name)
    def wrapper(self, *a, **k):
        _fp["builds"] += 1
        _fp["cell_builds"] += 1
        return original(self, *a, **k)
    setattr(_fp_coll_mod.EmbeddedCollection, name, wrapper)

_fp_wrap("create_index")
_fp_wrap("create_indexes")

def _fp_measure(*_args):
    _fp["counting"] = False
    now = {"databases": 0, "collections": 0, "indexes": 0, "data_bytes": 0, "index_bytes": 0}
    # the embedded engine, and every simulated sharded cluster the lesson connected to (through its mongos, whose
    # dbStats sums the shards: a collection on three shards counts three times, as each shard holds a copy of
    # its catalog entry and indexes)
    for c in [_fp_client(), *_fp_connection.simulated_clusters().values()]:
        for name in c.list_database_names():
            if name in ("admin", "local", "config") or name in _fp_shared.LOCAL_DATABASES:
                continue  # LOCAL_DATABASES: kept on the learner's machine in shared mode, never on the cluster
            s = c[name].command("dbStats")
            now["databases"] += 1
            now["collections"] += int(s.get("collections", 0))
            now["indexes"] += int(s.get("indexes", 0))
            now["data_bytes"] += int(s.get("dataSize", 0))
            now["index_bytes"] += int(s.get("indexSize", 0))
    _fp["shards"] = max([_fp.get("shards", 0), *_fp_connection.simulated_clusters()])
    for k, v in now.items():
        _fp["peak"][k] = max(_fp["peak"].get(k, 0), v)
    _fp["final"] = now
    _fp["max_builds_in_cell"] = max(_fp["max_builds_in_cell"], _fp["cell_builds"])
    _fp["cell_builds"] = 0
    _fp["max_ops_in_cell"] = max(_fp["max_ops_in_cell"], _fp["cell_ops"])
    _fp["cell_ops"] = 0
    _fp["counting"] = True

get_ipython().events.register("post_run_cell", _fp_measure)
'''
_REPORT = 'print("FOOTPRINT " + _fp_json.dumps(_fp))'


def source_hash(path: Path) -> str:
    """sha256 of a lesson source (what the cached measurement was taken from)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def measure(src: Path) -> dict:
    """Execute one lesson source in a fresh kernel and return its measured footprint."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    nb = jupytext.read(src)
    nb.cells.insert(0, nbformat.v4.new_code_cell(_HOOK))
    nb.cells.append(nbformat.v4.new_code_cell(_REPORT))
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(src.parent.parent)}}, record_timing=False)
    client.execute()
    for out in nb.cells[-1].get("outputs", []):
        for line in out.get("text", "").splitlines():
            if line.startswith("FOOTPRINT "):
                fp = json.loads(line[len("FOOTPRINT "):])
                return {"lesson": src.stem[:2], "name": src.stem, "source_sha256": source_hash(src),
                        "final": fp["final"], "peak": fp["peak"], "index_builds": fp["builds"],
                        "max_builds_in_cell": fp["max_builds_in_cell"], "operations": fp["ops"],
                        "max_operations_in_cell": fp["max_ops_in_cell"],
                        **({"shards": fp["shards"]} if fp.get("shards") else {})}
    raise RuntimeError(f"{src.name}: the footprint report cell printed nothing")


def load(path: Path = DATA) -> dict:
    """The cached measurements (``{"lessons": {...}}``), or an empty cache."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"lessons": {}}


def stale(path: Path = DATA) -> list[str]:
    """Lesson names whose source changed since measuring, or that were never measured, or no longer exist."""
    from notebook_meta import sources

    cached = load(path).get("lessons", {})
    srcs = {p.stem: p for p in sources()}
    out = [n for n, p in srcs.items() if n not in cached or cached[n]["source_sha256"] != source_hash(p)]
    return sorted(out + [n for n in cached if n not in srcs])


def main(argv: list[str]) -> int:
    from notebook_meta import sources

    if argv == ["--check"]:
        names = stale()
        for n in names:
            print(f"stale footprint: {n} (run python3 tools/measure_footprint.py {n[:2]})")
        return 1 if names else 0
    os.environ.pop("MONGODB_URI", None)
    os.environ.pop("LABKIT_DB_PREFIX", None)
    os.environ.pop("LABKIT_SHARED", None)
    os.environ["PYTHONHASHSEED"] = "0"
    key = "lessons"
    if argv[:1] == ["--shared"]:
        argv, key = argv[1:], "shared_lessons"
        os.environ["LABKIT_SHARED"] = "1"
    chosen = [p for p in sources() if not argv or p.stem[:2] in argv or p.stem in argv]
    data = load()
    data["about"] = ("Measured by tools/measure_footprint.py: each lesson executed on the embedded engine (a lesson "
                     "that connects to a sharded cluster: on labkit's simulated one, read through its mongos and "
                     "summed over its shards, which 'shards' counts); sizes are dbStats dataSize (uncompressed BSON) "
                     "and indexSize (the engine's model of WiredTiger's index file sizes).")
    DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for src in chosen:
        start = time.monotonic()
        fp = measure(src)
        data = load()  # another run may have written other lessons meanwhile
        data.setdefault(key, {})[src.stem] = fp
        data[key] = dict(sorted(data[key].items()))
        DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{src.stem}: {fp['peak']} builds={fp['index_builds']} in {time.monotonic() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
