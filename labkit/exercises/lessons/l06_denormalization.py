"""Lesson 06 (Denormalization: copies, caches and snapshots): its exercises and their checkers.

Notebook: ``notebooks/06_denormalization.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _fresh_listing(db: Any) -> None:
    db.listings.insert_one({"_id": "listing:check", "title": "Vintage lamp", "topBids": []})


#: the bids of the check, in the order they arrive: (bidder, amount)
_BIDS = [("b:ann", 30), ("b:bo", 50), ("b:cy", 20), ("b:di", 70), ("b:ed", 40)]


@LESSON.exercise(BehaviourCheck, "06-top-bids", takes=steps.db_and_function("add_bid"), fresh=_fresh_listing)
def _check_top_bids(lab: Lab, db: Any, add_bid: Callable) -> str:
    listing = "listing:check"
    with lab.sandbox() as box:
        for bidder, amount in _BIDS:
            add_bid(box.db, listing, bidder, amount)
        per_call = box.recorder.write_statements() / len(_BIDS)
        # Two bids arrive at once: the second call runs to completion right after the first one's read.
        lab.interleaved(lambda: add_bid(box.db, listing, "b:fay", 60),
                        lambda: add_bid(box.db, listing, "b:gus", 65), box.recorder)
        reads = [n for n in box.recorder.names() if n in ("find", "aggregate")]
        doc = box.db.listings.find_one({"_id": listing})
    top = (doc or {}).get("topBids")
    if not isinstance(top, list):
        raise NotYet("after seven bids the listing has no `topBids` array; push into that field.")
    got = [(b.get("bidderId"), b.get("amount")) for b in top if isinstance(b, dict)]
    want = [("b:di", 70), ("b:gus", 65), ("b:fay", 60)]
    if reads and (("b:gus", 65) not in got or ("b:fay", 60) not in got):
        lost = "b:gus (65)" if ("b:gus", 65) not in got else "b:fay (60)"
        raise NotYet(f"when two bids arrived at the same time, {lost} was lost: your function reads the listing, "
                     "changes the array in Python and writes it back, so the second writer overwrites the first. "
                     "Let the server do it in one update: `$push` with `$each`, `$sort` and `$slice`.")
    if per_call > 1:
        raise NotYet(f"each bid sent {per_call:g} writes; add the bid and keep the list bounded in ONE update.")
    if len(top) > 3:
        raise NotYet(f"`topBids` holds {len(top)} entries after seven bids; add `$slice: 3` to the $push.")
    if len(top) < 3:
        raise NotYet(f"`topBids` holds only {len(top)} entries; it should keep three.")
    if got == [("b:gus", 65), ("b:fay", 60), ("b:ed", 40)] or got == [("b:fay", 60), ("b:gus", 65), ("b:ed", 40)]:
        raise NotYet("the list kept the three NEWEST bids, not the highest: `$position: 0` orders by arrival. Sort "
                     "by amount inside the $push: `$sort: {amount: -1}`, then `$slice: 3`.")
    if got == list(reversed(want)):
        raise NotYet("these are the three highest bids, but lowest first: sort `{amount: -1}` and keep the first "
                     "three with `$slice: 3`.")
    if got == [("b:cy", 20), ("b:ann", 30), ("b:ed", 40)]:
        raise NotYet("the list kept the three LOWEST bids: `$sort: {amount: 1}` with `$slice: 3` keeps the "
                     "smallest. Sort `{amount: -1}`.")
    if got != want:
        raise NotYet(f"expected {want} (highest first), got {got}.")
    if any(set(b) != {"bidderId", "amount"} for b in top):
        raise NotYet("keep each entry to `{bidderId, amount}`: copy only what the listing page shows.")
    return ("`topBids` keeps the three highest bids, highest first, in one update per bid; a low bid never "
            "displaces a higher one, and two bids arriving together both count.")


LESSON.add(Prediction, "06-predict-oldest-preview")


def _seed_teams(db: Any) -> None:
    """Users, teams whose `members` preview lists up to 5 members (user:7 in 12 teams, at every position) and
    chat messages holding a snapshot of the author's name as sent."""
    db.users.insert_many([{"_id": f"user:{i}", "name": f"Member {i}", "email": f"m{i}@example.org"}
                          for i in range(1, 31)])
    teams = []
    for t in range(20):
        ids = [f"user:{1 + (t * 3 + k) % 30}" for k in range(5)]
        if t < 12:
            ids[t % 5] = "user:7"
        ids = list(dict.fromkeys(ids))
        teams.append({"_id": f"team:{t}", "title": f"Team {t}",
                      "members": [{"userId": u, "name": f"Member {u.split(':')[1]}"} for u in ids]})
    db.teams.insert_many(teams)
    db.messages.insert_many([{"_id": f"msg:{k}", "teamId": f"team:{k % 20}", "authorId": "user:7",
                              "authorSnapshot": {"name": "Member 7"}, "text": "hi"} for k in range(15)])


def _mentions(query: Any, prefix: str) -> bool:
    """Does a filter (at any depth of $and/$or) name a field starting with ``prefix``?"""
    if isinstance(query, dict):
        return any((str(k).startswith(prefix) and not str(k).startswith("$")) or _mentions(v, prefix)
                   for k, v in query.items())
    if isinstance(query, list):
        return any(_mentions(q, prefix) for q in query)
    return False


@LESSON.exercise(BehaviourCheck, "06-rename-member",
                 takes=steps.db_and_function("rename_member"), fresh=_seed_teams)
def _check_rename_member(lab: Lab, db: Any, rename_member: Callable) -> str:
    import copy

    with lab.sandbox() as box:
        before = {c: {d["_id"]: d for d in box.db[c].find()} for c in ("users", "teams", "messages")}
        box.recorder.clear()
        lab.call(rename_member, box.db, "user:7", "Sevi")
        after = {c: {d["_id"]: d for d in box.db[c].find()} for c in ("users", "teams", "messages")}
        writes, specs = box.recorder.write_statements(), box.recorder.update_specs()
    if writes == 0:
        raise NotYet("your function sent no write; it should rename the user and the previews listing them.")
    if after["messages"] != before["messages"]:
        raise NotYet("the chat messages' `authorSnapshot` changed: a snapshot records the name as it was when the "
                     "message was sent. It is history; a rename must not rewrite it.")
    user = after["users"].get("user:7") or {}
    if user.get("name") != "Sevi":
        raise NotYet(f"user:7's own document has name {user.get('name')!r}: rename the canonical user too.")
    if {k: v for k, v in user.items() if k != "name"} != {k: v for k, v in before["users"]["user:7"].items()
                                                          if k != "name"}:
        raise NotYet("other fields of user:7 changed (a replacement?); `$set` only the name.")
    if any(after["users"][u] != before["users"][u] for u in before["users"] if u != "user:7"):
        raise NotYet("other users changed too: filter on the renamed user's `_id`.")
    expected = copy.deepcopy(before["teams"])
    for team in expected.values():
        for entry in team["members"]:
            if entry["userId"] == "user:7":
                entry["name"] = "Sevi"
    stale = sorted(t for t, team in after["teams"].items()
                   if any(e.get("userId") == "user:7" and e.get("name") != "Sevi" for e in team.get("members", [])))
    fixed = steps.fixed_positions(specs)
    if stale and fixed:
        raise NotYet(f"{len(stale)} team previews still show the old name: the update names a fixed position "
                     f"({', '.join(fixed)}), but user:7 sits at a different position in each team. Filter on "
                     "`members.userId` and set `members.$.name`.")
    if stale:
        listing = sum(any(e["userId"] == "user:7" for e in t["members"]) for t in before["teams"].values())
        raise NotYet(f"{len(stale)} of the {listing} team previews listing user:7 still show the old name "
                     f"({', '.join(stale[:3])}, ...): "
                     "update every team whose `members.userId` is the user (`update_many`), not just one.")
    if after["teams"] != expected:
        wrong = sorted(t for t in expected if after["teams"].get(t) != expected[t])
        raise NotYet(f"team previews changed beyond user:7's name ({wrong[:3]}): change only the matching entry's "
                     "`name` (`members.$.name`, or `members.$[m].name` with an array filter).")
    if any(steps.computed_in_python(s, "members") for s in specs):
        raise NotYet("your updates rewrite whole `members` arrays read earlier in Python: a member who joins a team "
                     "in between is lost. Set the one entry's name in place (`members.$.name`).")
    team_specs = [c for c in box.recorder.writes() if c.get("update") == "teams"]
    unfiltered = [u for c in team_specs for u in c.get("updates") or [] if not _mentions(u.get("q"), "members")]
    if unfiltered:
        raise NotYet(f"the teams update filters on {unfiltered[0].get('q')!r}: it visits every team (a collection "
                     "scan on each rename) to change the few listing user:7. Filter on `members.userId` so an "
                     "index on it can find them.")
    if writes > 2:
        raise NotYet(f"the rename took {writes} writes (one per team?); two are enough whatever the number of "
                     "teams: one for the user, one `update_many` for every preview listing them.")
    return ("two writes renamed the user and every team preview listing them, wherever the entry sat, and left "
            "the messages' snapshots as history.")


