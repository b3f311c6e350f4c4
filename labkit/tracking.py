"""Exercise progress (``labkit.progress()``): which checked exercises a learner has passed, attempted or not started.

Introduced in ``notebooks/00_start_here.ipynb``. Every ``ex.check(...)`` records its outcome:

- always in a small JSON file on this machine (``$LABKIT_PROGRESS_FILE``, default
  ``~/.schema-lab/progress.json``), so a self-paced learner can stop and resume;
- also, when ``MONGODB_URI`` points at a server, in the learner's own database on that server
  (``<learner prefix>progress``, collection ``exercises``, marked as labkit's like every ``fresh_db``), so an
  instructor can see the room (``python -m labkit workshop progress``).

``labkit.progress()`` returns the table; ``python -m labkit progress`` prints it.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

ENV_FILE = "LABKIT_PROGRESS_FILE"
PROGRESS_DB = "progress"
PROGRESS_COLLECTION = "exercises"
STATUSES = ("passed", "attempted", "not started")
_lock = threading.Lock()
_remote: dict[str, Any] = {}


def progress_file() -> Path:
    """Where this machine's progress is kept (``$LABKIT_PROGRESS_FILE`` or ``~/.schema-lab/progress.json``)."""
    env = os.environ.get(ENV_FILE, "").strip()
    return Path(env).expanduser() if env else Path.home() / ".schema-lab" / "progress.json"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _load(path: Path) -> dict[str, dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data.get("exercises", {}) if isinstance(data, dict) and isinstance(data.get("exercises"), dict) else {}


def _merge(entry: dict | None, lesson: str, outcome: str, when: str) -> dict:
    entry = dict(entry or {})
    entry["lesson"] = lesson
    entry["attempts"] = int(entry.get("attempts", 0)) + (outcome != "not-attempted")
    entry["last_outcome"] = outcome
    entry["updated_at"] = when
    if outcome == "correct" and not entry.get("passed_at"):
        entry["passed_at"] = when
    return entry


def record(exercise_id: str, lesson: str, outcome: str) -> None:
    """Record one check's ``outcome`` ("correct", "incorrect", "error" or "not-attempted").

    Never raises: progress is a convenience, and a read-only home directory or an unreachable server must not
    turn a learner's check into a traceback."""
    when = _now()
    try:
        with _lock:
            path = progress_file()
            entries = _load(path)
            entries[exercise_id] = _merge(entries.get(exercise_id), lesson, outcome, when)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".progress-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"version": 1, "exercises": entries}, fh, indent=1, sort_keys=True)
            os.replace(tmp, path)
    except OSError:
        pass
    _record_remote(exercise_id, lesson, outcome, when)


def _remote_collection() -> Any:
    """The learner's progress collection on the server named by ``MONGODB_URI``, or None (embedded engine)."""
    from labkit.connection import ENV_URI
    uri = os.environ.get(ENV_URI, "").strip()
    if not uri:
        return None
    if _remote.get("uri") != uri:
        from labkit.connection import connect
        from labkit.databases import MARKER_COLLECTION, MARKER_ID, db_name
        _remote.clear()
        _remote["uri"] = uri
        client = connect(uri)
        db = client[db_name(PROGRESS_DB, client)]
        db[MARKER_COLLECTION].update_one(
            {"_id": MARKER_ID},
            {"$setOnInsert": {"createdBy": "labkit", "name": PROGRESS_DB,  # labkit's mark: workshop cleanup drops it
                              "createdAt": _dt.datetime.now(_dt.timezone.utc), "by": "labkit.progress"}},
            upsert=True)
        _remote["collection"] = db[PROGRESS_COLLECTION]
    return _remote.get("collection")


def _record_remote(exercise_id: str, lesson: str, outcome: str, when: str) -> None:
    try:
        coll = _remote_collection()
        if coll is None:
            return
        inc = {"attempts": 1} if outcome != "not-attempted" else {}
        update: dict[str, Any] = {"$set": {"lesson": lesson, "last_outcome": outcome, "updated_at": when}}
        if inc:
            update["$inc"] = inc
        coll.update_one({"_id": exercise_id}, update, upsert=True)
        if outcome == "correct":
            coll.update_one({"_id": exercise_id, "passed_at": None}, {"$set": {"passed_at": when}})
    except Exception:  # noqa: BLE001 - never let progress keeping break a check
        _remote.clear()


def status_of(entry: dict | None) -> str:
    """"passed" once any check passed, "attempted" after any other check, else "not started"."""
    if not entry:
        return "not started"
    if entry.get("passed_at"):
        return "passed"
    return "attempted" if int(entry.get("attempts", 0)) > 0 else "not started"


def entries(source: Any = None) -> dict[str, dict]:
    """Recorded entries by exercise id: from this machine's file (default) or from a progress collection."""
    if source is None:
        return _load(progress_file())
    return {d["_id"]: {k: v for k, v in d.items() if k != "_id"} for d in source.find({})}


def progress(source: Any = None) -> Any:
    """A DataFrame, one row per exercise (in lesson order): lesson, exercise, status, attempts, passed_at.

    ``source``: None for this machine's record, or a progress collection on a server (the instructor's view)."""
    import pandas as pd

    from labkit.exercises import registry

    recorded = entries(source)
    rows = []
    for ex_id in registry.ids():
        ex = registry.get(ex_id)
        e = recorded.get(ex_id)
        rows.append({"lesson": ex.lesson, "exercise": ex_id, "status": status_of(e),
                     "attempts": int((e or {}).get("attempts", 0)), "passed_at": (e or {}).get("passed_at") or ""})
    return pd.DataFrame(rows, columns=["lesson", "exercise", "status", "attempts", "passed_at"])


def summary(source: Any = None) -> str:
    """One line: how many exercises are passed, attempted and not started."""
    df = progress(source)
    counts = df["status"].value_counts()
    return ", ".join(f"{int(counts.get(s, 0))} {s}" for s in STATUSES) + f" (of {len(df)} exercises)"
