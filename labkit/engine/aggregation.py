"""Aggregation on the embedded engine (placeholder: materialize then mongomock)."""
from __future__ import annotations

from mongomock import aggregate as mm_aggregate

from .collection import fast_copy
from .planner import unsupported


def run_pipeline(coll, pipeline: list, hint=None) -> list:
    docs = [fast_copy(d) for d in coll._store.docs.values()]
    try:
        return list(mm_aggregate.process_pipeline(docs, coll.database, pipeline, None))
    except NotImplementedError as e:
        raise unsupported("Aggregation (%s)" % e) from None


def explain_pipeline(coll, pipeline, verbosity, command):
    raise unsupported("explain of aggregate")
