"""The simulated sharded cluster: N shards (each an embedded engine), a config server, and the metadata operations
a MongoDB 8.0 cluster runs (``src/mongo/db/s/``): shardCollection (``create_collection_coordinator.cpp`` with
``shard_key_util.cpp``'s index checks), refineCollectionShardKey, reshardCollection, split, moveRange/moveChunk and
the balancer (``balancer/balancer_policy.cpp``: 8.0 balances by data size).

What is modelled and what is not:

* Migrations, splits and resharding happen at once, inside the command that asks for them; nothing runs in the
  background. The balancer runs a round when asked (``balancerStart`` runs rounds until the collection is
  balanced; ``{balancerRound: 1}``, labkit's own command, runs one), never on its own.
* 8.0 does not split ranges as they grow (auto-splitting ended in 6.0.3); the balancer splits a range when it
  moves part of it (moveRange with only ``min``: the donor picks ``max`` so the range holds about the range size).
  A range whose documents all share one key value cannot be split; it still moves unless it holds more documents
  than a migration takes (``migration_chunk_cloner_source.cpp``: more than 2 x range size / the donor's average
  document size is ChunkTooBig). Such a range is marked jumbo and the balancer leaves it where it is.
* There are no orphaned documents (a migration deletes the donor's copy at once) and no auto-merger.
"""
from __future__ import annotations

import bisect
import datetime
import uuid as _uuid
import threading
from typing import Any

import bson
from bson import ObjectId, Timestamp
from bson.max_key import MaxKey
from bson.min_key import MinKey
from pymongo.errors import OperationFailure

from .. import EmbeddedClient
from ..base.errors import not_modelled
from ..commands import dispatch
from .catalog import Chunk, RoutingTable, first_chunks, settings_chunk_size_mb
from .shard_key import ShardKeyPattern, encode_key, fail, show

MAX_SHARDS = 16
MIGRATION_THRESHOLD_RANGES = 3  # manual, "Balancer": balanced when shards differ by less than 3 x the range size
INVALID_OPTIONS = 72
ILLEGAL_OPERATION = 20
ALREADY_INITIALIZED = 23
NAMESPACE_NOT_FOUND = 26


def check_shard_count(shards: Any) -> int:
    """``shards`` as a small positive integer (1..16), else a ValueError saying what to pass."""
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise ValueError("shards=%r: the number of shards must be an integer from 1 to %d (e.g. shards=3)"
                         % (shards, MAX_SHARDS))
    return shards


class ShardedCluster:
    """A sharded cluster in this process: ``shards`` embedded engines named ``shard0``..., a config server, and a
    router. ``command(db, cmd)`` runs a command as a ``mongos`` would (errors raised as pymongo's
    OperationFailure); the wire server serves it with ``route_command``."""

    def __init__(self, shards: int = 2) -> None:
        n = check_shard_count(shards)
        self.shard_names = ["shard%d" % i for i in range(n)]
        self.shards: dict[str, EmbeddedClient] = {s: EmbeddedClient() for s in self.shard_names}
        self.shard_ctx = {s: dispatch.ServerContext("%s.in-process" % s, 27018 + i, s)
                          for i, s in enumerate(self.shard_names)}
        self.config = EmbeddedClient()
        self.tables: dict[str, RoutingTable] = {}
        self.primaries: dict[str, str] = {}
        self.lock = threading.RLock()
        self.balancer_enabled = True
        self.balancer_rounds = 0
        self.migrations = 0
        self.host = "labkit-mongos"
        self.port = 0
        self.cluster_id = ObjectId()
        self.ctx = dispatch.ServerContext("labkit-mongos", 0)
        self.txns: dict[tuple, set] = {}
        self.merger = EmbeddedClient()  # runs a split pipeline's merging half (as a mongos does)
        self._rows: dict = {}
        cfg = self.config["config"]
        cfg["version"].insert_one({"_id": 1, "clusterId": self.cluster_id})
        now = Timestamp(int(datetime.datetime.now(datetime.timezone.utc).timestamp()), 1)
        cfg["shards"].insert_many([{"_id": s, "host": "%s/%s.in-process:%d" % (s, s, 27018 + i), "state": 1,
                                    "topologyTime": now} for i, s in enumerate(self.shard_names)])
        self._ping()

    # -- identity ---------------------------------------------------------------------------------------
    def shard_host(self, shard: str) -> str:
        i = self.shard_names.index(shard)
        return "%s.in-process:%d" % (shard, 27018 + i)

    def _ping(self) -> None:
        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        self.config["config"]["mongos"].replace_one(
            {"_id": "%s:%d" % (self.host, self.port)},
            {"_id": "%s:%d" % (self.host, self.port), "ping": now, "up": 0, "waiting": True,
             "mongoVersion": dispatch.SERVED_VERSION, "advisoryHostFQDNs": []}, upsert=True)

    def set_address(self, host: str, port: int) -> None:
        """The address the router is served on (config.mongos shows it)."""
        with self.lock:
            self.config["config"]["mongos"].delete_many({})
            self.host, self.port = host, port
            self._ping()

    # -- databases --------------------------------------------------------------------------------------
    def primary_of(self, db: str, create: bool = False) -> str:
        """The database's primary shard; a new database gets the shard holding the least data (8.0 picks the
        shard with the least data for a new database's primary)."""
        p = self.primaries.get(db)
        if p is not None:
            return p
        for s in self.shard_names:  # a database a shard already holds (created through a lower path)
            if db in self.shards[s].list_database_names():
                p = s
                break
        if p is None:
            if not create:
                return self.shard_names[0]
            p = min(self.shard_names, key=lambda s: (self._shard_bytes(s), self.shard_names.index(s)))
        self.primaries[db] = p
        self.config["config"]["databases"].replace_one(
            {"_id": db}, {"_id": db, "primary": p, "version": {"uuid": bson.Binary(_uuid.uuid4().bytes, 4),
                                                                "timestamp": Timestamp(1, 1), "lastMod": 1}},
            upsert=True)
        return p

    def forget_database(self, db: str) -> None:
        self.primaries.pop(db, None)
        self.config["config"]["databases"].delete_many({"_id": db})
        for ns in [ns for ns in self.tables if ns.split(".", 1)[0] == db]:
            self.forget_collection(ns)

    def view_over_sharded(self, db: str, coll: Any) -> str | None:
        """The sharded collection that ``db.coll`` reads when it is a view (of views) over one, else None."""
        seen = 0
        while isinstance(coll, str) and seen < 20:
            if "%s.%s" % (db, coll) in self.tables:
                return coll
            client = self.shards[self.primary_of(db)]
            store = client._store[db] if db in client.list_database_names() else None
            options = store[coll].options if store is not None and coll in store.list_created_collection_names() \
                else {}
            coll = options.get("viewOn")
            seen += 1
        return None

    def _shard_bytes(self, shard: str) -> int:
        total = 0
        client = self.shards[shard]
        for d in client.list_database_names():
            for c in client[d].list_collection_names():
                total += self.data_size(shard, d, c)
        return total

    # -- commands on a shard ----------------------------------------------------------------------------
    def on_shard(self, shard: str, db: str, cmd: dict, codec: Any = None) -> dict:
        """Run one command on a shard (its own server context); the reply."""
        return dispatch.run_command(self.shards[shard], db, {**cmd, "$db": db}, self.shard_ctx[shard],
                                    codec or bson.CodecOptions())

    def checked(self, shard: str, db: str, cmd: dict) -> dict:
        reply = self.on_shard(shard, db, cmd)
        if not reply.get("ok"):
            raise OperationFailure(reply.get("errmsg", ""), reply.get("code"), reply)
        return reply

    def collection(self, shard: str, ns: str) -> Any:
        db, _, coll = ns.partition(".")
        return self.shards[shard][db][coll]

    def exists_on(self, shard: str, ns: str) -> bool:
        db, _, coll = ns.partition(".")
        client = self.shards[shard]
        return db in client.list_database_names() and coll in client[db].list_collection_names()

    def data_size(self, shard: str, db: str, coll: str) -> int:
        from ..stats.storage_stats import coll_stats
        try:
            return int(coll_stats(self.shards[shard][db][coll], 1).get("size", 0))
        except Exception:  # noqa: BLE001 - a view or a collection that vanished: no data
            return 0

    def ensure_collection(self, shard: str, ns: str, like: str | None = None) -> None:
        """Create ``ns`` on ``shard`` with the options and indexes it has on shard ``like`` (as a migration's
        recipient clones them)."""
        if self.exists_on(shard, ns):
            return
        db, _, coll = ns.partition(".")
        donor = like or self.primary_of(db)
        options: dict = {}
        specs: list[dict] = []
        if donor != shard and self.exists_on(donor, ns):
            info = self.checked(donor, db, {"listCollections": 1, "filter": {"name": coll}})
            batch = info["cursor"]["firstBatch"]
            if batch:
                options = dict(bson.decode(batch[0].raw) if hasattr(batch[0], "raw") else batch[0]).get("options", {})
            specs = [dict(bson.decode(s.raw) if hasattr(s, "raw") else s) for s in
                     self.checked(donor, db, {"listIndexes": coll})["cursor"]["firstBatch"]]
        self.checked(shard, db, {"create": coll, **{k: v for k, v in options.items() if k != "uuid"}})
        extra = [{k: v for k, v in s.items() if k not in ("v", "ns")} for s in specs if s.get("name") != "_id_"]
        if extra:
            self.checked(shard, db, {"createIndexes": coll, "indexes": extra})

    # -- metadata written through to the config server ------------------------------------------------
    def write_metadata(self, table: RoutingTable) -> None:
        cfg = self.config["config"]
        doc = table.collection_doc()
        before = cfg["collections"].find_one({"_id": table.ns}) or {}
        if "maxChunkSizeBytes" in before:  # configureCollectionBalancing's range size stays with the collection
            doc["maxChunkSizeBytes"] = before["maxChunkSizeBytes"]
        cfg["collections"].replace_one({"_id": table.ns}, doc, upsert=True)
        cfg["chunks"].delete_many({"uuid": table.uuid})
        cfg["chunks"].insert_many([c.doc(table.uuid) for c in table.chunks])

    def forget_collection(self, ns: str) -> None:
        table = self.tables.pop(ns, None)
        if table is not None:
            self.config["config"]["collections"].delete_many({"_id": ns})
            self.config["config"]["chunks"].delete_many({"uuid": table.uuid})

    def log_change(self, what: str, ns: str, details: dict) -> None:
        self.config["config"]["changelog"].insert_one({
            "_id": "%s-%s" % (self.host, ObjectId()), "server": self.host, "shard": "config", "clientAddr": "",
            "time": datetime.datetime.now(datetime.timezone.utc), "what": what, "ns": ns, "details": details})

    def chunk_size_bytes(self, table: RoutingTable | None = None) -> int:
        mb = settings_chunk_size_mb(self.config)
        doc = self.config["config"]["collections"].find_one({"_id": table.ns}) if table is not None else None
        if doc and isinstance(doc.get("maxChunkSizeBytes"), int):
            return int(doc["maxChunkSizeBytes"])
        return int(mb * 1024 * 1024)

    # -- shardCollection ---------------------------------------------------------------------------------
    def shard_collection(self, ns: str, key: Any, unique: bool = False, collation: Any = None) -> dict:
        """shardCollection's rules (8.0): see the module docstring and docs/embedded-engine.md."""
        db, _, coll = ns.partition(".")
        if not db or not coll:
            raise fail("Invalid namespace specified '%s'" % ns, 73)
        if db in ("admin", "local") or (db == "config" and coll != "system.sessions") or coll.startswith("system."):
            raise fail("can't shard system namespaces", ILLEGAL_OPERATION)
        pattern = ShardKeyPattern(key)
        unique = bool(unique)
        if pattern.is_hashed and unique:
            raise fail("Hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the "
                       "hashed field by declaring an additional (non-hashed) unique index on the field.",
                       INVALID_OPTIONS)
        if collation is not None and collation != {"locale": "simple"}:
            raise fail("The collation for shardCollection must be {locale: 'simple'}, but found: %s" % (collation,),
                       2)
        existing = self.tables.get(ns)
        if existing is not None:
            if existing.key.spec != pattern.spec or existing.unique != unique:
                raise fail("sharding already enabled for collection %s" % ns, ALREADY_INITIALIZED)
            return {"collectionsharded": ns, "ok": 1.0}
        primary = self.primary_of(db, create=True)
        self._check_not_view(primary, db, coll)
        if not self.exists_on(primary, ns):
            self.checked(primary, db, {"create": coll})
        specs = self._index_specs(primary, ns)
        created = self._validate_index(primary, ns, pattern, unique, specs, refine=False)
        empty = self.collection(primary, ns).find_one({}) is None
        table = RoutingTable(ns, pattern, unique, first_chunks(pattern, self.shard_names, primary, empty))
        self.tables[ns] = table
        for s in table.shards():
            self.ensure_collection(s, ns, like=primary)
        self.write_metadata(table)
        self.log_change("shardCollection.end", ns, {"version": str(table.version), "numChunks": len(table.chunks)})
        out = {"collectionsharded": ns, "ok": 1.0}
        if created:
            out = {"collectionsharded": ns, "ok": 1.0}
        return out

    def _check_not_view(self, shard: str, db: str, coll: str) -> None:
        info = self.checked(shard, db, {"listCollections": 1, "filter": {"name": coll}})["cursor"]["firstBatch"]
        if info:
            d = bson.decode(info[0].raw) if hasattr(info[0], "raw") else info[0]
            if d.get("type") == "view":
                raise fail("Namespace %s.%s is a view, not a collection" % (db, coll), 166)
            if d.get("type") == "timeseries":
                raise fail(not_modelled("Sharding a time-series collection"), 115)
            if (d.get("options") or {}).get("capped"):
                raise fail("can't shard a capped collection", INVALID_OPTIONS)

    def _index_specs(self, shard: str, ns: str) -> list[dict]:
        db, _, coll = ns.partition(".")
        batch = self.checked(shard, db, {"listIndexes": coll})["cursor"]["firstBatch"]
        return [dict(bson.decode(s.raw) if hasattr(s, "raw") else s) for s in batch]

    def _validate_index(self, shard: str, ns: str, pattern: ShardKeyPattern, unique: bool, specs: list[dict],
                        refine: bool) -> bool:
        """``validShardKeyIndexExists`` / ``validateShardKeyIndexExistsOrCreateIfPossible``: True when the
        supporting index was created."""
        db, _, coll = ns.partition(".")
        for s in specs:  # 1. every unique index must start with the shard key
            if s.get("unique") and not pattern.is_unique_index_compatible(s["key"]):
                raise fail("can't shard collection '%s' with unique index on %s and proposed shard key %s. "
                           "Uniqueness can't be maintained unless shard key is a prefix"
                           % (ns, show(s["key"]), show(pattern.spec)), INVALID_OPTIONS)
        useful = [s for s in specs if not s.get("sparse") and "partialFilterExpression" not in s
                  and "collation" not in s and not s.get("hidden") and pattern.is_prefix_of(s["key"])]
        if useful and unique:  # 3. unique: an index on exactly the key, unique (or _id)
            exact = [s for s in useful if list(s["key"].items()) == list(pattern.spec.items())]
            if not exact:
                useful = []
            elif not (exact[0].get("unique") or list(exact[0]["key"])[0] == "_id"):
                raise fail("can't shard collection %s, %s index not unique, and unique index explicitly specified"
                           % (ns, show(pattern.spec)), INVALID_OPTIONS)
        if useful:
            multikey = self._multikey_indexes(shard, ns)
            if all(s["name"] in multikey for s in useful):
                msg = "couldn't find valid index for shard key"
                for s in specs:
                    if pattern.is_prefix_of(s["key"]) and s["name"] in multikey:
                        msg += "\nIndex %s cannot be used for sharding because: Index key is multikey." % s["name"]
                raise fail(msg, INVALID_OPTIONS)
            return False
        if refine:
            raise fail("Please create an index that starts with the proposed shard key before refining the shard "
                       "key of the collection", INVALID_OPTIONS)
        if self.collection(shard, ns).find_one({}) is not None:
            raise fail("Please create an index that starts with the proposed shard key before sharding the "
                       "collection", INVALID_OPTIONS)
        name = "_".join("%s_%s" % (f, v if v == "hashed" else int(v)) for f, v in pattern.spec.items())
        index: dict = {"key": dict(pattern.spec), "name": name}
        if unique and list(pattern.spec) != ["_id"]:
            index["unique"] = True
        self.checked(shard, db, {"createIndexes": coll, "indexes": [index]})
        return True

    def _multikey_indexes(self, shard: str, ns: str) -> set[str]:
        """Names of the collection's indexes that are multikey on ``shard``."""
        store = self.collection(shard, ns)._store
        return {name for name, ix in getattr(store, "ix", {}).items() if ix.multikey}

    # -- documents and ranges -----------------------------------------------------------------------------
    def rows(self, table: RoutingTable, shard: str) -> list[tuple[bytes, int, Any]]:
        """(routing key, BSON size, _id) of every document of the collection on ``shard``, in key order;
        remembered until the shard's collection changes."""
        if not self.exists_on(shard, table.ns):
            return []
        store = self.collection(shard, table.ns)._store
        cached = self._rows.get((shard, table.ns))
        if cached is not None and cached[0] is store and cached[1] == store.version and cached[2] is table.key:
            return cached[3]
        key = table.key
        out = [(key.key_bytes(d), len(bson.encode(d)), d["_id"]) for d in list(store.docs.values())]
        out.sort(key=lambda r: r[0])
        self._rows[(shard, table.ns)] = (store, store.version, table.key, out)
        return out

    def chunk_rows(self, table: RoutingTable, chunk: Chunk) -> list[tuple[bytes, int, Any]]:
        """The rows of ``chunk`` (on its shard), in key order."""
        rows = self.rows(table, chunk.shard)
        keys = [r[0] for r in rows]
        lo = bisect.bisect_left(keys, chunk.min_b)
        hi = bisect.bisect_left(keys, chunk.max_b)
        return rows[lo:hi]

    def too_big_to_move(self, table: RoutingTable, chunk: Chunk, rows: list | None = None) -> bool:
        """ChunkTooBig: the range holds more documents than a migration takes, 2 x (range size / the average
        document size of the collection on the donor shard) (``MigrationChunkClonerSource``'s
        ``maxRecsWhenFull`` in ``src/mongo/db/s/migration_chunk_cloner_source.cpp``)."""
        rows = self.chunk_rows(table, chunk) if rows is None else rows
        on_donor = self.rows(table, chunk.shard)
        if not rows or not on_donor:
            return False
        avg = sum(r[1] for r in on_donor) // len(on_donor) or 5  # kMinBSONLength when the average rounds to 0
        return len(rows) > 2 * max(self.chunk_size_bytes(table) // avg, 1)

    def chunk_data(self, table: RoutingTable, chunk: Chunk) -> int:
        return sum(r[1] for r in self.chunk_rows(table, chunk))

    def split_at(self, table: RoutingTable, middle: dict) -> None:
        """Split the chunk holding ``middle`` (a full key document) at it."""
        values = [middle.get(f) for f in table.key.fields]
        kb = encode_key(values)
        chunk = table.chunk_for(kb)
        if kb == chunk.min_b:
            raise fail("cannot split chunk %s at key %s" % (_range(chunk), show(middle)), 2)
        left = Chunk(chunk.min, dict(middle), chunk.shard, chunk.major, chunk.minor + 1)
        right = Chunk(dict(middle), chunk.max, chunk.shard, chunk.major, chunk.minor + 2)
        left.on_since = right.on_since = chunk.on_since
        table.set_chunks([c for c in table.chunks if c is not chunk] + [left, right])
        self.write_metadata(table)
        self.log_change("split", table.ns, {"before": {"min": chunk.min, "max": chunk.max},
                                             "left": {"min": left.min, "max": left.max},
                                             "right": {"min": right.min, "max": right.max}})

    def split_point_by_size(self, table: RoutingTable, chunk: Chunk, limit: int) -> dict | None:
        """Where to cut ``chunk`` so its first part holds about ``limit`` bytes (``autoSplitVector``): the first key
        value after the point, else the first document of the key value the point falls in; None when the chunk
        holds less, or holds one key value (it cannot split)."""
        rows = self.chunk_rows(table, chunk)
        total = 0
        for i, (kb, size, _id) in enumerate(rows):
            total += size
            if total >= limit and i + 1 < len(rows):
                for j in range(i + 1, len(rows)):
                    if rows[j][0] != kb:
                        return self._key_doc_of(table, chunk.shard, rows[j][2])
                start = next(j for j in range(i + 1) if rows[j][0] == kb)
                if start > 0:
                    return self._key_doc_of(table, chunk.shard, rows[start][2])
                return None
        return None

    def _key_doc_of(self, table: RoutingTable, shard: str, _id: Any) -> dict:
        doc = self.collection(shard, table.ns).find_one({"_id": _id})
        return table.key.key_doc(table.key.routing_values(table.key.values(doc)))

    def move_range(self, table: RoutingTable, min_: dict | None, max_: dict | None, to: str) -> bool:
        """moveRange: move ``[min, max)`` (one chunk, or the front/back part of one) to shard ``to``. With only
        ``min`` the range ends where it holds about the range size; a range of one key value over the range size
        is marked jumbo instead and stays (False)."""
        if to not in self.shards:
            raise fail("Shard %s not found" % to, 70)  # ShardNotFound
        if min_ is not None:
            kb = encode_key([min_.get(f) for f in table.key.fields])
            chunk = table.chunk_for(kb)
            if kb != chunk.min_b:
                raise fail("The provided min %s is not the lower bound of a range; split first" % show(min_), 2)
        else:
            kb = encode_key([max_.get(f) for f in table.key.fields])  # type: ignore[union-attr]
            chunk = next((c for c in table.chunks if c.max_b == kb), None)
            if chunk is None:
                raise fail("The provided max %s is not the upper bound of a range" % show(max_ or {}), 2)
        if min_ is not None and max_ is not None:
            mb = encode_key([max_.get(f) for f in table.key.fields])
            if mb != chunk.max_b:
                if not chunk.min_b < mb < chunk.max_b:
                    raise fail("The range [%s, %s) is not inside one range" % (show(min_), show(max_)), 2)
                self.split_at(table, dict(max_))
                chunk = table.chunk_for(kb)
        elif min_ is not None and max_ is None:
            limit = self.chunk_size_bytes(table)
            point = self.split_point_by_size(table, chunk, limit)
            if point is not None:
                self.split_at(table, point)
                chunk = table.chunk_for(kb)
            rows = self.chunk_rows(table, chunk)
            if rows and rows[0][0] == rows[-1][0] and self.too_big_to_move(table, chunk, rows):
                chunk.jumbo = True  # one key value, too many documents: it can neither split nor move
                self.write_metadata(table)
                return False
        if chunk.shard == to:
            return False
        self._migrate(table, chunk, to)
        return True

    def _migrate(self, table: RoutingTable, chunk: Chunk, to: str) -> None:
        donor = chunk.shard
        self.ensure_collection(to, table.ns, like=donor)
        moving = self.chunk_rows(table, chunk)
        ids = [r[2] for r in moving]
        if ids:
            donor_rows = self.rows(table, donor)
            to_rows = self.rows(table, to)
            src = self.collection(donor, table.ns)
            dst = self.collection(to, table.ns)
            moved = list(src.find({"_id": {"$in": ids}}))
            dst.insert_many(moved, ordered=False)
            src.delete_many({"_id": {"$in": ids}})
            # the remembered rows follow the documents (no need to read both collections again)
            gone = {id(r) for r in moving}
            self._rows[(donor, table.ns)] = (src._store, src._store.version, table.key,
                                             [r for r in donor_rows if id(r) not in gone])
            self._rows[(to, table.ns)] = (dst._store, dst._store.version, table.key,
                                          sorted(to_rows + moving, key=lambda r: r[0]))
        new = Chunk(chunk.min, chunk.max, to, table.next_major(), 0)
        new.on_since = Timestamp(int(datetime.datetime.now(datetime.timezone.utc).timestamp()), 1)
        table.set_chunks([c for c in table.chunks if c is not chunk] + [new])
        self.migrations += 1
        self.write_metadata(table)
        self.log_change("moveChunk.from", table.ns, {"min": chunk.min, "max": chunk.max, "from": donor, "to": to,
                                                      "note": "success", "docs": len(ids)})

    # -- the balancer -----------------------------------------------------------------------------------
    def shard_sizes(self, table: RoutingTable) -> dict[str, int]:
        """The collection's data size (BSON bytes, as collStats' ``size``) on each shard."""
        return {s: sum(r[1] for r in self.rows(table, s)) for s in self.shard_names}

    def balancer_round(self, only: str | None = None) -> int:
        """One balancing round over every sharded collection (or ``only``): the number of migrations."""
        moved = 0
        self.balancer_rounds += 1
        for ns, table in sorted(self.tables.items()):
            if (only and ns != only) or table.no_balance:
                continue
            moved += self._balance_collection(table)
        return moved

    def collection_balanced(self, table: RoutingTable) -> bool:
        sizes = self.shard_sizes(table)
        return max(sizes.values()) - min(sizes.values()) < MIGRATION_THRESHOLD_RANGES * self.chunk_size_bytes(table) \
            or not self._movable(table, max(sizes, key=lambda s: (sizes[s], s)))

    def _movable(self, table: RoutingTable, shard: str) -> bool:
        return any(c.shard == shard and not c.jumbo for c in table.chunks)

    def _balance_collection(self, table: RoutingTable) -> int:
        """8.0's data-size policy: pair the shard with the most data with the one with the least while they differ
        by at least 3 range sizes; each shard takes part in one migration a round."""
        limit = self.chunk_size_bytes(table)
        sizes = self.shard_sizes(table)
        busy: set[str] = set()
        moved = 0
        while True:
            free = [s for s in self.shard_names if s not in busy]
            if len(free) < 2:
                break
            donor = max(free, key=lambda s: (sizes[s], -self.shard_names.index(s)))
            recipient = min(free, key=lambda s: (sizes[s], self.shard_names.index(s)))
            if sizes[donor] - sizes[recipient] < MIGRATION_THRESHOLD_RANGES * limit:
                break
            chunk = self._pick_chunk(table, donor, limit)
            if chunk is None:
                busy.add(donor)
                continue
            if self.move_range(table, chunk.min, None, recipient):
                moved += 1
                busy.update((donor, recipient))
            sizes = self.shard_sizes(table)
        return moved

    def _pick_chunk(self, table: RoutingTable, donor: str, limit: int) -> Chunk | None:
        """The donor's first range holding data that is not jumbo; a range of one key value (it cannot split) that
        holds more documents than a migration takes (``too_big_to_move``) is marked jumbo and skipped (manual:
        "Jumbo Chunks")."""
        for c in table.chunks:
            if c.shard != donor or c.jumbo:
                continue
            rows = self.chunk_rows(table, c)
            if not rows:
                continue
            if rows[0][0] == rows[-1][0] and self.too_big_to_move(table, c, rows):
                c.jumbo = True
                self.write_metadata(table)
                continue
            return c
        return None

    def balance(self, only: str | None = None, max_rounds: int = 100) -> int:
        """Rounds until no migration happens (``balancerStart``); the number of migrations."""
        total = 0
        for _ in range(max_rounds):
            n = self.balancer_round(only)
            total += n
            if n == 0:
                break
        return total


def _range(c: Chunk) -> str:
    return "[%s, %s)" % (show(c.min), show(c.max))


__all__ = ["ShardedCluster", "check_shard_count", "MAX_SHARDS"]
