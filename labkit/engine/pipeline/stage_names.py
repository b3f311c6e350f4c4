"""The aggregation stage names of MongoDB 8.0 (manual "Aggregation Stages"): a name outside this set is the
server's "Unrecognized pipeline stage name" (40324); the engine runs most of them and refuses the rest with 115
(extra_stages.py)."""
from __future__ import annotations

STAGE_NAMES = frozenset((
    "$addFields", "$bucket", "$bucketAuto", "$changeStream", "$changeStreamSplitLargeEvent", "$collStats",
    "$count", "$currentOp", "$densify", "$documents", "$facet", "$fill", "$geoNear", "$graphLookup", "$group",
    "$indexStats", "$limit", "$listCatalog", "$listClusterCatalog", "$listLocalSessions", "$listSampledQueries",
    "$listSearchIndexes", "$listSessions", "$lookup", "$match", "$merge", "$out", "$planCacheStats", "$project",
    "$querySettings", "$queryStats", "$redact", "$replaceRoot", "$replaceWith", "$sample", "$search",
    "$searchMeta", "$set", "$setWindowFields", "$shardedDataDistribution", "$skip", "$sort", "$sortByCount",
    "$unionWith", "$unset", "$unwind", "$vectorSearch",
))
