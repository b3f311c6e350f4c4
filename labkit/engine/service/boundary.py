"""The operation boundary of the embedded engine: every public operation passes through :func:`operation`.

One wrapper, applied to the public methods of the collection, cursor, database, client and session classes
(see ``OPERATIONS`` tables in those modules), does four things around the outermost call on a thread:

1. **Thread safety.** It holds the client's re-entrant lock (one per server store, shared by every client
   object over that store) for the whole operation, so concurrent threads never interleave inside the
   engine: documents, index entries and transaction shadows stay consistent. Nested engine calls made by
   the operation itself (``find_one`` -> ``find``, ``bulk_write`` -> ``_update`` ...) run inside the same hold.
2. **Errors as the server's.** Anything escaping the engine that is not a pymongo/bson error becomes the
   server-shaped error: ``RecursionError`` -> the depth error (BadValue 2 for queries, Overflow 15 for
   documents), ``NotImplementedError`` -> 115 "not modelled by labkit's embedded engine", and every other Python
   exception (KeyError, TypeError, AttributeError ...) -> code 1 ``InternalError`` saying it is an
   embedded-engine gap, with the original chained (``raise ... from``). Deliberate client-side argument
   checks (pymongo's own ``TypeError``/``ValueError`` for a wrong argument type) pass unchanged, as pymongo
   raises them before sending anything.
3. **maxTimeMS.** The operation's deadline (``max_time_ms`` / ``maxTimeMS``) is kept in the operation
   context; :func:`check_deadline` (called by the executor loops) and the end of the operation raise
   ``ExecutionTimeout`` (code 50, MaxTimeMSExpired) once it has passed.
4. **Observation.** When the client has command listeners or the database's profiler is on, the operation is
   described as the driver's command (``monitoring.py``) and recorded (``profiler.py``); otherwise nothing is
   built, which keeps the hot paths cheap.
"""
from __future__ import annotations

import functools
import linecache
import threading
import time
from typing import Any, Callable

import bson.errors
from pymongo.errors import (BulkWriteError, ExecutionTimeout, OperationFailure, PyMongoError, WriteError)

from ..base import hooks  # command monitoring (monitoring.py, a higher layer) registers its begin/succeed/fail there
from ..base.errors import SERVER_ANSWERS, not_modelled

INTERNAL_ERROR = 1
BAD_VALUE = 2
OVERFLOW = 15
MAX_TIME_MS_EXPIRED = 50
COMMAND_NOT_SUPPORTED = 115

MAX_QUERY_DEPTH = 100  # MatchExpressionParser::kMaximumTreeDepth (src/mongo/db/matcher/expression_parser.cpp)

REPORT_HINT = ("This is a gap in labkit's embedded engine, not something MongoDB would answer: please report it "
               "(the call, its arguments and this message) to the Schema Lab maintainers; %s." % SERVER_ANSWERS)

_clock = time.perf_counter  # tests replace it to move time on deterministically
_TLS = threading.local()
_LOCKS_GUARD = threading.Lock()

# The exceptions pymongo itself raises for a wrong argument before anything is sent (client side).
_CLIENT_SIDE = (TypeError, ValueError, IndexError, StopIteration)


# ---------------------------------------------------------------------------------------------- locks
def lock_for_store(store: Any) -> threading.RLock:
    """The re-entrant lock of a server store (created on first use, once)."""
    lock = getattr(store, "_lab_lock", None)
    if lock is None:
        with _LOCKS_GUARD:
            lock = getattr(store, "_lab_lock", None)
            if lock is None:
                lock = store._lab_lock = threading.RLock()
    return lock


def client_of(obj: Any) -> Any:
    """The client an engine object belongs to (collection, cursor, database, session or client).

    Reads instance dictionaries only: mongomock's collections, databases and clients answer any unknown
    attribute with a new sub-collection/database, so probing with ``getattr`` would create objects."""
    d = obj.__dict__
    db = d.get("database")  # a collection
    if db is not None:
        return db.__dict__["_client"]
    coll = d.get("collection")  # a cursor
    if coll is not None:
        return coll.__dict__["database"].__dict__["_client"]
    c = d.get("_client")  # a database or a session
    if c is not None:
        return c
    return obj  # the client itself


# ---------------------------------------------------------------------------------------------- context
class Op:
    """What the boundary knows about the operation in progress on this thread (cheap to create: the
    observation fields stay at their class defaults unless someone watches)."""

    deadline: float | None = None
    max_time_ms: int | None = None
    recording = False
    command: dict | None = None
    db_name = ""
    runs: list = []               # planner Executions of this operation (a list of its own once recording)
    counters: dict = {}           # write counters (keysInserted ...), likewise

    def __init__(self, name: str, target: Any, args: tuple, kwargs: dict, client: Any) -> None:
        self.name = name
        self.target = target
        self.args = args
        self.kwargs = kwargs
        self.client = client
        self.t0 = 0.0

    def start_recording(self) -> None:
        self.recording = True
        self.t0 = _clock()
        self.runs = []
        self.counters = {}

    def set_max_time(self, ms: Any) -> None:
        """Arm maxTimeMS (validated as the server does: a non-negative 32-bit integer; 0 means no limit)."""
        if ms is None:
            return
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms != ms:
            raise OperationFailure("maxTimeMS must be a number", BAD_VALUE)
        if ms < 0:
            raise OperationFailure("%s value for maxTimeMS is out of range [0, 2147483647]" % ms, BAD_VALUE)
        if ms > 2147483647:
            raise OperationFailure("%s value for maxTimeMS is out of range [0, 2147483647]" % ms, BAD_VALUE)
        if ms:
            self.max_time_ms = int(ms)
            self.deadline = (self.t0 or _clock()) + ms / 1000.0


def current_op() -> Op | None:
    """The operation in progress on this thread (None outside the engine)."""
    return getattr(_TLS, "op", None)


def note_execution(ex: Any) -> None:
    """Record a planner execution (its stage tree carries keys/docs examined) for the current operation."""
    op = getattr(_TLS, "op", None)
    if op is not None and op.recording:
        op.runs.append(ex)


def note(key: str, n: int = 1) -> None:
    """Add ``n`` to a write counter (``keysInserted``, ``keysDeleted`` ...) of the current operation."""
    op = getattr(_TLS, "op", None)
    if op is not None and op.recording:
        op.counters[key] = op.counters.get(key, 0) + n


def time_expired() -> ExecutionTimeout:
    msg = "operation exceeded time limit"
    return ExecutionTimeout(msg, MAX_TIME_MS_EXPIRED, {"ok": 0.0, "errmsg": msg, "code": MAX_TIME_MS_EXPIRED,
                                                       "codeName": "MaxTimeMSExpired"})


def check_deadline() -> None:
    """Raise MaxTimeMSExpired (50) when the current operation's maxTimeMS has passed (cheap otherwise)."""
    op = getattr(_TLS, "op", None)
    if op is not None and op.deadline is not None and _clock() > op.deadline:
        raise time_expired()


# ---------------------------------------------------------------------------------------------- errors
def _explicit_raise(exc: BaseException) -> bool:
    """True when ``exc`` was raised by a ``raise`` statement (a deliberate argument check), not by the
    interpreter failing inside engine code (``d[k]``, ``a < b``, ``None.x`` ...)."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
    if not line.startswith("raise "):
        return False
    fname = code.co_filename.replace("\\", "/")
    if "/mongomock/" in fname:  # mongomock's own argument checks mirror pymongo's; its other raises are gaps
        return code.co_name.lstrip("_").startswith("validate")
    return True


def is_client_side(exc: BaseException, name: str | None = None) -> bool:
    """A pymongo-style client-side error (wrong argument type/value), raised before the "server" is asked.
    BSON errors are the driver's only when it encodes the user's documents (inserts) or meets a value it
    cannot encode; raised from inside the engine's own work (an update's result) they are engine gaps."""
    if isinstance(exc, bson.errors.BSONError):
        if name is None:
            op = getattr(_TLS, "op", None)
            name = op.name if op is not None else ""
        return name in ("insert_one", "insert_many", "bulk_write", "") or "cannot encode object" in str(exc)
    if type(exc) is OverflowError and "can only handle up to 8-byte ints" in str(exc):
        return True  # bson's encoder: pymongo raises it for an int beyond 64 bits before sending anything
    if type(exc) in _CLIENT_SIDE or isinstance(exc, StopIteration):
        return isinstance(exc, StopIteration) or _explicit_raise(exc)
    from pymongo.errors import ConfigurationError, InvalidOperation, DocumentTooLarge, InvalidName
    return isinstance(exc, (ConfigurationError, InvalidOperation, DocumentTooLarge, InvalidName))


NOT_SUPPORTED_IN_TRANSACTION = 263


def aborts_transaction(exc: BaseException) -> bool:
    """Whether ``exc`` leaving a command run inside a transaction aborts it: every server-side error does,
    except OperationNotSupportedInTransaction (263) for a command refused in a transaction in progress
    (jstests/core/txns/commands_not_allowed_in_txn.js: "fails inside a transaction, but does not abort")."""
    if getattr(exc, "code", None) == NOT_SUPPORTED_IN_TRANSACTION:
        return False
    return isinstance(exc, Exception) and not is_client_side(exc)


_WRITE_OPS = frozenset({"insert_one", "update_one", "update_many", "replace_one", "delete_one", "delete_many"})
_BULK_OPS = frozenset({"insert_many", "bulk_write"})


def _failure(name: str, msg: str, code: int, code_name: str) -> PyMongoError:
    if name in _WRITE_OPS:
        return WriteError(msg, code, {"index": 0, "code": code, "codeName": code_name, "errmsg": msg})
    if name in _BULK_OPS:
        return BulkWriteError({"writeErrors": [{"index": 0, "code": code, "codeName": code_name, "errmsg": msg}],
                               "writeConcernErrors": [], "nInserted": 0, "nUpserted": 0, "nMatched": 0,
                               "nModified": 0, "nRemoved": 0, "upserted": []})
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code, "codeName": code_name})


# Messages of code-less OperationFailures (raised by mongomock's parsers) and the server's code for them.
_CODE_BY_MESSAGE = (
    ("unknown operator", BAD_VALUE), ("unknown top level operator", BAD_VALUE), ("$and/$or/$nor", BAD_VALUE),
    ("unrecognized field", 40415), ("Unrecognized expression", 168), ("Unrecognized pipeline stage", 40324),
    ("$regex has to be a string", BAD_VALUE), ("$in needs an array", BAD_VALUE), ("$nin needs an array", BAD_VALUE),
    ("$all needs an array", BAD_VALUE), ("$size needs a number", BAD_VALUE), ("$exists", BAD_VALUE),
    ("$not needs", BAD_VALUE), ("$elemMatch needs an Object", BAD_VALUE),
)


def _with_code(exc: OperationFailure) -> OperationFailure:
    """A code-less OperationFailure (mongomock's) with the server's code: by its message, else BadValue 2."""
    msg = str(exc._message if hasattr(exc, "_message") else exc)
    code = BAD_VALUE
    for prefix, c in _CODE_BY_MESSAGE:
        if msg.startswith(prefix) or prefix in msg:
            code = c
            break
    det = dict(exc.details or {}) if isinstance(exc.details, dict) else {}
    det.update({"ok": 0.0, "errmsg": msg, "code": code})
    if isinstance(exc, WriteError):
        det.setdefault("index", 0)
    new = type(exc)(msg, code, det)
    new.__traceback__ = exc.__traceback__
    return new


def translate(exc: BaseException, name: str = "") -> BaseException:
    """The server-shaped error for ``exc`` (``exc`` itself when it already is one or is client side)."""
    if isinstance(exc, OperationFailure) and exc.code is None and not isinstance(exc, BulkWriteError):
        return _with_code(exc)
    if isinstance(exc, PyMongoError) or not isinstance(exc, Exception) or is_client_side(exc, name):
        return exc
    if isinstance(exc, RecursionError):
        if name in ("insert_one", "insert_many"):
            return _failure(name, "cannot insert document because it exceeds %d levels of nesting" % 180,
                            OVERFLOW, "Overflow")
        return _failure(name, "exceeded maximum query tree depth of %d (embedded engine: the request nests "
                              "too deeply)" % MAX_QUERY_DEPTH, BAD_VALUE, "BadValue")
    if isinstance(exc, NotImplementedError):
        return _failure(name, not_modelled(str(exc) or "This operation"), COMMAND_NOT_SUPPORTED,
                        "CommandNotSupported")
    where = name or "operation"
    msg = "embedded engine internal error in %s: %s: %s. %s" % (where, type(exc).__name__, exc, REPORT_HINT)
    return _failure(name, msg, INTERNAL_ERROR, "InternalError")


# ---------------------------------------------------------------------------------------------- depth
def check_query_depth(filter_: Any) -> None:
    """Refuse a query whose tree (``$and``/``$or``/``$nor``/``$not``/``$elemMatch`` levels) nests deeper than
    the server's 100 (BadValue 2 "exceeded maximum query tree depth of 100"), without recursion."""
    if type(filter_) is not dict:
        return
    stack: list[tuple[Any, int]] = [(filter_, 0)]
    while stack:
        node, level = stack.pop()
        if level > MAX_QUERY_DEPTH:
            raise OperationFailure("exceeded maximum query tree depth of %d at %s"
                                   % (MAX_QUERY_DEPTH, _short(node)), BAD_VALUE)
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("$and", "$or", "$nor") and isinstance(v, list):
                    for x in v:
                        stack.append((x, level + 1))
                elif isinstance(v, dict):
                    stack.append((v, level + 1 if k in ("$not", "$elemMatch") or not str(k).startswith("$")
                                  else level))


_FILTER_FIRST = frozenset({"find", "find_one", "count_documents", "update_one", "update_many", "replace_one",
                           "delete_one", "delete_many", "find_one_and_delete", "find_one_and_update",
                           "find_one_and_replace"})


def _check_pipeline_depth(pipeline: Any) -> None:
    if isinstance(pipeline, list):
        for stage in pipeline:
            if type(stage) is dict and "$match" in stage:
                check_query_depth(stage["$match"])


def _short(node: Any) -> str:
    import reprlib
    r = reprlib.Repr()
    r.maxlevel, r.maxdict, r.maxlist, r.maxstring, r.maxother = 3, 4, 4, 30, 30
    return r.repr(node)


# ---------------------------------------------------------------------------------------------- wrapper
def operation(name: str, method: Callable) -> Callable:
    """Wrap ``method`` (a public engine method) in the boundary as the operation ``name``."""
    if getattr(method, "_lab_boundary", None) == name:
        return method

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        tls = _TLS
        if getattr(tls, "op", None) is not None:
            return method(self, *args, **kwargs)  # a nested engine call: the outer operation holds everything
        client = client_of(self)
        cd = client.__dict__
        store = cd["_store"]
        sd = store.__dict__
        lock = sd.get("_lab_lock") or lock_for_store(store)
        with lock:
            op = Op(name, self, args, kwargs, client)
            tls.op = op
            try:
                if name in _FILTER_FIRST:
                    check_query_depth(args[0] if args else kwargs.get("filter"))
                elif name == "aggregate":
                    _check_pipeline_depth(args[0] if args else kwargs.get("pipeline"))
                if cd.get("_lab_listeners") or sd.get("_lab_profiling"):  # someone watches
                    hooks.get("monitor_begin")(op)
                t0 = _clock()
                result = method(self, *args, **kwargs)
                if op.deadline is not None and _clock() > op.deadline:
                    raise time_expired()
                if name in _TOP_KINDS:
                    _record_top_of(store, self, name, args, kwargs, _clock() - t0)
            except BaseException as exc:
                err = translate(exc, name)
                _abort_transaction_on(self, kwargs, err)
                if op.recording:
                    hooks.get("monitor_fail")(op, err)
                if err is exc:
                    raise
                raise err from exc
            else:
                if op.recording:
                    hooks.get("monitor_succeed")(op, result)
                return result
            finally:
                tls.op = None

    guarded._lab_boundary = name  # type: ignore[attr-defined]
    return guarded


# ---------------------------------------------------------------------------------------------- top
# The ``top`` command's usage counters (src/mongo/db/stats/top.cpp): per namespace, the count of operations and
# the microseconds they took, by kind (the operation's logical op: a find is ``queries``, a getMore ``getmore``,
# writes ``insert``/``update``/``remove``, everything else ``commands``) and by lock (``readLock`` for reads,
# ``writeLock`` for writes). Kept per store, measured at this boundary around each outermost operation.
_TOP_KINDS = {"find": "queries", "find_one": "queries", "insert_one": "insert", "insert_many": "insert",
              "update_one": "update", "update_many": "update", "replace_one": "update", "delete_one": "remove",
              "delete_many": "remove", "bulk_write": "commands", "find_one_and_delete": "commands",
              "find_one_and_update": "commands", "find_one_and_replace": "commands", "count_documents": "commands",
              "estimated_document_count": "commands", "distinct": "commands", "aggregate": "commands",
              "create_index": "commands", "create_indexes": "commands", "drop_index": "commands",
              "drop_indexes": "commands", "list_indexes": "commands", "drop": "commands"}
_TOP_WRITES = {"insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
               "bulk_write", "find_one_and_delete", "find_one_and_update", "find_one_and_replace", "create_index",
               "create_indexes", "drop_index", "drop_indexes", "drop"}
TOP_FIELDS = ("total", "readLock", "writeLock", "queries", "getmore", "insert", "update", "remove", "commands")


def _record_top_of(store: Any, target: Any, name: str, args: tuple, kwargs: dict, seconds: float) -> None:
    ns_of = getattr(target, "_ns", None)
    if ns_of is None:  # a cursor: its collection's namespace
        ns_of = getattr(getattr(target, "collection", None), "_ns", None)
        if ns_of is None:
            return
    elif name == "find":  # Collection.find only builds the cursor; the query runs (and counts) when it is read
        return
    ns = ns_of()
    if name == "drop":  # a dropped collection's usage goes with it (Top::collectionDropped)
        store.__dict__.get("_lab_top", {}).pop(ns, None)
        return
    record_top(store, ns, _TOP_KINDS[name], seconds, name in _TOP_WRITES)


def record_top(store: Any, ns: str, kind: str, seconds: float, write: bool) -> None:
    """Count one operation of ``kind`` (a ``top`` field) on ``ns`` that took ``seconds``."""
    top = store.__dict__.setdefault("_lab_top", {})
    row = top.get(ns)
    if row is None:
        row = top[ns] = {k: [0, 0] for k in TOP_FIELDS}
    micros = int(seconds * 1_000_000)
    for key in ("total", "writeLock" if write else "readLock", kind):
        cell = row[key]
        cell[0] += micros
        cell[1] += 1


def top_totals(store: Any) -> dict:
    """The ``totals`` document of the ``top`` command for ``store`` (namespaces in name order)."""
    out: dict[str, Any] = {"note": "all times in microseconds"}
    for ns, row in sorted(store.__dict__.get("_lab_top", {}).items()):
        out[ns] = {k: {"time": v[0], "count": v[1]} for k, v in row.items()}
    return out


def _abort_transaction_on(target: Any, kwargs: dict, err: BaseException) -> None:
    """A server-side error of an operation run in a transaction aborts the transaction (sessions.bind does
    it for errors inside the session's scope; this covers checks made before it, e.g. the query depth)."""
    session = kwargs.get("session") or target.__dict__.get("_session")
    txn = getattr(session, "_txn", None) if session is not None else None
    if txn is not None and session.in_transaction and aborts_transaction(err):
        txn.aborted_by_server = True


def guard(table: dict[str, str]) -> Callable[[type], type]:
    """Class decorator: wrap the methods named in ``table`` (method -> operation name) in the boundary.
    Inherited methods are wrapped too (on the decorated class)."""
    def deco(cls: type) -> type:
        for meth, opname in table.items():
            fn = getattr(cls, meth, None)
            if fn is None:
                continue
            setattr(cls, meth, operation(opname, fn))
        return cls
    return deco


COLLECTION_OPERATIONS = {m: m for m in (
    "insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
    "bulk_write", "find_one_and_delete", "find_one_and_update", "find_one_and_replace", "find", "find_one",
    "find_raw_batches", "count_documents", "estimated_document_count", "distinct", "aggregate",
    "create_index", "create_indexes", "drop_index", "drop_indexes", "list_indexes", "index_information",
    "drop", "options", "rename", "watch", "list_search_indexes")}

CURSOR_OPERATIONS = {"_execute": "find", "distinct": "cursor_distinct", "explain": "explain"}

DATABASE_OPERATIONS = {m: m for m in (
    "command", "drop_collection", "create_collection", "list_collections", "list_collection_names",
    "aggregate", "validate_collection", "dereference")}

CLIENT_OPERATIONS = {m: m for m in ("drop_database", "list_database_names", "list_databases", "bulk_write",
                                    "server_info")}

SESSION_OPERATIONS = {"commit_transaction": "commit_transaction", "abort_transaction": "abort_transaction"}
