"""Lesson 38 (Anti-pattern: overuse of `$lookup`): its exercises and their checkers.

Notebook: ``notebooks/38_lookup_overuse.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(StateCheck, "38-extended-reference", takes=steps.database())
def _check_extended_reference(lab: Lab, db: Any) -> str:
    customers = {c["_id"]: c for c in db.customers.find()}
    if not customers:
        raise NotYet("practice.customers is empty: keep the customers collection, the reference points to it.")
    orders = list(db.orders.find())
    if not orders:
        raise NotYet("practice.orders is empty; re-run the practice setup cell.")
    setup_customers, setup_orders = lab.setup("customers"), lab.setup("orders")
    by_id = {o["_id"]: o for o in orders}
    problem = None
    if setup_customers:
        problem = (steps.gone_or_added(setup_customers, customers, "customers", "practice.customers",
                                       "an extended reference copies two fields, the customers stay the source.")
                   or steps.changed_field(setup_customers, customers, "customer"))
    if setup_orders and not problem:
        problem = (steps.gone_or_added(setup_orders, by_id, "orders", "practice.orders",
                                       "the copy is added to each order, no order is removed.")
                   or steps.changed_field(setup_orders, by_id, "order", skip=("customer",)))
        added = None if problem else steps.added_fields(setup_orders, by_id, ("customer",))
        if added:
            problem = (f"order {added[0]!r} also got {added[1]}: add only the `customer` subdocument (a `$lookup` "
                       "array merged into the order copies the whole customer). `$project` it away before `$merge`.")
    if problem:
        raise NotYet(problem)
    no_ref = [o["_id"] for o in orders if steps.hashable(o.get("customerId")) not in customers]
    if no_ref:
        raise NotYet(f"{len(no_ref)} order(s), e.g. {no_ref[0]!r}, lost their `customerId` reference; keep it for "
                     "everything the copy does not hold.")
    missing = [o["_id"] for o in orders if not isinstance(o.get("customer"), dict)]
    if missing:
        raise NotYet(f"{len(missing)} order(s), e.g. {missing[0]!r}, have no `customer` subdocument yet.")
    for o in orders:
        copy, source = o["customer"], customers[o["customerId"]]
        extra = sorted(set(copy) - {"name", "tier", "_id"})
        if extra:
            raise NotYet(f"order {o['_id']!r} copies {extra} as well: copy only what the hot read needs "
                         "(name and tier); the reference covers the rest.")
        wrong = [f for f in ("name", "tier") if copy.get(f) != source.get(f)]
        if wrong:
            raise NotYet(f"order {o['_id']!r} has customer {wrong} = {[copy.get(f) for f in wrong]}, but customer "
                         f"{source['_id']!r} has {[source.get(f) for f in wrong]}.")
        if isinstance(copy.get("name"), list):
            raise NotYet("the copied name is an array (from `$lookup`); take the first element with `$first`.")
    return f"{len(orders)} orders carry their customer's name and tier next to `customerId`; the queue needs no join."


_OPS_38 = ("support queue", "nightly tier report", "customer detail")


LESSON.add(Prediction, "38-predict-top-daily", choices=_OPS_38)


def _agents_38(db: Any) -> None:
    """Pristine agents and tickets with an extended reference ``agent: {name, team}``; two agents share a name."""
    teams = ("billing", "returns", "tech")
    agents = [{"_id": f"agent:{a:02d}", "name": f"Agent {a}", "team": teams[a % 3], "email": f"a{a}@example.com"}
              for a in range(40)]
    agents[3]["name"] = agents[17]["name"] = "Sam Lee"
    db.agents.insert_many(agents)
    by_id = {a["_id"]: a for a in agents}
    tickets = []
    for t in range(1200):
        aid = f"agent:{(t * 7) % 40:02d}"
        tickets.append({"_id": f"ticket:{t:04d}", "agentId": aid, "subject": f"Issue {t}",
                        "agent": {"name": by_id[aid]["name"], "team": by_id[aid]["team"]}})
    db.tickets.insert_many(tickets)
    db.tickets.create_index([("agentId", 1)])


@LESSON.exercise(BehaviourCheck, "38-rename-agent", takes=steps.function("rename_agent"),
                 fresh=_agents_38)
def _check_rename_agent(lab: Lab, rename_agent: Callable) -> str:
    with lab.sandbox() as box:
        db = box.db
        before = {t["_id"]: t for t in db.tickets.find()}
        box.recorder.clear()
        rename_agent(db, "agent:03", "Samantha Lee")
        rec = box.recorder  # what the learner sent, read before the checker's own reads below
        statements = rec.write_statements()
        specs = rec.update_specs()
        ticket_reads = [c for c in rec.commands if c.get("find") == "tickets" or c.get("aggregate") == "tickets"]
        agent = db.agents.find_one({"_id": "agent:03"}) or {}
        after = {t["_id"]: t for t in db.tickets.find()}
    if agent.get("name") != "Samantha Lee":
        raise NotYet(f"agent:03 is still called {agent.get('name')!r}: rename the agent itself too (the source of "
                     "truth), not only the copies.")
    if (agent.get("team"), agent.get("email")) != ("billing", "a3@example.com"):
        raise NotYet("agent:03 lost its other fields: `$set` the name, do not replace the document.")
    mine = [k for k, t in before.items() if t["agentId"] == "agent:03"]
    stale = [k for k in mine if (after[k].get("agent") or {}).get("name") != "Samantha Lee"]
    if stale:
        raise NotYet(f"{len(stale)} of agent:03's {len(mine)} tickets still show the old name: the copies must "
                     "follow the rename (update_many on the tickets whose agentId is agent:03).")
    lost = [k for k in mine if (after[k].get("agent") or {}).get("team") != before[k]["agent"]["team"]]
    if lost:
        raise NotYet(f"{len(lost)} ticket(s) lost the copied team: `$set` `agent.name`, not the whole `agent` "
                     "subdocument.")
    others = [k for k, t in before.items() if k not in mine and after[k] != t]
    if others:
        namesake = [k for k in others if before[k]["agentId"] == "agent:17"]
        if namesake:
            raise NotYet(f"{len(namesake)} ticket(s) of agent:17, the other \"Sam Lee\", were renamed too: the copy "
                         "is not an identity. Find the copies by the reference `agentId`, never by the copied name.")
        raise NotYet(f"{len(others)} ticket(s) of other agents changed; touch only agent:03's.")
    if statements > 2:
        raise NotYet(f"the rename sent {statements} write statements: one per ticket. One `update_one` on the agent "
                     "and one `update_many` on its tickets do it in two.")
    if ticket_reads:
        raise NotYet("rename_agent reads the tickets before writing them (read-modify-write): the `update_many` "
                     "filter finds them on the server, in the same write.")
    if not any("agentId" in (s.get("q") or {}) for s in specs):
        raise NotYet("the tickets' update does not filter on `agentId`: use the indexed reference to find the "
                     "copies.")
    return (f"2 writes: the agent and its {len(mine)} tickets' copies, found by the indexed `agentId`; the other "
            "Sam Lee's tickets untouched.")


