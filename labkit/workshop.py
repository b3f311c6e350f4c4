"""Workshop mode: per-learner databases on one shared cluster (``python -m labkit workshop ...``).

Introduced in ``INSTRUCTOR.md``. Learner *n* sets ``LABKIT_DB_PREFIX=<base><nn>_`` (for example
``sl_learner07_``) before starting Jupyter with ``MONGODB_URI`` pointing at the cluster; every ``fresh_db`` call
in the notebooks then lands in that learner's own databases. ``prepare`` creates and seeds one marked database
per learner so the cluster, the credentials and the quota are proven before the workshop starts; ``check``
reports readiness; ``cleanup`` drops only databases that carry labkit's mark and start with the workshop prefix.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from labkit.databases import MAX_DB_NAME, drop_marked, is_labkit_database, recreate

DEFAULT_BASE = "sl_learner"
READY_DB = "ready"
_BASE_OK = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@dataclass(frozen=True)
class Seat:
    """One learner's place in a workshop."""

    number: int
    prefix: str

    @property
    def ready_db(self) -> str:
        return f"{self.prefix}{READY_DB}"


def seats(learners: int, base: str = DEFAULT_BASE) -> list[Seat]:
    """The seats of a workshop: learner ``n`` gets prefix ``f"{base}{n:02d}_"``."""
    if isinstance(learners, bool) or not isinstance(learners, int) or not 1 <= learners <= 500:
        raise ValueError(f"learners={learners!r}: must be an int between 1 and 500")
    if not isinstance(base, str) or not _BASE_OK.match(base):
        raise ValueError(f"base={base!r}: use 1-40 letters, digits, '_' or '-' (it starts every database name)")
    width = max(2, len(str(learners)))
    out = [Seat(n, f"{base}{n:0{width}d}_") for n in range(1, learners + 1)]
    longest = max(len(s.ready_db) for s in out)
    if longest > MAX_DB_NAME:
        raise ValueError(f"base={base!r}: database names would be {longest} bytes; MongoDB allows {MAX_DB_NAME}")
    return out


def prepare(client: Any, learners: int, *, base: str = DEFAULT_BASE,
            seed_db: Callable[[Any], Any] | None = None) -> list[dict]:
    """Create (or recreate) each learner's marked ``<prefix>ready`` database, seeded by ``seed_db(db)``.

    Guarded like ``fresh_db``: a database with the same name that labkit did not create is never touched
    (:class:`labkit.UnsafeDatabaseError`), and nothing is created for later seats once one fails.
    """
    plan = seats(learners, base)
    for seat in plan:  # check every seat before writing anything
        names = client.list_database_names()
        if seat.ready_db in names and not is_labkit_database(client, seat.ready_db):
            recreate(seat.ready_db, client=client)  # raises UnsafeDatabaseError naming it
    rows = []
    for seat in plan:
        db = recreate(seat.ready_db, client=client, label=READY_DB)
        if seed_db is not None:
            seed_db(db)
        else:
            db["ready"].insert_one({"_id": "ready", "learner": seat.number})
        rows.append({"learner": seat.number, "LABKIT_DB_PREFIX": seat.prefix, "database": seat.ready_db,
                     "documents": sum(db[c].count_documents({}) for c in db.list_collection_names())})
    return rows


def check(client: Any, learners: int, *, base: str = DEFAULT_BASE) -> list[dict]:
    """Readiness per learner: does the marked ``ready`` database exist, and how many lesson databases so far."""
    names = set(client.list_database_names())
    rows = []
    for seat in seats(learners, base):
        mine = sorted(n for n in names if n.startswith(seat.prefix))
        ready = seat.ready_db in names and is_labkit_database(client, seat.ready_db)
        rows.append({"learner": seat.number, "LABKIT_DB_PREFIX": seat.prefix, "ready": ready,
                     "databases": len(mine)})
    return rows


def cleanup(client: Any, *, base: str = DEFAULT_BASE) -> dict[str, list[str]]:
    """Drop every labkit-marked database whose name starts with ``base`` followed by a seat number.

    Unmarked databases with matching names are reported under ``"kept"`` and left alone.
    """
    if not isinstance(base, str) or not _BASE_OK.match(base):
        raise ValueError(f"base={base!r}: use 1-40 letters, digits, '_' or '-'")
    pattern = re.compile(re.escape(base) + r"\d+_")
    dropped, kept = [], []
    for name in sorted(client.list_database_names()):
        if not pattern.match(name):
            continue
        if is_labkit_database(client, name):
            drop_marked(name, client=client)
            dropped.append(name)
        else:
            kept.append(name)
    return {"dropped": dropped, "kept": kept}


# --- sizing: `workshop plan` ---------------------------------------------------------------------------------

FOOTPRINT_FILE = Path(__file__).resolve().parents[1] / "data" / "workshop_footprint.json"
MB = 1_000_000  # Atlas quotes storage in MB ("using 513 MB of 512 MB")


@dataclass(frozen=True)
class Tier:
    """The limits of a cluster tier that a workshop room can run into (0: no limit of that kind)."""

    name: str
    title: str
    storage_mb: int           # dataSize + indexSize, hard limit on free/flex
    databases: int
    collections: int
    collections_and_indexes: int  # recommended maximum (performance, not enforced)
    index_builds: int         # maxNumActiveUserIndexBuilds: concurrent user index builds on the primary
    source: str
    db_name_bytes: int = 0    # longest database name the tier accepts (Free: 38 bytes)


_FREE = "https://www.mongodb.com/docs/atlas/reference/free-shared-limitations/ (operational limits)"
_FLEX = "https://www.mongodb.com/docs/atlas/reference/flex-limitations/ (operational limits)"
_FAQ = ("https://www.mongodb.com/docs/atlas/reference/faq/database/ (recommended collections + indexes); "
        "https://www.mongodb.com/docs/atlas/reference/faq/storage/ (free/flex storage counts dataSize + indexSize)")
_BUILDS = "maxNumActiveUserIndexBuilds default 3 (SERVER-47155, DOCS-13797; manual: Index Builds on Populated Collections)"
# Free (M0): the "Operational Limits" table of the Free limitation page says "a maximum of 100 databases and 500
# collections total" and 0.5 GB data storage (uncompressed BSON of all documents plus their indexes); it also limits
# throughput to 100 operations per second, in-memory sorts to 32 MB and database names to 38 bytes (checked
# 2026-12-01 in the Atlas docs source, reference/free-shared-limitations). Flex (reference/flex-limitations, same
# day): 100 databases, 500 collections in total, 5 GB data storage counted the same way, 38-byte database names,
# 500 operations per second, 32 MB in-memory sorts.
TIERS: dict[str, Tier] = {
    "free": Tier("free", "Atlas Free (M0)", 512, 100, 500, 0, 3, f"{_FREE}; {_FAQ}; {_BUILDS}", 38),
    "flex": Tier("flex", "Atlas Flex", 5_000, 100, 500, 0, 3, f"{_FLEX}; {_FAQ}; {_BUILDS}", 38),
    "m10": Tier("m10", "Atlas M10 (10 GB default storage)", 10_000, 0, 0, 5_000, 3, f"{_FAQ}; {_BUILDS}"),
    "m30": Tier("m30", "Atlas M30 (40 GB default storage)", 40_000, 0, 0, 10_000, 3, f"{_FAQ}; {_BUILDS}"),
    "self-managed": Tier("self-managed", "Self-managed replica set", 0, 0, 0, 0, 3, _BUILDS),
}


def load_footprint(path: Path | None = None) -> dict:
    """The measured footprint per lesson (``data/workshop_footprint.json``, written by
    ``tools/measure_footprint.py``)."""
    path = Path(path) if path else FOOTPRINT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"no measured footprint at {path} ({exc}); run python3 tools/measure_footprint.py") from None
    if not data.get("lessons"):
        raise ValueError(f"{path} holds no lessons; run python3 tools/measure_footprint.py")
    return data


def lesson_database_names(notebooks: Path | None = None) -> list[str]:
    """The database names the lessons pass to ``fresh_db`` (read from the lesson sources, when present)."""
    import re
    folder = notebooks or FOOTPRINT_FILE.parents[1] / "notebooks" / "src"
    names: set[str] = set()
    for src in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        names |= set(re.findall(r"""fresh_db\(\s*(?:f?)["']([^"'{}]+)["']""", src.read_text(encoding="utf-8")))
    return sorted(names)


def plan(learners: int, tier: str = "free", *, lessons: Sequence[str] = (), shared: bool = False,
         footprint: dict | None = None) -> dict:
    """Size a workshop: per lesson and in total, for one learner and for the room, against ``tier``'s limits.

    Per lesson: the lesson's peak (largest after any cell) data size, index count and size, collections and
    databases, its index builds and the largest burst of builds in one cell. A learner keeps every lesson's
    databases until ``workshop cleanup``, so the running total after lesson k is the final state of the lessons
    before it plus lesson k's peak; the course total is the largest running total. The room is ``learners``
    times one learner (everyone runs the same lessons). Peak concurrent index builds in the room: a learner's
    notebook runs one build at a time, so when the room runs a lesson with builds together up to ``learners``
    builds compete for the primary's ``index_builds`` slots and the rest queue. ``shared``: use the
    measurements taken with ``LABKIT_SHARED=1`` where there are any.
    """
    seats(learners)  # validates learners
    if tier not in TIERS:
        raise ValueError(f"tier={tier!r}: choose one of {', '.join(TIERS)}")
    t = TIERS[tier]
    data = footprint if footprint is not None else load_footprint()
    measured = dict(data["lessons"])
    if shared:
        measured.update(data.get("shared_lessons", {}))
    chosen = [fp for name, fp in sorted(measured.items())
              if not lessons or fp["lesson"] in lessons or name in lessons]
    if lessons and not chosen:
        raise ValueError(f"lessons={list(lessons)!r}: none of them is measured")
    rows, kept = [], {"data_bytes": 0, "index_bytes": 0, "indexes": 0, "collections": 0, "databases": 0}
    peak_total = dict(kept)
    for fp in chosen:
        peak, final = fp["peak"], fp["final"]
        running = {k: kept[k] + peak.get(k, 0) for k in kept}
        for k in kept:
            peak_total[k] = max(peak_total[k], running[k])
            kept[k] += final.get(k, 0)
        rows.append({"lesson": fp["lesson"], "name": fp["name"],
                     "data_mb": peak["data_bytes"] / MB, "indexes": peak["indexes"],
                     "index_mb": peak["index_bytes"] / MB, "collections": peak["collections"],
                     "databases": peak["databases"], "index_builds": fp["index_builds"],
                     "builds_in_one_cell": fp["max_builds_in_cell"],
                     "room_data_mb": learners * (peak["data_bytes"] + peak["index_bytes"]) / MB,
                     "room_collections": learners * peak["collections"],
                     "room_indexes": learners * peak["indexes"],
                     "room_concurrent_builds": learners if fp["index_builds"] else 0})
    learner_total = {"storage_mb": (peak_total["data_bytes"] + peak_total["index_bytes"]) / MB,
                     "data_mb": peak_total["data_bytes"] / MB, "index_mb": peak_total["index_bytes"] / MB,
                     "indexes": peak_total["indexes"], "collections": peak_total["collections"],
                     "databases": peak_total["databases"],
                     "index_builds": sum(fp["index_builds"] for fp in chosen)}
    # if every learner resets each lesson's databases when done (`python -m labkit reset NAME`): the largest lesson
    learner_total["one_lesson_at_a_time_mb"] = max(
        ((fp["peak"]["data_bytes"] + fp["peak"]["index_bytes"]) / MB for fp in chosen), default=0.0)
    learner_total["one_lesson_at_a_time_collections"] = max((fp["peak"]["collections"] for fp in chosen), default=0)
    room = {k: (v * learners) for k, v in learner_total.items()}
    room["concurrent_builds"] = learners if learner_total["index_builds"] else 0
    checks = []

    def check(what: str, need: float, limit: int, unit: str, enforced: bool = True) -> None:
        if not limit:
            return
        ok = need <= limit
        checks.append({"limit": what, "room needs": f"{need:,.0f} {unit}".strip(), "tier allows": f"{limit:,} {unit}".strip(),
                       "ok": ok, "enforced": enforced})

    check("storage (dataSize + indexSize)", room["storage_mb"], t.storage_mb, "MB")
    check("databases", room["databases"], t.databases, "")
    check("collections", room["collections"], t.collections, "")
    check("collections + indexes (recommended)", room["collections"] + room["indexes"], t.collections_and_indexes, "",
          enforced=False)
    check("concurrent user index builds (others queue)", room["concurrent_builds"], t.index_builds, "", enforced=False)
    numbers = {str(fp["lesson"]) for fp in chosen}
    names = [n for n in lesson_database_names() if not n[:2].isdigit() or n[:2] in numbers]
    if names and t.db_name_bytes:
        prefix = seats(learners)[-1].prefix
        longest = max(names, key=lambda n: len((prefix + n).encode()))
        check(f"database name length ({prefix}{longest})", len((prefix + longest).encode()), t.db_name_bytes,
              "bytes")
    return {"learners": learners, "tier": t, "shared": shared, "lessons": rows, "learner": learner_total,
            "room": room, "checks": checks, "fits": all(c["ok"] for c in checks if c["enforced"])}


def format_plan(result: dict) -> str:
    """``plan(...)`` as the text table ``python -m labkit workshop plan`` prints (markdown-compatible)."""
    n, t = result["learners"], result["tier"]
    out = [f"Workshop plan: {n} learner(s) on {t.title}" + (" in shared-cluster mode (LABKIT_SHARED=1)"
                                                            if result["shared"] else ""),
           "Measured per lesson on the embedded engine (peak after any cell; tools/measure_footprint.py).", "",
           "| Lesson | Data MB | Indexes | Index MB | Collections | Databases | Index builds (max in one cell) "
           f"| Room: storage MB | Room: collections | Room: indexes |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["lessons"]:
        out.append(f"| {r['name']} | {r['data_mb']:.1f} | {r['indexes']} | {r['index_mb']:.1f} | {r['collections']} | "
                   f"{r['databases']} | {r['index_builds']} ({r['builds_in_one_cell']}) | {r['room_data_mb']:,.0f} | "
                   f"{r['room_collections']:,} | {r['room_indexes']:,} |")
    one, room = result["learner"], result["room"]
    out.append(f"| **All, kept until cleanup** | **{one['data_mb']:.1f}** | **{one['indexes']}** | "
               f"**{one['index_mb']:.1f}** | **{one['collections']}** | **{one['databases']}** | "
               f"**{one['index_builds']}** | **{room['storage_mb']:,.0f}** | **{room['collections']:,}** | "
               f"**{room['indexes']:,}** |")
    out += ["", f"One learner at most: {one['storage_mb']:.1f} MB (data + indexes), {one['indexes']} indexes, "
                f"{one['collections']} collections, {one['databases']} databases.",
            f"The room ({n}): {room['storage_mb']:,.0f} MB, {room['indexes']:,} indexes, {room['collections']:,} "
            f"collections, {room['databases']:,} databases; up to {room['concurrent_builds']} index builds at once "
            f"when everyone runs the same cell.",
            f"If every learner resets each lesson when done (`python -m labkit reset NN_name`), the room peaks at "
            f"{room['one_lesson_at_a_time_mb']:,.0f} MB and {room['one_lesson_at_a_time_collections']:,} collections "
            f"(the largest lesson, times {n}).", "",
            "| Limit | Room needs | Tier allows | Verdict |", "|---|---:|---:|---|"]
    for c in result["checks"]:
        verdict = "ok" if c["ok"] else ("OVER: writes fail" if c["enforced"] else "over: slower (queues)")
        out.append(f"| {c['limit']} | {c['room needs']} | {c['tier allows']} | {verdict} |")
    out += ["", "FITS" if result["fits"] else
            "DOES NOT FIT: use a larger tier, fewer learners, LABKIT_SHARED=1, a shorter agenda (--lessons), or run "
            "`workshop cleanup`/`python -m labkit reset NAME` between sections.",
            f"Limits from: {t.source}"]
    return "\n".join(out)


# --- the room's progress: `workshop progress` ---------------------------------------------------------------

SYMBOLS = {"passed": "✔", "attempted": "…", "not started": "·"}


class _NoProgress:
    """A progress source with no entries (a learner who has not checked any exercise yet)."""

    def find(self, *_args: Any) -> list:
        return []


def room_progress(client: Any, learners: int, *, base: str = DEFAULT_BASE) -> Any:
    """A DataFrame, one row per learner and one column per exercise (in lesson order): passed, attempted or
    not started, read from each learner's ``<prefix>progress.exercises`` with :func:`labkit.tracking.progress`.

    Learners with no progress database yet show every exercise as not started."""
    import pandas as pd

    from labkit import tracking

    names = set(client.list_database_names())
    rows = {}
    for seat in seats(learners, base):
        db = f"{seat.prefix}{tracking.PROGRESS_DB}"
        if db in names:
            df = tracking.progress(client[db][tracking.PROGRESS_COLLECTION])
        else:
            df = tracking.progress(_NoProgress())  # every exercise, not started
        rows[f"learner {seat.number:02d}"] = dict(zip(df["exercise"], df["status"]))
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "learner"
    return table


def format_room_progress(table: Any) -> str:
    """The room's table as text: one line per learner (✔ passed, … attempted, · not started) plus totals."""
    columns = list(table.columns)
    width = max([len("learner")] + [len(str(i)) for i in table.index])
    out = ["Exercises (columns, in lesson order): " + ", ".join(f"{i + 1}={c}" for i, c in enumerate(columns)),
           f"{'':<{width}}  " + "".join(f"{(i + 1) % 100:>3}" for i in range(len(columns))) + "  passed attempted"]
    for learner, row in table.iterrows():
        marks = "".join(f"{SYMBOLS[s]:>3}" for s in row)
        out.append(f"{learner:<{width}}  {marks}  {sum(s == 'passed' for s in row):>6} "
                   f"{sum(s == 'attempted' for s in row):>9}")
    per_ex = [sum(table[c] == "passed") for c in columns]
    out.append(f"{'passed':<{width}}  " + "".join(f"{p:>3}" for p in per_ex))
    stuck = [c for c in columns if sum(table[c] == "attempted") >= max(1, len(table) // 3)]
    if stuck:
        out.append("Attempted but not passed by a third of the room or more: " + ", ".join(stuck))
    out.append("✔ passed   … attempted   · not started")
    return "\n".join(out)


def progress_widget(client: Any, learners: int, *, base: str = DEFAULT_BASE, every_s: float = 30.0) -> Any:
    """A notebook widget showing :func:`room_progress` as a coloured table, with a Refresh button and, when
    ``every_s`` > 0, an automatic refresh every ``every_s`` seconds (a background thread; stop it with the
    widget's ``stop()``)."""
    import threading

    import ipywidgets as w

    colours = {"passed": "#2ca02c", "attempted": "#ff7f0e", "not started": "#eeeeee"}
    out = w.HTML()
    status = w.Label()
    button = w.Button(description="Refresh", icon="refresh")
    stop = threading.Event()

    def render(*_: Any) -> None:
        try:
            table = room_progress(client, learners, base=base)
        except Exception as exc:  # noqa: BLE001 - a failed refresh is shown, not raised into the event loop
            status.value = f"refresh failed: {type(exc).__name__}: {exc}"
            return
        head = "".join(f"<th style='writing-mode:vertical-rl;font-weight:normal'>{c}</th>" for c in table.columns)
        body = "".join(
            f"<tr><td>{i}</td>" + "".join(f"<td title='{c}: {s}' style='background:{colours[s]};width:14px'></td>"
                                          for c, s in row.items()) +
            f"<td>{sum(s == 'passed' for s in row)} passed</td></tr>" for i, row in table.iterrows())
        out.value = f"<table style='border-collapse:collapse'><tr><th></th>{head}<th></th></tr>{body}</table>"
        status.value = (f"{learners} learners · green passed, orange attempted, grey not started · refreshed "
                        f"{time.strftime('%H:%M:%S')}")

    def loop() -> None:
        while not stop.wait(every_s):
            render()

    button.on_click(render)
    render()
    box = w.VBox([w.HBox([button, status]), out])
    box.refresh = render  # type: ignore[attr-defined]
    box.stop = stop.set  # type: ignore[attr-defined]
    if every_s and every_s > 0:
        threading.Thread(target=loop, daemon=True, name="labkit-room-progress").start()
    return box
