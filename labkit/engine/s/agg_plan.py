"""How an aggregation runs on the cluster (``src/mongo/s/query/cluster_aggregation_planner.cpp``): the shards it
targets (from its leading ``$match``), and whether it is split into a part each shard runs and a merging part.

The split is the server's in outline: the streaming stages at the front (``$match``, ``$project``, ``$set``,
``$unwind`` ...) run on the shards; a ``$sort`` that ends them runs there too and the halves are merged in sort
order (a ``$limit`` right after it is copied down); everything from the first other stage runs once, on the merged
stream. A pipeline that one shard can run whole (one shard targeted, no sharded foreign collection) is not split.
Stages that read another collection (``$lookup``, ``$graphLookup``, ``$unionWith``) of a sharded pipeline run in
the merging part, where the whole collection they read is seen; the merging part runs on the shard holding an
unsharded joined collection (``mergeType: "specificShard"``), otherwise on the mongos.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SPLIT_OK = {"$match", "$project", "$addFields", "$set", "$unset", "$unwind", "$replaceRoot", "$replaceWith",
             "$redact"}
_FOREIGN = {"$lookup": "from", "$graphLookup": "from", "$unionWith": "coll"}


def split_pipeline(pipeline: list) -> tuple[list, list, dict | None]:
    """(shardsPart, mergerPart, merge sort spec): the streaming prefix runs on the shards; a ``$sort`` that ends
    it is run on the shards too and merged in order (``$limit`` after it is copied down)."""
    shards: list = []
    i = 0
    while i < len(pipeline) and isinstance(pipeline[i], Mapping) and next(iter(pipeline[i]), None) in _SPLIT_OK:
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
        holds an unsharded collection a ``$lookup`` reads, otherwise on the mongos."""
        return "specificShard" if self.foreign and not self.sharded_foreign else "mongos"


def plan_aggregate(r: Any, op: Any, pipeline: list) -> AggPlan:
    """The plan of an aggregation on a sharded collection (or one that joins a sharded collection): one shard
    runs it whole when the leading ``$match`` targets one shard and it joins nothing (manual: "If the pipeline
    starts with an exact $match on a shard key, and the pipeline does not contain $out or $lookup stages, the
    entire pipeline runs on the matching shard only"); otherwise it is split."""
    ns = op.ns
    lead: dict = {}
    for st in pipeline:
        if isinstance(st, Mapping) and "$match" in st and isinstance(st["$match"], Mapping):
            lead = dict(st["$match"])
        break
    targets = r.targets(ns, lead, op.cmd.get("collation"))
    joined = sorted({c for _st, c in foreign(pipeline)})
    sharded_foreign = [c for c in joined if r.table("%s.%s" % (op.db, c)) is not None]
    shards_part, merger_part, sort = split_pipeline(pipeline)
    if len(targets) == 1 and not joined:
        return AggPlan(targets, False, list(pipeline), [], None, [])
    if joined:
        # the streaming stages before the first join run on the shards; the rest runs where the whole joined
        # collection is seen
        shards_part = []
        for st in pipeline:
            name = next(iter(st), None) if isinstance(st, Mapping) else None
            if name not in _SPLIT_OK:
                break
            shards_part.append(st)
        merger_part = list(pipeline[len(shards_part):])
        sort = None
    return AggPlan(targets, True, shards_part, merger_part, sort, joined, sharded_foreign)

__all__ = ["AggPlan", "plan_aggregate", "split_pipeline", "foreign"]
