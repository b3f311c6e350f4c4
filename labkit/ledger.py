"""The workload cost ledger: each design's measured cost per operation, times the workload's rates.

Introduced in ``notebooks/00_start_here.ipynb``. The source material's method is "list the operations with
their rates, then design for the top rows". A ledger makes that arithmetic visible:

    ledger = labkit.Ledger({"show product page": 1000, "write a review": 1})   # operations per second
    ledger.measure("embedded", "show product page", db, lambda db: db.products.find_one({"_id": "p1"}))
    ledger.measure("embedded", "write a review", db, add_review_embedded)
    ...
    ledger.totals()     # per design, per second: round trips, documents and keys examined, bytes, writes
                        # (and, through a mongos, shards contacted)
    ledger.widget()     # one slider per rate: move them and watch the better design flip

Every cost ``measure`` gives is measured while the operation runs, through the command events a driver sees
(round trips, documents written, bytes returned) and the ``explain`` of each read it sent (keys and documents
examined; for a write, the explain of the query its filter runs, measured right after the write), on the
embedded engine and on a real server alike. Through a mongos (a sharded cluster, labkit's simulated one or a real
one) each cost also counts the shards its commands contacted (``shards contacted``), from the same explains.

Measured or estimated (LESSON_CONVENTIONS: "measured" means the engine or the server ran it): the label comes
with the cost, by construction. ``measure`` labels its cost ``measured``; a cost from a formula enters through
``estimate(how=...)`` and is labelled ``estimated: <how>``. Per-second totals are always ``estimated: rate x
cost per run`` (the rates are the workload's figures), and the tables and the widget say so.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import bson

METRICS = ("round trips", "docs examined", "keys examined", "bytes returned", "docs written")
#: on a sharded cluster (a mongos), one more metric: the shards each command of the operation contacted, summed
SHARDS = "shards contacted"
MEASURED = "measured"
ESTIMATED = "estimated: "
#: what a per-second total is: a formula over the cost of one run (measured or estimated) and the workload's rate
TOTALS_HOW = "estimated: rate x measured cost per run"
#: slider units for a rate: the first that shows the workload's rate as a whole number
RATE_UNITS = (("/s", 1), ("/min", 60), ("/h", 3600), ("/day", 86_400))
_READS = ("find", "aggregate", "count", "distinct")
_EXPLAIN_DROP = ("lsid", "$db", "$clusterTime", "txnNumber", "autocommit", "startTransaction", "$readPreference",
                 "readConcern", "writeConcern")


@dataclass(frozen=True)
class OpCost:
    """What one run of an operation cost, and how that is known: ``how`` is ``"measured"`` for a cost
    :func:`measure` took from a run, ``"estimated: <formula>"`` for one :func:`estimate` was given.
    ``shards_contacted``: on a sharded cluster, the shards each of its commands contacted, summed (None
    elsewhere, and the ledger then shows no such column)."""

    round_trips: int
    docs_examined: int
    keys_examined: int
    bytes_returned: int
    docs_written: int
    how: str
    shards_contacted: int | None = None

    def __post_init__(self) -> None:
        if self.how != MEASURED and not (isinstance(self.how, str) and self.how.startswith(ESTIMATED)
                                         and self.how[len(ESTIMATED):].strip()):
            raise ValueError(f"OpCost(how={self.how!r}): a cost is {MEASURED!r} (measure() ran it) or "
                             f"'{ESTIMATED}<how it was obtained>' (estimate(how=...))")

    def as_row(self) -> dict[str, int]:
        """The figures under the ledger's column names (``shards contacted`` only on a sharded cluster)."""
        row = dict(zip(METRICS, list(asdict(self).values())[:len(METRICS)]))
        if self.shards_contacted is not None:
            row[SHARDS] = self.shards_contacted
        return row

    @property
    def measured(self) -> bool:
        """True when the figures come from running the operation."""
        return self.how == MEASURED


def _monitored(db: Any, recorder: Any) -> tuple[Any, Callable[[], None]]:
    """``db`` reached through a second client that reports command events to ``recorder``, and a closer.

    Embedded engine: a client object on the same store (same data, same indexes). Server: a new connection."""
    from labkit.connection import is_embedded

    client = db.client
    if is_embedded(client):
        from labkit.engine import EmbeddedClient
        other = EmbeddedClient(_store=client._store, event_listeners=[recorder])
        return other[db.name], lambda: None
    from labkit.connection import second_client
    other = second_client(client, [recorder])
    return other[db.name], other.close


def _explained(db: Any, command: dict) -> Any:
    """The explain (executionStats) of a read command; None when the command cannot be explained."""
    cmd = {k: v for k, v in command.items() if k not in _EXPLAIN_DROP}
    try:
        return db.command("explain", cmd, verbosity="executionStats")
    except Exception:  # noqa: BLE001 - a command explain cannot describe (e.g. count with a hint) costs 0 here
        return None


def _examined(plan: Any) -> tuple[int, int]:
    """Keys and documents examined by a read command, from its explain (executionStats)."""
    from labkit.exercises.observe import plan_figures

    if plan is None:
        return 0, 0
    keys, docs = _sum_examined(plan)
    if keys or docs:
        return keys, docs
    fig = plan_figures(plan)
    return fig.keys_examined, fig.docs_examined


def examined_by(db: Any, command: dict) -> tuple[int, int]:
    """Keys and documents a command examines, from the explain of what it reads (``_as_queries``)."""
    keys = docs = 0
    for cmd in _as_queries(command):
        k, d = _examined(_explained(db, cmd))
        keys, docs = keys + k, docs + d
    return keys, docs


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


def _inserted_on(db: Any, command: dict) -> int:
    """The shards an insert command's documents went to: the shards whose part of the router's explain of a
    find of their ``_id`` returns them (measured after the insert; each shard received its documents)."""
    from labkit.sharding import targeting

    ids = [d["_id"] for d in command.get("documents") or [] if isinstance(d, Mapping) and "_id" in d]
    if not ids:
        return 0
    plan = _explained(db, {"find": command["insert"], "filter": {"_id": {"$in": ids}}})
    try:
        return sum(1 for s in targeting(plan)["per shard"].values() if s["returned"])
    except (ValueError, KeyError, TypeError):
        return 0


def _sum_examined(plan: Any) -> tuple[int, int]:
    """Totals over every executionStats in an explain (aggregate explains carry one per stage)."""
    from labkit.engine.query.explain_doc import explain_totals

    return explain_totals(plan)


def measure(db: Any, operation: Callable[[Any], Any]) -> OpCost:
    """Run ``operation(db)`` once and measure it (the data it changes stay changed). Through a mongos, also the
    shards each command contacted: a read's or a write's from the router's explain of its query, an insert's from
    where its documents went."""
    from labkit.connection import is_mongos
    from labkit.exercises.observe import new_recorder
    from labkit.sharding import shards_in_explain

    rec = new_recorder()
    mdb, close = _monitored(db, rec)
    try:
        operation(mdb)
    finally:
        close()
    started = [e for e in rec.started_events if e.command_name not in ("endSessions", "killCursors")]
    sharded = is_mongos(db.client)
    keys = docs = shards = 0
    for e in started:
        target = db.client[e.database_name]
        command = dict(e.command)
        for cmd in _as_queries(command):
            plan = _explained(target, cmd)
            k, d = _examined(plan)
            keys, docs = keys + k, docs + d
            shards += len(shards_in_explain(plan) or []) if sharded else 0
        if sharded and e.command_name == "insert":
            shards += _inserted_on(target, command)
    returned = sum(len(bson.encode(e.reply)) for e in rec.succeeded_events
                   if e.command_name in _READS + ("getMore", "findAndModify"))
    return OpCost(len(started), docs, keys, returned, rec.modified(), MEASURED, shards if sharded else None)


def estimate(how: str, *, round_trips: int = 0, docs_examined: int = 0, keys_examined: int = 0,
             bytes_returned: int = 0, docs_written: int = 0, shards_contacted: int | None = None) -> OpCost:
    """A cost that was not measured: figures from a formula, labelled ``estimated: <how>``.

    ``how`` says how the figures were obtained, e.g. ``"docs examined x avgObjSize"``; figures not given are 0.
    Use it where no run can measure the operation (a write a server does not explain, a workload not built);
    :func:`measure` whenever the operation can run."""
    if not isinstance(how, str) or not how.strip():
        raise ValueError("estimate(how=...): say how the figures were obtained, e.g. how='docs examined x "
                         "avgObjSize'; a cost without it would read as measured")
    figures = {"round_trips": round_trips, "docs_examined": docs_examined, "keys_examined": keys_examined,
               "bytes_returned": bytes_returned, "docs_written": docs_written}
    if shards_contacted is not None:
        figures["shards_contacted"] = shards_contacted
    bad = {k: v for k, v in figures.items() if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0}
    if bad:
        raise ValueError(f"estimate({how!r}): figures must be numbers >= 0 (per run of the operation); got {bad}")
    text = how.strip()
    return OpCost(**figures, how=text if text.startswith(ESTIMATED) else ESTIMATED + text)


def _totals_how(costs: Mapping[Any, OpCost]) -> str:
    return TOTALS_HOW if all(c.measured for c in costs.values()) else "estimated: rate x cost per run"


def _metrics(costs: Any) -> tuple[str, ...]:
    """The metrics of ``costs``: :data:`METRICS`, and ``shards contacted`` when every cost was taken on a sharded
    cluster."""
    costs = list(costs)
    sharded = bool(costs) and all(isinstance(c, OpCost) and c.shards_contacted is not None for c in costs)
    return METRICS + ((SHARDS,) if sharded else ())


def compare(costs: Mapping[str, OpCost], metrics: tuple[str, ...] | None = None) -> Any:
    """A before/after table: one column per name in ``costs``, one row per metric (default: every metric they
    all have), and a last row ``cost`` saying for each column whether its figures are ``measured`` or
    ``estimated: <how>``."""
    import pandas as pd

    allowed = _metrics(costs.values())
    metrics = allowed if metrics is None else metrics
    unknown = [m for m in metrics if m not in allowed]
    if unknown:
        raise ValueError(f"compare(metrics=...): {unknown} are not metrics of these costs; choose from "
                         f"{list(allowed)}")
    not_costs = sorted(k for k, c in costs.items() if not isinstance(c, OpCost))
    if not_costs:
        raise ValueError(f"compare(costs=...): {not_costs} are not costs; pass what measure() or estimate() "
                         "returned")
    table = pd.DataFrame({name: {**{m: c.as_row()[m] for m in metrics}, "cost": c.how} for name, c in costs.items()})
    return table.loc[[*metrics, "cost"]]


def workload_table(rows: Iterable[Sequence[Any]], *, rate: str = "rate") -> Any:
    """A lesson's workload table, the method's first step: one row per operation, ``(operation, type, rate,
    needs)`` (type: read, write or what else runs; the rate as the lesson states it, a number per second or
    words such as "a few per hour"), as a pandas DataFrame indexed by operation. ``rate`` names the rate
    column, e.g. ``"rate (assumed)"`` where the rates are the lesson's assumptions."""
    import pandas as pd

    rows = [tuple(r) for r in rows]
    for r in rows:
        if len(r) != 4:
            raise ValueError(f"workload_table: each row is (operation, type, rate, needs); {r!r} has {len(r)} "
                             "values")
    return pd.DataFrame(rows, columns=["operation", "type", rate, "needs"]).set_index("operation")


def rate_unit(rate: float) -> tuple[str, int]:
    """(suffix, runs-per-second factor) of the first of :data:`RATE_UNITS` in which ``rate`` (runs per second)
    is a whole number, so a slider shows the workload's rate exactly (0.1/s is 6 /min, 5 a day is 5 /day); per
    day, rounded, when none is. A rate above 0 that per day rounds to 0 would show as 0, a false figure: it is
    refused with a ValueError saying so."""
    for suffix, factor in RATE_UNITS:
        value = rate * factor
        if abs(value - round(value)) <= 1e-9 * max(1.0, abs(value)):
            return suffix, factor
    suffix, factor = RATE_UNITS[-1]
    if rate > 0 and round(rate * factor) == 0:
        raise ValueError(f"a rate of {rate * factor:.6f} runs a day is not a whole number of runs per second, "
                         "minute, hour or day and would slide as 0 /day; give the ledger a rate that is, e.g. "
                         "1 / 86_400 for once a day")
    return suffix, factor


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

    def _check_operation(self, call: str, operation: str) -> None:
        if operation not in self.rates:
            raise ValueError(f"{call}(operation={operation!r}): not in the workload; its operations are "
                             f"{sorted(self.rates)}")

    def measure(self, design: str, operation: str, db: Any, fn: Callable[[Any], Any]) -> OpCost:
        """Measure ``fn(db)`` as ``operation`` of ``design`` (``operation`` must be one of the rates)."""
        self._check_operation("measure", operation)
        cost = measure(db, fn)
        self.costs[(design, operation)] = cost
        return cost

    def estimate(self, design: str, operation: str, how: str, **figures: int) -> OpCost:
        """Enter a cost of ``operation`` for ``design`` that was not measured: ``figures`` as :func:`estimate`
        takes them (``docs_examined=...``), labelled ``estimated: <how>`` wherever the ledger shows it."""
        self._check_operation("estimate", operation)
        cost = estimate(how, **figures)
        self.costs[(design, operation)] = cost
        return cost

    @property
    def metrics(self) -> tuple[str, ...]:
        """The ledger's metrics: :data:`METRICS`, and ``shards contacted`` when every cost was taken on a
        sharded cluster (a mongos)."""
        return _metrics(self.costs.values())

    @property
    def designs(self) -> list[str]:
        """The designs measured, in the order they were first measured."""
        return list(dict.fromkeys(d for d, _ in self.costs))

    def per_operation(self) -> Any:
        """A DataFrame: one row per (design, operation) with the cost of one run, its rate, and in column
        ``cost`` how the cost is known (``measured`` or ``estimated: <how>``)."""
        import pandas as pd

        rows = [{"design": d, "operation": op, "per second": self.rates[op], **c.as_row(), "cost": c.how}
                for (d, op), c in self.costs.items()]
        return pd.DataFrame(rows).set_index(["design", "operation"])

    def totals(self, rates: Mapping[str, float] | None = None) -> Any:
        """A DataFrame: per design, each metric per second (cost of one run x runs per second, summed).

        A design missing a measured operation is shown with that operation's cost unknown (NaN). The columns'
        name says what the figures are: ``estimated: rate x measured cost per run``."""
        import pandas as pd

        use = dict(self.rates, **(rates or {}))
        out = {}
        for design in self.designs:
            row = {}
            for metric in self.metrics:
                total = 0.0
                for op, rate in use.items():
                    cost = self.costs.get((design, op))
                    if cost is None:
                        total = float("nan")
                        break
                    total += cost.as_row()[metric] * rate
                row[metric + " /s"] = total
            out[design] = row
        table = pd.DataFrame.from_dict(out, orient="index").round(1)
        table.columns.name = _totals_how(self.costs)
        return table

    def best(self, metric: str = "docs examined", rates: Mapping[str, float] | None = None) -> str:
        """The design with the lowest per-second ``metric`` at ``rates`` (default: the ledger's)."""
        if metric not in self.metrics:
            raise ValueError(f"best(metric={metric!r}): choose one of {list(self.metrics)}")
        table = self.totals(rates)
        totals = table[metric + " /s"].dropna() if len(table) else table
        if len(totals) == 0:
            raise ValueError("best(): no design has a cost measured for every operation yet")
        return str(totals.idxmin())

    def _cost(self, metric: str, design: str, operation: str) -> int:
        if metric not in self.metrics:
            raise ValueError(f"metric={metric!r}: choose one of {list(self.metrics)}")
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
        and which design wins at those rates. ``max_rates`` sets one operation's slider range (e.g. a rare write
        whose break-even is a few per second), ``max_rate`` the others'."""
        from labkit.widgets import explorer

        if metric not in self.metrics:
            raise ValueError(f"widget(metric={metric!r}): choose one of {list(self.metrics)}")
        unknown = sorted(set(max_rates or {}) - set(self.rates))
        if unknown:
            raise ValueError(f"widget(max_rates=...): {unknown} not in the workload; its operations are "
                             f"{sorted(self.rates)}")
        top = max_rate or max(10, int(max(self.rates.values()) * 10))
        units = {}
        for op, rate in self.rates.items():
            try:
                units[op] = rate_unit(rate)
            except ValueError as exc:
                raise ValueError(f"widget(): the rate of {op!r}: {exc}") from None
        tops = {op: max(1, round((max_rates or {}).get(op, top) * units[op][1])) for op in self.rates}
        names = {op: f"{op} {units[op][0]}" for op in self.rates}

        def compute(**values: int) -> dict[str, Any]:
            rates = {op: values[names[op]] / units[op][1] for op in self.rates}
            totals = self.totals(rates)[metric + " /s"]
            out: dict[str, Any] = {f"{d}: {metric} /s": (None if v != v else v) for d, v in totals.items()}
            out["better design"] = self.best(metric, rates)
            return out

        sliders = {names[op]: (0, max(tops[op], round(rate * units[op][1])), round(rate * units[op][1]),
                               max(1, tops[op] // 200))
                   for op, rate in self.rates.items()}
        return explorer(compute, sliders=sliders,
                        title=f"Workload ledger: {metric} per second ({_totals_how(self.costs)})")

    def __repr__(self) -> str:
        return f"Ledger({len(self.rates)} operations, {len(self.designs)} designs measured)"
