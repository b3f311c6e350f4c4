"""Shared observation helpers for checkers: pristine data, command events, plan figures.

A checker that is about *how* (one atomic write, one upsert, one round trip, no read-modify-write) runs the
learner's function on data it sets up itself and watches the commands the function sends, the way a driver's
command monitoring sees them. The same code works on the embedded engine and on a real server:

- ``Sandbox``: a private database seeded by the checker (embedded: a private engine; server: a fresh labkit
  database on the learner's server), with a ``CommandRecorder`` attached to its client;
- ``CommandRecorder``: pymongo ``CommandListener`` keeping started/succeeded/failed events, with counts of
  round trips and writes, and an optional hook that runs between two commands (to interleave a concurrent call
  where a race is the point);
- ``plan_figures``: keys examined, documents examined and returned, stage names, from any explain output.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from pymongo import monitoring

WRITE_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify", "bulkWrite"})
#: commands a driver sends on its own (handshakes, sessions, cursor clean-up): not the learner's round trips
_HOUSEKEEPING = frozenset({"hello", "ismaster", "isMaster", "ping", "endSessions", "killCursors", "buildInfo",
                           "saslStart", "saslContinue", "getParameter"})


class CommandRecorder(monitoring.CommandListener):
    """Keeps every command event its client emits (thread-safe)."""

    def __init__(self) -> None:
        self.started_events: list[monitoring.CommandStartedEvent] = []
        self.succeeded_events: list[monitoring.CommandSucceededEvent] = []
        self.failed_events: list[monitoring.CommandFailedEvent] = []
        self._lock = threading.Lock()
        #: called after each successful command (used by ``interleaved`` to run a concurrent call)
        self.on_succeeded: Callable[[monitoring.CommandSucceededEvent], None] | None = None

    # pymongo's listener interface
    def started(self, event: monitoring.CommandStartedEvent) -> None:
        with self._lock:
            self.started_events.append(event)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        with self._lock:
            self.succeeded_events.append(event)
        hook = self.on_succeeded
        if hook is not None:
            hook(event)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        with self._lock:
            self.failed_events.append(event)

    def clear(self) -> None:
        """Forget what was recorded (e.g. after the checker's own set-up commands)."""
        with self._lock:
            self.started_events.clear()
            self.succeeded_events.clear()
            self.failed_events.clear()

    @property
    def commands(self) -> list[dict]:
        """The learner's command documents, in order (driver housekeeping left out)."""
        with self._lock:
            return [dict(e.command) for e in self.started_events if e.command_name not in _HOUSEKEEPING]

    def names(self) -> list[str]:
        """The learner's command names, in order, e.g. ``["find", "update"]``."""
        with self._lock:
            return [e.command_name for e in self.started_events if e.command_name not in _HOUSEKEEPING]

    def round_trips(self) -> int:
        """How many commands the learner's code sent (each one a round trip to the server)."""
        return len(self.names())

    def writes(self) -> list[dict]:
        """The write commands sent (insert / update / delete / findAndModify / bulkWrite)."""
        return [c for c in self.commands if next(iter(c), None) in WRITE_COMMANDS]

    def write_statements(self) -> int:
        """Write statements sent: documents of an insert, updates of an update, deletes of a delete."""
        n = 0
        for c in self.writes():
            name = next(iter(c))
            if name == "insert":
                n += len(c.get("documents") or [])
            elif name == "update":
                n += len(c.get("updates") or [])
            elif name == "delete":
                n += len(c.get("deletes") or [])
            else:
                n += 1
        return n

    def update_specs(self) -> list[dict]:
        """Every update statement ``{q, u, upsert, multi}`` sent (update and findAndModify)."""
        out = []
        for c in self.writes():
            name = next(iter(c))
            if name == "update":
                out += [dict(u) for u in c.get("updates") or []]
            elif name == "findAndModify" and "update" in c:
                out.append({"q": c.get("query", {}), "u": c["update"], "upsert": bool(c.get("upsert"))})
        return out

    def modified(self) -> int:
        """Documents the write commands wrote, from the servers' replies (``n`` of insert and delete,
        ``nModified`` + upserts of update, ``n`` of findAndModify)."""
        with self._lock:
            events = list(self.succeeded_events)
        n = 0
        for e in events:
            reply = e.reply or {}
            if e.command_name == "insert":
                n += int(reply.get("n", 0))
            elif e.command_name == "update":
                n += int(reply.get("nModified", 0)) + len(reply.get("upserted") or [])
            elif e.command_name == "delete":
                n += int(reply.get("n", 0))
            elif e.command_name == "findAndModify":
                n += int((reply.get("lastErrorObject") or {}).get("n", 0))
        return n

    def failures(self) -> list[monitoring.CommandFailedEvent]:
        with self._lock:
            return list(self.failed_events)


def new_recorder() -> CommandRecorder:
    """A ready ``CommandRecorder``."""
    return CommandRecorder()


@dataclass
class Sandbox:
    """A private database for one check, with the recorder that watches its client."""

    client: Any
    db: Any
    recorder: CommandRecorder
    _drop: Callable[[], None] | None = None

    def close(self) -> None:
        """Drop what the sandbox created (on a server) and close its client."""
        try:
            if self._drop is not None:
                self._drop()
        finally:
            try:
                self.client.close()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def sandbox(name: str, like: Any = None) -> Sandbox:
    """A pristine database named after the exercise ``name``, on the same kind of engine as ``like``.

    ``like`` is the learner's database/collection/client (or None): on the embedded engine the sandbox is a
    private engine (nothing the learner has is touched); on a server (or labkit's simulated sharded cluster) it is
    a fresh labkit database ``<prefix>check_<name>`` reached through a second client that carries the recorder."""
    from labkit.connection import is_embedded

    rec = new_recorder()
    client = client_of(like)
    if client is None or is_embedded(client):
        from labkit.engine import EmbeddedClient
        c = EmbeddedClient(event_listeners=[rec])
        return Sandbox(c, c["check_" + _safe(name)], rec)
    from labkit.connection import second_client
    from labkit.databases import drop_marked, fresh_db, marker_token
    c = second_client(client, [rec])
    db = fresh_db("check_" + _safe(name), client=c)
    token = marker_token(c, db.name)  # close() drops this copy only, never one another kernel made since
    rec.clear()
    return Sandbox(c, db, rec, lambda: drop_marked(db.name, client=c, token=token))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40]


def client_of(obj: Any) -> Any:
    """The client behind a database, a collection or a client; None for anything else.

    Type checks, not ``hasattr``: a collection answers every attribute with a sub-collection."""
    import mongomock
    import pymongo.collection
    import pymongo.database

    if isinstance(obj, (pymongo.collection.Collection, mongomock.Collection)):
        return obj.database.client
    if isinstance(obj, (pymongo.database.Database, mongomock.Database)):
        return obj.client
    if isinstance(obj, (pymongo.MongoClient, mongomock.MongoClient)):
        return obj
    return None


def call_learner(fn: Callable, *args: Any) -> Any:
    """Run the learner's function; its exceptions propagate (``Exercise.check`` turns them into a message)."""
    return fn(*args)


def interleaved(first: Callable[[], Any], second: Callable[[], Any], recorder: CommandRecorder,
                after: str = "find") -> tuple[Any, Any]:
    """Run ``first``; as soon as it has completed its first ``after`` command, run ``second`` to the end, then
    let ``first`` continue. This is the schedule that exposes a read-modify-write race: both calls read the
    same old value. Returns both results. If ``first`` never sends ``after``, ``second`` runs afterwards."""
    state = {"done": False, "second": None}

    def hook(event: monitoring.CommandSucceededEvent) -> None:
        if not state["done"] and event.command_name == after:
            state["done"] = True
            recorder.on_succeeded = None
            state["second"] = second()

    recorder.on_succeeded = hook
    try:
        r1 = first()
    finally:
        recorder.on_succeeded = None
    if not state["done"]:
        state["done"] = True
        state["second"] = second()
    return r1, state["second"]


@dataclass(frozen=True)
class PlanFigures:
    """What an explain says about one query's cost."""

    stages: tuple[str, ...]
    keys_examined: int
    docs_examined: int
    returned: int
    index: Any

    @property
    def blocking_sort(self) -> bool:
        return "SORT" in self.stages

    @property
    def collscan(self) -> bool:
        return "COLLSCAN" in self.stages

    @property
    def exact(self) -> bool:
        """The index matches the query exactly: at most one key past what is returned, no document fetched only
        to be thrown away."""
        return self.keys_examined <= self.returned + 1 and self.docs_examined <= self.returned


def plan_stages(plan: dict) -> list[dict]:
    """Every stage of an explain plan tree (classic or SBE ``queryPlan``), depth first."""
    out, todo = [], [plan]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            continue
        if "queryPlan" in node:
            node = node["queryPlan"]
        out.append(node)
        todo += [node[k] for k in ("inputStage", "outerStage", "innerStage") if k in node]
        todo += list(node.get("inputStages", []))
    return out


def plan_figures(explain: dict) -> PlanFigures:
    """Keys/documents examined, documents returned, stage names and the first index used, from explain output
    (find or aggregate, classic or SBE shape, as far as the executionStats say)."""
    stats = explain.get("executionStats") or {}
    root = stats.get("executionStages") or explain.get("queryPlanner", {}).get("winningPlan") or {}
    stages = plan_stages(root)
    if not stats and "stages" in explain:  # classic aggregate: $cursor stage carries the find's stats
        first = explain["stages"][0].get("$cursor", {}) if explain["stages"] else {}
        stats = first.get("executionStats") or {}
        stages = plan_stages(stats.get("executionStages") or first.get("queryPlanner", {}).get("winningPlan") or {})
    names = tuple(s.get("stage", "") for s in stages)
    index = next((s.get("keyPattern") for s in stages if s.get("keyPattern") is not None), None)
    return PlanFigures(names, int(stats.get("totalKeysExamined", 0)), int(stats.get("totalDocsExamined", 0)),
                       int(stats.get("nReturned", 0)), index)


def index_keys(collection: Any) -> list[tuple[tuple[str, Any], ...]]:
    """Each index's key pattern as a tuple of (field, direction) pairs, ``_id`` index included."""
    return [tuple((f, d) for f, d in spec["key"].items()) for spec in collection.list_indexes()]


def redundant_prefixes(collection: Any) -> list[tuple[str, str]]:
    """(shorter index name, longer index name) for plain indexes that are a prefix of another index.

    Unique, partial, sparse, TTL, collation and hidden indexes are never called redundant: each does something
    the longer index does not."""
    specs = list(collection.list_indexes())
    special = ("unique", "partialFilterExpression", "sparse", "expireAfterSeconds", "collation", "hidden")
    out = []
    for a in specs:
        if a["name"] == "_id_" or any(a.get(k) for k in special):
            continue
        ka = list(a["key"].items())
        for b in specs:
            kb = list(b["key"].items())
            if b["name"] != a["name"] and len(kb) > len(ka) and kb[:len(ka)] == ka:
                out.append((a["name"], b["name"]))
                break
    return out


def ids(docs: Iterable[dict]) -> list:
    """The ``_id`` of each document, in order."""
    return [d.get("_id") for d in docs]


def seed_posts(db: Any, authors: dict[str, int], *, seed: int = 7) -> None:
    """Pristine users and posts for feed and join checks: ``authors`` maps a user id to a post count.

    Posts are inserted in a shuffled order (so a plan that relies on insertion order gives the wrong posts);
    every author's posts spread over the same two weeks (so an index that does not start with ``authorId``
    must skip other authors' keys), and every seventh post shares its ``createdAt`` with the one before
    (ties that only an ``_id`` tie-breaker orders)."""
    import datetime as dt
    import random

    rng = random.Random(seed)
    base = dt.datetime(2026, 9, 1)
    db.users.insert_many([{"_id": uid, "name": uid.split(":")[-1].title()} for uid in authors])
    posts = []
    span = 20_000  # minutes: every author posts across the same two weeks, so authors' posts interleave
    for k, (uid, n) in enumerate(authors.items()):
        for i in range(n):
            j = i - (i % 7 == 3)  # every seventh post shares its time with the one before: ties on _id
            minute = k + (j * span) // max(n, 1)
            posts.append({"_id": f"post:{uid.split(':')[-1]}:{i:04d}", "authorId": uid, "title": f"post {i}",
                          "location": rng.choice(["Los Angeles", "Sacramento", "Oakland"]),
                          "createdAt": base + dt.timedelta(minutes=minute), "body": "x" * 40})
    rng.shuffle(posts)
    db.posts.insert_many(posts)


def copy_indexes(source: Any, target: Any) -> None:
    """Create on ``target`` the indexes ``source`` has (keys and options), except ``_id``."""
    from pymongo import IndexModel

    models = []
    for spec in source.list_indexes():
        if spec["name"] == "_id_":
            continue
        opts = {k: v for k, v in spec.items() if k not in ("v", "key", "ns")}
        models.append(IndexModel(list(spec["key"].items()), **opts))
    if models:
        target.create_indexes(models)


def seed_comments(db: Any, posts: dict[str, int], *, seed: int = 11) -> None:
    """Pristine comments for index checks: ``posts`` maps a post id to its number of comments.

    Every post's comments spread over the same month (so an index that does not start with ``postId`` must
    skip other posts' keys) and are inserted shuffled; ``likes`` runs 0..29, so about two thirds of the
    comments have at least 10 likes (a range an index can check on its keys)."""
    import datetime as dt
    import random

    rng = random.Random(seed)
    base = dt.datetime(2026, 10, 1)
    docs = []
    for k, (pid, n) in enumerate(posts.items()):
        for i in range(n):
            docs.append({"_id": f"comment:{pid.split(':')[-1]}:{i:05d}", "postId": pid,
                         "userId": f"user:{rng.randrange(1, 500)}", "likes": rng.randrange(30),
                         "createdAt": base + dt.timedelta(minutes=k + (i * 40_000) // max(n, 1)),
                         "text": "nice"})
    rng.shuffle(docs)
    db.comments.insert_many(docs)
