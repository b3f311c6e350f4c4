"""How an aggregation runs on the cluster (``src/mongo/s/query/cluster_aggregation_planner.cpp``,
``src/mongo/db/pipeline/sharded_agg_helpers.cpp``): the shards it targets (from its leading ``$match``), and
whether it is split into a part each shard runs and a merging part.

The split is the server's in outline: the streaming stages at the front (``$match``, ``$project``, ``$set``,
``$unwind`` ...) run on the shards; a ``$sort`` that ends them runs there too and the halves are merged in sort
order (a ``$limit`` right after it is copied down); everything from the first other stage runs once, on the merged
stream. A top-level ``$lookup`` or ``$graphLookup`` whose ``from`` collection is sharded streams like the others:
it runs on every targeted shard in parallel, each shard reading the joined collection through the router
(``DocumentSourceLookUp::distributedPlanLogic`` returns none; jstests/sharding/query/sharded_lookup_execution.js
"sharded_to_sharded": the $lookup executes on every shard holding the local collection). A join of an unsharded
collection (and ``$unionWith``) ends the shards' part: the merging part runs on the shard holding that collection
(``mergeType: "specificShard"``); otherwise it runs on the mongos. A pipeline that one shard can run whole (one
shard targeted, joining nothing; or the pipeline of an unsharded collection) is not split.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

_SPLIT_OK = {"$match", "$project", "$addFields", "$set", "$unset", "$unwind", "$replaceRoot", "$replaceWith",
             "$redact"}
_FOREIGN = {"$lookup": "from", "$graphLookup": "from", "$unionWith": "coll"}


def split_pipeline(pipeline: list, streams: Callable[[Any], bool] | None = None) -> tuple[list, list, dict | None]:
    """(shardsPart, mergerPart, merge sort spec): the streaming prefix (``streams``: the stages each shard can run
    on its own part of the stream; by default the plain streaming stages) runs on the shards; a ``$sort`` that ends
    it is run on the shards too and merged in order (``$limit`` after it is copied down)."""
    streams = streams or _streams_alone
    shards: list = []
    i = 0
    while i < len(pipeline) and isinstance(pipeline[i], Mapping) and streams(pipeline[i]):
        shards.append(pipeline[i])
        i += 1
    sort = None
    merger = list(pipeline[i:])
    if merger and isinstance(merger[0], Mapping) and "$sort" in merger[0]:
        sort = merger[0]["$sort"]
        shards.append(merger[0])
        merger = merger[1:]  # the merge keeps the order ($mergeCursors with a sort)
        if merger and isinstance(merger[0], Mapping) and "$limit" in merger[0]:
            shards.append(merger[0])
    return shards, merger, sort


def _streams_alone(stage: Any) -> bool:
    return isinstance(stage, Mapping) and next(iter(stage), None) in _SPLIT_OK


def joined_collection(stage: Any) -> str | None:
    """The collection a top-level join stage reads (``$lookup``/``$graphLookup`` ``from``, ``$unionWith``), or
    None for any other stage."""
    if not isinstance(stage, Mapping) or not stage:
        return None
    name = next(iter(stage))
    spec = stage[name]
    if name not in _FOREIGN:
        return None
    coll = spec if isinstance(spec, str) else (spec.get(_FOREIGN[name]) if isinstance(spec, Mapping) else None)
    return coll if isinstance(coll, str) else None


def foreign(pipeline: list) -> list[tuple[str, str]]:
    """(stage name, collection) of every $lookup/$graphLookup/$unionWith, nested pipelines included."""
    out = []
    for st in pipeline:
        if not isinstance(st, Mapping) or not st:
            continue
        name = next(iter(st))
        spec = st[name]
        if name in _FOREIGN:
            coll = spec if isinstance(spec, str) else (spec.get(_FOREIGN[name]) if isinstance(spec, Mapping) else None)
            if isinstance(coll, str):
                out.append((name, coll))
            if isinstance(spec, Mapping) and isinstance(spec.get("pipeline"), list):
                out.extend(foreign(spec["pipeline"]))
        if name == "$facet" and isinstance(spec, Mapping):
            for sub in spec.values():
                if isinstance(sub, list):
                    out.extend(foreign(sub))
    return out


class AggPlan:
    """How an aggregation runs on the cluster: the shards it targets and, when split, the two halves.
    ``foreign``: the collections its joins read; ``sharded_foreign``: those of them that are sharded."""

    def __init__(self, targets: list[str], split: bool, shards_part: list, merger_part: list,
                 sort: dict | None, foreign: list[str], sharded_foreign: list[str] | None = None) -> None:
        self.targets, self.split = targets, split
        self.shards_part, self.merger_part, self.sort, self.foreign = shards_part, merger_part, sort, foreign
        self.sharded_foreign = sharded_foreign or []

    @property
    def merge_type(self) -> str:
        """Where the merging half runs (manual, "Aggregation Pipeline and Sharded Collections"): on the shard that
        holds an unsharded collection a join of the merging half reads, otherwise on the mongos."""
        unsharded = [c for c in map(joined_collection, self.merger_part) if c and c not in self.sharded_foreign]
        return "specificShard" if unsharded else "mongos"


def plan_aggregate(r: Any, op: Any, pipeline: list) -> AggPlan:
    """The plan of an aggregation on a sharded collection (or one that joins a sharded collection): one shard
    runs it whole when the leading ``$match`` targets one shard and it joins nothing (manual, "Aggregation Pipeline
    and Sharded Collections": "If the pipeline starts with an exact $match on a shard key, and the pipeline does
    not contain $out or $lookup stages, the entire pipeline runs on the matching shard only"), or when the
    collection is unsharded (its shard runs it, joins included); otherwise it is split (see the module
    docstring)."""
    ns = op.ns
    lead: dict = {}
    for st in pipeline:
        if isinstance(st, Mapping) and "$match" in st and isinstance(st["$match"], Mapping):
            lead = dict(st["$match"])
        break
    targets = r.targets(ns, lead, op.cmd.get("collation"))
    joined = sorted({c for _st, c in foreign(pipeline)})
    sharded_foreign = [c for c in joined if r.table("%s.%s" % (op.db, c)) is not None]

    def streams(stage: Any) -> bool:
        if _streams_alone(stage):
            return True
        return next(iter(stage), None) in ("$lookup", "$graphLookup") and joined_collection(stage) in sharded_foreign

    if len(targets) == 1 and (not joined or r.table(ns) is None):
        # one shard runs it whole: a sharded collection's exact match without joins (the manual), or an unsharded
        # collection's pipeline on its shard (its joins of sharded collections run there too)
        return AggPlan(targets, False, list(pipeline), [], None, joined, sharded_foreign)
    shards_part, merger_part, sort = split_pipeline(pipeline, streams)
    return AggPlan(targets, True, shards_part, merger_part, sort, joined, sharded_foreign)

__all__ = ["AggPlan", "plan_aggregate", "split_pipeline", "foreign", "joined_collection"]
