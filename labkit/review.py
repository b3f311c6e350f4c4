"""A read-only schema review of any database: the anti-patterns of lessons 30-39, with evidence.

``review(db)`` samples every collection with ``$sample`` (never a full scan unless ``full=True``), reads
``$collStats``, ``$indexStats``, the collection options (validators) and index specs, and, when there is query
data (the database profiler's ``system.profile`` or a query log of profiler-shaped documents), the queries
that ran. It never writes, creates or drops anything and never changes an option or the profiler level.

Every finding has a stable ``kind`` (see ``KINDS``), a ``namespace`` (``db.collection`` or ``db``), a
``severity`` (high / medium / low), the measured ``evidence``, a ``fix`` with the commands, and the ``lesson``
that teaches it.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import bson
from bson import json_util
from bson.json_util import JSONMode, JSONOptions
from bson.objectid import ObjectId
from bson.regex import Regex
from pymongo.errors import PyMongoError

from labkit.engine.bson.limits import nesting_depth

KINDS: dict[str, str] = {
    "unbounded-array": "32_unbounded_arrays",
    "bloated-document": "33_bloated_documents",
    "many-collections": "34_massive_collections",
    "unused-index": "35_unnecessary_indexes",
    "redundant-index": "35_unnecessary_indexes",
    "separate-data": "36_separate_data",
    "case-insensitive-regex": "37_case_insensitive",
    "lookup-overuse": "38_lookup_overuse",
    "no-validation": "07_validation",
    "deep-nesting": "31_hard_limits",
    "index-limit": "31_hard_limits",
    "shard-key-monotonic": "40_shard_keys",
    "shard-key-low-cardinality": "40_shard_keys",
    "hot-shard": "40_shard_keys",
    "broadcast-query": "41_query_targeting",
}
"""Every finding kind (stable names) and the lesson that teaches it."""

QUERY_KINDS = ("separate-data", "case-insensitive-regex", "lookup-overuse")
SEVERITIES = ("high", "medium", "low")

DEFAULT_SAMPLE = 1000
PROFILE_LIMIT = 20_000
COMMENT = "labkit.review"  # every read of the review carries it; profiler entries with it are skipped
THRESHOLDS: dict[str, float] = {  # labkit's judgement calls; README "Schema review" lists them
    "array_docs_min": 20,          # an array of sub-documents with nothing bounding it, this long, is flagged
    "array_scalars_min": 100,      # the same for arrays of scalars
    "array_high": 1000,            # this long today: high severity
    "age_correlation": -0.5,       # Spearman rho of (creation time, length): older documents hold longer arrays
    "age_min_docs": 20,
    "bloat_ratio": 10,             # median document / bytes the hot query returns
    "bloat_min_bytes": 1024,
    "bloat_median_bytes": 1 << 20,  # without query data: a median document of 1 MiB
    "bloat_max_bytes": 8 << 20,    # ... or one document half-way to the 16 MiB limit
    "family_min": 3,               # collections named stem_<id> with the same shape
    "family_shape": 0.8,           # Jaccard similarity of their field names
    "collections_medium": 1_000,
    "collections_high": 10_000,
    "indexes_medium": 48,
    "indexes_high": 60,
    "depth_medium": 20,            # the server's limit is 100 levels
    "depth_high": 50,
    "lookup_min": 5,               # a $lookup seen at least this often ...
    "lookup_share": 0.10,          # ... and in at least this share of the database's reads
    "lookup_high_share": 0.25,
    "together_min": 3,             # reads of two collections by the same key value, close in time
    "together_share": 0.20,
    "together_seconds": 2.0,
    "together_entries": 8,         # without timestamps: within this many log entries
    "together_fanout": 10,         # more documents per key than this is one-to-many: not flagged
    "hot_shard_share": 0.6,        # one shard owning this share of a sharded collection's documents
    "hot_shard_min_docs": 100,
    "key_distinct_min": 100,       # fewer distinct shard key values than this in the sample: low cardinality
    "broadcast_share": 0.10,       # reads of a sharded collection that cannot be targeted, this share of its reads
}
"""Default thresholds; ``review(..., thresholds={...})`` overrides any of them."""
INDEX_LIMIT = 64  # the server's limit of indexes per collection
USAGE_WINDOW = dt.timedelta(days=7)

_WALK_ELEMENTS = 200
_DATE_FIELDS = ("createdAt", "created_at", "created", "createdOn", "date", "ts", "timestamp", "at")
_READ_OPS = {"find", "aggregate", "count", "distinct"}
_LOG_JSON = JSONOptions(json_mode=JSONMode.RELAXED, tz_aware=False)


class ReviewInputError(ValueError):
    """Bad input to the review (a query log that cannot be read, a bad argument): a clear message."""


@dataclass(frozen=True)
class Finding:
    """One finding: what, where, how bad, the numbers behind it, what to do, and where it is taught."""

    kind: str
    namespace: str
    severity: str
    evidence: dict
    fix: str
    lesson: str
    target: str | None = None
    summary: str = ""

    @property
    def where(self) -> str:
        """The collection (without the database), with the field, index or name family when there is one."""
        coll = self.namespace.split(".", 1)[1] if "." in self.namespace else ""
        if self.target and coll:
            return f"{coll}.{self.target}"
        return self.target or coll or self.namespace

    def to_dict(self) -> dict:
        """The finding as a plain dict (JSON-safe values)."""
        return {"kind": self.kind, "namespace": self.namespace, "where": self.where, "severity": self.severity,
                "summary": self.summary, "evidence": _plain(self.evidence), "fix": self.fix, "lesson": self.lesson}


@dataclass
class Review:
    """The result of :func:`review`: findings, what was sampled, and which checks could not run."""

    database: str
    findings: list[Finding]
    sampled: list[dict]
    query_data: str
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def kinds(self) -> set[tuple[str, str]]:
        """The set of ``(kind, where)`` pairs."""
        return {(f.kind, f.where) for f in self.findings}

    def summary(self) -> str:
        """What was sampled and which checks did not run, in a few lines."""
        docs = sum(s["documents"] for s in self.sampled)
        seen = sum(s["sampled"] for s in self.sampled)
        lines = [f"Schema review of '{self.database}': {len(self.findings)} finding(s) "
                 f"({', '.join(f'{n} {s}' for s, n in self._by_severity().items() if n) or 'none'}).",
                 f"Sampled {seen:,} of {docs:,} documents in {len(self.sampled)} collection(s) ({self._methods()}); "
                 f"query data: {self.query_data}."]
        for kind, why in self.skipped.items():
            lines.append(f"Not checked: {kind}: {why}.")
        lines.extend(self.notes)
        return "\n".join(lines)

    def _methods(self) -> str:
        c = Counter(s["method"] for s in self.sampled)
        return ", ".join(f"{m}: {n}" for m, n in sorted(c.items())) or "no collections"

    def _by_severity(self) -> dict[str, int]:
        c = Counter(f.severity for f in self.findings)
        return {s: c.get(s, 0) for s in SEVERITIES}

    def to_frame(self) -> Any:
        """The findings as a pandas DataFrame, one row per finding."""
        import pandas as pd

        cols = ["severity", "kind", "namespace", "where", "summary", "fix", "lesson"]
        return pd.DataFrame([{k: f.to_dict()[k] for k in cols} for f in self.findings], columns=cols)

    def to_json(self, indent: int | None = 2) -> str:
        """The whole review as JSON: findings, sampled collections, query data, skipped checks."""
        return json.dumps({"database": self.database, "findings": [f.to_dict() for f in self.findings],
                           "sampled": _plain(self.sampled), "queryData": self.query_data,
                           "skipped": self.skipped, "notes": self.notes}, indent=indent)

    def to_markdown(self) -> str:
        """A Markdown report: summary, then one section per finding with evidence and fix."""
        out = [f"# Schema review: {self.database}", "", *self.summary().splitlines(), ""]
        if self.findings:
            out += ["| severity | kind | where | summary |", "|---|---|---|---|"]
            out += [f"| {f.severity} | {f.kind} | `{f.namespace}`{' `' + f.target + '`' if f.target else ''} | "
                    f"{_md(f.summary)} |" for f in self.findings]
            out.append("")
        for i, f in enumerate(self.findings, 1):
            out += [f"## {i}. {f.kind}: {f.where} ({f.severity})", "", f.summary, "",
                    "Evidence: " + "; ".join(f"{k} = {_show(v)}" for k, v in f.evidence.items()), "",
                    "Fix: " + f.fix, "", f"Lesson: {f.lesson}", ""]
        return "\n".join(out)

    def to_table(self) -> str:
        """A plain-text table for terminals."""
        rows = [("severity", "kind", "where", "summary")] + [(f.severity, f.kind, f.where, f.summary)
                                                             for f in self.findings]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3] for r in rows]
        return self.summary() + "\n\n" + ("\n".join(lines) if self.findings else "No findings.")

    def __repr__(self) -> str:
        return self.to_table()

    def _repr_html_(self) -> str:
        head = "".join(f"<p>{escape(line)}</p>" for line in self.summary().splitlines())
        if not self.findings:
            return head + "<p>No findings.</p>"
        rows = "".join(
            f"<tr><td>{escape(f.severity)}</td><td>{escape(f.kind)}</td><td><code>{escape(f.where)}</code></td>"
            f"<td>{escape(f.summary)}</td><td>{escape(f.fix)}</td><td>{escape(f.lesson)}</td></tr>"
            for f in self.findings)
        return (head + "<table><thead><tr><th>severity</th><th>kind</th><th>where</th><th>summary</th>"
                f"<th>fix</th><th>lesson</th></tr></thead><tbody>{rows}</tbody></table>")


# --- helpers ----------------------------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    """JSON-safe copy: dates as ISO strings, ObjectIds and other BSON values as strings."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _ci(value: Any) -> bool:
    """Whether ``value`` (a filter's value for a field) is a case-insensitive regular expression."""
    if isinstance(value, Regex):
        return bool(int(value.flags) & re.I)
    if isinstance(value, re.Pattern):
        return bool(value.flags & re.I)
    if isinstance(value, dict):
        if "$regex" in value:
            return "i" in str(value.get("$options", "")) or _ci(value["$regex"])
        if "$in" in value and isinstance(value["$in"], list):
            return any(_ci(v) for v in value["$in"])
        if "$not" in value:
            return _ci(value["$not"])
    return False


def _ci_fields(filt: Any, prefix: str = "") -> Iterator[str]:
    """Fields a filter matches with a case-insensitive regex (through $and / $or / $nor and $elemMatch)."""
    if not isinstance(filt, dict):
        return
    for k, v in filt.items():
        if k in ("$and", "$or", "$nor") and isinstance(v, list):
            for sub in v:
                yield from _ci_fields(sub, prefix)
        elif not k.startswith("$"):
            if _ci(v):
                yield prefix + k
            elif isinstance(v, dict) and isinstance(v.get("$elemMatch"), dict):
                yield from _ci_fields(v["$elemMatch"], prefix + k + ".")


def _eq_keys(filt: Any) -> dict[str, Any]:
    """Top-level equality conditions of a filter: field -> a hashable form of the value."""
    out: dict[str, Any] = {}
    if not isinstance(filt, dict):
        return out
    for k, v in filt.items():
        if k == "$and" and isinstance(v, list):
            for sub in v:
                out.update(_eq_keys(sub))
            continue
        if k.startswith("$"):
            continue
        if isinstance(v, dict) and set(v) == {"$eq"}:
            v = v["$eq"]
        if isinstance(v, (str, int, float, ObjectId, dt.datetime, bson.int64.Int64)) and not isinstance(v, bool):
            out[k] = (type(v).__name__, str(v))
    return out


def _clean_path(path: str) -> str:
    """An update path without positional parts: ``comments.$[].replies`` -> ``comments.replies``."""
    return ".".join(p for p in path.split(".") if not (p.startswith("$") or p.isdigit()))


# --- query data -------------------------------------------------------------------------------------------

@dataclass
class _Op:
    ts: dt.datetime | None
    seq: int
    coll: str
    op: str
    filter: dict
    projection: dict | None = None
    pipeline: list = field(default_factory=list)
    update: Any = None
    hint: Any = None
    keys: int | None = None
    docs: int | None = None
    nreturned: int | None = None
    plan: str | None = None


def _ops_from_entry(entry: dict, seq: int, dbname: str) -> list[_Op]:
    """Normalise one profiler document ("Database Profiler Output") into operations on collections."""
    if not isinstance(entry, dict):
        return []
    ns = entry.get("ns") or ""
    ts = entry.get("ts") if isinstance(entry.get("ts"), dt.datetime) else None
    cmd = entry.get("command") if isinstance(entry.get("command"), dict) else {}
    if not cmd and isinstance(entry.get("query"), dict):
        cmd = entry["query"]
    kind = entry.get("op")
    db_of_ns, _, coll = ns.partition(".")
    if db_of_ns and dbname and db_of_ns != dbname:
        return []
    stats = dict(keys=entry.get("keysExamined"), docs=entry.get("docsExamined"),
                 nreturned=entry.get("nreturned"), plan=entry.get("planSummary"))

    def mk(op: str, c: str, **kw: Any) -> _Op:
        return _Op(ts=ts, seq=seq, coll=c or coll, op=op, filter=kw.pop("filter", None) or {}, **kw, **stats)

    if kind == "getmore" or "getMore" in cmd or cmd.get("comment") == COMMENT:
        return []
    if "find" in cmd:
        return [mk("find", str(cmd["find"]), filter=cmd.get("filter"), projection=cmd.get("projection"),
                   hint=cmd.get("hint"))]
    if "aggregate" in cmd:
        pipe = cmd.get("pipeline") if isinstance(cmd.get("pipeline"), list) else []
        first = pipe[0].get("$match") if pipe and isinstance(pipe[0], dict) else None
        return [mk("aggregate", str(cmd["aggregate"]), filter=first if isinstance(first, dict) else {},
                   pipeline=pipe, hint=cmd.get("hint"))]
    if "count" in cmd:
        return [mk("count", str(cmd["count"]), filter=cmd.get("query"))]
    if "distinct" in cmd:
        return [mk("distinct", str(cmd["distinct"]), filter=cmd.get("query"))]
    if "findAndModify" in cmd or "findandmodify" in cmd:
        name = str(cmd.get("findAndModify") or cmd.get("findandmodify"))
        return [mk("update", name, filter=cmd.get("query"), update=cmd.get("update"))]
    if "update" in cmd and isinstance(cmd.get("updates"), list):
        return [mk("update", str(cmd["update"]), filter=u.get("q"), update=u.get("u"))
                for u in cmd["updates"] if isinstance(u, dict)]
    if "delete" in cmd and isinstance(cmd.get("deletes"), list):
        return [mk("delete", str(cmd["delete"]), filter=d.get("q")) for d in cmd["deletes"] if isinstance(d, dict)]
    if kind == "update" and "q" in cmd:
        return [mk("update", coll, filter=cmd.get("q"), update=cmd.get("u"))]
    if kind == "remove" and "q" in cmd:
        return [mk("delete", coll, filter=cmd.get("q"))]
    if kind == "insert" or "insert" in cmd:
        return [mk("insert", str(cmd.get("insert") or coll))]
    return []


def read_query_log(source: str | Path | Iterable[dict]) -> list[dict]:
    """Profiler-shaped documents from a JSON-lines file (MongoDB Extended JSON, one per line) or a list."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ReviewInputError(f"query log {str(path)!r} cannot be read: {exc.__class__.__name__}: "
                                   f"{getattr(exc, 'strerror', None) or exc}") from None
        if text.lstrip().startswith("["):
            try:
                entries = json_util.loads(text, json_options=_LOG_JSON)
            except (ValueError, TypeError) as exc:
                raise ReviewInputError(f"query log {str(path)!r} is not valid JSON: {exc}") from None
        else:
            entries = []
            for n, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    entries.append(json_util.loads(line, json_options=_LOG_JSON))
                except (ValueError, TypeError) as exc:
                    raise ReviewInputError(f"query log {str(path)!r} line {n} is not a JSON document: {exc}. "
                                           "Each line must hold one profiler document (system.profile shape) "
                                           "in MongoDB Extended JSON.") from None
    else:
        try:
            entries = list(source)
        except TypeError:
            raise ReviewInputError(f"query_log must be a file path or a list of profiler documents, not "
                                   f"{type(source).__name__}") from None
    bad = [i for i, e in enumerate(entries) if not isinstance(e, dict)]
    if bad:
        raise ReviewInputError(f"query log entry {bad[0] + 1} is a {type(entries[bad[0]]).__name__}, not a "
                               "profiler document (a JSON object with op, ns, command, ...)")
    return entries


def _profiler_entries(db: Any) -> list[dict]:
    """The newest profiler documents of ``db`` (read only; empty when the profiler never ran)."""
    prof = db["system.profile"]
    try:
        return list(prof.find({}, comment=COMMENT).sort("ts", -1).limit(PROFILE_LIMIT))[::-1]
    except PyMongoError:
        try:
            return list(prof.find({}, comment=COMMENT).limit(PROFILE_LIMIT))
        except PyMongoError:
            return []


# --- sampling ---------------------------------------------------------------------------------------------

@dataclass
class _Coll:
    name: str
    options: dict
    count: int = 0
    avg_obj_size: float = 0.0
    nindexes: int = 0
    index_sizes: dict = field(default_factory=dict)
    indexes: list = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    docs: list = field(default_factory=list)
    method: str = "$sample"
    local_time: dt.datetime | None = None
    shard_key: dict | None = None  # config.collections' key, when the collection is sharded (through a mongos)
    shard_docs: dict = field(default_factory=dict)  # shard -> documents it owns ($shardedDataDistribution)


def _stats(db: Any, c: _Coll) -> None:
    try:
        per_shard = list(db[c.name].aggregate([{"$collStats": {"storageStats": {}}}], comment=COMMENT))
        s = per_shard[0] if per_shard else {}
        st = s.get("storageStats", {})
        if len(per_shard) > 1:  # through a mongos: one document per shard holding the collection
            count = sum(int(x.get("storageStats", {}).get("count", 0) or 0) for x in per_shard)
            size = sum(int(x.get("storageStats", {}).get("size", 0) or 0) for x in per_shard)
            index_sizes: dict = {}  # each index's file bytes, summed over the shards
            for x in per_shard:
                for name, b in (x.get("storageStats", {}).get("indexSizes") or {}).items():
                    index_sizes[name] = index_sizes.get(name, 0) + int(b or 0)
            st = dict(st, count=count, avgObjSize=(size / count) if count else 0, indexSizes=index_sizes)
        c.local_time = s.get("localTime")
    except PyMongoError:
        try:
            st = db.command("collStats", c.name)
        except PyMongoError:
            st = {}
    c.count = int(st.get("count", 0) or 0)
    c.avg_obj_size = float(st.get("avgObjSize", 0) or 0)
    c.nindexes = int(st.get("nindexes", 0) or 0)
    c.index_sizes = dict(st.get("indexSizes", {}) or {})


def _sample(db: Any, c: _Coll, size: int, full: bool) -> None:
    coll = db[c.name]
    if full:
        c.docs, c.method = list(coll.find({}, comment=COMMENT)), "full read"
    elif c.count <= size:
        c.docs, c.method = list(coll.find({}, comment=COMMENT).limit(size)), "every document (fewer than the sample)"
    else:
        seen: set = set()
        c.docs = []
        for d in coll.aggregate([{"$sample": {"size": size}}], comment=COMMENT):  # $sample may return a document twice
            key = repr(d.get("_id"))
            if key not in seen:
                seen.add(key)
                c.docs.append(d)
        c.method = f"$sample {size}"


def _sharding(db: Any, colls: list[_Coll]) -> None:
    """Through a mongos: each sharded collection's key (``config.collections``) and owned documents per shard
    (``$shardedDataDistribution``). Anywhere else nothing is read."""
    client = db.client
    try:
        if client.admin.command("hello").get("msg") != "isdbgrid":
            return
        keys = {d["_id"]: d["key"] for d in client["config"]["collections"].find(
            {"_id": {"$regex": "^" + re.escape(db.name) + "\\."}, "dropped": {"$ne": True}}, comment=COMMENT)}
        owned = {r["ns"]: {s["shardName"]: int(s.get("numOwnedDocuments", 0)) for s in r.get("shards", [])}
                 for r in client.admin.aggregate([{"$shardedDataDistribution": {}}], comment=COMMENT)}
    except PyMongoError:
        return
    for c in colls:
        ns = f"{db.name}.{c.name}"
        if ns in keys:
            c.shard_key = dict(keys[ns])
            c.shard_docs = owned.get(ns, {})


def _indexes(db: Any, c: _Coll) -> None:
    try:
        c.indexes = list(db[c.name].list_indexes())
    except PyMongoError:
        c.indexes = []
    try:
        c.usage = {u["name"]: u for u in db[c.name].aggregate([{"$indexStats": {}}], comment=COMMENT)}
    except PyMongoError:
        c.usage = {}
    c.nindexes = c.nindexes or len(c.indexes)


# --- array walk -------------------------------------------------------------------------------------------

def _walk_arrays(value: Any, path: str, out: dict, doc_i: int) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _walk_arrays(v, f"{path}.{k}" if path else k, out, doc_i)
    elif isinstance(value, list):
        rec = out.setdefault(path, {"lengths": [], "docs": set(), "subdocs": 0, "elements": 0, "per_doc": {}})
        rec["lengths"].append(len(value))
        rec["docs"].add(doc_i)
        rec["per_doc"][doc_i] = max(rec["per_doc"].get(doc_i, 0), len(value))
        for el in value[:_WALK_ELEMENTS]:  # the length counts every element; the shape looks at the first ones
            rec["elements"] += 1
            if isinstance(el, dict):
                rec["subdocs"] += 1
                _walk_arrays(el, path, out, doc_i)


def _doc_time(doc: dict) -> float | None:
    _id = doc.get("_id")
    if isinstance(_id, ObjectId):
        return _id.generation_time.timestamp()
    for k in _DATE_FIELDS:
        v = doc.get(k)
        if isinstance(v, dt.datetime):
            return v.replace(tzinfo=dt.timezone.utc).timestamp() if v.tzinfo is None else v.timestamp()
    return None


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=xs.__getitem__)
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2
        i = j + 1
    return ranks


def _spearman(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3:
        return None
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def _schema_bounds(schema: Any, path: str, out: dict) -> None:
    """``maxItems`` per array path in a ``$jsonSchema`` (arrays of documents collapse into their path)."""
    if not isinstance(schema, dict):
        return
    if "maxItems" in schema and path:
        try:
            out[path] = min(int(schema["maxItems"]), out.get(path, 1 << 62))
        except (TypeError, ValueError):
            pass
    for k, sub in (schema.get("properties") or {}).items():
        _schema_bounds(sub, f"{path}.{k}" if path else k, out)
    items = schema.get("items")
    if isinstance(items, dict):
        _schema_bounds(items, path, out)
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            _schema_bounds(sub, path, out)


def _validator_bounds(options: dict) -> dict[str, int]:
    validator = options.get("validator") or {}
    if options.get("validationLevel") == "off" or options.get("validationAction") == "warn":
        return {}
    out: dict[str, int] = {}

    def visit(v: Any) -> None:
        if isinstance(v, dict):
            if "$jsonSchema" in v:
                _schema_bounds(v["$jsonSchema"], "", out)
            for sub in v.get("$and") or []:
                visit(sub)
    visit(validator)
    return out


def _pushes(update: Any) -> Iterator[tuple[str, bool]]:
    """(array path, capped with $slice?) for every $push in an update document ($addToSet adds only values
    not already there, so it is not counted as growth)."""
    if not isinstance(update, dict):
        return
    for path, val in (update.get("$push") or {}).items():
        yield _clean_path(path), isinstance(val, dict) and "$each" in val and "$slice" in val


# --- projection size --------------------------------------------------------------------------------------

def _project(doc: dict, projection: dict) -> dict:
    """The document a simple find projection returns (inclusion or exclusion, dotted paths)."""
    spec = {k: v for k, v in projection.items() if k != "_id"}
    inclusion = any(not (v in (0, False)) for v in spec.values()) or (not spec and "_id" in projection
                                                                       and projection["_id"] not in (0, False))
    keep_id = projection.get("_id", 1) not in (0, False)
    if inclusion:
        out: dict = {"_id": doc["_id"]} if keep_id and "_id" in doc else {}
        for path, v in spec.items():
            if v in (0, False):
                continue
            _copy_path(doc, out, path.split("."))
        return out
    out = {k: v for k, v in doc.items() if not (k == "_id" and not keep_id)}
    for path in spec:
        _drop_path(out, path.split("."))
    return out


def _copy_path(src: Any, dst: dict, parts: list[str]) -> None:
    if not isinstance(src, dict) or parts[0] not in src:
        return
    if len(parts) == 1:
        dst[parts[0]] = src[parts[0]]
    elif isinstance(src[parts[0]], dict):
        _copy_path(src[parts[0]], dst.setdefault(parts[0], {}), parts[1:])
    else:
        dst[parts[0]] = src[parts[0]]


def _drop_path(doc: Any, parts: list[str]) -> None:
    if not isinstance(doc, dict) or parts[0] not in doc:
        return
    if len(parts) == 1:
        doc.pop(parts[0])
    else:
        inner = doc[parts[0]] = dict(doc[parts[0]]) if isinstance(doc[parts[0]], dict) else doc[parts[0]]
        _drop_path(inner, parts[1:])


def _bson_len(doc: dict) -> int:
    try:
        return len(bson.encode(doc))
    except (bson.errors.InvalidDocument, TypeError, OverflowError):
        return 0


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return float(s[n // 2]) if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2 if n else 0.0


# --- the review -------------------------------------------------------------------------------------------

@dataclass
class Measurement:
    """What :func:`review` reads from a database and its query data, before any threshold is applied: the
    collections' statistics, indexes and sampled documents, and the operations of the query log. Judge it
    with :func:`judge` under any thresholds, as often as needed, without reading the database again."""

    database: str
    query_data: str
    has_queries: bool
    colls: list  # of _Coll
    ops: list  # of _Op
    unread: list[str]
    usage_window: dt.timedelta
    _judged: dict = field(default_factory=dict, repr=False)  # check name -> [(thresholds it read, findings)]

    @property
    def by_coll(self) -> dict[str, list]:
        """The operations per collection."""
        by: dict[str, list[_Op]] = defaultdict(list)
        for o in self.ops:
            by[o.coll].append(o)
        return by


class _ReadThresholds(dict):
    """The thresholds, recording which ones a check reads (and their values)."""

    def __init__(self, th: dict) -> None:
        super().__init__(th)
        self.read: dict[str, float] = {}

    def __getitem__(self, key: str) -> float:
        value = super().__getitem__(key)
        self.read[key] = value
        return value


def _thresholds(thresholds: dict[str, float] | None) -> dict[str, float]:
    unknown = sorted(set(thresholds or {}) - set(THRESHOLDS))
    if unknown:
        raise ReviewInputError(f"review(thresholds=...): unknown threshold(s) {unknown}; known: {sorted(THRESHOLDS)}")
    bad = [k for k, v in (thresholds or {}).items() if isinstance(v, bool) or not isinstance(v, (int, float))]
    if bad:
        raise ReviewInputError(f"review(thresholds=...): {bad[0]!r} must be a number")
    return {**THRESHOLDS, **(thresholds or {})}


def review(db: Any, *, sample: int = DEFAULT_SAMPLE, query_log: str | Path | Iterable[dict] | None = None,
           full: bool = False, usage_window: dt.timedelta = USAGE_WINDOW,
           thresholds: dict[str, float] | None = None) -> Review:
    """Review ``db`` read-only and return a :class:`Review` of findings with evidence.

    ``sample`` documents per collection are read with ``$sample`` (all of a smaller collection);
    ``full=True`` reads every document instead. Query-based checks use ``query_log`` (a JSON-lines file or
    a list of profiler-shaped documents) when given, else the database profiler's ``system.profile``.
    ``$indexStats`` counters younger than ``usage_window`` are not used to call an index unused.
    ``thresholds`` overrides any of :data:`THRESHOLDS` (e.g. ``{"lookup_share": 0.2}``).
    ``review(db, ...)`` is ``judge(measure(db, ...), thresholds)``.
    """
    _thresholds(thresholds)
    return judge(measure(db, sample=sample, query_log=query_log, full=full, usage_window=usage_window), thresholds)


def measure(db: Any, *, sample: int = DEFAULT_SAMPLE, query_log: str | Path | Iterable[dict] | None = None,
            full: bool = False, usage_window: dt.timedelta = USAGE_WINDOW) -> Measurement:
    """Read what the review judges (read-only; arguments as for :func:`review`), without judging it."""
    if isinstance(sample, bool) or not isinstance(sample, int) or not 1 <= sample <= 100_000:
        raise ReviewInputError(f"review(sample={sample!r}): sample must be an int between 1 and 100000")
    if not isinstance(usage_window, dt.timedelta):
        raise ReviewInputError("review(usage_window=...): a datetime.timedelta, e.g. timedelta(days=7)")
    if not hasattr(db, "list_collections") or not hasattr(db, "name"):
        raise ReviewInputError(f"review(db): pass a database (client['name']), not {type(db).__name__}")
    dbname = db.name
    if query_log is not None:
        entries = read_query_log(query_log)
        source = f"query log ({len(entries):,} entries)"
    else:
        entries = _profiler_entries(db)
        source = f"profiler system.profile ({len(entries):,} entries)"
    ops: list[_Op] = []
    for seq, e in enumerate(entries):
        ops.extend(_ops_from_entry(e, seq, dbname))
    has_queries = bool(ops)
    if not has_queries:
        source = "no query data (no query log given and system.profile is empty)" if query_log is None \
            else "no query data (the query log holds no operations on this database)"

    colls: list[_Coll] = []
    for info in db.list_collections():
        name = info.get("name", "")
        if info.get("type", "collection") != "collection" or name.startswith("system.") or name == "_labkit":
            continue
        colls.append(_Coll(name=name, options=dict(info.get("options") or {})))
    colls.sort(key=lambda c: c.name)
    _sharding(db, colls)
    unread: list[str] = []
    for c in colls:
        try:
            _stats(db, c)
            _indexes(db, c)
            _sample(db, c, sample, full)
        except PyMongoError as exc:
            unread.append(f"{c.name} ({getattr(exc, 'code', None) or exc.__class__.__name__})")
    return Measurement(database=dbname, query_data=source, has_queries=has_queries, colls=colls, ops=ops,
                       unread=unread, usage_window=usage_window)


def _judged(m: Measurement, name: str, th: dict, check: Callable[[dict], list[Finding]]) -> list[Finding]:
    """``check(thresholds)`` for the measurement ``m``, answered from an earlier run of the same check on ``m``
    whose thresholds agreed on every threshold that run read (a check is a function of the measurement and
    of the thresholds it reads, so it would take the same path and return the same findings)."""
    runs = m._judged.setdefault(name, [])
    for read, found in runs:
        if all(th[k] == v for k, v in read.items()):
            return list(found)
    recording = _ReadThresholds(th)
    found = check(recording)
    runs.append((dict(recording.read), list(found)))
    return found


def judge(m: Measurement, thresholds: dict[str, float] | None = None) -> Review:
    """The :class:`Review` of a :func:`measure` result under ``thresholds`` (overrides of :data:`THRESHOLDS`).
    Judging the same measurement again re-runs only the checks whose thresholds changed."""
    th = _thresholds(thresholds)
    colls, ops, dbname, has_queries = m.colls, m.ops, m.database, m.has_queries
    findings: list[Finding] = []
    r = Review(database=dbname, findings=findings, query_data=m.query_data,
               sampled=[{"collection": c.name, "documents": c.count, "sampled": len(c.docs), "method": c.method,
                         "avgObjSize": round(c.avg_obj_size), "indexes": c.nindexes} for c in colls])
    if m.unread:
        r.notes.append(f"Could not read {len(m.unread)} collection(s), their checks did not run: "
                       f"{', '.join(m.unread)}.")
    ns = lambda c: f"{dbname}.{c}"  # noqa: E731
    by_coll = m.by_coll

    findings += _judged(m, "arrays", th, lambda t: _check_arrays(colls, by_coll, has_queries, ns, t))
    findings += _judged(m, "bloat", th, lambda t: _check_bloat(colls, by_coll, ns, t))
    findings += _judged(m, "collections", th, lambda t: _check_collections(colls, dbname, t))
    findings += _check_indexes(colls, by_coll, ns, m.usage_window, r, th)  # also notes skipped checks in r
    findings += _judged(m, "nesting", th, lambda t: _check_nesting(colls, ns, t))
    findings += _check_validation(colls, ns)
    findings += _judged(m, "sharding", th, lambda t: _check_sharding(colls, by_coll, has_queries, ns, t))
    if has_queries:
        findings += _judged(m, "regex", th, lambda t: _check_regex(ops, ns, t))
        findings += _judged(m, "lookups", th, lambda t: _check_lookups(ops, ns, t))
        findings += _judged(m, "together", th,
                            lambda t: _check_together(ops, ns, {c.name: c.count for c in colls}, t))
    else:
        for k in QUERY_KINDS:
            r.skipped[k] = "no query data (pass query_log=... or enable the profiler, then re-run)"
        r.notes.append("Without query data, array growth is judged without observed $push/$slice updates and "
                       "bloat without the hot query's projection.")
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: (order[f.severity], f.kind, f.namespace, f.target or ""))
    return r


def _mk(kind: str, namespace: str, severity: str, summary: str, evidence: dict, fix: str,
        target: str | None = None) -> Finding:
    return Finding(kind=kind, namespace=namespace, severity=severity, evidence=evidence, fix=fix,
                   lesson=KINDS[kind], target=target, summary=summary)


def _targets_key(filt: Any, key: dict) -> bool:
    """Does a read's filter let a mongos target it: equality (or, for a ranged first field, a range) on the
    shard key's first field, at the top level or in every branch of an ``$or``."""
    if not isinstance(filt, dict):
        return False
    first = next(iter(key))
    for k, v in filt.items():
        if k == first:
            if key[first] == "hashed":
                return not isinstance(v, dict) or "$eq" in v or "$in" in v
            return True
        if k == "$and" and isinstance(v, list) and any(_targets_key(x, key) for x in v):
            return True
        if k == "$or" and isinstance(v, list) and v and all(_targets_key(x, key) for x in v):
            return True
    return False


def _check_sharding(colls: list[_Coll], by_coll: dict, has_queries: bool, ns: Any, th: dict) -> list[Finding]:
    """Sharded collections (lessons 40-41): a monotonically increasing key, a key with few values, a hot shard,
    and hot reads the router must broadcast."""
    out = []
    for c in colls:
        if not c.shard_key:
            continue
        key = c.shard_key
        first = next(iter(key))
        where = ns(c.name)
        values = [_get_path(d, first) for d in c.docs]
        kinds = {type(v).__name__ for v in values if v is not None}
        if key[first] == 1 and (kinds & {"datetime", "ObjectId", "Timestamp"} or first in _DATE_FIELDS):
            out.append(_mk("shard-key-monotonic", where, "high",
                           f"shard key starts with {first}, which only increases: every insert lands in the last range",
                           {"shard key": key, "first field": first, "value types": sorted(kinds)},
                           f"reshard on a key led by a field the hot read filters on, e.g. "
                           f"db.adminCommand({{reshardCollection: '{where}', key: {{<field>: 1, {first}: 1}}}})",
                           target=first))
        distinct = len({repr(tuple(_get_path(d, f) for f in key)) for d in c.docs})
        if c.docs and len(c.docs) >= th["key_distinct_min"] and distinct < th["key_distinct_min"]:
            out.append(_mk("shard-key-low-cardinality", where, "medium",
                           f"shard key {key} has {distinct} distinct values in {len(c.docs)} sampled documents",
                           {"shard key": key, "distinct values": distinct, "sampled": len(c.docs)},
                           "add a field with many values after the current ones (refineCollectionShardKey) or "
                           "reshard: each value is one range at most, and a large one becomes a jumbo range",
                           target=first))
        total = sum(c.shard_docs.values())
        if len(c.shard_docs) >= 1 and total >= th["hot_shard_min_docs"]:
            hot, n = max(c.shard_docs.items(), key=lambda kv: kv[1])
            shards = max(len(c.shard_docs), 2)
            if n / total >= th["hot_shard_share"] and shards > 1:
                out.append(_mk("hot-shard", where, "high",
                               f"shard {hot} owns {n / total:.0%} of the documents",
                               {"documents per shard": dict(sorted(c.shard_docs.items())), "shard key": key},
                               "balance the collection (sh.startBalancer()) and check the key for monotonic "
                               "change; reshard if new documents keep landing on one shard", target=hot))
        if has_queries:
            reads = [o for o in by_coll.get(c.name, []) if o.op in _READ_OPS]
            broad = [o for o in reads if not _targets_key(o.filter, key)]
            if reads and broad and len(broad) / len(reads) >= th["broadcast_share"]:
                shapes = Counter(json.dumps(sorted(_plain(o.filter)), default=str) for o in broad)
                out.append(_mk("broadcast-query", where, "high" if len(broad) / len(reads) >= 0.5 else "medium",
                               f"{len(broad)} of {len(reads)} reads do not name the shard key's first field "
                               f"{first}: the router sends them to every shard",
                               {"broadcast reads": len(broad), "reads": len(reads), "shard key": key,
                                "filter fields": shapes.most_common(1)[0][0]},
                               f"lead the hot read's filter with {first}, or choose a key led by the field it "
                               "filters on (lesson 41)", target=first))
    return out


def _get_path(doc: Any, path: str) -> Any:
    cur = doc
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def _check_arrays(colls: list[_Coll], by_coll: dict, has_queries: bool, ns: Any, th: dict) -> list[Finding]:
    out = []
    for c in colls:
        arrays: dict = {}
        for i, d in enumerate(c.docs):
            _walk_arrays(d, "", arrays, i)
        bounds = _validator_bounds(c.options)
        pushes: dict[str, list[bool]] = defaultdict(list)
        for o in by_coll.get(c.name, []):
            if o.op == "update":
                for path, capped in _pushes(o.update):
                    pushes[path].append(capped)
        times = [_doc_time(d) for d in c.docs]
        for path, rec in sorted(arrays.items()):
            lengths = rec["lengths"]
            mx, avg = max(lengths), sum(lengths) / len(lengths)
            seen = pushes.get(path, [])
            if path in bounds:
                continue  # the validator bounds it
            if seen and all(seen):
                continue  # every observed update caps it with $slice
            pairs = [(times[i], n) for i, n in rec["per_doc"].items() if times[i] is not None]
            rho = (_spearman([p[0] for p in pairs], [float(p[1]) for p in pairs])
                   if len(pairs) >= th["age_min_docs"] else None)
            grows_with_age = rho is not None and rho <= th["age_correlation"]
            growing_updates = sum(1 for s in seen if not s)
            is_docs = rec["subdocs"] * 2 >= rec["elements"] > 0
            reasons = []
            if growing_updates:
                reasons.append(f"{growing_updates} observed update(s) push into it without $slice")
            if grows_with_age:
                reasons.append(f"older documents hold longer arrays (Spearman rho {rho:.2f} between creation "
                               "time and length)")
            if mx >= (th["array_docs_min"] if is_docs else th["array_scalars_min"]):
                reasons.append(f"{mx:,} elements in the longest sampled array and nothing bounds it")
            if not reasons:
                continue
            severity = "high" if (mx >= th["array_high"] or growing_updates or grows_with_age) else "medium"
            bound_note = ("no maxItems in the validator; " +
                          (f"{len(seen)} observed update(s), none with $slice" if seen else
                           "no observed update with $slice" if has_queries else "no query data to look for $slice"))
            ev = {"field": path, "max length": mx, "average length": round(avg, 1),
                  "documents sampled with it": len(rec["docs"]), "bound": bound_note}
            if rho is not None:
                ev["age correlation"] = round(rho, 2)
            out.append(_mk(
                "unbounded-array", ns(c.name), severity,
                f"{c.name}.{path} can grow without limit: " + "; ".join(reasons) + ".", ev,
                f"Move the elements to their own collection, one document per element with the parent's _id "
                f"(e.g. db.{c.name}_{path.split('.')[-1]}.insertMany(...), then db.{c.name}.updateMany({{}}, "
                f"{{$unset: {{'{path}': ''}}}})), or cap it: $push with {{$each: [...], $slice: -N}} on every write "
                f"and a validator (db.runCommand({{collMod: '{c.name}', validator: {{$jsonSchema: ... "
                "maxItems: N}})).",
                target=path))
    return out


def _check_bloat(colls: list[_Coll], by_coll: dict, ns: Any, th: dict) -> list[Finding]:
    out = []
    for c in colls:
        if not c.docs:
            continue
        sizes = [_bson_len(d) for d in c.docs]
        med, mx = _median(sizes), max(sizes)
        finds = [o for o in by_coll.get(c.name, []) if o.op == "find" and isinstance(o.projection, dict)
                 and o.projection]
        reads = [o for o in by_coll.get(c.name, []) if o.op in _READ_OPS]
        if finds:
            shapes = Counter(json.dumps(_plain(o.projection), sort_keys=True) for o in finds)
            shape, n = shapes.most_common(1)[0]
            proj = json.loads(shape)
            returned = _median([_bson_len(_project(d, proj)) for d in c.docs])
            ratio = med / max(returned, 1)
            if ratio >= th["bloat_ratio"] and med >= th["bloat_min_bytes"] and n * 2 >= len(reads):
                out.append(_mk(
                    "bloated-document", ns(c.name), "high" if ratio >= 5 * th["bloat_ratio"] else "medium",
                    f"The hottest projected query on {c.name} needs {returned:,.0f} bytes of a {med:,.0f}-byte "
                    f"median document ({ratio:,.0f}x).",
                    {"median document bytes": round(med), "hot query bytes per document": round(returned),
                     "ratio": round(ratio, 1), "hot query projection": proj, "its runs": n,
                     "reads of the collection": len(reads), "avgObjSize": round(c.avg_obj_size)},
                    f"Keep the fields the hot query needs in {c.name} and move the rest (rarely read, large) to a "
                    f"second collection with the same _id, e.g. db.{c.name}_details; copy with "
                    f"db.{c.name}.aggregate([{{$project: ...}}, {{$merge: '{c.name}_details'}}]).",
                ))
                continue
        if mx >= th["bloat_max_bytes"] or med >= th["bloat_median_bytes"]:
            out.append(_mk(
                "bloated-document", ns(c.name), "high" if mx >= th["bloat_max_bytes"] else "medium",
                f"{c.name} documents are large: median {med:,.0f} bytes, largest sampled {mx:,} bytes "
                "(limit 16 MiB).",
                {"median document bytes": round(med), "largest sampled bytes": mx,
                 "avgObjSize": round(c.avg_obj_size)},
                "Split what is not read together into its own collection (lesson 33), or move large binary "
                "content to GridFS.",
            ))
    return out


def _check_collections(colls: list[_Coll], dbname: str, th: dict) -> list[Finding]:
    out = []
    n = len(colls)
    if n >= th["collections_medium"]:
        out.append(_mk(
            "many-collections", dbname, "high" if n >= th["collections_high"] else "medium",
            f"{dbname} holds {n:,} collections ({sum(c.nindexes for c in colls):,} indexes); each costs files, "
            "memory and startup time.",
            {"collections": n, "indexes": sum(c.nindexes for c in colls)},
            "Merge collections that hold the same kind of document into one with a discriminating field "
            "(tenant, date) and an index on it; drop the empty ones."))
    stems: dict[str, list[_Coll]] = defaultdict(list)
    for c in colls:
        m = re.match(r"^(.+?)[_\-.]([^_\-.]+)$", c.name)
        if m:
            stems[m.group(1)].append(c)
    for stem, members in sorted(stems.items()):
        if len(members) < th["family_min"]:
            continue
        shapes = []
        for c in members:
            keys = Counter(k for d in c.docs for k in d if k != "_id")
            shapes.append({k for k, v in keys.items() if v * 2 >= max(len(c.docs), 1)})
        union = set().union(*shapes)
        inter = set.intersection(*shapes) if shapes else set()
        similarity = len(inter) / len(union) if union else 1.0
        if similarity < th["family_shape"]:
            continue  # different shapes: different entities, not one collection split by id or date
        names = [c.name for c in members]
        out.append(_mk(
            "many-collections", dbname, "high" if len(members) >= 100 else "medium",
            f"{len(members)} collections named {stem}_<id> hold the same shape of document: one collection "
            "split by tenant or date.",
            {"family": f"{stem}_*", "collections": len(members), "members": names[:10],
             "shape similarity": round(similarity, 2), "documents": sum(c.count for c in members)},
            f"Merge them into one collection {stem} with a field for the suffix and an index that starts with "
            f"it: for each, db.{names[0]}.aggregate([{{$set: {{tenant: '{names[0].split('_')[-1]}'}}}}, "
            f"{{$merge: '{stem}'}}]), then db.{stem}.createIndex({{tenant: 1, ...}}).",
            target=f"{stem}_*"))
    return out


def _plain_key(spec: dict) -> list[tuple[str, int]] | None:
    key = list((spec.get("key") or {}).items())
    if not key or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v in (1, -1) for _, v in key):
        return None
    return [(k, int(v)) for k, v in key]


_SPECIAL = ("unique", "partialFilterExpression", "expireAfterSeconds", "collation", "sparse", "hidden")


def _check_indexes(colls: list[_Coll], by_coll: dict, ns: Any, window: dt.timedelta, r: Review,
                   th: dict) -> list[Finding]:
    out = []
    young: list[str] = []
    for c in colls:
        hinted = {o.hint for o in by_coll.get(c.name, []) if isinstance(o.hint, str)}
        hinted_keys = [list(o.hint.items()) for o in by_coll.get(c.name, []) if isinstance(o.hint, dict)]
        n = c.nindexes or len(c.indexes)
        if n >= th["indexes_medium"]:
            out.append(_mk(
                "index-limit", ns(c.name), "high" if n >= th["indexes_high"] else "medium",
                f"{c.name} has {n} indexes of the {INDEX_LIMIT} a collection may hold; every write updates them all.",
                {"indexes": n, "limit": INDEX_LIMIT},
                "Replace per-attribute indexes with the attribute pattern (one {k: 1, v: 1} index on an array of "
                "{k, v}), or a wildcard index; drop unused ones (check $indexStats first)."))
        for spec in c.indexes:
            name = spec.get("name")
            key = _plain_key(spec)
            if name == "_id_" or key is None or any(spec.get(o) not in (None, False) for o in _SPECIAL):
                continue
            if name in hinted or key in hinted_keys:
                continue
            for other in c.indexes:
                okey = _plain_key(other)
                if other is spec or okey is None or len(okey) <= len(key):
                    continue
                if any(other.get(o) not in (None, False) for o in ("partialFilterExpression", "sparse", "hidden",
                                                                   "collation")):
                    continue  # the longer index does not hold every document, or compares strings otherwise
                head = okey[: len(key)]
                same = head == key
                reverse = head == [(k, -v) for k, v in key]
                if same or reverse:
                    out.append(_mk(
                        "redundant-index", ns(c.name), "medium",
                        f"{c.name}.{name} {dict(key)} is a prefix of {other['name']} {dict(okey)}, which serves "
                        "every query it serves.",
                        {"index": name, "key": dict(key), "prefix of": other["name"], "longer key": dict(okey),
                         "index bytes": c.index_sizes.get(name),
                         "ops since restart": (c.usage.get(name) or {}).get("accesses", {}).get("ops")},
                        f"Hide it first, watch the workload, then drop it: db.{c.name}.hideIndex('{name}'); "
                        f"db.{c.name}.dropIndex('{name}').", target=name))
                    break
        for spec in c.indexes:
            name = spec.get("name")
            u = c.usage.get(name)
            if name == "_id_" or u is None or any(spec.get(o) not in (None, False) for o in
                                                  ("unique", "expireAfterSeconds", "hidden")):
                continue
            acc = u.get("accesses") or {}
            since = acc.get("since")
            now = c.local_time or dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
            if isinstance(since, dt.datetime):
                since_n = since.replace(tzinfo=None) if since.tzinfo else since
                now_n = now.replace(tzinfo=None) if now.tzinfo else now
                age = now_n - since_n
            else:
                age = dt.timedelta(0)
            if age < window:
                young.append(f"{c.name}.{name}")
                continue
            if int(acc.get("ops", 0) or 0) == 0:
                out.append(_mk(
                    "unused-index", ns(c.name), "medium",
                    f"{c.name}.{name} has not been used since {since} ({age.days} days of counters on this node).",
                    {"index": name, "ops": 0, "since": since, "counter age days": round(age.total_seconds() / 86400, 1),
                     "index bytes": c.index_sizes.get(name), "host": u.get("host")},
                    f"Check $indexStats on every member (counters are per node and reset on restart), then "
                    f"db.{c.name}.hideIndex('{name}'), and drop it if nothing slows down: "
                    f"db.{c.name}.dropIndex('{name}').", target=name))
    if young:
        r.skipped["unused-index"] = (f"$indexStats counters of {len(young)} index(es) started less than "
                                     f"{_span(window)} ago (usage_window), too short to call them unused")
    return out


def _span(td: dt.timedelta) -> str:
    s = td.total_seconds()
    return f"{s / 86400:g} days" if s >= 86400 else f"{s / 3600:g} hours" if s >= 3600 else f"{s:g} seconds"


def _check_nesting(colls: list[_Coll], ns: Any, th: dict) -> list[Finding]:
    out = []
    for c in colls:
        if not c.docs:
            continue
        depths = [nesting_depth(d) for d in c.docs]
        mx = max(depths)
        if mx >= th["depth_medium"]:
            out.append(_mk(
                "deep-nesting", ns(c.name), "high" if mx >= th["depth_high"] else "medium",
                f"{c.name} documents nest {mx} levels deep (the server refuses more than 100).",
                {"max depth": mx, "median depth": _median(depths), "limit": 100},
                "Store recursive structures (replies in replies, trees) flat: one document per node with a "
                "parent reference or an ancestors array (lesson 17).", target=None))
    return out


def _check_validation(colls: list[_Coll], ns: Any) -> list[Finding]:
    out = []
    for c in colls:
        if c.count == 0:
            continue
        v = c.options.get("validator")
        if v and c.options.get("validationLevel") != "off":
            continue
        out.append(_mk(
            "no-validation", ns(c.name), "low",
            f"{c.name} has no validator: any shape of document is accepted.",
            {"validator": "none" if not v else "validationLevel off", "documents": c.count},
            f"Write down the shape: db.runCommand({{collMod: '{c.name}', validator: {{$jsonSchema: {{...}}}}, "
            "validationLevel: 'moderate'}) (moderate leaves existing invalid documents alone)."))
    return out


def _reads(ops: list[_Op]) -> list[_Op]:
    return [o for o in ops if o.op in _READ_OPS]


def _rate(items: list[_Op]) -> float | None:
    ts = [o.ts for o in items if o.ts is not None]
    if len(ts) < 2:
        return None
    span = (max(ts) - min(ts)).total_seconds()
    return len(ts) / span if span > 0 else None


def _check_regex(ops: list[_Op], ns: Any, th: dict) -> list[Finding]:
    hits: dict[tuple[str, str], list[_Op]] = defaultdict(list)
    for o in ops:
        filters = ([s.get("$match") for s in o.pipeline if isinstance(s, dict) and "$match" in s]
                   if o.op == "aggregate" else [o.filter])
        for f in filters:
            for fld in set(_ci_fields(f)):
                hits[(o.coll, fld)].append(o)
    out = []
    reads = len(_reads(ops))
    for (coll, fld), items in sorted(hits.items()):
        keys = [o.keys for o in items if isinstance(o.keys, int)]
        docs = [o.docs for o in items if isinstance(o.docs, int)]
        ret = [o.nreturned for o in items if isinstance(o.nreturned, int)]
        ev: dict = {"field": fld, "queries": len(items), "share of reads": round(len(items) / max(reads, 1), 3)}
        if keys or docs:
            ev.update({"avg keys examined": round(sum(keys) / max(len(keys), 1), 1),
                       "avg docs examined": round(sum(docs) / max(len(docs), 1), 1),
                       "avg returned": round(sum(ret) / max(len(ret), 1), 1)})
        rate = _rate(items)
        if rate is not None:
            ev["per second"] = round(rate, 2)
        plans = Counter(o.plan for o in items if o.plan)
        if plans:
            ev["plan"] = plans.most_common(1)[0][0]
        out.append(_mk(
            "case-insensitive-regex", ns(coll),
            "high" if len(items) / max(reads, 1) >= th["lookup_share"] else "medium",
            f"{len(items)} quer{'y' if len(items) == 1 else 'ies'} match {coll}.{fld} with a case-insensitive regex, "
            "which cannot use an index's bounds (every key is examined).", ev,
            f"Create a case-insensitive index and query with its collation: db.{coll}.createIndex({{{fld}: 1}}, "
            f"{{collation: {{locale: 'en', strength: 2}}}}), then find({{{fld}: value}}).collation({{locale: 'en', "
            "strength: 2}); or store a lower-cased copy of the field and index that.", target=fld))
    return out


def _lookups(pipeline: list) -> Iterator[dict]:
    for st in pipeline or []:
        if not isinstance(st, dict):
            continue
        if isinstance(st.get("$lookup"), dict):
            yield st["$lookup"]
            yield from _lookups(st["$lookup"].get("pipeline") or [])
        if isinstance(st.get("$facet"), dict):
            for sub in st["$facet"].values():
                yield from _lookups(sub)
        if isinstance(st.get("$unionWith"), dict):
            yield from _lookups(st["$unionWith"].get("pipeline") or [])


def _check_lookups(ops: list[_Op], ns: Any, th: dict) -> list[Finding]:
    reads = len(_reads(ops))
    joins: dict[tuple[str, str], list[_Op]] = defaultdict(list)
    specs: dict[tuple[str, str], dict] = {}
    for o in ops:
        if o.op != "aggregate":
            continue
        for lk in _lookups(o.pipeline):
            key = (o.coll, str(lk.get("from")))
            joins[key].append(o)
            specs.setdefault(key, lk)
    hot: dict[str, list[tuple[str, list[_Op]]]] = defaultdict(list)
    for (coll, frm), items in sorted(joins.items()):
        if len(items) >= th["lookup_min"] and len(items) / max(reads, 1) >= th["lookup_share"]:
            hot[coll].append((frm, items))
    out = []
    for coll, joined in sorted(hot.items()):
        joined.sort(key=lambda j: (-len(j[1]), j[0]))
        frm, items = joined[0]  # the most frequent join leads the evidence and the fix
        share = len(items) / max(reads, 1)
        lk = specs[(coll, frm)]
        ev = {"from": frm, "runs": len(items), "share of reads": round(share, 3), "reads observed": reads,
              "localField": lk.get("localField"), "foreignField": lk.get("foreignField")}
        if len(joined) > 1:
            ev["joins"] = {f: len(its) for f, its in joined}
        rate = _rate(items)
        if rate is not None:
            ev["per second"] = round(rate, 2)
        one = frm[:-1] if frm.endswith("s") and len(frm) > 1 else frm
        lf, ff = lk.get("localField") or "<localField>", lk.get("foreignField") or "<foreignField>"
        targets = ", ".join(f for f, _ in joined)
        out.append(_mk(
            "lookup-overuse", ns(coll), "high" if share >= th["lookup_high_share"] else "medium",
            f"{len(items)} of {reads} reads ({share:.0%}) join {coll} to {targets} with $lookup.", ev,
            f"Copy the few fields the hot read needs from {frm} into {coll} (extended reference, lesson 38), "
            f"keeping {lf}: db.{coll}.aggregate([{{$lookup: {{from: '{frm}', localField: '{lf}', foreignField: "
            f"'{ff}', as: 'j'}}}}, {{$set: {{{one}: {{name: {{$first: '$j.name'}}}}}}}}, {{$unset: 'j'}}, "
            f"{{$merge: '{coll}'}}]) (name = the fields it reads), then update the copies when {frm} changes; "
            "or embed if the data is read only together.", target=None))
    return out


def _check_together(ops: list[_Op], ns: Any, counts: dict[str, int], th: dict) -> list[Finding]:
    reads = [o for o in _reads(ops) if o.op in ("find", "aggregate", "count")]
    per_coll = Counter(o.coll for o in reads)
    keyed = [(o, _eq_keys(o.filter)) for o in reads]
    keyed = [(o, k) for o, k in keyed if k]
    pairs: dict[tuple[str, str], set[int]] = defaultdict(set)
    pair_fields: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for i, (a, ka) in enumerate(keyed):
        vals_a = {v: f for f, v in ka.items()}
        for b, kb in keyed[i + 1: i + 1 + 4 * th["together_entries"]]:
            if b.coll == a.coll:
                continue
            if a.ts and b.ts:
                if abs((b.ts - a.ts).total_seconds()) > th["together_seconds"]:
                    continue
            elif abs(b.seq - a.seq) > th["together_entries"]:
                continue
            for f, v in kb.items():
                if v in vals_a:
                    key = tuple(sorted((a.coll, b.coll)))
                    pairs[key].add(a.seq if key[0] == a.coll else b.seq)
                    pair_fields[key][(vals_a[v], f) if key[0] == a.coll else (f, vals_a[v])] += 1
                    break
    returned: dict[str, list[int]] = defaultdict(list)
    for o in reads:
        if isinstance(o.nreturned, int):
            returned[o.coll].append(o.nreturned)
    qualified: dict[tuple[str, str], int] = {}
    for (x, y), seqs in pairs.items():
        if len(seqs) < th["together_min"] or len(seqs) < th["together_share"] * min(per_coll[x], per_coll[y]):
            continue
        fx, fy = pair_fields[(x, y)].most_common(1)[0][0]
        sats = [y] if fx == "_id" and fy != "_id" else [x] if fy == "_id" and fx != "_id" else [x, y]
        root_of = {y: x, x: y}
        many = False
        for sat in sats:
            per_key = counts.get(sat, 0) / max(counts.get(root_of[sat], 0), 1) if len(sats) == 1 else 0
            got = returned.get(sat)
            if per_key > th["together_fanout"] or (got and _median(got) > th["together_fanout"]):
                many = True  # one-to-many (or one-to-squillions): separate on purpose
        if not many:
            qualified[(x, y)] = len(seqs)
    # a $lookup from a collection's _id to a one-to-few collection is also a read together
    joined: Counter = Counter()
    for o in ops:
        if o.op != "aggregate":
            continue
        for lk in {id(x): x for x in _lookups(o.pipeline)}.values():
            frm, lf, ff = lk.get("from"), lk.get("localField"), lk.get("foreignField")
            if lf == "_id" and isinstance(frm, str) and isinstance(ff, str) and ff != "_id" and frm != o.coll:
                joined[(o.coll, frm, ff)] += 1
    for (src, frm, ff), n in joined.items():
        if n < th["together_min"] or n < th["together_share"] * per_coll[src]:
            continue
        if counts.get(frm, 0) / max(counts.get(src, 0), 1) > th["together_fanout"]:
            continue  # one-to-many: separate on purpose
        key = tuple(sorted((src, frm)))
        qualified[key] = max(qualified.get(key, 0), n)
        pair_fields[key][("_id", ff) if key[0] == src else (ff, "_id")] += n + len(pairs.get(key, ()))
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            a = parent[a]
        return a

    for x, y in qualified:
        parent[find(x)] = find(y)
    components: dict[str, set[str]] = defaultdict(set)
    for x, y in qualified:
        components[find(x)] |= {x, y}
    groups: dict[str, dict[str, int]] = {}
    fields: dict[str, str] = {}
    for members in components.values():
        by_id = sorted({x if fx == "_id" else y for (x, y) in qualified if x in members
                        for fx, fy in [pair_fields[(x, y)].most_common(1)[0][0]] if "_id" in (fx, fy) and fx != fy})
        root = by_id[0] if by_id else max(sorted(members), key=lambda m: per_coll[m])
        groups[root] = {}
        for (x, y), n in qualified.items():
            if root in (x, y):
                other = y if x == root else x
                fx, fy = pair_fields[(x, y)].most_common(1)[0][0]
                groups[root][other] = n
                fields[root] = fx if x == root else fy
                fields[f"{root}->{other}"] = fy if x == root else fx
        for m in sorted(members - {root} - set(groups[root])):
            groups[root][m] = max(n for (x, y), n in qualified.items() if m in (x, y))
            fields.setdefault(f"{root}->{m}", "?")
    out = []
    for root, others in sorted(groups.items()):
        names = sorted(others)
        out.append(_mk(
            "separate-data", ns(root), "high" if max(others.values()) >= 0.5 * per_coll[root] else "medium",
            f"{root} is read together with {', '.join(names)} by the same key (point reads close in time or "
            f"$lookup), {max(others.values())} time(s): one entity split across {len(names) + 1} collections.",
            {"read together with": names, "co-reads": others, "reads of root": per_coll[root],
             "keys": {o: f"{root}.{fields[root]} = {o}.{fields[f'{root}->{o}']}" for o in names}},
            f"Embed what is read together into {root} (one-to-one and one-to-few, lesson 36): "
            f"db.{root}.aggregate([{{$lookup: {{from: '{names[0]}', localField: '{fields[root]}', "
            f"foreignField: '{fields[f'{root}->{names[0]}']}', as: '{names[0]}'}}}}, {{$merge: '{root}'}}]), "
            "then read one document.", target=None))
    return out
