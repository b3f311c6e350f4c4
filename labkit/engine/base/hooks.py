"""The engine's one registry of hooks: how a higher layer plugs into a lower one without being imported by it.

The engine's imports go one way (docs/embedded-engine.md, "Layers of the engine"; tests/test_engine_layers.py). Where a
lower module must call something a higher one defines -- the operation boundary publishing command events, a
transaction committing through the collection's storage primitives, ``$lookup`` refusing a view, ``collStats``
of a capped or time-series collection -- the higher module registers the function (or class) here, by name,
when it is imported. ``labkit/engine/__init__.py`` imports every registering module, so importing the engine
fills the registry; ``get`` of a name nobody registered raises a clear OperationFailure.

Each name, the module that registers it and the modules that call it:

=======================  ================  =====================================================================
name                     registered by     used by
=======================  ================  =====================================================================
filter_applies           match.py          validation.py: validators' query operators (match uses its $jsonSchema)
client_class             __init__.py       ttl.py (ttl_pass): EmbeddedClient, to tell the embedded engine apart
collection_class         collection.py     sessions.py (commit), profiler.py (system.profile): EmbeddedCollection
monitor_begin            monitoring.py     boundary.py: command started (someone watches)
monitor_succeed          monitoring.py     boundary.py: command succeeded
monitor_fail             monitoring.py     boundary.py: command failed
view_check_source        views.py          aggregation.py, extra_stages.py: a view as $lookup/$graphLookup source
view_def                 views.py          extra_stages.py ($unionWith): a store's view definition or None
view_run_on_base         views.py          extra_stages.py ($unionWith): a view's pipeline on its base
view_list_entry          views.py          rules.py (listCollections): type "view", clustered idIndex
view_parse_create        views.py          rules.py (create): viewOn / pipeline options
view_create              views.py          rules.py (create): a new view
timeseries_list_entry    timeseries.py     rules.py (listCollections): a time-series namespace and its buckets
timeseries_create        timeseries.py     rules.py (create): a new time-series collection
timeseries_coll_stats    timeseries.py     stats.py: collStats of a time-series collection
capped_stats_fields      capped.py         stats.py: collStats' capped / max / maxSize
document_by_id           store.py          change_stream.py: a change stream's updateLookup
watch                    change_streams.py rules.py, database.py: Collection.watch / Database.watch
=======================  ================  =====================================================================

``EXTRA_STAGES`` (stage name -> ``handler(coll, docs, arg, pipeline, i)``) is filled by extra_stages.py and read
by aggregation.py's stage loop.
"""
from __future__ import annotations

from typing import Any, Callable

from pymongo.errors import OperationFailure

NAMES = frozenset({
    "filter_applies", "client_class", "collection_class", "monitor_begin", "monitor_succeed", "monitor_fail",
    "view_check_source", "view_def", "view_run_on_base", "view_list_entry", "view_parse_create", "view_create",
    "timeseries_list_entry", "timeseries_create", "timeseries_coll_stats", "capped_stats_fields",
    "document_by_id", "watch",
})

EXTRA_STAGES: dict[str, Callable[..., list]] = {}  # $out, $merge, $graphLookup, ... (extra_stages.py)

_HOOKS: dict[str, Any] = {}


def register(name: str, value: Any) -> None:
    """Register ``value`` under ``name`` (one of ``NAMES``); called by the module that defines it, at import."""
    if name not in NAMES:
        raise ValueError("unknown engine hook %r (labkit/engine/base/hooks.py lists them)" % name)
    _HOOKS[name] = value


def get(name: str) -> Any:
    """The function (or class) registered under ``name``; a clear server-style error if it is not loaded."""
    try:
        return _HOOKS[name]
    except KeyError:
        raise OperationFailure("labkit.engine: %r is not loaded (import labkit.engine first)" % name, 1) from None


def missing() -> list[str]:
    """The names nobody registered (empty once ``labkit.engine`` is imported)."""
    return sorted(NAMES - set(_HOOKS))
