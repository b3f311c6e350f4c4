"""Workshop mode: per-learner databases on one shared cluster (``python -m labkit workshop ...``).

Introduced in ``INSTRUCTOR.md``. Learner *n* sets ``LABKIT_DB_PREFIX=<base><nn>_`` (for example
``sl_learner07_``) before starting Jupyter with ``MONGODB_URI`` pointing at the cluster; every ``fresh_db`` call
in the notebooks then lands in that learner's own databases. ``prepare`` creates and seeds one marked database
per learner so the cluster, the credentials and the quota are proven before the workshop starts; ``check``
reports readiness; ``cleanup`` drops only databases that carry labkit's mark and start with the workshop prefix.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

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
