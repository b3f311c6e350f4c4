"""labkit: the helpers Schema Lab's notebooks import.

Public API (everything else is private):

- ``connect``, ``LabConnectionError``, ``describe``, ``redact_uri``   (labkit.connection, notebook 00)
- ``fresh_db``, ``reset_db``, ``db_name``, ``UnsafeDatabaseError``   (labkit.databases, notebook 00)
- ``labkit.seed``: ``social``, ``sensors``, ``load_canonical``        (labkit.seed, notebook 00)
- ``recommend``, ``decision_widget``: the schema decision helper       (labkit.decision)
- ``progress``: which exercises this learner has passed                (labkit.tracking, notebook 00)
- ``Ledger``: measured cost per operation x the workload's rates       (labkit.ledger, notebook 00)
- ``workload_table``: a lesson's table of operations, types, rates, needs (labkit.ledger, lessons 10-38)
- ``review``, ``Review``, ``Finding``: the read-only schema review     (labkit.review, notebook 39)
- ``labkit.querylog.capture``: a query log from the profiler, or from command monitoring where the profiler
  is refused (Atlas Free/Flex)                                         (labkit.querylog, notebook 38)
- ``connect(shards=N)``: a sharded cluster (simulated, or a real mongos); ``labkit.sharding``: its figures
  per shard (distribution, targeting, inserts per shard)                (labkit.sharding, notebooks 40-42)
- ``labkit.changestreams.refusal``: tells a deployment that refuses change streams (a standalone server, an
  Atlas tier without them) from any other error                      (labkit.changestreams, notebooks 05-06)

Submodules are imported lazily so ``import labkit`` stays fast and has no side effects.
"""
from __future__ import annotations

import importlib
from typing import Any

from labkit.connection import LabConnectionError, connect, describe, redact_uri
from labkit.databases import UnsafeDatabaseError, db_name, fresh_db, reset_db
from labkit.review import Finding, Review, review

from labkit.engine._version import __version__  # the one place the version is written

_SUBMODULES = {"seed", "explain", "validation", "collation", "limits", "widgets", "exercises", "plots",
               "decision", "tracking", "ledger", "shared", "workshop", "demo", "querylog", "sharding",
               "changestreams"}
_LAZY = {"show_plan": "explain", "plan_summary": "explain", "plan_tree": "explain", "draw_plan": "explain",
         "recommend": "decision", "decision_widget": "decision", "progress": "tracking", "Ledger": "ledger",
         "workload_table": "ledger",
         "shared_mode": "shared", "ttl_pass": "engine.catalog.ttl"}

__all__ = [
    "connect", "LabConnectionError", "describe", "redact_uri",
    "fresh_db", "reset_db", "db_name", "UnsafeDatabaseError",
    "seed", "show_plan", "plan_summary", "plan_tree", "draw_plan", "recommend", "decision_widget", "progress", "Ledger", "workload_table",
    "__version__",
    "shared_mode", "ttl_pass", "sharding",
    "review", "Review", "Finding",
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"labkit.{name}")
    if name in _LAZY:
        return getattr(importlib.import_module(f"labkit.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")
