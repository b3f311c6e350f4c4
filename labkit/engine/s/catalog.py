"""The config server's metadata and the router's routing table (``src/mongo/s/catalog/``, ``chunk_manager.cpp``).

The config server is an embedded engine holding the ``config`` database a real cluster's config server holds,
so ``config.shards``, ``config.databases``, ``config.collections``, ``config.chunks``, ``config.settings``,
``config.version``, ``config.mongos``, ``config.changelog`` are readable (and ``config.settings`` writable) with
ordinary commands. The routing table kept here in memory is the authority; every change to it is written through
to those documents at once, as the config server's transactions do.

A collection's chunks cover the whole key space ``[MinKey, MaxKey)`` without gaps, each on one shard. ``lastmod``
is the chunk version (major: a migration bumps it; minor: a split), shown as a Timestamp as in
``config.chunks``.
"""
from __future__ import annotations

import bisect
import datetime
import uuid as _uuid
from typing import Any, Iterable

from bson import ObjectId, Timestamp
from bson.binary import Binary, UUID_SUBTYPE
from bson.max_key import MaxKey
from bson.min_key import MinKey

from .shard_key import ShardKeyPattern, encode_key

DEFAULT_CHUNK_SIZE_MB = 128  # 8.0's default range size (manual: "Range Size")


class Chunk:
    """One range ``[min, max)`` of a sharded collection's key space and the shard that owns it."""

    __slots__ = ("min", "max", "min_b", "max_b", "shard", "jumbo", "major", "minor", "id", "on_since")

    def __init__(self, min_: dict, max_: dict, shard: str, major: int = 1, minor: int = 0) -> None:
        self.min, self.max = min_, max_
        self.min_b = encode_key(list(min_.values()))
        self.max_b = encode_key(list(max_.values()))
        self.shard = shard
        self.jumbo = False
        self.major, self.minor = major, minor
        self.id = ObjectId()
        self.on_since = Timestamp(1, 0)

    def contains(self, key: bytes) -> bool:
        return self.min_b <= key < self.max_b

    def doc(self, uuid: Binary) -> dict:
        out = {"_id": self.id, "uuid": uuid, "min": dict(self.min), "max": dict(self.max), "shard": self.shard,
               "lastmod": Timestamp(self.major, self.minor), "onCurrentShardSince": self.on_since,
               "history": [{"validAfter": self.on_since, "shard": self.shard}]}
        if self.jumbo:
            out["jumbo"] = True
        return out


class RoutingTable:
    """A sharded collection's key pattern and chunks (the router's ``ChunkManager``)."""

    def __init__(self, ns: str, key: ShardKeyPattern, unique: bool, chunks: list[Chunk]) -> None:
        self.ns = ns
        self.key = key
        self.unique = unique
        self.uuid = Binary(_uuid.uuid4().bytes, UUID_SUBTYPE)
        self.epoch = ObjectId()
        self.timestamp = Timestamp(int(datetime.datetime.now(datetime.timezone.utc).timestamp()), 1)
        self.no_balance = False
        self.chunks: list[Chunk] = []
        self.set_chunks(chunks)

    def set_chunks(self, chunks: Iterable[Chunk]) -> None:
        self.chunks = sorted(chunks, key=lambda c: c.min_b)
        self._mins = [c.min_b for c in self.chunks]

    @property
    def version(self) -> tuple[int, int]:
        return max((c.major, c.minor) for c in self.chunks)

    def next_major(self) -> int:
        return self.version[0] + 1

    def chunk_for(self, key: bytes) -> Chunk:
        i = bisect.bisect_right(self._mins, key) - 1
        return self.chunks[max(i, 0)]

    def chunks_for_ranges(self, ranges: list[tuple[bytes, bytes]] | None) -> list[Chunk]:
        """Chunks overlapping any closed range (all chunks for None)."""
        if ranges is None:
            return list(self.chunks)
        out: dict[int, Chunk] = {}
        for lo, hi in ranges:
            i = max(bisect.bisect_right(self._mins, lo) - 1, 0)
            while i < len(self.chunks) and self.chunks[i].min_b <= hi:
                if self.chunks[i].max_b > lo:
                    out[i] = self.chunks[i]
                i += 1
        return [out[i] for i in sorted(out)]

    def shards(self) -> list[str]:
        return sorted({c.shard for c in self.chunks})

    def shards_for_ranges(self, ranges: list[tuple[bytes, bytes]] | None) -> list[str]:
        return sorted({c.shard for c in self.chunks_for_ranges(ranges)})

    def chunk_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.chunks:
            out[c.shard] = out.get(c.shard, 0) + 1
        return out

    def collection_doc(self) -> dict:
        out = {"_id": self.ns, "lastmodEpoch": self.epoch,
               "lastmod": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0),
               "timestamp": self.timestamp, "uuid": self.uuid, "key": dict(self.key.spec), "unique": self.unique,
               "chunksAlreadySplitForDowngrade": False}
        if self.no_balance:
            out["noBalance"] = True
        return out


def first_chunks(key: ShardKeyPattern, shard_names: list[str], primary: str, empty: bool) -> list[Chunk]:
    """The chunks shardCollection creates: one on the primary shard, or, for an empty collection with a hashed
    key whose hashed field comes first, one per shard over equal parts of the hash range (8.0:
    SERVER-76405 made it one chunk per shard)."""
    lo, hi = key.global_min(), key.global_max()
    if not (empty and key.hashed_pos == 0) or len(shard_names) == 1:
        return [Chunk(lo, hi, primary)]
    from .shard_key import hashed_split_points
    points = hashed_split_points(len(shard_names))
    bounds = [lo] + [{f: (p if i == 0 else MinKey()) for i, f in enumerate(key.fields)} for p in points] + [hi]
    return [Chunk(bounds[i], bounds[i + 1], shard_names[i % len(shard_names)]) for i in range(len(bounds) - 1)]


def settings_chunk_size_mb(config_client: Any) -> float:
    """``config.settings`` ``{_id: "chunksize", value: <MB>}`` (manual: "Modify Range Size in a Sharded
    Cluster"), else 128."""
    doc = config_client["config"]["settings"].find_one({"_id": "chunksize"})
    if doc and isinstance(doc.get("value"), (int, float)) and not isinstance(doc.get("value"), bool) \
            and doc["value"] > 0:
        return float(doc["value"])
    return float(DEFAULT_CHUNK_SIZE_MB)


__all__ = ["Chunk", "RoutingTable", "first_chunks", "settings_chunk_size_mb", "DEFAULT_CHUNK_SIZE_MB", "MinKey",
           "MaxKey"]
