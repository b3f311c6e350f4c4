"""The ``$changeStream`` stage: change events built from the engine's oplog (``repl/oplog.py``).

Server: ``src/mongo/db/pipeline/document_source_change_stream.cpp`` (the spec, its checks and the stages it
expands to), ``change_stream_event_transform.cpp`` (an oplog entry -> a change event, field by field),
``change_stream_document_diff_parser.cpp`` (an update's diff -> ``updateDescription``),
``document_source_change_stream_check_invalidate.cpp``, ``..._ensure_resume_token_present.cpp``,
``..._check_resumability.cpp``, ``..._add_post_image.cpp``, ``..._add_pre_image.cpp``, ``resume_token.cpp``;
the manual's "Change Streams" and "Change Events" pages.

``ChangeStreamCursor`` is the server's side of a change stream: opened by an ``aggregate`` whose first stage is
``$changeStream`` (in-process by ``watch()``, over the wire by the command), it reads the oplog from its start
point on each ``next_batch`` and keeps a ``post_batch_resume_token``. The events are built when read (the oplog
keeps references to the stored documents), passed through the stages the user put after ``$changeStream``
(only the stages the server allows there) and never have their ``_id`` (the resume token) changed.

Modelled: insert, update (``updateDescription`` with ``updatedFields``, ``removedFields``, ``truncatedArrays``
and, with ``showExpandedEvents``, ``disambiguatedPaths``), replace, delete, drop, rename, dropDatabase and
invalidate; with ``showExpandedEvents`` also create, createIndexes, dropIndexes and modify and the
``collectionUUID`` / ``operationDescription`` fields; ``fullDocument`` (``default``, ``updateLookup``,
``whenAvailable``, ``required``) and ``fullDocumentBeforeChange`` (``off``, ``whenAvailable``, ``required``) with
the collection option ``changeStreamPreAndPostImages``; transactions (events at commit with ``lsid`` and
``txnNumber``); ``resumeAfter``, ``startAfter`` (also past an invalidate) and ``startAtOperationTime``.

An operator update's ``updateDescription`` is built from the paths the update names, as the server's update
driver logs them (``v2_log_builder``): the value at each updated path (the whole created sub-document when the
update created it, each appended element of a ``$push``), the removed paths. A pipeline update's is the diff of
the two documents (``doc_diff::computeOplogDiff``: sub-documents and arrays compared element by element, a
shortened array in ``truncatedArrays``); when that diff is larger than the new document the server logs a
replacement, and the event is a ``replace``. The resume token's ``_data`` is a hex string of the engine's own
layout (cluster time first, so tokens sort by time); the manual calls the token opaque.
"""
from __future__ import annotations

import datetime
import struct
from collections import deque
from collections.abc import Mapping
from typing import Any

import bson
from bson import Int64, Timestamp
from bson.binary import Binary
from pymongo.errors import OperationFailure

from ..base import hooks
from ..base.errors import unsupported
from ..bson.values import type_name
from ..repl.oplog import Entry, oplog_of
from ..update.update_ops import same  # BSON binary equality, as the diff's binaryEqual

STAGE = "$changeStream"
# The stages the server allows after $changeStream (the allowlist jstest, change_streams/)
ALLOWED_STAGES = frozenset({"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith",
                            "$redact"})
FULL_DOCUMENT = ("default", "updateLookup", "whenAvailable", "required")
FULL_DOCUMENT_BEFORE = ("off", "whenAvailable", "required")
# DocumentSourceChangeStreamSpec's fields (document_source_change_stream.idl)
SPEC_FIELDS = ("resumeAfter", "startAfter", "startAtOperationTime", "fullDocument", "fullDocumentBeforeChange",
               "allChangesForCluster", "showExpandedEvents", "showMigrationEvents", "showSystemEvents",
               "allowToRunOnConfigDB", "allowToRunOnSystemNS", "showRawUpdateDescription")
CLASSIC_OPS = frozenset({"insert", "update", "replace", "delete", "drop", "rename", "dropDatabase", "invalidate"})
TOKEN_VERSION = 2
HWM, EVENT = 0, 128  # the token types of resume_token.h: high-water mark, event
DEFAULT_AWAIT_S = 1.0  # a getMore on an awaitData cursor without maxTimeMS waits 1 second (the server's default)
_MISSING = object()


def _fail(msg: str, code: int, code_name: str, labels: list | None = None) -> OperationFailure:
    det: dict[str, Any] = {"ok": 0.0, "errmsg": msg, "code": code, "codeName": code_name}
    if labels:
        det["errorLabels"] = labels
    return OperationFailure(msg, code, det)


def _fatal(msg: str, code: int = 280, code_name: str = "ChangeStreamFatalError") -> OperationFailure:
    """A change stream error drivers must not resume after (``NonResumableChangeStreamError``)."""
    return _fail(msg, code, code_name, ["NonResumableChangeStreamError"])


def history_lost() -> OperationFailure:
    """ChangeStreamHistoryLost (286): the resume point is older than the oplog's history."""
    return _fatal("Resume of change stream was not possible, as the resume point may no longer be in the oplog.",
                  286, "ChangeStreamHistoryLost")


# ---------------------------------------------------------------------------------------------- tokens
class Token:
    """A resume token's data (resume_token.h's ResumeTokenData)."""

    __slots__ = ("ts", "version", "type", "txn_index", "from_invalidate", "uuid", "event_id")

    def __init__(self, ts: Timestamp, type_: int = EVENT, txn_index: int = 0, from_invalidate: bool = False,
                 uuid: Any = None, event_id: Any = None, version: int = TOKEN_VERSION) -> None:
        self.ts = ts
        self.version = version
        self.type = type_
        self.txn_index = txn_index
        self.from_invalidate = from_invalidate
        self.uuid = uuid
        self.event_id = event_id

    def key(self) -> tuple:
        """The position in the stream: cluster time, index in the transaction, invalidate after its event."""
        return (self.ts.time, self.ts.inc, self.type, self.txn_index, self.from_invalidate)

    def same_event(self, other: "Token") -> bool:
        return (self.key() == other.key() and bytes(self.uuid or b"") == bytes(other.uuid or b"")
                and _enc(self.event_id) == _enc(other.event_id))

    def to_doc(self) -> dict:
        """``{_data: "<hex>"}``: cluster time, version, type, txnOpIndex, fromInvalidate, UUID, event id."""
        raw = b"\x82" + struct.pack(">IIBBIB", self.ts.time, self.ts.inc, self.version, self.type,
                                    self.txn_index, 1 if self.from_invalidate else 0)
        raw += (b"\x01" + bytes(self.uuid)) if self.uuid is not None else b"\x00"
        if self.event_id is not None:
            raw += _enc(self.event_id)
        return {"_data": raw.hex().upper()}


def _enc(v: Any) -> bytes:
    return bson.encode(v) if v is not None else b""


def _bad_token(why: str) -> OperationFailure:
    return _fail("Bad resume token: %s" % why, 40649, "Location40649")


def parse_token(doc: Any, field: str) -> Token:
    """The data of a resume token ``{_data: "<hex>"}`` (one this engine made)."""
    if not isinstance(doc, Mapping):
        raise _fail("BSON field '$changeStream.%s' is the wrong type '%s', expected type 'object'"
                    % (field, type_name(doc)), 14, "TypeMismatch")
    data = doc.get("_data")
    if not isinstance(data, str):
        raise _bad_token("_data of missing or of wrong type. Expected string, got %s"
                         % ("missing" if data is None else type_name(data)))
    try:
        raw = bytes.fromhex(data)
        if len(raw) < 17 or raw[0] != 0x82:
            raise ValueError
        t, inc, version, typ, txn_index, inval = struct.unpack(">IIBBIB", raw[1:16])
        pos = 16
        uuid = None
        if raw[pos] == 1:
            uuid = Binary(raw[pos + 1:pos + 17], 4)
            pos += 17
        else:
            pos += 1
        event_id = bson.decode(raw[pos:]) if pos < len(raw) else None
    except (ValueError, IndexError, struct.error, bson.errors.BSONError):
        raise _bad_token("the _data %r is not a resume token of this deployment" % data[:48]) from None
    return Token(Timestamp(t, inc), typ, txn_index, bool(inval), uuid, event_id, version)


def high_water_mark(ts: Timestamp) -> dict:
    """A high-water-mark token: every event before ``ts`` was seen (the postBatchResumeToken of an empty batch)."""
    return Token(ts, HWM).to_doc()


# ---------------------------------------------------------------------------------------------- spec
class Spec:
    """A parsed ``$changeStream`` specification."""

    def __init__(self, arg: Any) -> None:
        if not isinstance(arg, Mapping):
            raise _fail("$changeStream stage expects a document as argument", 50808, "Location50808")
        for k in arg:
            if k not in SPEC_FIELDS:
                raise _fail("BSON field '$changeStream.%s' is an unknown field." % k, 40415, "Location40415")
        self.full_document = self._enum(arg, "fullDocument", FULL_DOCUMENT, "default")
        self.before = self._enum(arg, "fullDocumentBeforeChange", FULL_DOCUMENT_BEFORE, "off")
        for name in ("allChangesForCluster", "showExpandedEvents", "showMigrationEvents", "showSystemEvents",
                     "allowToRunOnConfigDB", "allowToRunOnSystemNS", "showRawUpdateDescription"):
            v = arg.get(name, False)
            if not isinstance(v, bool):
                raise _fail("BSON field '$changeStream.%s' is the wrong type '%s', expected type 'bool'"
                            % (name, type_name(v)), 14, "TypeMismatch")
        self.all_cluster = bool(arg.get("allChangesForCluster"))
        self.expanded = bool(arg.get("showExpandedEvents"))
        for name in ("showRawUpdateDescription", "showMigrationEvents", "showSystemEvents",
                     "allowToRunOnConfigDB", "allowToRunOnSystemNS"):
            if arg.get(name):  # writes to system collections and raw oplog diffs are not recorded
                raise unsupported("$changeStream's %s option" % name)
        if "resumeAfter" in arg and "startAfter" in arg:
            raise _fail("Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage", 50865,
                        "Location50865")
        self.resume_after = parse_token(arg["resumeAfter"], "resumeAfter") if "resumeAfter" in arg else None
        self.start_after = parse_token(arg["startAfter"], "startAfter") if "startAfter" in arg else None
        at = arg.get("startAtOperationTime")
        if at is not None and not isinstance(at, Timestamp):
            raise _fail("BSON field '$changeStream.startAtOperationTime' is the wrong type '%s', expected type "
                        "'timestamp'" % type_name(at), 14, "TypeMismatch")
        if at is not None and (self.resume_after or self.start_after):
            raise _fail("Only one type of resume option is allowed, but multiple were found", 40674,
                        "Location40674")
        self.start_at = at
        if self.resume_after is not None and self.resume_after.from_invalidate:
            raise _fail("Attempting to resume a change stream using 'resumeAfter' is not allowed from an "
                        "invalidate notification", 260, "InvalidResumeToken")

    @staticmethod
    def _enum(arg: Mapping, name: str, values: tuple, default: str) -> str:
        v = arg.get(name, default)
        if not isinstance(v, str):
            raise _fail("BSON field '$changeStream.%s' is the wrong type '%s', expected type 'string'"
                        % (name, type_name(v)), 14, "TypeMismatch")
        if v not in values:
            raise _fail("Enumeration value '%s' for field '$changeStream.%s' is not a valid value." % (v, name), 2,
                        "BadValue")
        return v


def split_pipeline(pipeline: Any) -> tuple[Any, list] | None:
    """``($changeStream argument, the stages after it)`` when ``pipeline`` starts with ``$changeStream``;
    None when it has no ``$changeStream`` stage; the server's error when one is misplaced or a later stage is not
    allowed in a change stream."""
    if not isinstance(pipeline, list):
        return None
    where = [i for i, st in enumerate(pipeline) if isinstance(st, Mapping) and STAGE in st]
    if not where:
        for st in pipeline:  # $changeStream inside $facet / $lookup / $unionWith sub-pipelines
            if isinstance(st, Mapping) and "$facet" in st and isinstance(st["$facet"], Mapping):
                for sub in st["$facet"].values():
                    if isinstance(sub, list) and any(isinstance(s, Mapping) and STAGE in s for s in sub):
                        raise _fail("$changeStream is not allowed within a $facet stage: $changeStream is only "
                                    "valid as the first stage in a pipeline", 40600, "Location40600")
        return None
    if where[0] != 0 or len(where) > 1:
        raise _fail("$changeStream is only valid as the first stage in a pipeline", 40602, "Location40602")
    first = pipeline[0]
    if len(first) != 1:
        raise _fail("A pipeline stage specification object must contain exactly one field.", 40323,
                    "Location40323")
    rest = list(pipeline[1:])
    for st in rest:
        if not isinstance(st, Mapping) or len(st) != 1:
            raise _fail("A pipeline stage specification object must contain exactly one field.", 40323,
                        "Location40323")
        name = next(iter(st))
        if name not in ALLOWED_STAGES:
            raise _fail("%s is not permitted in a $changeStream pipeline" % name, 20, "IllegalOperation")
    return first[STAGE], rest


# ---------------------------------------------------------------------------------------------- update descriptions
def _get(v: Any, part: str) -> Any:
    if isinstance(v, dict):
        return v.get(part, _MISSING)
    if isinstance(v, list) and part.isdigit():
        i = int(part)
        return v[i] if i < len(v) else _MISSING
    return _MISSING


class _Desc:
    """Builds ``updateDescription`` as change_stream_document_diff_parser.cpp does: per path, whether it is
    ambiguous (a numeric field name below the top level, or a field name with a dot) -> ``disambiguatedPaths``."""

    def __init__(self) -> None:
        self.updated: dict = {}
        self.removed: list = []
        self.truncated: list = []
        self.disambiguated: dict = {}

    @staticmethod
    def _ambiguous(path: list) -> bool:
        for i, (p, is_index) in enumerate(path):
            if is_index:
                continue
            if (i > 0 and p.isdigit() and (p == "0" or not p.startswith("0"))) or "." in p:
                return True
        return False

    def _note(self, path: list) -> str:
        dotted = ".".join(p for p, _ in path)
        if self._ambiguous(path):
            self.disambiguated[dotted] = [int(p) if is_index else p for p, is_index in path]
        return dotted

    def update(self, path: list, value: Any) -> None:
        self.updated[self._note(path)] = value

    def remove(self, path: list) -> None:
        self.removed.append(self._note(path))

    def truncate(self, path: list, size: int) -> None:
        self.truncated.append({"field": self._note(path), "newSize": size})

    def doc(self, expanded: bool) -> dict:
        out = {"updatedFields": self.updated, "removedFields": self.removed, "truncatedArrays": self.truncated}
        if expanded:
            out["disambiguatedPaths"] = self.disambiguated
        return out


def _diff_docs(old: dict, new: dict, path: list, d: _Desc) -> None:
    """computeOplogDiff for two documents: updated and inserted fields, removed fields, then sub-diffs."""
    subs = []
    for k, v in new.items():
        o = old.get(k, _MISSING)
        if o is _MISSING:
            d.update(path + [(k, False)], v)
        elif not same(o, v):
            if (isinstance(o, dict) and isinstance(v, dict)) or (isinstance(o, list) and isinstance(v, list)):
                subs.append((k, o, v))
            else:
                d.update(path + [(k, False)], v)
    for k in old:
        if k not in new:
            d.remove(path + [(k, False)])
    for k, o, v in subs:
        if isinstance(v, dict):
            _diff_docs(o, v, path + [(k, False)], d)
        else:
            _diff_arrays(o, v, path + [(k, False)], d)


def _diff_arrays(old: list, new: list, path: list, d: _Desc) -> None:
    if len(new) < len(old):
        d.truncate(path, len(new))
    for i, v in enumerate(new):
        p = path + [(str(i), True)]
        if i >= len(old):
            d.update(p, v)
            continue
        o = old[i]
        if same(o, v):
            continue
        if isinstance(o, dict) and isinstance(v, dict):
            _diff_docs(o, v, p, d)
        elif isinstance(o, list) and isinstance(v, list):
            _diff_arrays(o, v, p, d)
        else:
            d.update(p, v)


def _diff_path(old: Any, new: Any, parts: list, i: int, path: list, d: _Desc) -> None:
    """The log of one operator-update path: where the old and new values at ``parts`` differ."""
    if old is _MISSING and new is _MISSING:
        return
    if new is _MISSING:
        d.remove(path)
        return
    if old is _MISSING or i == len(parts) or type(old) is not type(new) or not isinstance(new, (dict, list)):
        if old is not _MISSING and same(old, new):
            return
        if (i == len(parts) and isinstance(old, list) and isinstance(new, list) and len(new) > len(old)
                and all(same(a, b) for a, b in zip(old, new))):
            for j in range(len(old), len(new)):  # $push / $addToSet: each appended element
                d.update(path + [(str(j), True)], new[j])
            return
        d.update(path, new)
        return
    part = parts[i]
    if part == "$" or part.startswith("$["):
        if not isinstance(new, list):
            d.update(path, new)
            return
        for j in range(max(len(old), len(new))):
            o = old[j] if j < len(old) else _MISSING
            n = new[j] if j < len(new) else _MISSING
            if o is _MISSING or n is _MISSING or not same(o, n):
                _diff_path(o, n, parts, i + 1, path + [(str(j), True)], d)
        return
    is_index = isinstance(new, list)
    _diff_path(_get(old, part), _get(new, part), parts, i + 1, path + [(part, is_index)], d)


def update_description(entry: Entry, expanded: bool) -> dict | None:
    """The ``updateDescription`` of an update entry; None when the server would log it as a replacement."""
    d = _Desc()
    if entry.kind == "pipeline":
        _diff_docs(entry.pre, entry.post, [], d)
        size = len(bson.encode({"u": d.updated, "d": {k: False for k in d.removed}}))
        if size > len(bson.encode(entry.post)):
            return None  # computeOplogDiff gives up: the oplog holds the new document (a replacement)
        return d.doc(expanded)
    seen = set()
    for path in entry.paths:
        if path in seen:
            continue
        seen.add(path)
        parts = path.split(".")
        _diff_path(_get(entry.pre, parts[0]), _get(entry.post, parts[0]), parts, 1, [(parts[0], False)], d)
    return d.doc(expanded)


# ---------------------------------------------------------------------------------------------- the cursor
class ChangeStreamCursor:
    """The server's change stream cursor over one namespace (``coll`` None: a database; ``db`` None: the cluster).

    ``next_batch(n)`` returns up to ``n`` events (all available if ``n`` is 0 or None); ``post_batch_resume_token``
    is the token to resume after everything returned; ``invalidated`` once an invalidate event was returned
    (the cursor is then exhausted)."""

    def __init__(self, client: Any, db: str | None, coll: str | None, arg: Any, stages: list,
                 collation: Any = None) -> None:
        self.client = client
        self.db = db
        self.coll = coll
        self.spec = spec = Spec(arg)
        self.stages = stages
        self._check_namespace(spec)
        if collation:
            raise unsupported("A collation on a change stream")
        self.log = oplog_of(client._store)
        self.pending: deque = deque()
        self.invalidated = False
        self.closed = False
        self.resume = None       # the token whose event is still to be found (resumeAfter / startAfter)
        self.skip_before = None  # a high-water mark: events before it were seen
        log = self.log
        log.open_stream()  # first: a history with unrecorded writes restarts here
        try:
            self._start(spec, log)
        except BaseException:
            log.close_stream()
            raise

    def _start(self, spec: Spec, log: Any) -> None:
        """The start point: a resume token, an operation time, or just after the latest write."""
        token = spec.resume_after or spec.start_after
        if token is not None:
            if token.ts < log.history_start:
                raise history_lost()
            if token.type == EVENT:
                self.resume = token
            else:
                self.skip_before = token
            self.seq = log.seq_at(token.ts)
            self.pbrt = token.to_doc()
        elif spec.start_at is not None:
            if spec.start_at < log.history_start:
                raise history_lost()
            self.seq = log.seq_at(spec.start_at)
            self.pbrt = high_water_mark(spec.start_at)
        else:
            self.seq = log.next_seq
            last = log.last()
            self.pbrt = high_water_mark(Timestamp(last.time, last.inc + 1))

    # -- checks ------------------------------------------------------------------------------------------
    def _check_namespace(self, spec: Spec) -> None:
        """assertIsLegalSpecification: internal databases and collections, views, allChangesForCluster."""
        db, coll = self.db, self.coll
        if spec.all_cluster and not (db == "admin" and coll is None):
            raise _fail("A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' "
                        "database, and with no collection name; found %s" % (db if coll is None else
                                                                               "%s.%s" % (db, coll)),
                        72, "InvalidOptions")
        if db == "admin" and not spec.all_cluster or db in ("local", "config"):
            raise _fail("$changeStream may not be opened on the internal %s database" % db, 73, "InvalidNamespace")
        if db == "admin":
            self.db = None  # the whole cluster
            return
        if coll is not None:
            if coll.startswith("system."):
                raise _fail("$changeStream may not be opened on the internal %s.%s collection" % (db, coll), 73,
                            "InvalidNamespace")
            st = self.client._store[db]._collections.get(coll) if db in self.client._store else None
            if st is not None and st.options and ("viewOn" in st.options or "timeseries" in st.options):
                raise _fail("Namespace %s.%s is a view, not a collection" % (db, coll), 166,
                            "CommandNotSupportedOnView")

    # -- reading -----------------------------------------------------------------------------------------
    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.log.close_stream()
            self.log.notify()

    def has_data(self) -> bool:
        """Whether an event (or an entry to read) is waiting."""
        return bool(self.pending) or self.log.next_seq > self.seq

    def next_batch(self, n: int | None = None) -> list[dict]:
        """Up to ``n`` events (0/None: all available), advancing the post-batch resume token."""
        out: list[dict] = []
        limit = n or 0
        while True:
            while self.pending and (not limit or len(out) < limit):
                ev = self.pending.popleft()
                out.append(ev)
                self.pbrt = ev["_id"]
                if ev.get("operationType") == "invalidate" and "_id" in ev:
                    self.invalidated = True
            if self.invalidated or (limit and len(out) >= limit):
                break
            entries = self.log.since(self.seq)
            if not entries:
                break
            for e in entries:
                self.seq = e.seq + 1
                self._read(e)
                if self.pending and limit and len(out) + len(self.pending) >= limit:
                    break
        if self.invalidated:
            self.pending.clear()
            self.close()
        elif not self.pending and (not limit or len(out) < limit):
            last = self.log.last()
            hw = Timestamp(last.time, last.inc + 1)
            if not out or Token(hw, HWM).key() > parse_token(self.pbrt, "pbrt").key():
                self.pbrt = high_water_mark(hw)
        return out

    def _read(self, e: Entry) -> None:
        for ev, tok in self._events(e):
            if self.skip_before is not None:
                if tok.key() < self.skip_before.key():
                    continue
                self.skip_before = None
            if self.resume is not None:
                r = self.resume
                if tok.key() < r.key():
                    continue
                if tok.same_event(r):
                    self.resume = None
                    continue
                raise _fatal("cannot resume stream; the resume token was not found. %s" % _fmt(ev["_id"]))
            if not self.spec.expanded and ev["operationType"] not in CLASSIC_OPS:
                continue
            self._images(ev, e)
            for out in self._user_stages(ev):
                self.pending.append(out)

    def _user_stages(self, ev: dict) -> list[dict]:
        if not self.stages:
            return [ev]
        from .aggregation import Ctx, run_stages
        coll = self.client[self.db or "admin"][self.coll or "$cmd.aggregate"]
        out = run_stages(coll, [dict(s) for s in self.stages], Ctx(), input_docs=[ev])
        for d in out:
            if not same(d.get("_id", _MISSING), ev["_id"]):
                raise _fatal("Encountered an event whose _id field, which contains the resume token, was modified "
                             "by the pipeline. Modifying the _id field of an event makes it impossible to resume "
                             "the stream from that point. Only transformations that retain the unmodified _id "
                             "field are allowed.")
        return out

    # -- events ------------------------------------------------------------------------------------------
    def _watches(self, db: str, coll: str | None) -> bool:
        if self.db is None:
            return db not in ("admin", "config", "local") and not (coll or "").startswith("system.")
        if db != self.db:
            return False
        if self.coll is None:
            return coll is None or not coll.startswith("system.")
        return coll == self.coll

    def _events(self, e: Entry) -> list[tuple[dict, Token]]:
        """The change events of one oplog entry on this stream (with their tokens), before the user's stages."""
        if e.op != "c":
            if not self._watches(e.db, e.coll):
                return []
            return [self._crud_event(e)]
        o = e.o
        kind = next(iter(o))
        single = self.coll is not None
        if kind == "renameCollection":
            src, dst = o["renameCollection"], o["to"]
            sdb, scoll = src.split(".", 1)
            ddb, dcoll = dst.split(".", 1)
            if not (self._watches(sdb, scoll) or self._watches(ddb, dcoll)):
                return []
            desc = {"to": {"db": ddb, "coll": dcoll}}
            if o.get("dropTarget") is not None:
                desc["dropTarget"] = o["dropTarget"]
            ev, tok = self._base(e, "rename", desc, head={"to": {"db": ddb, "coll": dcoll}})
            ev["ns"] = {"db": sdb, "coll": scoll}
            if self.spec.expanded:
                ev["operationDescription"] = desc
            out = [(ev, tok)]
            return out + ([self._invalidate(e, tok)] if single else [])
        if kind == "dropDatabase":
            if self.db is not None and e.db != self.db or self.db is None and e.db in ("admin", "config", "local"):
                return []
            if single:
                return []  # a collection stream sees the drop of its collection (recorded first)
            ev, tok = self._base(e, "dropDatabase", None)
            ev["ns"] = {"db": e.db}
            return [(ev, tok)] + ([self._invalidate(e, tok)] if self.db is not None else [])
        if not self._watches(e.db, e.coll):
            return []
        if kind == "drop":
            ev, tok = self._base(e, "drop", None)
            ev["ns"] = {"db": e.db, "coll": e.coll}
            return [(ev, tok)] + ([self._invalidate(e, tok)] if single else [])
        # DDL events of showExpandedEvents: create, createIndexes, dropIndexes, modify
        op_type = {"create": "create", "createIndexes": "createIndexes", "dropIndexes": "dropIndexes",
                   "collMod": "modify"}[kind]
        desc = {k: v for k, v in o.items() if k != kind and k != "_before"}
        ev, tok = self._base(e, op_type, desc)
        ev["ns"] = {"db": e.db, "coll": e.coll}
        if self.spec.expanded:
            ev["operationDescription"] = desc
        if kind == "collMod":
            ev["stateBeforeChange"] = o.get("_before", {})
        if kind == "create" and self.spec.expanded:
            ev["nsType"] = "collection"
        return [(ev, tok)]

    def _base(self, e: Entry, op_type: str, desc: Any, doc_key: Any = None, head: dict | None = None
              ) -> tuple[dict, Token]:
        ev: dict[str, Any] = dict(head or {})
        if e.txn_index is not None:
            ev["txnNumber"] = Int64(e.txn_number)
            ev["lsid"] = e.lsid
        event_id = {"operationType": op_type}
        if doc_key is not None:
            event_id["documentKey"] = doc_key
        elif desc is not None:
            event_id["operationDescription"] = desc
        ts = Timestamp(e.ts.time, e.ts.inc)  # a plain Timestamp in the event (the oplog's skips bson's checks)
        tok = Token(ts, EVENT, e.txn_index or 0, False, e.uuid if op_type != "dropDatabase" else None, event_id)
        ev["_id"] = tok.to_doc()
        ev["operationType"] = op_type
        ev["clusterTime"] = ts
        if self.spec.expanded and e.uuid is not None and op_type != "dropDatabase":
            ev["collectionUUID"] = e.uuid
        ev["wallTime"] = e.wall_time()
        return ev, tok

    def _invalidate(self, e: Entry, tok: Token) -> tuple[dict, Token]:
        inv = Token(tok.ts, EVENT, tok.txn_index, True, tok.uuid, tok.event_id)
        return {"_id": inv.to_doc(), "operationType": "invalidate", "clusterTime": tok.ts, "wallTime": e.wall_time()}, inv

    def _crud_event(self, e: Entry) -> tuple[dict, Token]:
        doc = e.post if e.op == "i" else e.pre
        key = {"_id": doc["_id"]}
        desc = None
        op_type = {"i": "insert", "d": "delete"}.get(e.op)
        if e.op == "u":
            if e.kind == "replace":
                op_type = "replace"
            else:
                desc = update_description(e, self.spec.expanded)
                op_type = "update" if desc is not None else "replace"
        ev, tok = self._base(e, op_type, None, key)
        if op_type in ("insert", "replace"):
            ev["fullDocument"] = e.post
        elif op_type == "update" and self.spec.full_document != "default":
            ev["fullDocument"] = None  # filled by _images (the post-image stage), in this position
        ev["ns"] = {"db": e.db, "coll": e.coll}
        ev["documentKey"] = key
        if desc is not None:
            ev["updateDescription"] = desc
        return ev, tok

    def _images(self, ev: dict, e: Entry) -> None:
        """The post-image (fullDocument) and pre-image (fullDocumentBeforeChange) stages."""
        op_type = ev["operationType"]
        mode = self.spec.full_document
        if op_type == "update" and mode != "default":
            if mode == "updateLookup":
                ev["fullDocument"] = _lookup(self.client, e.db, e.coll, ev["documentKey"]["_id"])
            elif e.images:
                ev["fullDocument"] = e.post
            elif mode == "required":
                raise _fail("Change stream was configured to require a post-image for all update events, but "
                            "the post-image was not found for event: %s" % _fmt(ev), 47, "NoMatchingDocument")
            else:
                ev["fullDocument"] = None
        before = self.spec.before
        if before != "off" and op_type in ("update", "replace", "delete"):
            if e.images:
                ev["fullDocumentBeforeChange"] = e.pre
            elif before == "required":
                raise _fail("Change stream was configured to require a pre-image for all update, delete and "
                            "replace events, but the pre-image was not found for event: %s" % _fmt(ev), 47,
                            "NoMatchingDocument")
            else:
                ev["fullDocumentBeforeChange"] = None


def _lookup(client: Any, db: str, coll: str, _id: Any) -> Any:
    """updateLookup: the document's current version, or None (null) when it is gone."""
    st = client._store[db]._collections.get(coll) if db in client._store else None
    if st is None:
        return None
    return hooks.get("document_by_id")(st, _id)


def _fmt(v: Any) -> str:
    from ..update.update_ops import fmt
    try:
        return fmt(v)
    except Exception:  # noqa: BLE001 - only a message
        return repr(v)


__all__ = ["ChangeStreamCursor", "Spec", "Token", "parse_token", "high_water_mark", "split_pipeline",
           "update_description", "history_lost", "ALLOWED_STAGES", "DEFAULT_AWAIT_S"]
