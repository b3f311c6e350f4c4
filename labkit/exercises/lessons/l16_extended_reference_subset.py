"""Lesson 16 (Extended reference and subset: copy only what the hot read needs): its exercises and their checkers.

Notebook: ``notebooks/16_extended_reference_subset.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _fresh_products(db: Any) -> None:
    db.products.insert_one({"_id": "prod:subset-check", "name": "Subset check", "recentReviews": []})
    db.products.insert_one({"_id": "prod:other", "name": "Another product", "recentReviews": []})


@LESSON.exercise(BehaviourCheck, "16-subset", takes=steps.db_and_function("add_review", "practice"),
                 fresh=_fresh_products)
def _check_subset(lab: Lab, db: Any, add_review: Callable) -> str:
    import datetime as dt

    pid = "prod:subset-check"
    order = [3, 7, 1, 6, 2, 8]  # arrival order; createdAt grows with n

    def review(n: int) -> dict:
        return {"_id": f"rev:check:{n}", "productId": pid, "userId": f"user:{n}", "rating": 1 + n % 5,
                "text": f"review {n}", "createdAt": dt.datetime(2026, 3, n, 12, 0)}

    with lab.sandbox() as sandbox:
        box = sandbox.db
        for n in order:
            add_review(box, review(n))
        # two reviews arrive at the same moment: the second runs right after the first one's first read
        lab.interleaved(lambda: add_review(box, review(5)), lambda: add_review(box, review(4)), sandbox.recorder)
        order += [5, 4]
        reads = [n for n in sandbox.recorder.names() if n in ("find", "aggregate")]
        sorts = [m.get("$sort") for spec in sandbox.recorder.update_specs()
                 for m in (((spec.get("u") or {}).get("$push") or {}).get("recentReviews"),)
                 if isinstance(m, dict) and "$sort" in m]
        product = box.products.find_one({"_id": pid})
        other = box.products.find_one({"_id": "prod:other"}) or {}
        stored = box.reviews.count_documents({"productId": pid})
    if other.get("recentReviews"):
        raise NotYet("another product's recentReviews changed too: filter the product update on "
                     "`review[\"productId\"]`.")
    if sorts and all(isinstance(x, dict) and list(x) == ["_id"] for x in sorts):
        raise NotYet("your `$push` sorts the reviews by `_id`: ids say nothing about when a review was written (an "
                     "imported or delayed review carries an older date). Sort by `createdAt: -1`.")
    got_ids = [r.get("_id") for r in (product or {}).get("recentReviews") or [] if isinstance(r, dict)]
    if reads and ("rev:check:5" not in got_ids or "rev:check:4" not in got_ids):
        lost = "rev:check:5" if "rev:check:5" not in got_ids else "rev:check:4"
        raise NotYet(f"when two reviews arrived together, {lost} never reached recentReviews: your function reads "
                     "the product, builds the new list in Python and writes it back, so the later write overwrites "
                     "the earlier one (a lost update). Let the server do it: `$push` with `$each`, `$sort` and "
                     "`$slice` in one update.")
    if stored != len(order):
        raise NotYet(f"db.reviews holds {stored} of the {len(order)} reviews: every review goes into the reviews "
                     "collection too (it is the full history).")
    recent = steps.capped_array(product, "recentReviews", 5,
                                missing="the product has no `recentReviews` array after the calls; push into that "
                                        "field.",
                                too_long=f"recentReviews holds {{n}} reviews after {len(order)} calls: add `$slice: 5` "
                                         "so it stays bounded.")
    if len(recent) < 5:
        raise NotYet(f"recentReviews holds only {len(recent)} reviews; it should keep five.")
    got = [r.get("_id") for r in recent]
    want = [f"rev:check:{n}" for n in (8, 7, 6, 5, 4)]
    if got == list(reversed(want)):
        raise NotYet("the five newest, but oldest first: sort with `{\"createdAt\": -1}` so the newest comes first.")
    if got != want and sorts and sorts[0] != {"createdAt": -1}:
        raise NotYet(f"expected the five newest by createdAt, newest first ({want}), got {got}: your `$push` sorts by "
                     f"{sorts[0]}; the newest five are the first five of `$sort: {{\"createdAt\": -1}}`.")
    if got != want:
        raise NotYet(f"expected the five newest by createdAt, newest first ({want}), got {got}: reviews arrive out of "
                     "order, so `$position: 0` alone is not enough; use `$sort: {\"createdAt\": -1}` with `$slice: 5`.")
    return "the product keeps exactly the five newest reviews, newest first, and every review is in db.reviews."


LESSON.add(Prediction, "16-predict-lookup-docs")


_AGENT_PROFILE = {"bio": "Support engineer since 2018; speaks three languages. " * 8,
                  "skills": ["billing", "shipping", "returns", "accounts"], "shifts": ["mon", "tue", "wed"]}


#: six agents; agent:3 and agent:6 are namesakes, so a rename that finds the copies by the old copied name
#: renames the other agent's tickets too (issue 25: with unique names that wrong filter passed)
_AGENT_NAMES_16 = ["Ana Silva", "Ben Moore", "Sam Lee", "Chloe Martin", "Dev Patel", "Sam Lee"]


def _agents_16() -> list[dict]:
    teams = ["billing", "shipping", "billing", "returns", "shipping", "returns"]
    return [{"_id": f"agent:{i}", "name": _AGENT_NAMES_16[i - 1], "team": teams[i - 1],
             "email": f"agent{i}@example.com", **_AGENT_PROFILE} for i in range(1, 7)]


def _fresh_agents(db: Any) -> None:
    db.agents.insert_many(_agents_16())


@LESSON.exercise(BehaviourCheck, "16-extended-reference-tickets", fresh=_fresh_agents,
                 takes=steps.call("call it with the practice database and your two functions: "
                                  "`ex_tickets.check(practice, open_ticket, rename_agent)`.", None, callable, callable))
def _check_ticket_reference(lab: Lab, db: Any, open_ticket: Callable, rename_agent: Callable) -> str:
    # the learner's index definitions on tickets, not their data
    learners = {"tickets": db["tickets"]} if hasattr(db, "list_collection_names") else None
    with lab.sandbox(indexes=learners) as box:
        sdb, rec = box.db, box.recorder
        # 1. open 42 tickets: agent 3 gets 12 of them, the others 6 each (agent 6 is agent 3's namesake)
        plan = [3] * 12 + [1, 2, 4, 5, 6] * 6
        rec.clear()
        for n, agent in enumerate(plan):
            lab.call(open_ticket, sdb, {"_id": f"ticket:{n:03d}", "subject": f"Question {n}",
                                        "agentId": f"agent:{agent}"})
        inserts = [c for c in rec.writes() if "insert" in c]
        tickets = list(sdb.tickets.find())
        if len(tickets) != len(plan):
            raise NotYet(f"after {len(plan)} calls of open_ticket, tickets holds {len(tickets)} documents: insert "
                         "each ticket once into db.tickets.")
        if len(rec.writes()) > len(plan) or len(inserts) < len(plan):
            raise NotYet(f"open_ticket sent {len(rec.writes())} writes for {len(plan)} tickets: one insert per "
                         "ticket, with the agent's fields already in it (no second update).")
        sample = next((t for t in tickets if t.get("_id") == "ticket:000"), tickets[0])
        agent = sample.get("agent")
        if not isinstance(agent, dict):
            raise NotYet(f"ticket:000 has no `agent` subdocument (its fields: {sorted(sample)}): copy "
                         "`{_id, name, team}` of the agent into `agent`.")
        extra = sorted(set(agent) - {"_id", "name", "team"})
        if extra:
            raise NotYet(f"the ticket's `agent` copy carries {extra} as well: copy only the fields the ticket list "
                         "shows (`_id`, `name`, `team`), not the whole agent profile; every copy is read with "
                         "every ticket and rewritten on every change.")
        missing = sorted({"_id", "name", "team"} - set(agent))
        if missing:
            raise NotYet(f"the ticket's `agent` copy lacks {missing}: the list shows the agent's name and team, and "
                         "the copy keeps the agent's `_id` as its reference.")
        if agent != {"_id": "agent:3", "name": "Sam Lee", "team": _agents_16()[2]["team"]}:
            raise NotYet(f"ticket:000 (agent:3) carries agent={agent}; expected agent:3's own _id, name and team.")
        # 2. agent 3 changes name twice (several calls); agent 6, its namesake, must keep its name
        old_name = "Sam Lee"
        for new_name in ("Dana Okafor", "Dana Okafor-Lee"):
            rec.clear()
            lab.call(rename_agent, sdb, "agent:3", new_name)
            statements = rec.write_statements()
            renamed = sdb.tickets.count_documents({"agent._id": "agent:3", "agent.name": new_name})
            hit = {t["agent"]["_id"] for t in sdb.tickets.find({"agent._id": {"$ne": "agent:3"},
                                                                "agent.name": new_name}, {"agent._id": 1})}
            namesakes = {a["_id"] for a in _agents_16() if a["name"] == old_name and a["_id"] != "agent:3"}
            profile = sdb.agents.find_one({"_id": "agent:3"}) or {}
            if profile.get("name") != new_name:
                raise NotYet("rename_agent left the agent's own document with the old name: update db.agents too.")
            if hit and hit <= namesakes:
                raise NotYet(f"{sorted(hit)[0]} is also called {old_name!r}, and its tickets now show {new_name!r} "
                             "too: your rename finds the copies by the old copied name, and names are not unique. "
                             "Find them by the copied id, `{\"agent._id\": agent_id}`.")
            if hit:
                others = sdb.tickets.count_documents({"agent._id": {"$ne": "agent:3"}, "agent.name": new_name})
                raise NotYet(f"{others} tickets of other agents now show {new_name!r}: filter the tickets on the "
                             "copied reference, `{\"agent._id\": agent_id}`.")
            old_name = new_name
            if renamed != 12:
                raise NotYet(f"after renaming agent:3 to {new_name!r}, {renamed} of its 12 tickets show the new name: "
                             "update every copy, `update_many({\"agent._id\": agent_id}, "
                             "{\"$set\": {\"agent.name\": new_name}})`.")
            if statements > 2:
                raise NotYet(f"the rename sent {statements} write statements (one per ticket?): two are enough, one "
                             "`update_one` on the agent and one `update_many` on its tickets; the server finds them "
                             "through the index on the copied id.")
        fig = observe.plan_figures(sdb.tickets.find({"agent._id": "agent:3"}).explain())
        if fig.collscan or fig.keys_examined > fig.returned:
            raise NotYet(f"the rename's filter {{'agent._id': 'agent:3'}} examines {fig.docs_examined} tickets "
                         f"({'a collection scan' if fig.collscan else 'an index that does not start with agent._id'})"
                         f" to change {fig.returned}: create the index on the copied reference, "
                         "`practice.tickets.create_index(\"agent._id\")`, before checking.")
    return ("each ticket carries only {_id, name, team} of its agent; a rename is two writes, and the index on "
            f"agent._id finds the 12 copies with {fig.keys_examined} keys examined.")


