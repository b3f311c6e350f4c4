"""The command layer: MongoDB database commands (as a driver sends them over the wire) run on an EmbeddedClient.

``run_command(client, db_name, cmd, ctx)`` takes one decoded command document (OP_MSG body with its document
sequences folded in) and returns the reply document, ``{ok: 1, ...}`` or ``{ok: 0, errmsg, code, codeName}``
as a MongoDB 8.0 server would send it. It never raises for a learner's mistake: the engine's pymongo exceptions
become the server's error replies. ``ctx`` (a ``ServerContext``) holds what lives across commands and
connections: the cursor registry (``getMore`` / ``killCursors``), the server-side sessions and their
transactions (lsid + txnNumber + startTransaction/autocommit mapped onto ``labkit.engine.session.sessions``), the
cluster time and the handshake facts (host, port, connection ids).

This module is a thin adapter over the engine's collection/database methods; the wire protocol itself is in
``labkit/engine/transport/wire.py``.
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import itertools
import os
import platform
import random
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any, Callable

import bson
from bson import Int64, ObjectId, Timestamp
from bson.binary import Binary
from bson.raw_bson import RawBSONDocument
from pymongo import ReturnDocument
from pymongo.errors import (BulkWriteError, CollectionInvalid, ConfigurationError, InvalidName, InvalidOperation,
                            OperationFailure, PyMongoError)

from ..base.errors import not_modelled
from ..bson.values import type_name
from ..catalog import ttl as _ttl
from ..service.boundary import aborts_transaction, command_deadline as _command_deadline
from ..session import sessions
from . import current_op as _cur
from ..pipeline.change_stream import DEFAULT_AWAIT_S as _DEFAULT_AWAIT_S
from ..repl.oplog import wait_for

MAX_BSON = 16 * 1024 * 1024
MAX_MESSAGE = 48_000_000
MAX_WRITE_BATCH = 100_000
MAX_WIRE_VERSION = 25  # MongoDB 8.0
SERVED_VERSION = "8.0.0"
DEFAULT_BATCH = 101    # the server's default first batch (find, aggregate)
CURSOR_TIMEOUT_S = 600.0  # cursorTimeoutMillis default: 10 minutes idle
SESSION_TIMEOUT_MIN = 30  # logicalSessionTimeoutMinutes

# Code names of the server's error codes the engine and this layer raise (src/mongo/base/error_codes.yml).
CODE_NAMES = {
    1: "InternalError", 2: "BadValue", 4: "NoSuchKey", 9: "FailedToParse", 11: "UserNotFound",
    13: "Unauthorized", 14: "TypeMismatch", 20: "IllegalOperation", 26: "NamespaceNotFound",
    27: "IndexNotFound", 28: "PathNotViable", 40: "ConflictingUpdateOperators", 43: "CursorNotFound",
    48: "NamespaceExists", 50: "MaxTimeMSExpired", 52: "DollarPrefixedFieldName", 54: "NotSingleValueField",
    55: "InvalidDBRef", 56: "EmptyFieldName", 57: "DottedFieldName", 59: "CommandNotFound",
    61: "ShardKeyNotFound", 66: "ImmutableField", 67: "CannotCreateIndex", 68: "IndexAlreadyExists",
    72: "InvalidOptions", 73: "InvalidNamespace", 85: "IndexOptionsConflict", 86: "IndexKeySpecsConflict",
    96: "OperationFailed", 112: "WriteConflict", 115: "CommandNotSupported", 121: "DocumentValidationFailure",
    136: "CappedPositionLost", 175: "QueryPlanKilled", 359: "CannotConvertIndexToUnique",
    166: "CommandNotSupportedOnView", 168: "InvalidPipelineOperator", 181: "AmbiguousIndexKeyPattern",
    197: "InvalidIndexSpecificationOption",
    225: "TransactionTooOld", 238: "NotImplemented", 251: "NoSuchTransaction", 256: "TransactionCommitted",
    257: "TransactionTooLarge", 263: "OperationNotSupportedInTransaction",
    292: "QueryExceededMemoryLimitNoDiskUseAllowed",
    10334: "BSONObjectTooLarge", 11000: "DuplicateKey", 15974: "Location15974", 17419: "Location17419",
    31082: "SearchNotEnabled",
}

# Generic fields every command may carry (driver bookkeeping): stripped before a command's own parsing.
_GENERIC = {"$db", "lsid", "txnNumber", "autocommit", "startTransaction", "$clusterTime", "$readPreference",
            "readConcern", "writeConcern", "apiVersion", "apiStrict", "apiDeprecationErrors", "comment",
            "maxTimeMS", "$audit", "$client", "mayBypassWriteBlocking", "$configServerState", "$gleStats",
            "clientOperationKey", "$queryOptions", "txnRetryCounter"}


def code_name(code: int) -> str:
    """The server's codeName for ``code`` (``Location<code>`` for the numbered assertion codes)."""
    return CODE_NAMES.get(code, "Location%d" % code)


class CommandError(Exception):
    """An error reply of this layer: ``{ok: 0, errmsg, code, codeName, **extra}``."""

    def __init__(self, message: str, code: int, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.extra = extra

    def reply(self) -> dict:
        out = {"ok": 0.0, "errmsg": str(self), "code": self.code, "codeName": code_name(self.code)}
        out.update(self.extra)
        return out


_bson_type = type_name  # the server's type names (values.type_name)


def _unknown_field(cmd_name: str, field: str) -> CommandError:
    return CommandError("BSON field '%s.%s' is an unknown field." % (cmd_name, field), 40415)


# The commands of a MongoDB 8.0 server (manual "Database Commands", reference/command/; the aliases the server
# registers too): one the engine does not answer is a gap of the engine (CommandNotSupported 115), never
# CommandNotFound (59), which a server gives only for a name it does not know.
SERVER_COMMANDS = frozenset("""
    aggregate count distinct mapReduce
    bulkWrite delete find findAndModify getMore insert update
    planCacheClear planCacheClearFilters planCacheListFilters planCacheSetFilter
    authenticate saslStart saslContinue
    createUser dropAllUsersFromDatabase dropUser grantRolesToUser revokeRolesFromUser updateUser usersInfo
    createRole dropRole dropAllRolesFromDatabase grantPrivilegesToRole grantRolesToRole invalidateUserCache
    revokePrivilegesFromRole revokeRolesFromRole rolesInfo updateRole
    applyOps hello isMaster replSetAbortPrimaryCatchUp replSetFreeze replSetGetConfig replSetGetStatus
    replSetInitiate replSetMaintenance replSetReconfig replSetResizeOplog replSetStepDown replSetSyncFrom
    appendOplogNote
    abortMoveCollection abortReshardCollection abortUnshardCollection addShard addShardToZone analyzeShardKey
    balancerCollectionStatus balancerStart balancerStatus balancerStop checkMetadataConsistency cleanupOrphaned
    cleanupReshardCollection clearJumboFlag commitReshardCollection configureCollectionBalancing
    configureQueryAnalyzer enableSharding flushRouterConfig getShardMap isdbgrid listShards mergeAllChunksOnShard
    mergeChunks moveChunk moveCollection movePrimary moveRange refineCollectionShardKey removeShard
    removeShardFromZone reshardCollection setAllowMigrations shardCollection shardingState split
    transitionFromDedicatedConfigServer transitionToDedicatedConfigServer unshardCollection updateZoneKeyRange
    abortTransaction commitTransaction endSessions killAllSessions killAllSessionsByPattern killSessions
    refreshSessions startSession
    autoCompact cleanupStructuredEncryptionData cloneCollectionAsCapped collMod compact
    compactStructuredEncryptionData convertToCapped create createIndexes currentOp drop dropConnections
    dropDatabase dropIndexes filemd5 fsync fsyncUnlock getClusterParameter getDefaultRWConcern
    getParameter killCursors killOp listCollections listDatabases listIndexes logRotate reIndex
    removeQuerySettings renameCollection rotateCertificates setClusterParameter
    setDefaultRWConcern setFeatureCompatibilityVersion setIndexCommitQuorum setParameter setQuerySettings
    setUserWriteBlockMode shutdown
    buildInfo collStats connPoolStats connectionStatus dataSize dbHash dbStats driverOIDTest explain features
    getCmdLineOpts getLog hostInfo listCommands lockInfo netstat ping profile serverStatus
    top validate validateDBMetadata whatsmyuri
    logApplicationMessage createSearchIndexes dropSearchIndex updateSearchIndex
""".split())


def not_found(name: str) -> CommandError:
    """The error for a command this engine does not answer: a MongoDB 8.0 command is a gap of the engine
    (CommandNotSupported 115, "not modelled"); any other name is the server's CommandNotFound (59) "no such
    command". Command names are case sensitive on the server (a few legacy aliases aside)."""
    if name in ("createSearchIndexes", "dropSearchIndex", "updateSearchIndex"):
        # what a MongoDB 8.0 Community server without mongot answers (the pymongo methods do the same in process)
        return CommandError("Using Atlas Search Database Commands and the '$listSearchIndexes' aggregation stage "
                            "requires additional configuration. Please connect to Atlas or an AtlasCLI local "
                            "deployment to enable.", 31082)
    if name in SERVER_COMMANDS:
        return CommandError(not_modelled("The '%s' command" % name), 115)
    return CommandError("no such command: '%s'" % name, 59)



# ---------------------------------------------------------------------------------------------- context
class _ServerCursor:
    __slots__ = ("id", "ns", "docs", "pos", "last_used", "session_key", "codec")

    def __init__(self, cid: int, ns: str, docs: list, pos: int, session_key: Any, codec: bson.CodecOptions) -> None:
        self.codec = codec
        self.id = cid
        self.ns = ns
        self.docs = docs
        self.pos = pos
        self.last_used = time.monotonic()
        self.session_key = session_key

    tailable = await_data = False

    def close(self) -> None:
        """Release what the cursor holds (a change stream's place in the oplog)."""


class _StreamCursor(_ServerCursor):
    """A change stream's cursor (tailable, awaitData): its events come from the engine's oplog."""

    __slots__ = ("stream",)
    tailable = await_data = True

    def __init__(self, cid: int, ns: str, stream: Any, session_key: Any, codec: bson.CodecOptions) -> None:
        super().__init__(cid, ns, [], 0, session_key, codec)
        self.stream = stream

    def close(self) -> None:
        self.stream.close()


class _TailCursor(_ServerCursor):
    """A tailable cursor on a capped collection: the engine's cursor (``Cursor`` with its ``Tail``) stays
    open and each getMore reads what was inserted since (capped.py)."""

    __slots__ = ("cursor",)
    tailable = True

    def __init__(self, cid: int, ns: str, cursor: Any, session_key: Any, codec: bson.CodecOptions) -> None:
        super().__init__(cid, ns, [], 0, session_key, codec)
        self.cursor = cursor

    @property
    def await_data(self) -> bool:
        return bool(self.cursor._query_flags & 32)

    def close(self) -> None:
        self.cursor._tail = None


class _ServerSession:
    """One logical session (by lsid): an engine session and the transaction number it runs."""

    __slots__ = ("session", "txn_number", "last_used", "committed")

    def __init__(self, session: Any) -> None:
        self.session = session
        self.txn_number: int | None = None
        self.committed = False
        self.last_used = time.monotonic()


# The unsigned $clusterTime of a server without keys (immutable values, shared by every reply).
_NO_KEY_HASH = Binary(b"\0" * 20)
_NO_KEY_ID = Int64(0)


class ServerContext:
    """State shared by all connections of one served engine: cursors, sessions, cluster time, identity."""

    def __init__(self, host: str = "127.0.0.1", port: int = 27017, set_name: str = "labkit") -> None:
        self.host = host
        self.port = port
        self.set_name = set_name
        self.process_id = ObjectId()
        self.started = time.time()
        self.argv: list[str] = []
        self.cursors: dict[int, _ServerCursor] = {}
        self.sessions: dict[bytes, _ServerSession] = {}
        self._conn_ids = itertools.count(1)
        self._ts_lock = threading.Lock()
        self._last_ts = (0, 0)
        self.connections = 0
        self.total_connections = 0
        self.clients: dict[int, dict] = {}   # connection id -> {client: "host:port", metadata: hello's client}
        self.active: dict[int, dict] = {}    # connection id -> the command it runs or waits to run ($currentOp)
        self.session_uses: dict[bytes, tuple] = {}  # lsid id -> (id, last use): the logical session cache
        self._opids = itertools.count(1)
        self.clock: Any = None  # the engine's oplog (repl/oplog.py): its clock is the cluster time

    @property
    def address(self) -> str:
        return "%s:%d" % (self.host, self.port)

    def next_connection_id(self) -> int:
        self.total_connections += 1
        return next(self._conn_ids)

    def connected(self, conn_id: int, peer: Any) -> None:
        """A client connection opened (``peer``: its socket address), as $currentOp lists it."""
        host = peer[0] if isinstance(peer, tuple) and peer else str(peer)
        port = peer[1] if isinstance(peer, tuple) and len(peer) > 1 else 0
        self.clients[conn_id] = {"client": ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)}

    def disconnected(self, conn_id: int) -> None:
        self.clients.pop(conn_id, None)
        self.active.pop(conn_id, None)

    def begin(self, conn_id: int, db_name: str, cmd: dict) -> dict:
        """The connection starts (or waits to start) running ``cmd``: its currentOp entry."""
        run = {"conn": conn_id, "db": db_name, "cmd": cmd, "opid": next(self._opids), "t0": time.time()}
        self.active[conn_id] = run
        return run

    def end(self, conn_id: int) -> None:
        self.active.pop(conn_id, None)

    def cluster_time(self) -> Timestamp:
        """A strictly increasing Timestamp (seconds, increment), the replica set's clock: the engine's own (the
        oplog's clock, also the history's: operationTime orders with writes, snapshot reads and change events'
        clusterTime), or this context's before the first command."""
        if self.clock is not None:
            return self.clock.tick()
        with self._ts_lock:
            now = int(time.time())
            sec, inc = self._last_ts
            self._last_ts = (now, 1) if now > sec else (sec, inc + 1)
            return Timestamp(*self._last_ts)

    def gossip(self) -> dict:
        """``$clusterTime`` / ``operationTime`` fields every reply of a replica-set member carries."""
        ts = self.cluster_time()
        return {"$clusterTime": {"clusterTime": ts, "signature": {"hash": _NO_KEY_HASH, "keyId": _NO_KEY_ID}},
                "operationTime": ts}

    # -- cursors --------------------------------------------------------------------------------------
    def new_cursor(self, ns: str, docs: list, pos: int, session_key: Any,
                   codec: bson.CodecOptions | None = None) -> int:
        self._prune()
        cid = self.new_id()
        self.cursors[cid] = _ServerCursor(cid, ns, docs, pos, session_key, codec or bson.CodecOptions())
        return cid

    def new_id(self) -> int:
        """A cursor id not in use (random 62-bit, never 0)."""
        while True:
            cid = random.getrandbits(62) + 1
            if cid not in self.cursors:
                return cid

    def _prune(self) -> None:
        now = time.monotonic()
        for cid in [c.id for c in self.cursors.values() if now - c.last_used > CURSOR_TIMEOUT_S]:
            self.cursors.pop(cid).close()

    # -- sessions -------------------------------------------------------------------------------------
    def session_for(self, client: Any, lsid: Any) -> _ServerSession | None:
        if not isinstance(lsid, Mapping) or "id" not in lsid:
            return None
        key = bytes(lsid["id"])
        self._prune_sessions()
        s = self.sessions.get(key)
        if s is None:
            s = self.sessions[key] = _ServerSession(client.start_session())
        s.session._id = {"id": lsid["id"]}  # the driver's lsid (change events of its transactions carry it)
        s.last_used = time.monotonic()
        return s

    def _prune_sessions(self) -> None:
        """Sessions idle longer than logicalSessionTimeoutMinutes expire (their transaction is aborted)."""
        now = time.monotonic()
        for key in [k for k, s in self.sessions.items() if now - s.last_used > SESSION_TIMEOUT_MIN * 60]:
            self.sessions.pop(key).session.end_session()
            self._drop_session_cursors(key)

    def end_session(self, lsid: Any) -> None:
        if isinstance(lsid, Mapping) and "id" in lsid:
            self.session_uses.pop(bytes(lsid["id"]), None)
            s = self.sessions.pop(bytes(lsid["id"]), None)
            if s is not None:
                s.session.end_session()
                self._drop_session_cursors(bytes(lsid["id"]))

    def end_all_sessions(self) -> None:
        for key in list(self.sessions):
            self.sessions.pop(key).session.end_session()
            self._drop_session_cursors(key)

    def _drop_session_cursors(self, key: bytes) -> None:
        for cid in [c.id for c in self.cursors.values() if c.session_key == key]:
            self.cursors.pop(cid).close()


# ---------------------------------------------------------------------------------------------- helpers
def _encode_docs(docs: list, codec: bson.CodecOptions) -> list:
    return [d if isinstance(d, RawBSONDocument) else RawBSONDocument(bson.encode(d, codec_options=codec))
            for d in docs]


def _take_batch(docs: list, pos: int, n: int, codec: bson.CodecOptions) -> tuple[list, int]:
    """Up to ``n`` documents (0 = no count limit) from ``pos``, stopping once the batch passes 16 MiB.
    Documents are encoded as they are taken (a cursor read only in part is never encoded whole)."""
    out = []
    size = 0
    end = len(docs) if not n else min(len(docs), pos + n)
    while pos < end:
        d = docs[pos]
        if not isinstance(d, RawBSONDocument):
            d = docs[pos] = RawBSONDocument(bson.encode(d, codec_options=codec))
        ln = len(d.raw)
        if out and size + ln > MAX_BSON:
            break
        out.append(d)
        size += ln
        pos += 1
    return out, pos


def _batch_size(value: Any, cmd_name: str, field: str = "batchSize") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CommandError("BSON field '%s.%s' is the wrong type '%s', expected types '[long, int, decimal, "
                           "double]'" % (cmd_name, field, _bson_type(value)), 14)
    if value < 0:
        raise CommandError("BSON field '%s' value must be >= 0, actual value '%s'" % (field, int(value)), 51024)
    return int(value)


def _cursor_reply(ctx: ServerContext, ns: str, docs: list, first: int | None, single: bool, session_key: Any,
                  codec: bson.CodecOptions, lazy: bool = False) -> dict:
    """A ``cursor: {firstBatch, id, ns}`` reply; the rest of ``docs`` stays in the registry for getMore.
    ``lazy``: the documents are private copies (find's), so they may be encoded later, batch by batch;
    otherwise (they may share parts with stored documents) they are encoded now."""
    if not lazy:
        docs = _encode_docs(docs, codec)
    if first == 0:  # batchSize 0: open the cursor, return nothing yet
        batch, pos = [], 0
    else:
        batch, pos = _take_batch(docs, 0, DEFAULT_BATCH if first is None else first, codec)
    cid = 0
    if pos < len(docs) and not single:
        cid = ctx.new_cursor(ns, docs, pos, session_key, codec)
    return {"cursor": {"firstBatch": batch, "id": Int64(cid), "ns": ns}, "ok": 1.0}


def _session_key(cmd: dict) -> Any:
    lsid = cmd.get("lsid")
    if isinstance(lsid, Mapping) and "id" in lsid:
        return bytes(lsid["id"])
    return None


def _check_fields(cmd: dict, name: str, allowed: set[str]) -> None:
    for k in cmd:
        if k != name and k not in allowed and k not in _GENERIC:
            raise _unknown_field(name, k)


def _coll_name(cmd: dict, name: str) -> str:
    v = cmd[name]
    if not isinstance(v, str):
        raise CommandError("collection name has invalid type %s" % _bson_type(v), 73)
    if not v:
        raise CommandError("Invalid namespace specified '%s.'" % cmd.get("$db", ""), 73)
    return v


@dataclasses.dataclass(eq=False)
class _Call:
    """What one command runs with: the client, the database, the bound session (in a transaction) and codec;
    ``conn_id`` is the wire connection that sent it (0 in process)."""

    client: Any
    db_name: str
    cmd: dict
    ctx: ServerContext
    session: Any
    codec: bson.CodecOptions
    db: Any = dataclasses.field(init=False)
    conn_id: int = dataclasses.field(default=0, init=False)

    def __post_init__(self) -> None:
        self.db = self.client.get_database(self.db_name)

    def running(self) -> dict:
        """This command's currentOp entry (the wire registers it before it waits for the engine)."""
        run = self.ctx.active.get(self.conn_id)
        if run is None or run["cmd"] is not self.cmd:
            run = self.ctx.begin(self.conn_id, self.db_name, self.cmd)
            self.ctx.end(self.conn_id)
        return run

    def coll(self, name: str) -> Any:
        return self.db.get_collection(name)

    def kw(self) -> dict:
        return {"session": self.session} if self.session is not None else {}

    def ns(self, name: str) -> str:
        return "%s.%s" % (self.db_name, name)


# ---------------------------------------------------------------------------------------------- handshake
def hello_reply(ctx: ServerContext, connection_id: int, legacy_name: bool = False) -> dict:
    """The hello/isMaster reply of the primary of a single-member replica set (so drivers allow transactions)."""
    from .._version import __version__ as labkit_version
    out: dict[str, Any] = {}
    if legacy_name:
        out["ismaster"] = True
    else:
        out["isWritablePrimary"] = True
    out.update({
        "topologyVersion": {"processId": ctx.process_id, "counter": Int64(0)},
        "hosts": [ctx.address], "setName": ctx.set_name, "setVersion": 1, "secondary": False,
        "primary": ctx.address, "me": ctx.address,
        "electionId": ObjectId("7fffffff0000000000000001"),
        "lastWrite": {"opTime": {"ts": ctx.cluster_time(), "t": Int64(1)},
                      "lastWriteDate": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)},
        "maxBsonObjectSize": MAX_BSON, "maxMessageSizeBytes": MAX_MESSAGE, "maxWriteBatchSize": MAX_WRITE_BATCH,
        "localTime": datetime.datetime.now(datetime.timezone.utc),
        "logicalSessionTimeoutMinutes": SESSION_TIMEOUT_MIN, "connectionId": connection_id,
        "minWireVersion": 0, "maxWireVersion": MAX_WIRE_VERSION, "readOnly": False,
        "labkit": {"engine": "embedded-served", "version": labkit_version},
        "ok": 1.0,
    })
    return out


def build_info() -> dict:
    """buildInfo as an 8.0 server answers it, plus the ``labkit`` field that tells a served engine apart."""
    from .._version import __version__ as labkit_version
    parts = [int(x) for x in SERVED_VERSION.split(".")]
    return {"version": SERVED_VERSION, "gitVersion": "labkit-embedded", "modules": [], "allocator": "system",
            "javascriptEngine": "none", "sysInfo": "deprecated", "versionArray": parts + [0],
            "openssl": {"running": "disabled", "compiled": "disabled"},
            "buildEnvironment": {"distmod": "labkit", "target_os": platform.system().lower(),
                                 "target_arch": platform.machine()},
            "bits": 64, "debug": False, "maxBsonObjectSize": MAX_BSON, "storageEngines": ["labkit-embedded"],
            "labkit": {"engine": "embedded-served", "version": labkit_version,
                       "models": "MongoDB 8.0 classic engine"},
            "ok": 1.0}


# ---------------------------------------------------------------------------------------------- reads
def _find(c: _Call) -> dict:
    cmd = c.cmd
    name = _coll_name(cmd, "find")
    _check_fields(cmd, "find", {"filter", "projection", "sort", "skip", "limit", "batchSize", "singleBatch",
                                "hint", "collation", "let", "allowDiskUse", "min", "max", "returnKey",
                                "showRecordId", "tailable", "awaitData", "noCursorTimeout", "oplogReplay",
                                "allowPartialResults", "readOnce", "allowSpeculativeMajorityRead",
                                "singleBatch", "maxScan", "snapshot"})
    coll = c.coll(name)
    flags = (2 if cmd.get("tailable") else 0) | (32 if cmd.get("awaitData") else 0)  # capped.py: Tail
    kw: dict[str, Any] = dict(c.kw())
    flt = cmd.get("filter")
    if flt is not None and not isinstance(flt, Mapping):
        raise CommandError("BSON field 'find.filter' is the wrong type '%s', expected type 'object'"
                           % _bson_type(flt), 14)
    skip = cmd.get("skip", 0)
    limit = cmd.get("limit", 0)
    for f, v in (("skip", skip), ("limit", limit)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise CommandError("BSON field 'find.%s' is the wrong type '%s', expected types '[long, int, decimal, "
                               "double]'" % (f, _bson_type(v)), 14)
        if v < 0:
            raise CommandError("BSON field '%s' value must be >= 0, actual value '%s'" % (f, int(v)), 51024)
    first = _batch_size(cmd.get("batchSize"), "find")
    for key, arg in (("projection", "projection"), ("sort", "sort"), ("hint", "hint"), ("collation", "collation"),
                     ("let", "let"), ("allowDiskUse", "allow_disk_use"), ("maxTimeMS", "max_time_ms"),
                     ("comment", "comment"), ("min", "min"), ("max", "max"), ("returnKey", "return_key"),
                     ("showRecordId", "show_record_id")):
        if cmd.get(key) is not None and (cmd.get(key) is not False or key == "allowDiskUse"):
            kw[arg] = cmd[key]
    for key in ("sort", "projection", "hint"):
        if key in kw and isinstance(kw[key], Mapping) and not kw[key]:
            kw.pop(key)  # {} means "none" on the server
    if flags:
        return _tailable_find(c, coll, flt, int(skip), int(limit), kw, flags, first, bool(cmd.get("singleBatch")))
    cur = coll.find(flt or {}, skip=int(skip), limit=int(limit), **kw)
    cur._lab_served = True  # the server's own errors (min/max without a hint: 51173), no driver-side checks
    docs = list(cur)
    return _cursor_reply(c.ctx, c.ns(name), docs, first, bool(cmd.get("singleBatch")), _session_key(cmd),
                         c.codec, lazy=True)


def _tailable_find(c: _Call, coll: Any, flt: Any, skip: int, limit: int, kw: dict, flags: int, first: int | None,
                   single: bool) -> dict:
    """``find`` with ``tailable`` (and ``awaitData``): the engine's tailable cursor (capped.py ``Tail``), kept
    in the registry for getMore unless the collection is empty or missing (find.cpp ``shouldSaveCursor``)."""
    cur = coll.find(flt or {}, skip=skip, limit=-limit if single and limit else limit, **kw)
    cur._query_flags = flags
    if single and not limit:
        from ..catalog.capped import check_tailable_options
        check_tailable_options(bool(flags & 2), bool(flags & 32), None, True)
    cur._tail_first = DEFAULT_BATCH if first is None else first
    cur._execute()
    ns = c.ns(coll.name)
    batch, _ = _take_batch(_encode_docs(cur._results, c.codec), 0, 0, c.codec)
    cid = 0
    if cur._tail is not None:
        c.ctx._prune()
        cid = c.ctx.new_id()
        c.ctx.cursors[cid] = _TailCursor(cid, ns, cur, _session_key(c.cmd), c.codec)
    return {"cursor": {"firstBatch": batch, "id": Int64(cid), "ns": ns}, "ok": 1.0}


def _tail_get_more(c: _Call, cur: "_TailCursor", n: int) -> dict:
    """A tailable cursor's getMore: the documents inserted since the last batch; with none on an awaitData
    cursor the reply says how long the caller may wait for an insert (maxTimeMS, else the server's 1 second)
    outside the server's lock (``pop_await``). A lost position or a dropped collection ends the cursor."""
    cur.last_used = time.monotonic()
    t0 = time.perf_counter()
    try:
        docs, mark = cur.cursor._tail_get_more(n)
    except OperationFailure:
        c.ctx.cursors.pop(cur.id, None)
        raise
    from ..service.boundary import record_top
    record_top(c.client._store, cur.ns, "getmore", time.perf_counter() - t0, False)
    batch, _ = _take_batch(_encode_docs(docs, cur.codec), 0, 0, cur.codec)
    reply: dict = {"cursor": {"nextBatch": batch, "id": Int64(cur.id), "ns": cur.ns}, "ok": 1.0}
    if mark is not None:
        log = cur.cursor._tail.log
        reply[AWAIT_KEY] = (functools.partial(log.wait_pulse, mark), _await_seconds(c.cmd))
    return reply


def _await_seconds(cmd: dict) -> float:
    """How long an awaitData getMore waits: its maxTimeMS, else the server's default of 1 second."""
    ms = cmd.get("maxTimeMS")
    return ms / 1000.0 if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms > 0 else _DEFAULT_AWAIT_S


def _get_more(c: _Call) -> dict:
    cmd = c.cmd
    _check_fields(cmd, "getMore", {"collection", "batchSize", "term", "lastKnownCommittedOpTime"})
    cid = cmd["getMore"]
    if isinstance(cid, bool) or not isinstance(cid, int):
        raise CommandError("BSON field 'getMore.getMore' is the wrong type '%s', expected type 'long'"
                           % _bson_type(cid), 14)
    coll = cmd.get("collection")
    if not isinstance(coll, str):
        raise CommandError("BSON field 'getMore.collection' is missing but a required field", 40414)
    cur = c.ctx.cursors.get(int(cid))
    if cur is None:
        raise CommandError("cursor id %d not found" % cid, 43)
    if cur.ns != c.ns(coll):
        raise CommandError("Requested getMore on namespace '%s', but cursor belongs to a different namespace %s"
                           % (c.ns(coll), cur.ns), 13)
    n = _batch_size(cmd.get("batchSize"), "getMore") or 0
    if cmd.get("maxTimeMS") and not cur.await_data:  # getmore_cmd.cpp
        raise CommandError("cannot set maxTimeMS on getMore command for a non-awaitData cursor", 2)
    if isinstance(cur, _StreamCursor):
        return _stream_get_more(c, cur, n)
    if isinstance(cur, _TailCursor):
        return _tail_get_more(c, cur, n)
    t0 = time.perf_counter()
    batch, pos = _take_batch(cur.docs, cur.pos, n, cur.codec)
    if not cur.ns.split(".", 1)[1].startswith("$cmd"):
        from ..service.boundary import record_top
        record_top(c.client._store, cur.ns, "getmore", time.perf_counter() - t0, False)  # top's getmore
    cur.pos = pos
    cur.last_used = time.monotonic()
    out_id = cur.id
    if pos >= len(cur.docs):
        del c.ctx.cursors[cur.id]
        out_id = 0
    return {"cursor": {"nextBatch": batch, "id": Int64(out_id), "ns": cur.ns}, "ok": 1.0}


AWAIT_KEY = "$labkitAwaitData"  # a private reply field: the getMore may wait for an event (popped by pop_await)


def _encode_events(events: list, codec: bson.CodecOptions) -> list:
    """Change events as raw BSON in their own field order: the server puts ``txnNumber``/``lsid`` and a rename's
    ``to`` before ``_id`` (change_stream_event_transform.cpp), and ``bson.encode`` would move a top-level
    ``_id`` first, so such an event is encoded as a sub-document and cut out."""
    out = []
    for ev in events:
        if next(iter(ev), "_id") == "_id":
            out.append(RawBSONDocument(bson.encode(ev, codec_options=codec)))
        else:
            out.append(RawBSONDocument(bson.encode({"d": ev}, codec_options=codec)[7:-1]))
    return out


def _stream_batch(stream: Any, events: list, codec: bson.CodecOptions) -> list:
    """The encoded events that fit in one reply (16 MiB); the rest go back to the stream for the next batch."""
    batch, taken = _take_batch(_encode_events(events, codec), 0, 0, codec)
    if taken < len(events):
        stream.pending.extendleft(reversed(events[taken:]))
        stream.pbrt = events[taken - 1]["_id"]
    return batch


def _stream_get_more(c: _Call, cur: _StreamCursor, n: int) -> dict:
    """A change stream's getMore: the events available now; with none, the reply carries how long the caller
    may wait for one (maxTimeMS, the server's 1 second by default) outside the server's lock (``pop_await``)."""
    stream = cur.stream
    cur.last_used = time.monotonic()
    try:
        events = stream.next_batch(n)
    except OperationFailure:
        c.ctx.cursors.pop(cur.id, None)
        stream.close()
        raise
    batch = _stream_batch(stream, events, cur.codec)
    out_id = cur.id
    if stream.invalidated or stream.closed:
        c.ctx.cursors.pop(cur.id, None)
        out_id = 0
    reply: dict = {"cursor": {"nextBatch": batch, "postBatchResumeToken": stream.pbrt, "id": Int64(out_id),
                              "ns": cur.ns}, "ok": 1.0}
    if not batch and out_id:
        reply[AWAIT_KEY] = (functools.partial(stream.log.wait, stream.seq), _await_seconds(c.cmd))
    return reply


def pop_await(reply: dict) -> tuple | None:
    """``(wait, seconds)`` when this reply is an empty batch of an awaitData cursor (a change stream, or a
    tailable cursor on a capped collection) the caller may wait for: ``wait(timeout)`` blocks on the engine's
    oplog (``Oplog.wait`` for a new entry, ``Oplog.wait_pulse`` for a capped insert) and says whether something
    came, then the caller runs the same getMore again. Removed from the reply."""
    return reply.pop(AWAIT_KEY, None)


def await_more(reply: dict, rerun: Callable[[], dict], stopped: Any = None) -> dict:
    """The reply of an awaitData getMore (a change stream's or a tailable cursor's): when it came back empty,
    wait without the server's lock for what it awaits and run it again (``rerun``) until it returns something
    or its time (maxTimeMS, 1 second by default) is up; ``stopped``: an Event that ends the wait (the server
    stops). Any other reply is returned as it is (the private await field removed)."""
    wait = pop_await(reply)
    if wait is None:
        return reply
    last = [reply]

    def attempt() -> Any:
        last[0] = rerun()
        again = pop_await(last[0])
        return None if again is None else again[0]

    wait_for(wait[0], wait[1], attempt, stopped)
    return last[0]

def _change_stream(c: _Call, target: Any, pipeline: list, first: int | None) -> dict:
    """``aggregate`` with a first stage ``$changeStream``: a tailable awaitData cursor over change events, with
    the ``postBatchResumeToken`` (document_source_change_stream.cpp; the driver specification)."""
    from ..pipeline.change_stream import ChangeStreamCursor, split_pipeline
    arg, stages = split_pipeline(pipeline)
    if c.session is not None:
        raise CommandError("Cannot run aggregate with $changeStream in a multi-document transaction.", 263)
    if target == 1:
        coll, ns = None, c.ns("$cmd.aggregate")
    else:
        if not isinstance(target, str):
            raise CommandError("collection name has invalid type %s" % _bson_type(target), 73)
        coll, ns = target, c.ns(target)
    stream = ChangeStreamCursor(c.client, c.db_name, coll, arg, stages, c.cmd.get("collation"))
    try:
        events = stream.next_batch(DEFAULT_BATCH if first is None else first) if first != 0 else []
    except BaseException:
        stream.close()
        raise
    batch = _stream_batch(stream, events, c.codec)
    cid = 0
    if not (stream.invalidated or stream.closed):
        c.ctx._prune()
        cid = c.ctx.new_id()
        c.ctx.cursors[cid] = _StreamCursor(cid, ns, stream, _session_key(c.cmd), c.codec)
    return {"cursor": {"firstBatch": batch, "postBatchResumeToken": stream.pbrt, "id": Int64(cid), "ns": ns},
            "ok": 1.0}


def _kill_cursors(c: _Call) -> dict:
    cmd = c.cmd
    name = _coll_name(cmd, "killCursors")
    _check_fields(cmd, "killCursors", {"cursors"})
    ids = cmd.get("cursors")
    if not isinstance(ids, list):
        raise CommandError("BSON field 'killCursors.cursors' is missing but a required field", 40414)
    killed, not_found = [], []
    for cid in ids:
        cur = c.ctx.cursors.get(int(cid))
        if cur is not None and cur.ns == c.ns(name):
            c.ctx.cursors.pop(cur.id).close()
            killed.append(Int64(cid))
        else:
            not_found.append(Int64(cid))
    return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [], "cursorsUnknown": [],
            "ok": 1.0}


def _aggregate(c: _Call) -> dict:
    cmd = c.cmd
    target = cmd["aggregate"]
    _check_fields(cmd, "aggregate", {"pipeline", "cursor", "explain", "allowDiskUse", "hint", "collation", "let",
                                     "bypassDocumentValidation", "fromMongos", "needsMerge", "isMapReduceCommand"})
    pipeline = cmd.get("pipeline")
    if not isinstance(pipeline, list):
        raise CommandError("'pipeline' option must be specified as an array", 14)
    if cmd.get("explain"):
        inner = {k: v for k, v in cmd.items() if k not in ("explain", "cursor") and k not in _GENERIC}
        return _explain_inner(c, inner, "queryPlanner")
    if "cursor" not in cmd:
        raise CommandError("The 'cursor' option is required, except for aggregate with the explain argument", 9)
    cursor_opts = cmd.get("cursor") or {}
    if not isinstance(cursor_opts, Mapping):
        raise CommandError("cursor field must be missing or an object", 14)
    first = _batch_size(cursor_opts.get("batchSize"), "aggregate", "cursor.batchSize")
    from ..pipeline.change_stream import split_pipeline
    if split_pipeline(pipeline) is not None:
        return _change_stream(c, target, pipeline, first)
    kw: dict[str, Any] = dict(c.kw())
    for key in ("allowDiskUse", "hint", "collation", "let", "maxTimeMS", "comment", "bypassDocumentValidation"):
        if cmd.get(key) is not None:
            kw[key] = cmd[key]
    first_stage = next(iter(pipeline[0]), None) if pipeline and isinstance(pipeline[0], Mapping) else None
    if target == 1 and first_stage in ("$currentOp", "$listLocalSessions"):
        from .db_aggregate import run_database_pipeline
        docs = run_database_pipeline(c.db, pipeline, kw.get("let"), server=(c.ctx, c.running()))
        return _cursor_reply(c.ctx, c.ns("$cmd.aggregate"), docs, first, False, _session_key(cmd), c.codec)
    if target == 1:
        agg = getattr(c.db, "aggregate", None)
        if agg is None:
            raise CommandError(not_modelled("Database-level aggregate ({aggregate: 1})"), 115)
        docs = list(agg(pipeline, **kw))
        ns = c.ns("$cmd.aggregate")
    else:
        if not isinstance(target, str):
            raise CommandError("collection name has invalid type %s" % _bson_type(target), 73)
        counted = _count_pipeline(pipeline) if ("hint" in kw or "collation" in kw) else None
        if counted is not None:
            # pymongo's count_documents(hint=... / collation=...) pipeline: answered by the engine's count (which
            # takes hints and collations)
            flt, skip, limit = counted
            ckw = {k: v for k, v in kw.items() if k in ("session", "hint", "collation")}
            if limit is not None:
                ckw["limit"] = limit
            n = c.coll(target).count_documents(flt, skip=skip, **ckw)
            docs = [{"_id": 1, "n": n}] if n else []
        else:
            docs = list(c.coll(target).aggregate(pipeline, **kw))
        ns = c.ns(target)
    return _cursor_reply(c.ctx, ns, docs, first, False, _session_key(cmd), c.codec)


def _count_pipeline(pipeline: list) -> tuple[dict, int, int | None] | None:
    """(filter, skip, limit) when ``pipeline`` is ``[$match, ($skip), ($limit), $group {_id: 1, n: {$sum: 1}}]``
    (what drivers send for count_documents), else None."""
    if len(pipeline) < 2 or not all(isinstance(st, Mapping) and len(st) == 1 for st in pipeline):
        return None
    if dict(pipeline[-1]) != {"$group": {"_id": 1, "n": {"$sum": 1}}} or "$match" not in pipeline[0]:
        return None
    flt = pipeline[0]["$match"]
    if not isinstance(flt, Mapping):
        return None
    skip, limit = 0, None
    for st in pipeline[1:-1]:
        (op, v), = st.items()
        if op == "$skip" and skip == 0 and limit is None and isinstance(v, int) and v >= 0:
            skip = int(v)
        elif op == "$limit" and limit is None and isinstance(v, int) and v > 0:
            limit = int(v)
        else:
            return None
    return dict(flt), skip, limit


def _count(c: _Call) -> dict:
    cmd = c.cmd
    name = _coll_name(cmd, "count")
    _check_fields(cmd, "count", {"query", "limit", "skip", "hint", "collation", "fields"})
    if int(cmd.get("skip") or 0) < 0:
        raise CommandError("skip value is negative in count query", 51024)
    c.coll(name)  # the collection's existence as the other handlers check it
    # the database's count command (database.py), as the operation a profiler and command listeners see
    out = c.db.command(_strip(cmd), **c.kw())
    return {"n": out["n"], "ok": 1.0}


def _distinct(c: _Call) -> dict:
    cmd = c.cmd
    name = _coll_name(cmd, "distinct")
    _check_fields(cmd, "distinct", {"key", "query", "collation", "hint"})
    key = cmd.get("key")
    if key is None:
        raise CommandError("BSON field 'distinct.key' is missing but a required field", 40414)
    if not isinstance(key, str):
        raise CommandError("BSON field 'distinct.key' is the wrong type '%s', expected type 'string'"
                           % _bson_type(key), 14)
    kw: dict[str, Any] = dict(c.kw())
    for k in ("collation", "hint"):
        if cmd.get(k) is not None:
            kw[k] = cmd[k]
    return {"values": c.coll(name).distinct(key, cmd.get("query") or {}, **kw), "ok": 1.0}


# ---------------------------------------------------------------------------------------------- writes
def _server_message(msg: Any) -> str:
    """An error message as the server wrote it (pymongo's ``str(exc)`` appends ", full error: {...}")."""
    return str(msg).split(", full error: ", 1)[0]


def _write_error_doc(i: int, exc: BaseException) -> dict:
    if isinstance(exc, OperationFailure):
        code = exc.code or 2
        det = dict(exc.details or {})
        out = {"index": i, "code": code, "errmsg": _server_message(det.get("errmsg") or str(exc))}
        for k in ("errInfo", "keyPattern", "keyValue"):
            if k in det:
                out[k] = det[k]
        return out
    # a write error has index, code, errmsg (and errInfo / keyPattern / keyValue): no codeName
    if isinstance(exc, CommandError):
        return {"index": i, "code": exc.code, "errmsg": str(exc)}
    code, msg = _plain_error(exc)
    return {"index": i, "code": code, "errmsg": msg}


def _statements(cmd: dict, name: str, field: str) -> list:
    v = cmd.get(field)
    if not isinstance(v, list):
        raise CommandError("BSON field '%s.%s' is missing but a required field" % (name, field), 40414)
    if not v:
        raise CommandError("Write batch sizes must be between 1 and %d. Got 0 operations." % MAX_WRITE_BATCH, 16)
    if len(v) > MAX_WRITE_BATCH:
        raise CommandError("Write batch sizes must be between 1 and %d. Got %d operations."
                           % (MAX_WRITE_BATCH, len(v)), 16)
    return v


# Errors a write statement in a transaction raises as the command's error (labelled TransientTransactionError),
# not as a write error: WriteConflict, NoSuchTransaction, SnapshotUnavailable, SnapshotTooOld.
_TXN_TRANSIENT = frozenset({112, 251, 246, 239})


def _write_command(c: _Call, cname: str, field: str, allowed: set[str]) -> tuple[Any, list, bool, dict]:
    """What insert, update and delete share before their statements run: the collection, the checked
    statements of ``field``, ``ordered`` and the keyword arguments of every statement
    (``bypassDocumentValidation``, ``let``, the session)."""
    cmd = c.cmd
    name = _coll_name(cmd, cname)
    _check_fields(cmd, cname, {field, "ordered"} | allowed)
    stmts = _statements(cmd, cname, field)
    ordered = cmd.get("ordered", True) is not False
    base = dict(c.kw())
    if cmd.get("bypassDocumentValidation"):
        base["bypass_document_validation"] = True
    if cmd.get("let") is not None:
        base["let"] = cmd["let"]
    return c.coll(name), stmts, ordered, base


def _check_statements(stmts: list, cname: str, field: str, allowed: tuple[str, ...],
                      required: tuple[str, ...]) -> None:
    """The whole command is parsed before any statement runs: each statement a document of known fields
    with its required ones."""
    where = "%s.%s" % (cname, field)
    for st in stmts:
        if not isinstance(st, Mapping):
            raise CommandError("BSON field '%s' is the wrong type '%s', expected type 'object'"
                               % (where, _bson_type(st)), 14)
        for k in st:
            if k not in allowed:
                raise _unknown_field(where, k)
        for k in required:
            if k not in st:
                raise CommandError("BSON field '%s.%s' is missing but a required field" % (where, k), 40414)


def _run_statements(c: _Call, stmts: list, ordered: bool, run: Callable[[int, Mapping], None]) -> list[dict]:
    """Runs ``run(i, statement)`` for each statement in order and returns the write errors: a statement's
    error is its write error (an ordered batch stops at the first), except an interruption (maxTimeMS) or a
    transient error in a transaction, which fails the whole command (write_ops_exec.cpp handleError)."""
    errors: list[dict] = []
    for i, st in enumerate(stmts):
        try:
            run(i, st)
        except (OperationFailure, CommandError, TypeError, ValueError, PyMongoError) as e:
            code = getattr(e, "code", None)
            if code == 50 or (c.session is not None and code in _TXN_TRANSIENT):
                raise
            errors.append(_write_error_doc(i, e))
            if ordered:
                break
    return errors


def _insert(c: _Call) -> dict:
    coll, docs, ordered, kw = _write_command(c, "insert", "documents", {"bypassDocumentValidation"})
    docs = [dict(d) if not isinstance(d, dict) else d for d in docs]
    try:
        coll.insert_many(docs, ordered=ordered, **kw)
        return {"n": len(docs), "ok": 1.0}
    except BulkWriteError as e:
        det = e.details or {}
        errs = []
        for w in det.get("writeErrors", []):
            d = {"index": w.get("index", 0), "code": w.get("code", 2),
                 "errmsg": _server_message(w.get("errmsg", ""))}
            for k in ("errInfo", "keyPattern", "keyValue"):
                if k in w:
                    d[k] = w[k]
            errs.append(d)
        return {"n": det.get("nInserted", 0), "writeErrors": errs, "ok": 1.0}


def _is_replacement(u: Any) -> bool:
    """A replacement document, not an operator update: decided by the first field alone, as the server's
    write_ops parser does (``{z: 1, $set: {...}}`` is a replacement whose ``$set`` fails with 52 when it
    replaces a document; ``{$set: {...}, z: 1}`` is an operator update with the unknown modifier ``z``)."""
    return isinstance(u, Mapping) and not (u and str(next(iter(u))).startswith("$"))


def _update(c: _Call) -> dict:
    coll, stmts, ordered, base = _write_command(c, "update", "updates", {"bypassDocumentValidation", "let"})
    _check_statements(stmts, "update", "updates",
                      ("q", "u", "upsert", "multi", "arrayFilters", "collation", "hint", "c", "sort",
                       "upsertSupplied"), ("q", "u"))
    counts = {"n": 0, "nModified": 0}
    upserted: list[dict] = []

    def run(i: int, st: Mapping) -> None:
        q = st.get("q", {})
        u = st.get("u")
        kw = dict(base)
        if st.get("upsert"):
            kw["upsert"] = True
        for k, arg in (("arrayFilters", "array_filters"), ("collation", "collation"), ("hint", "hint"),
                       ("sort", "sort")):
            if st.get(k) is not None:
                kw[arg] = st[k]
        if st.get("c") is not None:
            raise CommandError(not_modelled("Update constants ('c')", "write the values into the update "
                                            "pipeline itself ($literal where needed)"), 115)
        if _is_replacement(u):
            if st.get("multi"):
                raise CommandError("multi update is not supported for replacement-style update", 9)
            kw.pop("array_filters", None)
            r = coll.replace_one(q, u, **kw)
        elif st.get("multi"):
            kw.pop("sort", None)
            r = coll.update_many(q, u, **kw)
        else:
            r = coll.update_one(q, u, **kw)
        if r.upserted_id is not None:
            counts["n"] += 1
            upserted.append({"index": i, "_id": r.upserted_id})
        else:
            counts["n"] += r.matched_count
            counts["nModified"] += r.modified_count

    errors = _run_statements(c, stmts, ordered, run)
    out: dict[str, Any] = dict(counts)
    if upserted:
        out["upserted"] = upserted
    if errors:
        out["writeErrors"] = errors
    out["ok"] = 1.0
    return out


def _delete(c: _Call) -> dict:
    coll, stmts, ordered, base = _write_command(c, "delete", "deletes", {"let"})
    _check_statements(stmts, "delete", "deletes", ("q", "limit", "collation", "hint"), ("q", "limit"))
    counts = {"n": 0}

    def run(i: int, st: Mapping) -> None:
        if st["limit"] not in (0, 1):
            raise CommandError("The limit field in delete objects must be 0 or 1. Got %s" % st["limit"], 9)
        kw = dict(base)
        for k in ("collation", "hint"):
            if st.get(k) is not None:
                kw[k] = st[k]
        q = st.get("q", {})
        r = coll.delete_one(q, **kw) if st["limit"] == 1 else coll.delete_many(q, **kw)
        counts["n"] += r.deleted_count

    errors = _run_statements(c, stmts, ordered, run)
    out: dict[str, Any] = dict(counts)
    if errors:
        out["writeErrors"] = errors
    out["ok"] = 1.0
    return out


def _find_and_modify(c: _Call) -> dict:
    cmd = c.cmd
    name = _coll_name(cmd, "findAndModify") if "findAndModify" in cmd else _coll_name(cmd, "findandmodify")
    cname = "findAndModify" if "findAndModify" in cmd else "findandmodify"
    _check_fields(cmd, cname, {"query", "sort", "remove", "update", "new", "fields", "upsert",
                               "bypassDocumentValidation", "arrayFilters", "collation", "hint", "let"})
    coll = c.coll(name)
    query = cmd.get("query") or {}
    remove = bool(cmd.get("remove"))
    update = cmd.get("update")
    if remove and update is not None:
        raise CommandError("Cannot specify both an update and remove=true", 9)
    if not remove and update is None:
        raise CommandError("Either an update or remove=true must be specified", 9)
    if remove and cmd.get("upsert"):
        raise CommandError("Cannot specify both upsert=true and remove=true ", 9)
    if remove and cmd.get("new"):
        raise CommandError("Cannot specify both new=true and remove=true; 'remove' always returns the deleted "
                           "document", 9)
    kw: dict[str, Any] = dict(c.kw())
    for k, arg in (("sort", "sort"), ("hint", "hint"), ("collation", "collation"), ("let", "let")):
        if cmd.get(k) is not None:
            kw[arg] = cmd[k]
    fields = cmd.get("fields") or None
    if remove:
        value = coll.find_one_and_delete(query, projection=fields, **kw)
        return {"lastErrorObject": {"n": 1 if value is not None else 0}, "value": value, "ok": 1.0}
    if cmd.get("bypassDocumentValidation"):
        kw["bypassDocumentValidation"] = True  # as pymongo passes the command field (find_one_and_update(**kw))
    find_kw = {k: v for k, v in kw.items() if k in ("session", "collation", "hint", "let")}
    if "sort" in kw:
        find_kw["sort"] = list(kw["sort"].items()) if isinstance(kw["sort"], Mapping) else kw["sort"]
    existed = coll.find_one(query, projection={"_id": 1}, **find_kw) is not None
    want_new = bool(cmd.get("new"))
    upsert = bool(cmd.get("upsert"))
    replacement = _is_replacement(update)
    if not replacement and cmd.get("arrayFilters") is not None:
        kw["array_filters"] = cmd["arrayFilters"]
    method = coll.find_one_and_replace if replacement else coll.find_one_and_update
    if not existed and upsert:
        doc = method(query, update, upsert=True, return_document=ReturnDocument.AFTER, **kw)
        value = coll._project(doc, fields) if (want_new and doc is not None and fields) else (doc if want_new else None)
        leo = {"n": 1, "updatedExisting": False}
        if doc is not None:
            leo["upserted"] = doc["_id"]
        return {"lastErrorObject": leo, "value": value, "ok": 1.0}
    value = method(query, update, projection=fields, upsert=upsert,
                   return_document=ReturnDocument.AFTER if want_new else ReturnDocument.BEFORE, **kw)
    return {"lastErrorObject": {"n": 1 if existed else 0, "updatedExisting": existed}, "value": value, "ok": 1.0}


def _bulk_write(c: _Call) -> dict:
    """MongoDB 8.0's ``bulkWrite`` command (client_bulk.py runs it): a cursor of per-operation results on
    ``admin.$cmd.bulkWrite`` and the counts (bulk_write.idl ``BulkWriteCommandReply``)."""
    from .client_bulk import bulk_write_command
    if c.db_name != "admin":
        raise CommandError("bulkWrite may only be run against the admin database.", 13)
    cursor_opts = c.cmd.get("cursor") or {}
    if not isinstance(cursor_opts, Mapping):
        raise CommandError("BSON field 'bulkWrite.cursor' is the wrong type '%s', expected type 'object'"
                           % _bson_type(cursor_opts), 14)
    first = _batch_size(cursor_opts.get("batchSize"), "bulkWrite", "cursor.batchSize")
    out = bulk_write_command(c.client, c.cmd, c.session)
    reply = _cursor_reply(c.ctx, c.ns("$cmd.bulkWrite"), out.pop("items"), first, False, _session_key(c.cmd),
                          c.codec)
    reply.pop("ok")
    cur = reply["cursor"]  # BulkWriteCommandResponseCursor's order: id, firstBatch, ns
    reply["cursor"] = {"id": cur["id"], "firstBatch": cur["firstBatch"], "ns": cur["ns"]}
    reply.update(out)
    reply["ok"] = 1.0
    return reply


# ---------------------------------------------------------------------------------------------- DDL / catalog
def _strip(cmd: dict) -> dict:
    return {k: v for k, v in cmd.items() if k not in _GENERIC}


def _create_indexes(c: _Call) -> dict:
    cmd = c.cmd
    name = _coll_name(cmd, "createIndexes")
    _check_fields(cmd, "createIndexes", {"indexes", "commitQuorum", "ignoreUnknownIndexOptions"})
    specs = cmd.get("indexes")
    if not isinstance(specs, list) or not specs:
        raise CommandError("Must specify at least one index to create", 2)
    coll = c.coll(name)
    created_coll = not coll._store.is_created
    before = len(coll._store.ix) if not created_coll else 1
    for spec in specs:
        if not isinstance(spec, Mapping) or "key" not in spec:
            raise CommandError("The 'key' field is a required property of an index specification", 9)
        opts = {k: v for k, v in spec.items() if k not in ("key", "v")}
        key = spec["key"]
        if not isinstance(key, Mapping) or not key:
            raise CommandError("Index keys cannot be empty.", 67)
        coll.create_index(list(key.items()), **opts, **c.kw())
    after = len(coll._store.ix)
    out: dict[str, Any] = {"numIndexesBefore": before, "numIndexesAfter": after}
    if created_coll:
        out["createdCollectionAutomatically"] = True
    else:
        out["createdCollectionAutomatically"] = False
    if after == before:
        out["note"] = "all indexes already exist"
    out["ok"] = 1.0
    return out


def _list_indexes(c: _Call) -> dict:
    cmd = c.cmd
    name = _coll_name(cmd, "listIndexes")
    _check_fields(cmd, "listIndexes", {"cursor", "includeBuildUUIDs", "includeIndexBuildInfo"})
    coll = c.coll(name)
    if not coll._store.is_created:
        raise CommandError("ns does not exist: %s" % c.ns(name), 26)
    first = _batch_size((cmd.get("cursor") or {}).get("batchSize"), "listIndexes", "cursor.batchSize")
    docs = [dict(d) for d in coll.list_indexes(**c.kw())]
    return _cursor_reply(c.ctx, c.ns(name), docs, first, False, _session_key(cmd), c.codec)


def _drop_indexes(c: _Call) -> dict:
    cmd = c.cmd
    name = _coll_name(cmd, "dropIndexes")
    _check_fields(cmd, "dropIndexes", {"index"})
    coll = c.coll(name)
    if not coll._store.is_created:
        raise CommandError("ns not found %s" % c.ns(name), 26)
    was = len(coll._store.ix)
    idx = cmd.get("index")
    if idx is None:
        raise CommandError("BSON field 'dropIndexes.index' is missing but a required field", 40414)
    if idx == "*":
        coll.drop_indexes(**c.kw())
    elif isinstance(idx, list):
        for n in idx:
            coll.drop_index(n, **c.kw())
    elif isinstance(idx, Mapping):
        coll._drop_index_by_key(idx)
    else:
        coll.drop_index(idx, **c.kw())
    return {"nIndexesWas": was, "ok": 1.0}


def _list_collections(c: _Call) -> dict:
    from ..catalog.rules import list_collections
    cmd = c.cmd
    _check_fields(cmd, "listCollections", {"filter", "nameOnly", "authorizedCollections", "cursor",
                                           "includePendingDrops"})
    first = _batch_size((cmd.get("cursor") or {}).get("batchSize"), "listCollections", "cursor.batchSize")
    docs = [dict(d) for d in list_collections(c.db, cmd.get("filter"), c.session, bool(cmd.get("nameOnly")))]
    return _cursor_reply(c.ctx, c.ns("$cmd.listCollections"), docs, first, False, _session_key(cmd), c.codec)


def _list_databases(c: _Call) -> dict:
    from ..matcher.match import fast_matcher
    from ..stats import storage_stats as stats
    cmd = c.cmd
    _check_fields(cmd, "listDatabases", {"filter", "nameOnly", "authorizedDatabases"})
    if c.db_name != "admin":
        raise CommandError("listDatabases may only be run against the admin database.", 13)
    names = sorted(c.client.list_database_names())
    name_only = bool(cmd.get("nameOnly"))
    rows = []
    total = 0
    for n in names:
        if name_only:
            rows.append({"name": n})
            continue
        s = stats.db_stats(c.client.get_database(n))
        size = int(s["totalSize"])
        total += size
        rows.append({"name": n, "sizeOnDisk": size, "empty": s["objects"] == 0})
    flt = cmd.get("filter")
    if flt:
        m = fast_matcher(dict(flt))
        rows = [r for r in rows if m(r)]
    out: dict[str, Any] = {"databases": rows}
    if not name_only:
        out["totalSize"] = sum(r["sizeOnDisk"] for r in rows)
        out["totalSizeMb"] = out["totalSize"] // (1024 * 1024)
    out["ok"] = 1.0
    return out


def _create(c: _Call) -> dict:
    from ..catalog.rules import cmd_create
    cmd = _strip(c.cmd)
    if not isinstance(cmd.get("create"), str):
        raise CommandError("collection name has invalid type %s" % _bson_type(cmd.get("create")), 73)
    opts = {k: v for k, v in cmd.items() if k != "create"}
    if c.session is not None:  # in a transaction (4.4+: collections can be created in one)
        opts["session"] = c.session
    opts.pop("autoIndexId", None)
    if opts.get("idIndex") is not None:
        raise CommandError(not_modelled("create with idIndex", "create the collection without it: it gets the "
                                        "default {_id: 1} index"), 115)
    opts.pop("idIndex", None)
    return cmd_create(c.db, {"create": cmd["create"], **opts})


def _drop(c: _Call) -> dict:
    cmd = c.cmd
    name = _coll_name(cmd, "drop")
    _check_fields(cmd, "drop", set())
    coll = c.coll(name)
    was = len(coll._store.ix) if coll._store.is_created else 0
    if was == 0:
        return {"ok": 1.0}  # 7.0+: dropping a missing collection succeeds
    coll.drop(**c.kw())
    return {"nIndexesWas": was, "ns": c.ns(name), "ok": 1.0}


def _drop_database(c: _Call) -> dict:
    _check_fields(c.cmd, "dropDatabase", set())
    if c.session is not None:
        raise CommandError("Cannot run 'dropDatabase' in a multi-document transaction.", 263)
    c.client.drop_database(c.db_name)
    return {"ok": 1.0}


def _rename_collection(c: _Call) -> dict:
    cmd = c.cmd
    _check_fields(cmd, "renameCollection", {"to", "dropTarget", "stayTemp"})
    if c.db_name != "admin":
        raise CommandError("renameCollection may only be run against the admin database.", 13)
    src, dst = cmd.get("renameCollection"), cmd.get("to")
    if not isinstance(src, str) or not isinstance(dst, str) or "." not in src or "." not in dst:
        raise CommandError("Invalid namespace specified '%s'" % (src,), 73)
    sdb, scoll = src.split(".", 1)
    ddb, dcoll = dst.split(".", 1)
    if sdb != ddb:
        raise CommandError(not_modelled("Renaming a collection across databases",
                                        "copy its documents into the other database (find, then "
                                        "insert_many / insertMany), then drop it"), 115)
    db = c.client.get_database(sdb)
    coll = db.get_collection(scoll)
    if not coll._store.is_created:
        raise CommandError("Source collection %s does not exist" % src, 26)
    if db.get_collection(dcoll)._store.is_created:
        if not cmd.get("dropTarget"):
            raise CommandError("Target namespace exists", 48)
        db.drop_collection(dcoll)
    coll.rename(dcoll)
    return {"ok": 1.0}


def _delegate(c: _Call) -> dict:
    """Commands the engine's ``EmbeddedDatabase.command`` already answers (collMod, collStats, dbStats, explain,
    profile ...)."""
    cmd = _strip(c.cmd)
    out = c.db.command(cmd)
    return dict(out)


def _explain_inner(c: _Call, inner: dict, verbosity: str) -> dict:
    out = c.db.command({"explain": inner, "verbosity": verbosity})
    return dict(out)


def _explain(c: _Call) -> dict:
    cmd = c.cmd
    _check_fields(cmd, "explain", {"verbosity"})
    inner = cmd.get("explain")
    if not isinstance(inner, Mapping) or not inner:
        raise CommandError("explain command requires a nested object", 2)
    verbosity = cmd.get("verbosity", "allPlansExecution")
    if verbosity not in ("queryPlanner", "executionStats", "allPlansExecution"):
        raise CommandError("verbosity string must be one of {'queryPlanner', 'executionStats', "
                           "'allPlansExecution'}", 9)
    inner = {k: v for k, v in inner.items() if k not in _GENERIC or k in ("comment", "maxTimeMS")}
    op = next(iter(inner))
    if op == "aggregate":
        inner.pop("cursor", None)
    return _explain_inner(c, inner, verbosity)


# ---------------------------------------------------------------------------------------------- sessions
def _start_session(c: _Call) -> dict:
    import uuid
    from bson.binary import UUID_SUBTYPE
    lsid = {"id": Binary(uuid.uuid4().bytes, UUID_SUBTYPE)}
    c.ctx.session_for(c.client, lsid)
    return {"id": lsid, "timeoutMinutes": SESSION_TIMEOUT_MIN, "ok": 1.0}


def _end_sessions(c: _Call) -> dict:
    ids = c.cmd.get(next(iter(c.cmd)))
    if not isinstance(ids, list):
        raise CommandError("BSON field 'endSessions.endSessions' is the wrong type, expected type 'array'", 14)
    for lsid in ids:
        c.ctx.end_session(lsid)
    return {"ok": 1.0}


def _refresh_sessions(c: _Call) -> dict:
    return {"ok": 1.0}


def _kill_all_sessions(c: _Call) -> dict:
    c.ctx.end_all_sessions()
    return {"ok": 1.0}


def _txn_end(c: _Call, commit: bool) -> dict:
    name = "commitTransaction" if commit else "abortTransaction"
    if c.db_name != "admin":
        raise CommandError("%s may only be run against the admin database." % name, 13)
    s = c.ctx.session_for(c.client, c.cmd.get("lsid"))
    num = c.cmd.get("txnNumber")
    if s is None or num is None:
        raise CommandError("Given transaction number does not match any in-progress transactions.", 251,
                           errorLabels=["TransientTransactionError"])
    if s.txn_number != num:
        raise CommandError("Given transaction number %s does not match any in-progress transactions. The active "
                           "transaction number is %s" % (num, s.txn_number), 251,
                           errorLabels=["TransientTransactionError"])
    sess = s.session
    if commit:
        if s.committed:
            return {"ok": 1.0}
        if not sess.in_transaction:
            raise CommandError("Transaction with { txnNumber: %d } has been aborted." % num, 251,
                               errorLabels=["TransientTransactionError"])
        sess.commit_transaction()
        s.committed = True
        return {"ok": 1.0}
    if s.committed:
        raise CommandError("Transaction with { txnNumber: %d } has been committed." % num, 256)
    if not sess.in_transaction:
        raise CommandError("Transaction with { txnNumber: %d } has been aborted." % num, 251,
                           errorLabels=["TransientTransactionError"])
    sess.abort_transaction()
    return {"ok": 1.0}


# ---------------------------------------------------------------------------------------------- probes
def _current_op(c: _Call) -> dict:
    if c.db_name != "admin":
        raise CommandError("currentOp may only be run against the admin database.", 13)
    return _cur.current_op_command(c.ctx, c.cmd, c.running())



def _get_parameter(c: _Call) -> dict:
    cmd = _strip(c.cmd)
    value = cmd.get("getParameter")
    known = {"featureCompatibilityVersion": {"version": "8.0"},
             "authenticationMechanisms": [],
             "internalQueryFrameworkControl": "forceClassicEngine",
             "maxBSONDepth": 200,
             "cursorTimeoutMillis": Int64(int(CURSOR_TIMEOUT_S * 1000)),
             "maxNumActiveUserIndexBuilds": 3,
             "logLevel": 0}
    from ..session.history import history_of
    known.update(history_of(c.client._store).params)  # transactionLifetimeLimitSeconds, minSnapshotHistory...
    wanted = [k for k in cmd if k != "getParameter"]
    out: dict[str, Any] = {}
    if value == "*" or (isinstance(value, Mapping) and value.get("allParameters")):
        out.update(known)
    else:
        for k in wanted:
            if k not in known:
                raise CommandError("no option found to get", 72)
            out[k] = known[k]
    out["ok"] = 1.0
    return out


def _set_parameter(c: _Call) -> dict:
    """setParameter for the server parameters the engine models (both settable at runtime on a server):
    ``transactionLifetimeLimitSeconds`` (>= 1; jstests/core/txns/abort_expired_transaction.js) and
    ``minSnapshotHistoryWindowInSeconds`` (>= 0). The reply's ``was`` is the previous value."""
    from ..session.history import history_of
    if c.db_name != "admin":
        raise CommandError("setParameter may only be run against the admin database.", 13)
    cmd = _strip(c.cmd)
    wanted = [k for k in cmd if k != "setParameter"]
    if not wanted:
        raise CommandError("no option found to set, use help:true to see options ", 2)
    params = history_of(c.client._store).params
    minimum = {"transactionLifetimeLimitSeconds": 1, "minSnapshotHistoryWindowInSeconds": 0}
    for k in wanted:
        if k not in params:
            raise CommandError(not_modelled("setParameter %s" % k, "the parameters it models: "
                                            "transactionLifetimeLimitSeconds, minSnapshotHistoryWindowInSeconds"), 115)
        v = cmd[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or int(v) != v:
            raise CommandError("BSON field '%s' is the wrong type '%s', expected type 'int'" % (k, _bson_type(v)), 14)
        if v < minimum[k]:
            raise CommandError("Invalid value for parameter %s: %s is not greater than or equal to %d"
                               % (k, int(v), minimum[k]), 2)
    out: dict[str, Any] = {}
    for k in wanted:
        out["was"] = params[k]
        params[k] = int(cmd[k])
    out["ok"] = 1.0
    return out


def _server_status(c: _Call) -> dict:
    ctx = c.ctx
    up = time.time() - ctx.started
    return {"host": socket.gethostname(), "version": SERVED_VERSION, "process": "mongod", "pid": Int64(os.getpid()),
            "uptime": float(int(up)), "uptimeMillis": Int64(int(up * 1000)), "uptimeEstimate": Int64(int(up)),
            "localTime": datetime.datetime.now(datetime.timezone.utc),
            "connections": {"current": ctx.connections, "available": 1000,
                            "totalCreated": ctx.total_connections},
            "repl": {"setName": ctx.set_name, "isWritablePrimary": True, "primary": ctx.address,
                     "hosts": [ctx.address], "me": ctx.address},
            "storageEngine": {"name": "labkit-embedded", "persistent": False, "readOnly": False},
            "metrics": {"ttl": _ttl.server_metrics(c.client)},  # labkit/engine/catalog/ttl.py
            "labkit": {"engine": "embedded-served"}, "ok": 1.0}


def _host_info(c: _Call) -> dict:
    return {"system": {"currentTime": datetime.datetime.now(datetime.timezone.utc), "hostname": socket.gethostname(),
                       "cpuAddrSize": 64, "numCores": os.cpu_count() or 1, "cpuArch": platform.machine(),
                       "numaEnabled": False},
            "os": {"type": platform.system(), "name": platform.platform(), "version": platform.release()},
            "extra": {}, "ok": 1.0}


def _cmdline_opts(c: _Call) -> dict:
    return {"argv": list(c.ctx.argv) or ["labkit", "serve"],
            "parsed": {"net": {"bindIp": c.ctx.host, "port": c.ctx.port},
                       "replication": {"replSet": c.ctx.set_name}},
            "ok": 1.0}


def _connection_status(c: _Call) -> dict:
    info: dict[str, Any] = {"authenticatedUsers": [], "authenticatedUserRoles": []}
    if c.cmd.get("showPrivileges"):
        info["authenticatedUserPrivileges"] = []
    return {"authInfo": info, "ok": 1.0}


def _get_log(c: _Call) -> dict:
    which = c.cmd.get("getLog")
    if which == "*":
        return {"names": ["global", "startupWarnings"], "ok": 1.0}
    if which in ("global", "startupWarnings"):
        return {"totalLinesWritten": 0, "log": [], "ok": 1.0}
    raise CommandError("No log named '%s'" % which, 2)


def _whatsmyuri(c: _Call) -> dict:
    return {"you": c.ctx.address, "ok": 1.0}


def _repl_status(c: _Call) -> dict:
    ctx = c.ctx
    now = datetime.datetime.now(datetime.timezone.utc)
    return {"set": ctx.set_name, "date": now, "myState": 1, "term": Int64(1),
            "members": [{"_id": 0, "name": ctx.address, "health": 1.0, "state": 1, "stateStr": "PRIMARY",
                         "uptime": int(time.time() - ctx.started), "self": True}],
            "ok": 1.0}


def _repl_config(c: _Call) -> dict:
    ctx = c.ctx
    return {"config": {"_id": ctx.set_name, "version": 1, "term": 1,
                       "members": [{"_id": 0, "host": ctx.address, "arbiterOnly": False, "hidden": False,
                                    "priority": 1.0, "votes": 1}],
                       "settings": {}}, "ok": 1.0}


def _lock_info(c: _Call) -> dict:
    return {"lockInfo": [], "ok": 1.0}


HANDLERS: dict[str, Callable[[_Call], dict]] = {
    "find": _find, "getMore": _get_more, "killCursors": _kill_cursors, "aggregate": _aggregate,
    "count": _count, "distinct": _distinct,
    "insert": _insert, "update": _update, "delete": _delete,
    "findAndModify": _find_and_modify, "findandmodify": _find_and_modify, "bulkWrite": _bulk_write,
    "createIndexes": _create_indexes, "listIndexes": _list_indexes, "dropIndexes": _drop_indexes,
    "deleteIndexes": _drop_indexes,
    "listCollections": _list_collections, "listDatabases": _list_databases,
    "create": _create, "drop": _drop, "dropDatabase": _drop_database, "renameCollection": _rename_collection,
    "collMod": _delegate, "collStats": _delegate, "dbStats": _delegate, "profile": _delegate,
    "validate": _delegate, "convertToCapped": _delegate, "cloneCollectionAsCapped": _delegate, "compact": _delegate,
    "currentOp": _current_op, "top": lambda c: _cur.top_reply(c.client, c.db_name),
    "explain": _explain,
    "startSession": _start_session, "endSessions": _end_sessions, "killSessions": _end_sessions,
    "refreshSessions": _refresh_sessions, "killAllSessions": _kill_all_sessions,
    "killAllSessionsByPattern": _kill_all_sessions,
    "commitTransaction": lambda c: _txn_end(c, True), "abortTransaction": lambda c: _txn_end(c, False),
    "ping": lambda c: {"ok": 1.0},
    "buildInfo": lambda c: build_info(), "buildinfo": lambda c: build_info(),
    "getParameter": _get_parameter, "setParameter": _set_parameter, "serverStatus": _server_status,
    "hostInfo": _host_info,
    "getCmdLineOpts": _cmdline_opts, "connectionStatus": _connection_status, "getLog": _get_log,
    "whatsmyuri": _whatsmyuri, "usersInfo": lambda c: {"users": [], "ok": 1.0},  # no authentication: no users
    "replSetGetStatus": _repl_status, "replSetGetConfig": _repl_config, "lockInfo": _lock_info,
    "listCommands": lambda c: {"commands": {n: {} for n in sorted(HANDLERS)}, "ok": 1.0},
    "labkitTtlPass": lambda c: _ttl.cmd_ttl_pass(c.client, c.db_name, c.cmd),  # one TTL pass (ttl.py)
}

# Commands that run without a transaction even when the driver sends transaction fields.
_NO_TXN = {"commitTransaction", "abortTransaction", "endSessions", "killAllSessions", "startSession",
           "killSessions", "refreshSessions", "hello", "isMaster", "ismaster", "ping", "buildInfo", "buildinfo",
           "getMore", "killCursors"}
# manual "Transactions and Operations": count is not allowed (countDocuments runs an aggregate instead)
_TXN_OK = {"find", "getMore", "killCursors", "aggregate", "distinct", "insert", "update", "delete",
           "findAndModify", "findandmodify", "bulkWrite", "create", "createIndexes", "commitTransaction",
           "abortTransaction"}


def _plain_error(exc: BaseException) -> tuple[int, str]:
    if isinstance(exc, TypeError):
        return 14, str(exc)
    if isinstance(exc, InvalidName):
        return 73, str(exc)
    if isinstance(exc, bson.errors.InvalidDocument):
        return 2, str(exc)
    if isinstance(exc, (ValueError, InvalidOperation, ConfigurationError)):
        return 2, str(exc)
    if isinstance(exc, CollectionInvalid):
        return 48, str(exc)
    return 1, "internal error in the embedded engine: %s: %s" % (type(exc).__name__, exc)


def error_reply(exc: BaseException) -> dict:
    """The server's ``{ok: 0, errmsg, code, codeName}`` for an exception raised while running a command."""
    if isinstance(exc, CommandError):
        return exc.reply()
    if isinstance(exc, OperationFailure):
        det = dict(exc.details or {})
        code = exc.code if exc.code is not None else 2
        out: dict[str, Any] = {"ok": 0.0, "errmsg": _server_message(det.get("errmsg") or str(exc)), "code": code,
                               "codeName": det.get("codeName") or code_name(code)}
        for k in ("errInfo", "keyPattern", "keyValue", "errorLabels", "violations"):
            if k in det:
                out[k] = det[k]
        return out
    code, msg = _plain_error(exc)
    return {"ok": 0.0, "errmsg": msg, "code": code, "codeName": code_name(code)}


def _transaction_session(client: Any, cmd: dict, name: str, ctx: ServerContext) -> Any:
    """The engine session to bind for this command, opening the transaction on ``startTransaction``."""
    if cmd.get("autocommit") is not False or name in _NO_TXN:
        return None
    s = ctx.session_for(client, cmd.get("lsid"))
    if s is None:
        raise CommandError("Transaction requires a logical session id (lsid)", 50768)
    num = cmd.get("txnNumber")
    if not isinstance(num, int):
        raise CommandError("'autocommit' field requires a transaction number to also be specified", 50768)
    if name not in _TXN_OK:
        raise CommandError("Cannot run '%s' in a multi-document transaction." % name, 263)
    sess = s.session
    if cmd.get("startTransaction"):
        if s.txn_number is not None and num < s.txn_number:
            raise CommandError("Cannot start transaction %d on session because a newer transaction %d has already "
                               "started." % (num, s.txn_number), 225)
        if s.txn_number == num:
            raise CommandError("Given transaction number %d does not match any in-progress transactions." % num,
                               251, errorLabels=["TransientTransactionError"])
        if sess.in_transaction:
            sess.abort_transaction()
        sess.start_transaction()
        sess._txn.wire_number = num  # the driver's txnNumber (change events of the transaction carry it)
        s.txn_number = num
        s.committed = False
        return sess
    if s.txn_number != num or not sess.in_transaction:
        raise CommandError("Given transaction number %d does not match any in-progress transactions." % num, 251,
                           errorLabels=["TransientTransactionError"])
    return sess


def run_command(client: Any, db_name: str, cmd: dict, session_ctx: ServerContext,
                codec: bson.CodecOptions | None = None, connection_id: int = 0) -> dict:
    """Run one database command document on ``client`` (an EmbeddedClient); the reply document.

    ``session_ctx`` is the served engine's ``ServerContext`` (cursors, sessions, cluster time). Errors come back
    as ``{ok: 0, errmsg, code, codeName}`` (never raised)."""
    codec = codec or bson.CodecOptions()
    if session_ctx.clock is None:
        from ..repl.oplog import oplog_of
        session_ctx.clock = oplog_of(client._store)  # the cluster clock (the history's too: session/history.py)
    if not cmd:
        return CommandError("no command specified", 59).reply()
    name = next(iter(cmd))
    try:
        if name in ("hello", "isMaster", "ismaster"):
            info = session_ctx.clients.get(connection_id)
            if info is not None and isinstance(cmd.get("client"), Mapping):
                info["metadata"] = cmd["client"]  # the handshake's client metadata ($currentOp clientMetadata)
            return hello_reply(session_ctx, connection_id, legacy_name=name != "hello")
        handler = HANDLERS.get(name)
        if handler is None:
            raise not_found(name)
        if not isinstance(db_name, str) or not db_name:
            raise CommandError("Invalid database name: '%s'" % (db_name,), 73)
        _check_transaction_concerns(cmd, name)
        lsid = cmd.get("lsid")
        if isinstance(lsid, Mapping) and "id" in lsid and name not in ("endSessions", "killSessions"):
            session_ctx.session_uses[bytes(lsid["id"])] = (lsid["id"], time.time())  # the session cache
        sess = _transaction_session(client, cmd, name, session_ctx)
        read = _snapshot_read(client, cmd, name, sess)
        call = _Call(client, db_name, cmd, session_ctx, sess, codec)
        call.conn_id = connection_id
        try:
            with boundary_deadline(cmd.get("maxTimeMS")):
                if read is None:
                    reply = handler(call)
                else:
                    with sessions.reading_at(read):
                        reply = handler(call)
                    if isinstance(reply.get("cursor"), dict):  # the snapshot's time: the driver reads at it next
                        reply["cursor"]["atClusterTime"] = read.ts
                    else:
                        ok = reply.pop("ok")
                        reply["atClusterTime"] = read.ts
                        reply["ok"] = ok
        except (OperationFailure, CommandError) as e:
            if sess is not None and sess.in_transaction and sess._txn is not None and aborts_transaction(e):
                sess._txn.server_abort()
            out = error_reply(e)
            if sess is not None and "errorLabels" not in out and isinstance(e, OperationFailure) \
                    and e.code in _TXN_TRANSIENT:
                out["errorLabels"] = ["TransientTransactionError"]
            return out
        wc = cmd.get("writeConcern")
        if wc is not None and reply.get("ok") and name in _WRITE_CONCERN_COMMANDS and (
                sess is None or name in ("commitTransaction", "abortTransaction")):
            wce = sessions.write_concern_error(wc if isinstance(wc, Mapping) else {})
            if wce is not None:  # applied, then reported: the set has one member (session/sessions.py)
                ok = reply.pop("ok")
                reply["writeConcernError"] = wce
                reply["ok"] = ok
        return reply
    except Exception as e:  # noqa: BLE001 - every failure becomes an error reply, as on the server
        return error_reply(e)


def boundary_deadline(ms: Any) -> Any:
    """The command's maxTimeMS for every engine operation it runs (boundary.command_deadline); none: nothing."""
    import contextlib
    if ms is None or ms == 0:
        return contextlib.nullcontext()
    return _command_deadline(ms)


# Commands that take a writeConcern (their reply carries writeConcernError when it cannot be met).
_WRITE_CONCERN_COMMANDS = frozenset({
    "insert", "update", "delete", "findAndModify", "findandmodify", "create", "drop", "dropDatabase",
    "createIndexes", "dropIndexes", "deleteIndexes", "renameCollection", "collMod", "commitTransaction",
    "abortTransaction", "bulkWrite"})
_READ_LEVELS = ("local", "majority", "linearizable", "available", "snapshot")


def _check_transaction_concerns(cmd: dict, name: str) -> None:
    """Read and write concerns in a transaction (service_entry_point_common.cpp, write_concern.cpp;
    jstests/core/txns/no_read_or_write_concern_inside_txn.js): a readConcern only on the first statement, a
    writeConcern only on commitTransaction/abortTransaction. Refused before the statement runs, so the
    transaction is not aborted."""
    if cmd.get("autocommit") is not False or name in ("commitTransaction", "abortTransaction"):
        return
    if "writeConcern" in cmd:
        raise CommandError("writeConcern is not allowed within a multi-statement transaction", 72)
    if "readConcern" in cmd and not cmd.get("startTransaction"):
        raise CommandError("Only the first command in a transaction may specify a readConcern", 72)
    if cmd.get("startTransaction"):
        rc = cmd.get("readConcern")
        level = rc.get("level") if isinstance(rc, Mapping) else None
        if level is not None and level not in ("local", "majority", "snapshot"):
            raise CommandError("The readConcern level must be either 'local' (default), 'majority' or 'snapshot' "
                               "in order to run in a transaction", 72)


def _snapshot_read(client: Any, cmd: dict, name: str, sess: Any) -> Any:
    """The readConcern of a command outside a transaction (read_concern_args.cpp): its level is checked, and
    ``snapshot`` makes a snapshot read (find, aggregate, distinct; MongoDB 5.0+) at ``atClusterTime`` or now;
    other commands refuse it (72)."""
    rc = cmd.get("readConcern")
    if rc is None or sess is not None or cmd.get("autocommit") is False or name in ("getMore", "killCursors"):
        return None  # a cursor continues at its own snapshot (drivers send the session's readConcern with it)
    if not isinstance(rc, Mapping):
        raise CommandError("BSON field 'readConcern' is the wrong type '%s', expected type 'object'" % _bson_type(rc),
                           14)
    level = rc.get("level")
    if level is not None and level not in _READ_LEVELS:
        raise CommandError("Enumeration value '%s' for field 'readConcern.level' is not a valid value." % level, 2)
    at = rc.get("atClusterTime")
    if at is not None and level != "snapshot":
        raise CommandError("atClusterTime field can be set only if level is equal to snapshot", 72)
    if "afterClusterTime" in rc and at is not None:
        raise CommandError("Can not specify both afterClusterTime and atClusterTime", 72)
    if level != "snapshot":
        return None
    return sessions.snapshot_read(client, name, at)


def _decoded(v: Any, codec: Any) -> Any:
    if isinstance(v, RawBSONDocument):
        return bson.decode(v.raw, codec_options=codec)
    if isinstance(v, dict):
        return {k: _decoded(x, codec) for k, x in v.items()}
    if isinstance(v, list):
        return [_decoded(x, codec) for x in v]
    return v


def run_in_process(db: Any, cmd: dict, session: Any = None) -> dict:
    """``EmbeddedDatabase.command`` for the commands of this layer (find, insert, getMore ...): the reply as a
    server sends it, errors raised as pymongo raises them (OperationFailure with the reply as details)."""
    from ..session import sessions
    client = db.client
    ctx = client.__dict__.get("_labkit_command_ctx")
    if ctx is None:
        ctx = client.__dict__["_labkit_command_ctx"] = ServerContext("labkit-embedded", 0)
    codec = bson.CodecOptions(tz_aware=db.codec_options.tz_aware, tzinfo=db.codec_options.tzinfo)

    def run() -> dict:
        with sessions.bind(session, db, command=next(iter(cmd))):
            return run_command(client, db.name, {**cmd, "$db": db.name}, ctx, codec)

    reply = run()
    if AWAIT_KEY in reply:  # an awaitData getMore waits for an event or an insert, as the wire server does:
        from ..service.boundary import lock_for_store, unlocked  # without the engine's lock (the writer
        lock = lock_for_store(client._store)                       # it waits for needs it)

        def rerun() -> dict:
            with lock:
                return run()

        with unlocked(lock):
            reply = await_more(reply, rerun)
    if not reply.get("ok"):
        if session is not None and session.in_transaction and session._txn is not None:
            session._txn.server_abort()  # a failed command aborts its transaction (sessions.bind)
        raise OperationFailure(reply.get("errmsg", ""), reply.get("code"), reply)
    return _decoded(reply, codec)


__all__ = ["run_command", "run_in_process", "pop_await", "await_more", "ServerContext", "CommandError", "error_reply", "hello_reply",
           "build_info", "code_name", "HANDLERS"]
