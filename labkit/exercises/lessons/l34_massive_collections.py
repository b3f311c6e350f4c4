"""Lesson 34 (Anti-pattern: a massive number of collections): its exercises and their checkers.

Notebook: ``notebooks/34_massive_collections.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(StateCheck, "34-merge-collections", takes=steps.database())
def _check_merge_collections(lab: Lab, db: Any) -> str:
    names = sorted(db.list_collection_names())
    leftovers = [n for n in names if n.startswith("events_")]
    docs = list(db.events.find()) if "events" in names else []
    if not docs:
        raise NotYet("there is no `events` collection with documents yet; copy each events_<tenant> collection into it.")
    if leftovers:
        raise NotYet(f"{len(leftovers)} per-tenant collection(s) remain, e.g. {leftovers[0]!r}; drop them once "
                     "their documents are in `events`.")
    renamed = [d["_id"] for d in docs if ":" not in str(d["_id"])]
    if renamed:
        raise NotYet(f"{len(renamed)} document(s), e.g. {renamed[0]!r}, got a new `_id` in the merge: keep each "
                     "event's own `_id` (they are unique across tenants, 't3:007'), so the merge can be re-run and "
                     "checked without duplicates.")
    wrong = [d["_id"] for d in docs if d.get("tenantId") != str(d["_id"]).split(":")[0]]
    if wrong:
        raise NotYet(f"{len(wrong)} document(s), e.g. {wrong[0]!r}, have no or a wrong `tenantId`: it is the tenant "
                     "part of the old collection name (events_t3 -> 't3').")
    setups = {n.removeprefix("events_"): lab.setup(n) for n in lab.setup_names() if n.startswith("events_")}
    if setups:
        extra = sorted({str(d.get("tenantId")) for d in docs} - set(setups))
        if extra:
            raise NotYet(f"events holds documents of tenant(s) {extra}, which had no events_<tenant> collection in "
                         "the setup; re-run the practice setup cell and merge again.")
        for tenant, setup in sorted(setups.items()):
            mine = {d["_id"]: d for d in docs if d.get("tenantId") == tenant}
            problem = (steps.gone_or_added(setup, mine, "documents",
                                           f"events for tenant {tenant!r} (from events_{tenant})",
                                           "a merge copies every document of every tenant.")
                       or steps.changed_field(setup, mine, "events document", skip=("tenantId",)))
            if problem:
                raise NotYet(problem)
    by_tenant: dict = {}
    for d in docs:
        by_tenant.setdefault(d["tenantId"], set()).add(d.get("seq"))
    for tenant, seqs in sorted(by_tenant.items()):
        if seqs != set(range(len(seqs))) or len(seqs) < 30:
            raise NotYet(f"tenant {tenant!r} lost documents in the merge ({len(seqs)} left); re-run the practice "
                         "setup cell and merge again.")
    infos = db.events.index_information()
    leading = [n for n, i in infos.items() if i["key"][0][0] == "tenantId"]
    if not leading:
        raise NotYet("no index starts with `tenantId`: every per-tenant query would scan all tenants.")
    tenant = sorted(by_tenant)[-1]
    explain = db.events.find({"tenantId": tenant}).explain()
    stages = [s.get("stage") for s in observe.plan_stages(explain["queryPlanner"]["winningPlan"])]
    stats = explain["executionStats"]
    if not any("IXSCAN" in str(n) for n in stages) or stats["totalKeysExamined"] != stats["nReturned"]:
        raise NotYet(f"a query for tenant {tenant!r} does not read only that tenant's keys (plan {stages}).")
    ttl = {n: i for n, i in infos.items() if "expireAfterSeconds" in i}
    if not ttl:
        raise NotYet("no TTL index yet: `create_index([(\"at\", 1)], expireAfterSeconds=...)` expires old events.")
    name, info = next(iter(ttl.items()))
    if [k for k, _ in info["key"]] != ["at"]:
        raise NotYet(f"the TTL index {name} is on {info['key']}; a TTL index is a single-field index on the date `at`.")
    if info["expireAfterSeconds"] != 30 * 86_400:
        raise NotYet(f"expireAfterSeconds is {info['expireAfterSeconds']}; 30 days is 30 * 86_400 = 2,592,000 seconds.")
    return (f"{len(by_tenant)} tenants in one collection, a tenantId-led index reading only {tenant}'s keys, "
            "and a 30-day TTL index.")


LESSON.add(Prediction, "34-predict-ttl")


def _sessions_34(now: Any) -> list[dict]:
    import datetime as dt
    ago = [200, 50, 40, 20, 10, 5]  # minutes since last activity
    return [{"_id": f"s{i}", "userId": f"u{i}", "createdAt": now - dt.timedelta(hours=3),
             "lastSeen": now - dt.timedelta(minutes=m)} for i, m in enumerate(ago)]


@LESSON.exercise(BehaviourCheck, "34-ttl-sessions",
                 takes=steps.call("call it with your two functions: `ex.check(setup_sessions, touch)`.",
                                  steps.is_function, steps.is_function))
def _check_ttl_sessions(lab: Lab, setup_sessions: Callable, touch: Callable) -> str:
    import datetime as dt

    from labkit.engine.catalog.ttl import ttl_pass

    # Always a private embedded engine: a server's TTL monitor cannot be run at a chosen time.
    box = lab.sandbox(None)
    now = dt.datetime(2026, 11, 20, 12, 0)
    try:
        coll = box.db["sessions"]
        setup_sessions(box.db)
        coll.insert_many(_sessions_34(now))
        box.recorder.clear()
        touch(coll, "s1", now - dt.timedelta(minutes=5))  # idle 50 min, active again 5 min ago
        touch(coll, "ghost", now - dt.timedelta(minutes=5))  # unknown (already expired) session
        names = box.recorder.names()
        reads = sum(n in ("find", "aggregate", "count") for n in names)
        writes = box.recorder.write_statements()
        ghost = coll.find_one({"_id": "ghost"})
        s1 = coll.find_one({"_id": "s1"})
        infos = coll.index_information()
        ttl_pass(box.db, now=now)
        left = sorted(d["_id"] for d in coll.find())
    finally:
        box.close()
    if reads:
        raise NotYet(f"touch sent {reads} read(s) before writing: one `update_one({{\"_id\": ...}}, "
                     "{\"$set\": {\"lastSeen\": now}})` does it in one round trip, with no race.")
    if writes > 2:
        raise NotYet(f"{writes} writes for two touches: one update per touch.")
    if ghost is not None:
        raise NotYet("touch created a session for an unknown id (upsert): an expired session must stay gone, "
                     "so no `upsert=True` here.")
    if s1 is None or s1.get("userId") != "u1" or "createdAt" not in s1:
        raise NotYet("after touch, session s1 lost fields (userId / createdAt): update `lastSeen` with `$set`, "
                     "do not replace the document.")
    if not isinstance(s1.get("lastSeen"), dt.datetime):
        raise NotYet(f"touch stored lastSeen as {type(s1.get('lastSeen')).__name__}: the TTL monitor ignores "
                     "values that are not dates, so this session would never expire. Store the datetime.")
    touched_at = (now - dt.timedelta(minutes=5)).replace(microsecond=0)
    stored = s1["lastSeen"].replace(tzinfo=None, microsecond=0)
    if stored != touched_at:
        raise NotYet(f"touch(coll, \"s1\", now) was given now = {touched_at:%Y-%m-%d %H:%M} but stored lastSeen = "
                     f"{stored:%Y-%m-%d %H:%M}: record the `now` it is given (the app's clock, which the check "
                     "fixes), not datetime.now() or $currentDate.")
    ttl = {n: i for n, i in infos.items() if "expireAfterSeconds" in i}
    if not ttl:
        raise NotYet("no index has expireAfterSeconds: nothing ever expires. Create a TTL index in setup_sessions.")
    if all(len(i["key"]) > 1 for i in ttl.values()):
        raise NotYet("nothing expired: your TTL index is compound, and compound indexes never expire documents. "
                     "A TTL index is a single-field index on a date.")
    expected = ["s1", "s3", "s4", "s5"]  # idle 5 (touched), 20, 10 and 5 minutes; s0 (200) and s2 (40) expire
    if "s1" not in left and any(i["key"][0][0] == "createdAt" for i in ttl.values()):
        raise NotYet("session s1 was active 5 minutes before the pass but was deleted: the TTL index is on "
                     "createdAt, so sessions expire 30 minutes after login however active they are. Index "
                     "`lastSeen`.")
    if len(left) < len(expected) and set(left) <= set(expected):
        raise NotYet(f"after one pass only {left} are left: sessions idle 5-20 minutes were deleted. "
                     "expireAfterSeconds counts seconds: 30 minutes is 30 * 60 = 1,800.")
    if left != expected:
        raise NotYet(f"after one TTL pass the sessions left are {left}; expected {expected} (idle under 30 "
                     "minutes, counting the touch). Check the indexed field and expireAfterSeconds = 1,800.")
    return ("a TTL index on lastSeen (1,800 s) and a one-update touch: idle sessions expire on the next pass, "
            "an active one survives, an unknown id is not resurrected.")


