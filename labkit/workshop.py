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
from functools import lru_cache
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
    ops_per_second: int = 0   # the tier's operation rate limit for the whole cluster (Free: 100, Flex: 500)
    refuses: tuple[str, ...] = ()  # commands the lessons use that the tier does not support
    sharding: bool = False    # the tier can be deployed as a sharded cluster (a mongos in front of shards)
    change_streams: int = 0   # most change streams open at once on the cluster, per the Atlas docs (0: none given)
    change_streams_note: str = ""  # what the Atlas docs say about change streams on this tier, conflicts included
    change_streams_conflict: bool = False  # the Atlas docs contradict themselves on this tier: test it first


_FREE = "https://www.mongodb.com/docs/atlas/reference/free-shared-limitations/ (operational limits)"
_FLEX = "https://www.mongodb.com/docs/atlas/reference/flex-limitations/ (operational limits)"
_FAQ = ("https://www.mongodb.com/docs/atlas/reference/faq/database/ (recommended collections + indexes); "
        "https://www.mongodb.com/docs/atlas/reference/faq/storage/ (free/flex storage counts dataSize + indexSize)")
_UNSUPPORTED = ("https://www.mongodb.com/docs/atlas/unsupported-commands/ (Free and Flex: no profile command; the "
                "manual's db.setProfilingLevel() and db.getProfilingStatus() pages say the same)")
_BUILDS = "maxNumActiveUserIndexBuilds default 3 (SERVER-47155, DOCS-13797; manual: Index Builds on Populated Collections)"
# Free (M0): the "Operational Limits" table of the Free limitation page says "a maximum of 100 databases and 500
# collections total" and 0.5 GB data storage (uncompressed BSON of all documents plus their indexes); it also limits
# throughput to 100 operations per second, in-memory sorts to 32 MB and database names to 38 bytes (checked
# 2026-12-01 in the Atlas docs source, reference/free-shared-limitations). Flex (reference/flex-limitations, same
# day): 100 databases, 500 collections in total, 5 GB data storage counted the same way, 38-byte database names,
# 500 operations per second, 32 MB in-memory sorts. Neither runs the database profiler (`profile` is among the
# unsupported commands, reference: unsupported-commands). M10 and up: no database, collection or rate limit;
# the FAQ recommends at most 5,000 collections + indexes on M10, 10,000 on M20/M30, 100,000 on M40+. Sharding
# (Atlas "Manage Clusters": M10 and M20 support replica sets only, M30 and up replica sets and sharded clusters;
# the cluster builder's toggle reads "Shard your cluster (M30 and up)"): each shard is a replica set of the tier,
# with the tier's storage per shard.
_SHARDING = ("https://www.mongodb.com/docs/atlas/manage-clusters/ (M30 and up: replica set or sharded cluster; "
             "M10/M20: replica set only)")
# Change streams (lessons 05 and 06 open one per learner for their worker; change_stream_lessons()). The Atlas
# Triggers limitations page (atlas-ui/triggers/limitations, checked 2026-12-03) says in its text "You cannot
# define Database Triggers on a Flex Cluster. This is because Flex Clusters don't support change streams", while
# the table on the same page, "the total number of change streams open against a given cluster based on the
# cluster's size", lists Free (M0) 5, Flex 10, M10/M20 100, M30/M40 1000, M50-M90 1000, M100+ 1000; it does not
# say whether streams opened by drivers count against it. A standalone mongod refuses $changeStream (40573); the
# lessons fall back to their batch jobs there and wherever Atlas refuses the stage (labkit.changestreams).
# Transactions (transaction_lessons()) need a replica set or a sharded cluster (manual: Transactions); Free clusters
# are three-node replica sets (Free limits: "Replication Factor is set to 3 Nodes"), and the Atlas pages we read
# state no transaction limit for Free or Flex.
_TRIGGERS = "https://www.mongodb.com/docs/atlas/atlas-ui/triggers/limitations/ (change streams open at once)"
_FLEX_STREAMS = ("conflicting: the Triggers limitations page says Flex clusters don't support change streams, and "
                 "its own table allows 10 open at once")
TIERS: dict[str, Tier] = {
    "free": Tier("free", "Atlas Free (M0)", 512, 100, 500, 0, 3,
                 f"{_FREE}; {_FAQ}; {_UNSUPPORTED}; {_BUILDS}; {_TRIGGERS}", 38,
                 ops_per_second=100, refuses=("profile",), change_streams=5,
                 change_streams_note="at most 5 open at once on the cluster (Triggers limitations table)"),
    "flex": Tier("flex", "Atlas Flex", 5_000, 100, 500, 0, 3,
                 f"{_FLEX}; {_FAQ}; {_UNSUPPORTED}; {_BUILDS}; {_TRIGGERS}", 38,
                 ops_per_second=500, refuses=("profile",), change_streams=10, change_streams_note=_FLEX_STREAMS,
                 change_streams_conflict=True),
    "m10": Tier("m10", "Atlas M10 (10 GB default storage)", 10_000, 0, 0, 5_000, 3, f"{_FAQ}; {_BUILDS}; {_TRIGGERS}",
                change_streams=100, change_streams_note="at most 100 open at once (Triggers limitations table)"),
    "m30": Tier("m30", "Atlas M30 (40 GB default storage)", 40_000, 0, 0, 10_000, 3,
                f"{_FAQ}; {_BUILDS}; {_SHARDING}; {_TRIGGERS}",
                sharding=True, change_streams=1000,
                change_streams_note="at most 1,000 open at once (Triggers limitations table)"),
    "m40": Tier("m40", "Atlas M40 (80 GB default storage)", 80_000, 0, 0, 100_000, 3,
                f"{_FAQ}; {_BUILDS}; {_SHARDING}; {_TRIGGERS}", sharding=True, change_streams=1000,
                change_streams_note="at most 1,000 open at once (Triggers limitations table)"),
    "self-managed": Tier("self-managed", "Self-managed replica set or sharded cluster", 0, 0, 0, 0, 3, _BUILDS,
                         sharding=True, change_streams_note="yes (a standalone mongod refuses them: 40573)"),
}
#: the order tiers are recommended in: the smallest that fits first
TIER_ORDER = ("free", "flex", "m10", "m30", "m40", "self-managed")


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


def _sources(notebooks: Path | None) -> tuple[tuple[str, str], ...]:
    """(file name, text) of every lesson source, read once while the folder's files stay as they are."""
    folder = notebooks or FOOTPRINT_FILE.parents[1] / "notebooks" / "src"
    if not folder.is_dir():
        return ()
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in folder.glob("*.py")))
    return _read_sources(str(folder), stamp)


@lru_cache(maxsize=4)
def _read_sources(folder: str, stamp: tuple) -> tuple[tuple[str, str], ...]:
    return tuple((name, (Path(folder) / name).read_text(encoding="utf-8")) for name, *_ in stamp)


def lesson_database_names(notebooks: Path | None = None) -> list[str]:
    """The database names the lessons pass to ``fresh_db`` (read from the lesson sources, when present)."""
    return list(_scan(_sources(notebooks))[0])


@lru_cache(maxsize=4)
def _scan(sources: tuple[tuple[str, str], ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(database names given to fresh_db, numbers of the lessons whose code turns the profiler on)."""
    names: set[str] = set()
    profiler = []
    for name, text in sources:
        names |= set(re.findall(r"""fresh_db\(\s*(?:f?)["']([^"'{}]+)["']""", text))
        code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
        if name[:2].isdigit() and _PROFILER_CALL.search(code):
            profiler.append(name[:2])
    return tuple(sorted(names)), tuple(profiler)


_PROFILER_CALL = re.compile(r"""command\(\s*["']profile["']|set_profiling_level|setProfilingLevel\(""")


def profiler_lessons(notebooks: Path | None = None) -> list[str]:
    """The lesson numbers whose code turns the database profiler on (the ``profile`` command; read from the
    lesson sources' code lines, not their prose)."""
    return list(_scan(_sources(notebooks))[1])


_CHANGE_STREAM_CALL = re.compile(r"""\.watch\(|["']\$changeStream["']""")
_TRANSACTION_CALL = re.compile(r"""\.with_transaction\(|\.start_transaction\(""")


def _lessons_calling(pattern: re.Pattern, notebooks: Path | None) -> list[str]:
    """The lesson numbers whose code lines (not comments) match ``pattern``."""
    return list(_matching(pattern, _sources(notebooks)))


@lru_cache(maxsize=8)
def _matching(pattern: re.Pattern, sources: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """``_lessons_calling`` for the sources as read (``plan`` asks for every room size it tries)."""
    found = []
    for name, text in sources:
        code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
        if name[:2].isdigit() and pattern.search(code):
            found.append(name[:2])
    return tuple(found)


def change_stream_lessons(notebooks: Path | None = None) -> list[str]:
    """The lesson numbers whose code opens a change stream (``watch(...)`` or a ``$changeStream`` stage)."""
    return _lessons_calling(_CHANGE_STREAM_CALL, notebooks)


def transaction_lessons(notebooks: Path | None = None) -> list[str]:
    """The lesson numbers whose code runs a multi-document transaction (``with_transaction`` or
    ``start_transaction``)."""
    return _lessons_calling(_TRANSACTION_CALL, notebooks)


def seat_footprint(users: int = 200) -> dict[str, int]:
    """What ``workshop prepare --users N`` and the learner's progress record add per seat, measured: the
    ``<prefix>ready`` database seeded on a throw-away embedded engine (``dbStats``), plus the
    ``<prefix>progress`` database that the first ``ex.check(...)`` on a server creates (labkit's marker
    collection and ``exercises``, one ``_id`` index each; its few kB are left out)."""
    return dict(_seat_footprint(users))


@lru_cache(maxsize=8)
def _seat_footprint(users: int) -> tuple:
    from labkit.databases import MARKER_COLLECTION
    from labkit.engine import EmbeddedClient
    from labkit.tracking import PROGRESS_COLLECTION

    client = EmbeddedClient()
    if users:
        from labkit import seed
        prepare(client, 1, seed_db=lambda db: seed.social(db, users=users, seed=42, progress=False))
    else:
        prepare(client, 1)
    stats = client[seats(1)[0].ready_db].command("dbStats")
    progress_collections = len({MARKER_COLLECTION, PROGRESS_COLLECTION})
    return (("databases", 2), ("collections", int(stats["collections"]) + progress_collections),
            ("indexes", int(stats["indexes"]) + progress_collections),
            ("data_bytes", int(stats["dataSize"])), ("index_bytes", int(stats["indexSize"])))


def plan(learners: int, tier: str = "free", *, lessons: Sequence[str] = (), shared: bool = False,
         footprint: dict | None = None, seat_users: int | None = 200, sharded: bool = False) -> dict:
    """Size a workshop: per lesson and in total, for one learner and for the room, against ``tier``'s limits.

    Per lesson: the lesson's peak (largest after any cell) data size, index count and size, collections and
    databases, its index builds and the largest burst of builds in one cell. A learner keeps every lesson's
    databases until ``workshop cleanup``, so the running total after lesson k is the final state of the lessons
    before it plus lesson k's peak; the course total is the largest running total, plus the seat
    (:func:`seat_footprint`: the ``ready`` database ``workshop prepare`` seeds with ``seat_users`` users, and the
    progress database; ``seat_users=None`` leaves the seat out). The room is ``learners`` times one learner
    (everyone runs the same lessons). Peak concurrent index builds in the room: a learner's notebook runs one
    build at a time, so when the room runs a lesson with builds together up to ``learners`` builds compete for
    the primary's ``index_builds`` slots and the rest queue. Operations: when the room runs a lesson's busiest
    cell together, ``learners`` times its commands reach the cluster at once; a tier with an operation rate
    limit (Free, Flex) serves them in ``burst / ops_per_second`` seconds at best. Lessons that turn the profiler
    on are listed against tiers that refuse the ``profile`` command. ``shared``: use the measurements taken
    with ``LABKIT_SHARED=1`` where there are any.

    Lessons that need a sharded cluster (their measurement names ``shards``: 40-42) connect to a mongos.
    ``sharded=False``: the room's cluster is a replica set, so they run on labkit's simulated cluster in each
    learner's kernel and cost the cluster nothing (listed with zeros). ``sharded=True``: the room's cluster is a
    sharded cluster; the tier must be one Atlas shards (M30 and up), and their measured footprint (dbStats summed
    over the simulated cluster's shards) counts. Storage is checked against one shard's storage: the tier's
    limit is per shard, and a small collection stays in one range on its database's primary shard.
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
    needs_shards = sorted({str(fp["lesson"]) for fp in chosen if fp.get("shards")})
    if not sharded:  # on the simulated cluster in each learner's kernel: nothing on the room's cluster
        empty = dict.fromkeys(("data_bytes", "index_bytes", "indexes", "collections", "databases"), 0)
        chosen = [dict(fp, peak=empty, final=empty, index_builds=0, max_builds_in_cell=0, operations=0,
                       max_operations_in_cell=0) if fp.get("shards") else fp for fp in chosen]
    rows, kept = [], {"data_bytes": 0, "index_bytes": 0, "indexes": 0, "collections": 0, "databases": 0}
    seat = seat_footprint(seat_users) if seat_users is not None else dict.fromkeys(kept, 0)
    kept = {k: seat[k] for k in kept}
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
                     "room_concurrent_builds": learners if fp["index_builds"] else 0,
                     "operations": fp.get("operations"), "ops_in_one_cell": fp.get("max_operations_in_cell")})
    learner_total = {"storage_mb": (peak_total["data_bytes"] + peak_total["index_bytes"]) / MB,
                     "data_mb": peak_total["data_bytes"] / MB, "index_mb": peak_total["index_bytes"] / MB,
                     "indexes": peak_total["indexes"], "collections": peak_total["collections"],
                     "databases": peak_total["databases"],
                     "index_builds": sum(fp["index_builds"] for fp in chosen)}
    # if every learner resets each lesson's databases when done (`python -m labkit reset NAME`): the largest lesson
    learner_total["one_lesson_at_a_time_mb"] = max(
        ((fp["peak"]["data_bytes"] + fp["peak"]["index_bytes"]) / MB for fp in chosen), default=0.0)
    learner_total["one_lesson_at_a_time_collections"] = max((fp["peak"]["collections"] for fp in chosen), default=0)
    learner_total["seat"] = seat
    bursts = [(r["ops_in_one_cell"], r["name"]) for r in rows if r["ops_in_one_cell"] is not None]
    learner_total["ops_in_one_cell"], busiest = max(bursts) if bursts else (0, "")
    learner_total["operations"] = sum(r["operations"] or 0 for r in rows)
    room = {k: (v * learners) for k, v in learner_total.items() if isinstance(v, (int, float))}
    room["concurrent_builds"] = learners if learner_total["index_builds"] else 0
    room["busiest_cell_lesson"] = busiest
    room["burst_seconds"] = room["ops_in_one_cell"] / t.ops_per_second if t.ops_per_second else 0.0
    uses_profiler = sorted({str(fp["lesson"]) for fp in chosen} & set(profiler_lessons()))
    checks = []
    if sharded:
        checks.append({"limit": "a sharded cluster (a mongos)" + (f", which lessons {', '.join(needs_shards)} use"
                                                                  if needs_shards else ""),
                       "room needs": "sharded cluster", "tier allows": "yes" if t.sharding else "replica set only",
                       "ok": t.sharding, "enforced": True})

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
    if t.ops_per_second and room["ops_in_one_cell"]:
        checks.append({"limit": f"operations when the room runs the busiest cell together ({busiest})",
                       "room needs": f"{room['ops_in_one_cell']:,} at once",
                       "tier allows": f"{t.ops_per_second:,} per second",
                       "ok": room["ops_in_one_cell"] <= t.ops_per_second, "enforced": False,
                       "note": f"throttled: about {room['burst_seconds']:,.0f} s to serve"})
    if uses_profiler and "profile" in t.refuses:
        checks.append({"limit": f"database profiler (profile command), used by lesson {', '.join(uses_profiler)}",
                       "room needs": "profile", "tier allows": "not supported", "ok": False, "enforced": False,
                       "note": "refused: the lesson needs its query-log fallback"})
    streams = sorted({str(fp["lesson"]) for fp in chosen} & set(change_stream_lessons()))
    if streams and t.change_streams:
        which = f"lesson{'s' if len(streams) > 1 else ''} {', '.join(streams)}"
        checks.append({"limit": f"change streams open at once (one per learner in {which})",
                       "room needs": f"{learners:,}", "tier allows": f"{t.change_streams:,} (Atlas Triggers limits)",
                       "ok": learners <= t.change_streams and not t.change_streams_conflict, "enforced": False,
                       "note": (t.change_streams_note + "; " if t.change_streams_conflict else "") +
                       "where Atlas refuses the $changeStream stage the lessons run their batch jobs instead "
                       "(labkit.changestreams); open one on the cluster before the workshop"})
    numbers = {str(fp["lesson"]) for fp in chosen}
    names = [n for n in lesson_database_names() if not n[:2].isdigit() or n[:2] in numbers]
    if names and t.db_name_bytes:
        prefix = seats(learners)[-1].prefix
        longest = max(names, key=lambda n: len((prefix + n).encode()))
        check(f"database name length ({prefix}{longest})", len((prefix + longest).encode()), t.db_name_bytes,
              "bytes")
    fits = all(c["ok"] for c in checks if c["enforced"])
    comfortable = fits and all(c["ok"] for c in checks if c["limit"].startswith("collections + indexes"))
    return {"learners": learners, "tier": t, "shared": shared, "lessons": rows, "learner": learner_total,
            "room": room, "checks": checks, "fits": fits, "comfortable": comfortable,
            "lesson_numbers": [str(fp["lesson"]) for fp in chosen], "uses_profiler": uses_profiler,
            "uses_change_streams": streams,
            "sharded": sharded, "simulated_cluster": [] if sharded else needs_shards}


def max_learners(tier: str, *, lessons: Sequence[str] = (), shared: bool = False, footprint: dict | None = None,
                 seat_users: int | None = 200, sharded: bool = False) -> int:
    """The most learners (0 to 500) whose room fits ``tier``'s enforced limits for ``lessons``."""
    def fits(n: int) -> bool:
        return plan(n, tier, lessons=lessons, shared=shared, footprint=footprint, seat_users=seat_users,
                    sharded=sharded)["fits"]

    if not fits(1):
        return 0
    lo, hi = 1, 500  # every enforced need grows with the room: the largest n that fits is found by bisection
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def recommend_tier(learners: int, *, lessons: Sequence[str] = (), shared: bool = False,
                   footprint: dict | None = None, seat_users: int | None = 200, sharded: bool = False) -> dict:
    """The smallest tier (in :data:`TIER_ORDER`) whose plan fits the room and stays within the recommended
    collections + indexes; if none does, the smallest that fits. Returns that tier's :func:`plan`."""
    plans = [plan(learners, name, lessons=lessons, shared=shared, footprint=footprint, seat_users=seat_users,
                  sharded=sharded) for name in TIER_ORDER]
    atlas = [p for p in plans if p["tier"].name != "self-managed"]
    return next((p for p in atlas if p["comfortable"]), next(p for p in plans if p["fits"]))


def format_plan(result: dict) -> str:
    """``plan(...)`` as the text table ``python -m labkit workshop plan`` prints (markdown-compatible)."""
    n, t = result["learners"], result["tier"]
    out = [f"Workshop plan: {n} learner(s) on {t.title}" + (" as a sharded cluster" if result["sharded"] else "")
           + (" in shared-cluster mode (LABKIT_SHARED=1)" if result["shared"] else ""),
           "Measured per lesson on the embedded engine, and through the mongos of labkit's simulated sharded "
           "cluster for the lessons that need one (peak after any cell; operations = commands sent; "
           "tools/measure_footprint.py).", "",
           "| Lesson | Data MB | Indexes | Index MB | Collections | Databases | Index builds (max in one cell) "
           "| Operations (max in one cell) | Room: storage MB | Room: collections | Room: indexes |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["lessons"]:
        ops = f"{r['operations']:,} ({r['ops_in_one_cell']:,})" if r["operations"] is not None else "not measured"
        out.append(f"| {r['name']} | {r['data_mb']:.1f} | {r['indexes']} | {r['index_mb']:.1f} | {r['collections']} | "
                   f"{r['databases']} | {r['index_builds']} ({r['builds_in_one_cell']}) | {ops} | "
                   f"{r['room_data_mb']:,.0f} | {r['room_collections']:,} | {r['room_indexes']:,} |")
    one, room, seat = result["learner"], result["room"], result["learner"]["seat"]
    label = "All, kept until cleanup" + (" (with the seat)" if seat["databases"] else "")
    out.append(f"| **{label}** | **{one['data_mb']:.1f}** | **{one['indexes']}** | "
               f"**{one['index_mb']:.1f}** | **{one['collections']}** | **{one['databases']}** | "
               f"**{one['index_builds']}** | **{one['operations']:,}** | **{room['storage_mb']:,.0f}** | "
               f"**{room['collections']:,}** | **{room['indexes']:,}** |")
    out += [""]
    if result["simulated_cluster"]:
        out.append(f"Lessons {', '.join(result['simulated_cluster'])} need a sharded cluster; on this replica set "
                   "they run on labkit's simulated cluster in each learner's kernel and cost it nothing (zeros "
                   "above). To run them on the room's cluster, make it a sharded cluster (`--sharded`).")
    if seat["databases"]:
        out.append(f"Each seat starts with {seat['databases']} databases before any lesson: the one `workshop prepare` "
                   f"seeds and the progress record ({seat['collections']} collections, {seat['indexes']} indexes, "
                   f"{(seat['data_bytes'] + seat['index_bytes']) / MB:.1f} MB).")
    out += [f"One learner at most: {one['storage_mb']:.1f} MB (data + indexes), {one['indexes']} indexes, "
            f"{one['collections']} collections, {one['databases']} databases.",
            f"The room ({n}): {room['storage_mb']:,.0f} MB, {room['indexes']:,} indexes, {room['collections']:,} "
            f"collections, {room['databases']:,} databases; up to {room['concurrent_builds']} index builds at once "
            f"when everyone runs the same cell.",
            f"If every learner resets each lesson when done (`python -m labkit reset NN_name`), the room peaks at "
            f"{room['one_lesson_at_a_time_mb']:,.0f} MB and {room['one_lesson_at_a_time_collections']:,} collections "
            f"(the largest lesson, times {n}; the seats come on top).", "",
            "| Limit | Room needs | Tier allows | Verdict |", "|---|---:|---:|---|"]
    for c in result["checks"]:
        verdict = "ok" if c["ok"] else ("OVER: writes fail" if c["enforced"] else c.get("note", "over: slower (queues)"))
        out.append(f"| {c['limit']} | {c['room needs']} | {c['tier allows']} | {verdict} |")
    out += ["", "FITS" if result["fits"] else
            "DOES NOT FIT: use a larger tier (`python -m labkit workshop plan` names one), fewer learners, "
            "LABKIT_SHARED=1, a shorter agenda (--lessons), or run `workshop cleanup`/`python -m labkit reset NAME` "
            "between sections.",
            f"Limits from: {t.source}"]
    return "\n".join(out)


def format_recommendation(result: dict, best: dict, most: int | None = None) -> str:
    """One line for ``workshop plan``: the tier :func:`recommend_tier` names for the room (``best``), and how many
    learners fit ``result``'s tier (``most``, from :func:`max_learners`) when the room does not."""
    n, t, b = result["learners"], result["tier"], best["tier"]
    line = f"Recommended for {n} learner(s) and these lessons: {b.title} (`--tier {b.name}`)"
    if not best["comfortable"]:
        line += " (fits; over the recommended collections + indexes, so expect it to be slower)"
    line += "."
    if most is not None and not result["fits"]:
        line += f" {t.title} fits at most {most} learner(s) for them."
    return line


# --- delivery: Binder and nbgitpuller links ----------------------------------------------------------------

FIRST_LESSON = "students/00_start_here.ipynb"


def links(repo: str, *, branch: str = "main", hub: str = "", path: str = FIRST_LESSON) -> dict[str, str]:
    """Links that open ``path`` (default: lesson 00's student copy) in JupyterLab for every learner.

    ``binder``: mybinder.org builds an image from the repository's ``environment.yml`` (and runs its
    ``postBuild``) and opens the lesson (``/v2/gh/OWNER/REPO/BRANCH`` for GitHub, ``/v2/git/URL/BRANCH``
    otherwise; ``urlpath`` as in the Binder docs). ``nbgitpuller`` (when ``hub`` is given): on your JupyterHub,
    whose image was built from the same ``environment.yml``, clones or updates the repository into the
    learner's home (folder = the repository's name) and opens the lesson there: ``hub/user-redirect/git-pull``
    with ``repo``, ``branch`` and ``urlpath``, as nbgitpuller's link generator writes it."""
    from urllib.parse import quote, urlsplit

    parts = urlsplit(repo)
    if parts.scheme not in ("https", "http") or not parts.netloc or len(parts.path.strip("/").split("/")) < 2:
        raise ValueError(f"repo={repo!r}: give the repository's https URL, e.g. https://github.com/OWNER/REPO")
    if not re.fullmatch(r"[\w./-]+", branch):
        raise ValueError(f"branch={branch!r}: letters, digits, '.', '_', '-' and '/' only")
    if hub and not urlsplit(hub).scheme.startswith("http"):
        raise ValueError(f"hub={hub!r}: give your JupyterHub's https URL, e.g. https://hub.example.edu")
    owner_repo = parts.path.strip("/").removesuffix(".git")
    folder = owner_repo.rsplit("/", 1)[-1]
    if parts.netloc == "github.com":
        binder = f"https://mybinder.org/v2/gh/{owner_repo}/{quote(branch, safe='')}"
    else:
        binder = f"https://mybinder.org/v2/git/{quote(repo, safe='')}/{quote(branch, safe='')}"
    out = {"binder": f"{binder}?urlpath={quote('lab/tree/' + path, safe='')}"}
    if hub:
        out["nbgitpuller"] = (f"{hub.rstrip('/')}/hub/user-redirect/git-pull?repo={quote(repo, safe='')}"
                              f"&branch={quote(branch, safe='')}&urlpath={quote(f'lab/tree/{folder}/{path}', safe='')}")
    return out


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
