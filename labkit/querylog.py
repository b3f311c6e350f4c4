"""What an application ran, as a query log: the database profiler where the deployment allows it, otherwise the
driver's command monitoring (introduced in ``notebooks/38_lookup_overuse.ipynb``; used again in 39).

The source material's way to find the joins worth removing is the profiler or the slow-query log, sorted by
frequency. Atlas Free and Flex clusters refuse the ``profile`` command (Atlas "Unsupported Commands"), so a
lesson that needs a log cannot rely on it. :func:`capture` runs the application's operations once and returns
them as profiler-shaped documents (``op``, ``ns``, ``command``, ``ts``, ``millis`` and, from the profiler,
``keysExamined``/``docsExamined``/``nreturned``/``planSummary``), which ``labkit.review(db, query_log=...)``
reads as it reads ``system.profile``:

    log = labkit.querylog.capture(db, run_the_application_for_a_while)
    log.source                     # "profiler" or "command monitoring"
    log.summary()                  # per query shape: runs, milliseconds, keys and documents examined

With ``source="auto"`` (the default) the profiler is used when ``profile`` is accepted; ``source="monitoring"``
records the same window from the driver's command events (no examined counters: the driver never sees them,
``explain`` does), ``source="profiler"`` refuses to fall back.
"""
from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from pymongo import monitoring
from pymongo.errors import OperationFailure

SOURCES = ("auto", "profiler", "monitoring")
_OP_KIND = {"find": "query", "getMore": "getmore", "insert": "insert", "update": "update", "delete": "remove"}
#: commands a driver sends on its own, and the profiler's own control: not the application's operations
_HOUSEKEEPING = frozenset({"hello", "ismaster", "isMaster", "ping", "endSessions", "killCursors", "buildInfo",
                           "saslStart", "saslContinue", "getParameter", "profile"})
_DROP_FIELDS = ("lsid", "$db", "$clusterTime", "$readPreference", "txnNumber", "autocommit", "startTransaction")


class QueryLogError(ValueError):
    """The log could not be captured as asked (the message says why and what to do)."""


@dataclass
class QueryLog:
    """Profiler-shaped documents of the operations one run produced, and where they came from."""

    entries: list[dict] = field(default_factory=list)
    source: str = ""
    note: str = ""

    def __len__(self) -> int:
        return len(self.entries)

    def summary(self, by: str = "shape", db: Any = None) -> Any:
        """A DataFrame with one row per query shape (``by="shape"``, see :func:`shape`) or per value of
        ``command.<by>`` (e.g. ``"comment"``): ``runs``, ``ms total`` and ``ms per run``, and ``keys examined
        per run`` and ``docs examined per run`` (from the profiler; for a log from command monitoring, from the
        ``explain`` of the group's first command when ``db`` is given); rows sorted by runs, most frequent first."""
        import pandas as pd

        rows: dict[str, dict] = {}
        for e in self.entries:
            cmd = e.get("command") if isinstance(e.get("command"), dict) else {}
            name = shape(e) if by == "shape" else str(cmd.get(by, "(none)"))
            r = rows.setdefault(name, {"runs": 0, "ms total": 0.0, "keys": 0, "docs": 0, "counted": 0,
                                       "first": cmd})
            r["runs"] += 1
            r["ms total"] += float(e.get("millis") or 0)
            if "keysExamined" in e or "docsExamined" in e:
                r["keys"] += int(e.get("keysExamined") or 0)
                r["docs"] += int(e.get("docsExamined") or 0)
                r["counted"] += 1
        out = []
        for name, r in rows.items():
            row = {by: name, "runs": r["runs"], "ms total": round(r["ms total"], 1),
                   "ms per run": round(r["ms total"] / r["runs"], 2)}
            if r["counted"]:
                row["keys examined per run"] = round(r["keys"] / r["counted"], 1)
                row["docs examined per run"] = round(r["docs"] / r["counted"], 1)
            elif db is not None:
                from labkit.ledger import _examined

                keys, docs = _examined(db, r["first"])
                row["keys examined per run"], row["docs examined per run"] = float(keys), float(docs)
            out.append(row)
        frame = pd.DataFrame(out)
        if frame.empty:
            return frame
        return frame.sort_values(["runs", by], ascending=[False, True], kind="stable").reset_index(drop=True)


def _fields(spec: Any) -> str:
    return ", ".join(str(k) for k in spec) if isinstance(spec, dict) else ""


def shape(entry: dict) -> str:
    """A readable query shape of one log entry: the command, the collection, the filter's fields (no values) and,
    for a pipeline, its stages (``$lookup`` with the collection it joins), e.g.
    ``"aggregate orders: $match(status) $sort $limit $lookup(customers)"`` or ``"find customers: _id"``."""
    cmd = entry.get("command") if isinstance(entry.get("command"), dict) else {}
    name = next(iter(cmd), entry.get("op", "?"))
    coll = cmd.get(name) if isinstance(cmd.get(name), str) else str(entry.get("ns", "")).partition(".")[2]
    if name == "aggregate" and isinstance(cmd.get("pipeline"), list):
        stages = []
        for st in cmd["pipeline"]:
            if not isinstance(st, dict) or not st:
                continue
            op, arg = next(iter(st.items()))
            if op == "$lookup" and isinstance(arg, dict):
                stages.append(f"$lookup({arg.get('from')})")
            elif op == "$match":
                stages.append(f"$match({_fields(arg)})")
            else:
                stages.append(op)
        return f"aggregate {coll}: {' '.join(stages)}"
    if name == "find":
        sort = f" sort({_fields(cmd.get('sort'))})" if cmd.get("sort") else ""
        return f"find {coll}: {_fields(cmd.get('filter')) or '(all)'}{sort}"
    if name in ("update", "delete") and isinstance(cmd.get(name + "s"), list) and cmd[name + "s"]:
        first = cmd[name + "s"][0]
        return f"{name} {coll}: {_fields(first.get('q')) if isinstance(first, dict) else ''}"
    return f"{name} {coll}"


class _Recorder(monitoring.CommandListener):
    """Pairs started and succeeded command events into profiler-shaped documents."""

    def __init__(self, dbname: str) -> None:
        self.dbname = dbname
        self.entries: list[dict] = []
        self._started: dict[tuple, tuple[dict, dt.datetime]] = {}
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name in _HOUSEKEEPING or event.database_name != self.dbname:
            return
        cmd = {k: v for k, v in dict(event.command).items() if k not in _DROP_FIELDS}
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        with self._lock:
            self._started[(event.connection_id, event.request_id)] = (cmd, now)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        with self._lock:
            began = self._started.pop((event.connection_id, event.request_id), None)
            if began is None:
                return
            cmd, ts = began
            coll = cmd.get(event.command_name)
            ns = f"{self.dbname}.{coll}" if isinstance(coll, str) else f"{self.dbname}.$cmd"
            self.entries.append({"op": _OP_KIND.get(event.command_name, "command"), "ns": ns, "command": cmd,
                                 "ts": ts.replace(microsecond=ts.microsecond // 1000 * 1000),
                                 "millis": round(event.duration_micros / 1000, 3)})

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        with self._lock:
            self._started.pop((event.connection_id, event.request_id), None)


def _with_profiler(db: Any, run: Callable[[Any], Any]) -> QueryLog:
    """Run ``run(db)`` at profiling level 2 and return the entries it added to ``system.profile``."""
    before = db.command("profile", -1)  # refused (Atlas Free/Flex) before anything changes
    prof = db["system.profile"]
    last = prof.find_one({}, sort=[("ts", -1)], projection={"ts": 1})
    since = last["ts"] if last else None
    time.sleep(0.002)  # profiler timestamps have millisecond precision: start after the last old entry
    db.command("profile", 2)
    try:
        run(db)
    finally:
        restore: dict[str, Any] = {"slowms": before.get("slowms", 100), "sampleRate": before.get("sampleRate", 1.0)}
        db.command("profile", int(before.get("was", 0)), **restore)
    query: dict = {"ts": {"$gt": since}} if since is not None else {}
    query["ns"] = {"$ne": f"{db.name}.system.profile"}
    entries = [e for e in prof.find(query).sort("ts", 1)
               if not (isinstance(e.get("command"), dict) and "profile" in e["command"])]
    for e in entries:
        e.pop("_id", None)  # the embedded store's own id; a server's profiler documents have none
        if isinstance(e.get("command"), dict):  # session and routing fields vary per run; the query does not
            e["command"] = {k: v for k, v in e["command"].items() if k not in _DROP_FIELDS}
    return QueryLog(entries=entries, source="profiler",
                    note="database profiler, level 2, for the run (then restored)")


def _with_monitoring(db: Any, run: Callable[[Any], Any]) -> QueryLog:
    """Run ``run`` on a second client whose command events are recorded (same data, same server)."""
    from labkit.connection import connect, is_embedded

    recorder = _Recorder(db.name)
    embedded = is_embedded(db.client)
    client = connect("embedded" if embedded else None, event_listeners=[recorder])
    try:
        run(client[db.name])
    finally:
        if not embedded:
            client.close()
    return QueryLog(entries=list(recorder.entries), source="command monitoring",
                    note="the driver's command events: operations and client-side durations (network included); "
                         "no keys/docs examined (use explain for those)")


def capture(db: Any, run: Callable[[Any], Any], *, source: str = "auto") -> QueryLog:
    """Run ``run(db)`` once and return what it sent to ``db`` as a :class:`QueryLog`.

    ``source="auto"`` uses the profiler and falls back to command monitoring where the deployment refuses the
    ``profile`` command (Atlas Free and Flex clusters); ``"profiler"`` or ``"monitoring"`` force one of them.
    ``run`` receives the database to use (with command monitoring, the same database through a second client)."""
    if source not in SOURCES:
        raise QueryLogError(f"capture(source={source!r}): choose one of {', '.join(SOURCES)}")
    if not callable(run):
        raise QueryLogError(f"capture(run=...): pass a function of the database, got {type(run).__name__}")
    if not callable(getattr(db, "list_collection_names", None)) or not hasattr(db, "name") or \
            hasattr(type(db), "insert_one"):
        raise QueryLogError(f"capture(db=...): pass a database (client['name']), not {type(db).__name__}")
    if source == "monitoring":
        return _with_monitoring(db, run)
    try:
        return _with_profiler(db, run)
    except OperationFailure as exc:
        if source == "profiler":
            raise QueryLogError(f"this deployment refuses the profiler (code {exc.code}: {exc}); Atlas Free and "
                                "Flex clusters do. Use source='monitoring' (or 'auto') for a log from the "
                                "driver's command events.") from None
        log = _with_monitoring(db, run)
        log.note = f"the profiler was refused here (code {exc.code}), so: " + log.note
        return log
