"""The workload cost ledger: each design's measured cost per operation, times the workload's rates.

Introduced in ``notebooks/00_start_here.ipynb``. The source material's method is "list the operations with
their rates, then design for the top rows". A ledger makes that arithmetic visible:

    ledger = labkit.Ledger({"show product page": 1000, "write a review": 1})   # operations per second
    ledger.measure("embedded", "show product page", db, lambda db: db.products.find_one({"_id": "p1"}))
    ledger.measure("embedded", "write a review", db, add_review_embedded)
    ...
    ledger.totals()     # per design, per second: round trips, documents and keys examined, bytes, writes
    ledger.widget()     # one slider per rate: move them and watch the better design flip

Every cost is measured while the operation runs, through the command events a driver sees (round trips,
documents written, bytes returned) and the ``explain`` of each read it sent (keys and documents examined; for a
write, the explain of the query its filter runs, measured right after the write), on the embedded engine and on
a real server alike.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping

import bson

METRICS = ("round trips", "docs examined", "keys examined", "bytes returned", "docs written")
_READS = ("find", "aggregate", "count", "distinct")
_EXPLAIN_DROP = ("lsid", "$db", "$clusterTime", "txnNumber", "autocommit", "startTransaction", "$readPreference",
                 "readConcern", "writeConcern")


@dataclass(frozen=True)
class OpCost:
    """What one run of an operation cost."""

    round_trips: int
    docs_examined: int
    keys_examined: int
    bytes_returned: int
    docs_written: int

    def as_row(self) -> dict[str, int]:
        """The figures under the ledger's column names."""
        return dict(zip(METRICS, asdict(self).values()))


def _monitored(db: Any, recorder: Any) -> tuple[Any, Callable[[], None]]:
    """``db`` reached through a second client that reports command events to ``recorder``, and a closer.

    Embedded engine: a client object on the same store (same data, same indexes). Server: a new connection."""
    from labkit.connection import is_embedded

    client = db.client
    if is_embedded(client):
        from labkit.engine import EmbeddedClient
        other = EmbeddedClient(_store=client._store, event_listeners=[recorder])
        return other[db.name], lambda: None
    import os

    import pymongo

    from labkit.connection import ENV_URI
    uri = os.environ.get(ENV_URI, "").strip()
    if uri:
        other = pymongo.MongoClient(uri, event_listeners=[recorder], serverSelectionTimeoutMS=5000)
    else:
        host, port = next(iter(client.nodes), ("localhost", 27017))
        other = pymongo.MongoClient(host, port, event_listeners=[recorder], serverSelectionTimeoutMS=5000)
    return other[db.name], other.close


def _examined(db: Any, command: dict) -> tuple[int, int]:
    """Keys and documents examined by a read command, from its explain (executionStats)."""
    from labkit.exercises.observe import plan_figures

    cmd = {k: v for k, v in command.items() if k not in _EXPLAIN_DROP}
    try:
        plan = db.command("explain", cmd, verbosity="executionStats")
    except Exception:  # noqa: BLE001 - a command explain cannot describe (e.g. count with a hint) costs 0 here
        return 0, 0
    keys, docs = _sum_examined(plan)
    if keys or docs:
        return keys, docs
    fig = plan_figures(plan)
    return fig.keys_examined, fig.docs_examined


def _as_queries(command: dict) -> list[dict]:
    """The read commands whose explain measures ``command``: itself for a read; for an update or delete, a
    ``find`` of each statement's filter (what the write had to find), since not every engine explains writes."""
    name = next(iter(command), "")
    if name in _READS:
        return [command]
    if name == "update":
        return [{"find": command[name], "filter": u.get("q", {}), **({} if u.get("multi") else {"limit": 1})}
                for u in command.get("updates") or []]
    if name == "delete":
        return [{"find": command[name], "filter": d.get("q", {}), **({"limit": 1} if d.get("limit") else {})}
                for d in command.get("deletes") or []]
    if name == "findAndModify":
        return [{"find": command[name], "filter": command.get("query", {}), "limit": 1}]
    return []


def _sum_examined(plan: Any) -> tuple[int, int]:
    """Totals over every executionStats in an explain (aggregate explains carry one per stage)."""
    keys = docs = 0
    todo = [plan]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            stats = node.get("executionStats")
            if isinstance(stats, dict) and "totalKeysExamined" in stats:
                keys += int(stats.get("totalKeysExamined", 0))
                docs += int(stats.get("totalDocsExamined", 0))
                continue
            if "totalDocsExamined" in node and "$lookup" in node:  # classic $lookup stage statistics
                docs += int(node.get("totalDocsExamined", 0))
                keys += int(node.get("totalKeysExamined", 0))
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return keys, docs


def measure(db: Any, operation: Callable[[Any], Any]) -> OpCost:
    """Run ``operation(db)`` once and measure it (the data it changes stay changed)."""
    from labkit.exercises.observe import new_recorder

    rec = new_recorder()
    mdb, close = _monitored(db, rec)
    try:
        operation(mdb)
    finally:
        close()
    started = [e for e in rec.started_events if e.command_name not in ("endSessions", "killCursors")]
    keys = docs = 0
    for e in started:
        target = db.client[e.database_name]
        for cmd in _as_queries(dict(e.command)):
            k, d = _examined(target, cmd)
            keys, docs = keys + k, docs + d
    returned = sum(len(bson.encode(e.reply)) for e in rec.succeeded_events
                   if e.command_name in _READS + ("getMore", "findAndModify"))
    return OpCost(len(started), docs, keys, returned, rec.modified())


def _slider_unit(rate: float) -> tuple[str, int]:
    """The unit a rate's slider moves in: ("/s", 1) for whole runs per second, ("/h", 3600) for a rate that is
    a whole number per hour, ("/day", 86400) otherwise (a slider holds integers only)."""
    if rate == int(rate):
        return "/s", 1
    if abs(rate * 3600 - round(rate * 3600)) < 1e-9 and round(rate * 3600) >= 1:
        return "/h", 3600
    return "/day", 86400


def _rate_text(rate: float) -> str:
    """A rate per second with four significant digits, never rounded to something false and never in
    scientific notation: 0.1, 0.01, 0.0008333, 0.00005787."""
    import math

    if rate <= 0:
        return "0"
    decimals = max(0, 3 - math.floor(math.log10(rate)))
    text = f"{rate:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


class Ledger:
    """Measured per-operation costs of one or more designs, and their per-second totals at given rates."""

    def __init__(self, rates: Mapping[str, float]) -> None:
        if not isinstance(rates, Mapping) or not rates:
            raise ValueError("Ledger(rates=...): give the workload as {operation: runs per second}, e.g. "
                             "{'show feed': 900, 'new post': 20}")
        bad = {k: v for k, v in rates.items() if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0}
        if bad:
            raise ValueError(f"Ledger(rates=...): rates must be numbers >= 0 (runs per second); got {bad}")
        self.rates: dict[str, float] = dict(rates)
        self.costs: dict[tuple[str, str], OpCost] = {}

    def measure(self, design: str, operation: str, db: Any, fn: Callable[[Any], Any]) -> OpCost:
        """Measure ``fn(db)`` as ``operation`` of ``design`` (``operation`` must be one of the rates)."""
        if operation not in self.rates:
            raise ValueError(f"measure(operation={operation!r}): not in the workload; its operations are "
                             f"{sorted(self.rates)}")
        cost = measure(db, fn)
        self.costs[(design, operation)] = cost
        return cost

    @property
    def designs(self) -> list[str]:
        """The designs measured, in the order they were first measured."""
        return list(dict.fromkeys(d for d, _ in self.costs))

    def per_operation(self) -> Any:
        """A DataFrame: one row per (design, operation) with the measured cost of one run and its rate."""
        import pandas as pd

        rows = [{"design": d, "operation": op, "per second": self.rates[op], **c.as_row()}
                for (d, op), c in self.costs.items()]
        return pd.DataFrame(rows).set_index(["design", "operation"])

    def totals(self, rates: Mapping[str, float] | None = None) -> Any:
        """A DataFrame: per design, each metric per second (cost of one run x runs per second, summed).

        A design missing a measured operation is shown with that operation's cost unknown (NaN)."""
        import pandas as pd

        use = dict(self.rates, **(rates or {}))
        out = {}
        for design in self.designs:
            row = {}
            for metric in METRICS:
                total = 0.0
                for op, rate in use.items():
                    cost = self.costs.get((design, op))
                    if cost is None:
                        total = float("nan")
                        break
                    total += cost.as_row()[metric] * rate
                row[metric + " /s"] = total
            out[design] = row
        return pd.DataFrame.from_dict(out, orient="index").round(1)

    def best(self, metric: str = "docs examined", rates: Mapping[str, float] | None = None) -> str:
        """The design with the lowest per-second ``metric`` at ``rates`` (default: the ledger's)."""
        if metric not in METRICS:
            raise ValueError(f"best(metric={metric!r}): choose one of {list(METRICS)}")
        table = self.totals(rates)
        totals = table[metric + " /s"].dropna() if len(table) else table
        if len(totals) == 0:
            raise ValueError("best(): no design has a cost measured for every operation yet")
        return str(totals.idxmin())

    def _cost(self, metric: str, design: str, operation: str) -> int:
        if metric not in METRICS:
            raise ValueError(f"metric={metric!r}: choose one of {list(METRICS)}")
        cost = self.costs.get((design, operation))
        if cost is None:
            raise ValueError(f"no cost measured for design {design!r}, operation {operation!r}; measured: "
                             f"{sorted(self.costs)}")
        return cost.as_row()[metric]

    def difference(self, metric: str, operation: str, better: str, worse: str) -> int:
        """Per run of ``operation``: ``worse``'s measured ``metric`` minus ``better``'s (positive when ``better``
        saves on that operation, negative when it costs more)."""
        return self._cost(metric, worse, operation) - self._cost(metric, better, operation)

    def break_even(self, operation: str, better: str, worse: str, metric: str = "docs examined") -> float | None:
        """The rate of ``operation`` (runs per second) at which ``better`` and ``worse`` have the same per-second
        total of ``metric``, every other operation at the ledger's rate; None when the two never cross (they
        cost the same per run of ``operation``)."""
        if operation not in self.rates:
            raise ValueError(f"break_even(operation={operation!r}): not in the workload; its operations are "
                             f"{sorted(self.rates)}")
        rest = {d: sum(rate * self._cost(metric, d, op) for op, rate in self.rates.items() if op != operation)
                for d in (better, worse)}
        slope = self._cost(metric, better, operation) - self._cost(metric, worse, operation)
        if slope == 0:
            return None
        return (rest[worse] - rest[better]) / slope

    def widget(self, metric: str = "docs examined", max_rate: int | None = None,
               max_rates: Mapping[str, int] | None = None) -> Any:
        """An explorer with one slider per rate; the readout shows each design's per-second total of ``metric``
        and which design wins at those rates. ``max_rates`` sets one operation's slider range in runs per second
        (e.g. a rare write whose break-even is a few per second), ``max_rate`` the others'. A rate below one
        per second slides in runs per hour (``"<op> /h"``) or per day (``"<op> /day"``), so it starts at its
        true value; the readout then also shows it per second."""
        from labkit.widgets import explorer

        if metric not in METRICS:
            raise ValueError(f"widget(metric={metric!r}): choose one of {list(METRICS)}")
        unknown = sorted(set(max_rates or {}) - set(self.rates))
        if unknown:
            raise ValueError(f"widget(max_rates=...): {unknown} not in the workload; its operations are "
                             f"{sorted(self.rates)}")
        top = max_rate or max(10, int(max(self.rates.values()) * 10))
        # A slider moves whole numbers: a rate below one per second (0.1/s, a few per hour) slides per hour or
        # per day instead, so it starts at its true value rather than at 0.
        units = {op: _slider_unit(rate) for op, rate in self.rates.items()}
        names = {op: f"{op} {units[op][0]}" for op in self.rates}
        tops, starts = {}, {}
        for op, rate in self.rates.items():
            per = units[op][1]
            start = int(round(rate * per))
            if op in (max_rates or {}):
                tops[op] = int(max_rates[op] * per)  # type: ignore[index]
            elif per == 1:
                tops[op] = int(top)
            else:  # a rare operation: up to ten times its rate, at least one per second
                tops[op] = max(10 * start, per)
            starts[op] = min(start, tops[op])

        def compute(**values: int) -> dict[str, Any]:
            rates = {op: values[names[op]] / units[op][1] for op in self.rates}
            totals = self.totals(rates)[metric + " /s"]
            out: dict[str, Any] = {f"{op}: per second": _rate_text(rates[op]) for op in self.rates
                                   if units[op][1] != 1}
            out.update({f"{d}: {metric} /s": (None if v != v else v) for d, v in totals.items()})
            out["better design"] = self.best(metric, rates)
            return out

        sliders = {names[op]: (0, tops[op], starts[op], max(1, tops[op] // 200)) for op in self.rates}
        return explorer(compute, sliders=sliders, title=f"Workload ledger: {metric} per second")

    def __repr__(self) -> str:
        return f"Ledger({len(self.rates)} operations, {len(self.designs)} designs measured)"
