"""Lesson 35 (Anti-pattern: unnecessary indexes): its exercises and their checkers.

Notebook: ``notebooks/35_unnecessary_indexes.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


_STATUSES_35 = ["new", "paid", "shipped", "delivered"]


def _order_35(i: int) -> dict:
    """Lesson 35's order generator (the same rule as the notebook), for pristine data."""
    import datetime as dt
    return {"_id": f"order:{i:05d}", "customerId": f"cust:{(i * 7919) % 400:03d}", "status": _STATUSES_35[i % 4],
            "region": f"region:{(i * 31) % 6}", "sku": f"sku:{(i * 13) % 250:03d}",
            "total": round((i * 37) % 500 + 0.99, 2),
            "createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(minutes=53 * i)}


def _served_exactly(fig: Any, index_gone: bool, *, gone: str, sort: str, inexact: str) -> None:
    """A workload query after the learner's drops: its index gone (``gone``), a blocking sort (``sort``), or an
    index that reads more than the query returns (``inexact``)."""
    if index_gone:
        raise NotYet(gone)
    if fig.blocking_sort:
        raise NotYet(sort)
    if not fig.exact:
        raise NotYet(inexact)


def _fresh_orders(db: Any) -> None:
    db.orders.insert_many([_order_35(i) for i in range(1500)])


@LESSON.exercise(StateCheck, "35-drop-unneeded", takes=steps.collection("practice.orders"))
def _check_drop_unneeded(lab: Lab, orders: Any) -> str:
    # The learner's indexes on pristine orders (the lesson's 1,500), so deleting orders cannot hide a cost.
    with lab.sandbox(fresh=_fresh_orders, indexes={"orders": orders}) as box:
        coll = box.db.orders
        queries = {
            "customer orders": coll.find({"customerId": "cust:017"}).sort("createdAt", -1).limit(20),
            "region dashboard": coll.find({"region": "region:1", "status": "paid"}),
            "orders with a SKU": coll.find({"sku": "sku:013"}),
        }
        used = set()
        for label, cursor in queries.items():
            explain = cursor.explain()
            fig = observe.plan_figures(explain)
            _served_exactly(
                fig, not any("IXSCAN" in n for n in fig.stages),
                gone=f"the {label} query now runs {fig.stages[-1] if fig.stages else '?'}: you dropped the index it "
                     "needs.",
                sort=f"the {label} query has a blocking SORT: keep the compound index that also gives the order.",
                inexact=f"the {label} query still uses an index, but it reads {fig.keys_examined} keys and "
                        f"{fig.docs_examined} documents for {fig.returned} results ({fig.index}): you dropped the "
                        "index that matches it exactly. No COLLSCAN is not the same as cheap.")
            used |= {st.get("indexName") for st in observe.plan_stages(explain["queryPlanner"]["winningPlan"])
                     if "IXSCAN" in str(st.get("stage"))}
        redundant = observe.redundant_prefixes(coll)
        infos = coll.index_information()
    for short, long_ in redundant:
        raise NotYet(f"{short} is a prefix of {long_}, so the longer index serves all its queries: drop it.")
    unused = sorted(set(infos) - used - {"_id_"})
    special = [n for n in unused if any(infos[n].get(k) for k in ("unique", "partialFilterExpression",
                                                                  "expireAfterSeconds"))]
    if special:
        raise NotYet(f"{special} serve no query of the workload, but they enforce something (uniqueness, a partial "
                     "filter or expiry): decide about them on purpose, do not drop them as 'unused'.")
    hidden = [n for n in unused if infos[n].get("hidden")]
    if hidden:
        raise NotYet(f"{hidden} are hidden, not dropped: a hidden index serves no query but is still written on "
                     "every insert and update. Hiding shows that dropping is safe; now drop them.")
    if unused:
        raise NotYet(f"no query of the workload uses {unused}; each one still costs a write per insert. Drop them.")
    return f"{len(infos)} indexes left ({', '.join(sorted(infos))}), each serving the workload at its exact cost."


def _explain_hidden(n: Any) -> str:
    if n == 0:
        return (f"Measured: {n}. Every drop candidate is either unused by the workload or a prefix of an index that "
                "is kept, so each query shape still finds the index it used before: hiding them changes no plan, "
                "which is what makes them safe to drop.")
    return f"Measured: {n} shape(s) lost their index: un-hide before dropping."


LESSON.add(Prediction, "35-predict-hidden-collscans", choices=(0, 1, 2, 3), explain=_explain_hidden)


_TICKET_STATUS_35 = ("open", "pending", "solved")


def _tickets_35(coll: Any) -> None:
    """Pristine support tickets with the legacy indexes of the changed scenario."""
    import datetime as dt

    t0 = dt.datetime(2026, 5, 1)
    coll.insert_many([{"_id": i, "ref": f"T-{i:05d}", "assignee": f"agent:{(i * 7) % 30:02d}",
                       "customerId": f"cust:{(i * 13) % 500:03d}", "status": _TICKET_STATUS_35[i % 3],
                       "priority": (i * 11) % 5, "openedAt": t0 + dt.timedelta(minutes=17 * i),
                       "closedAt": (t0 + dt.timedelta(minutes=17 * i + 600)) if i % 3 == 2 else None}
                      for i in range(3000)])
    coll.create_index([("ref", 1)], unique=True)
    coll.create_index([("closedAt", 1)], expireAfterSeconds=5 * 365 * 86_400)
    coll.create_index([("assignee", 1)])
    coll.create_index([("assignee", 1)], name="assignee_ci", collation=_CI_35)
    coll.create_index([("assignee", 1), ("status", 1), ("priority", -1)])
    coll.create_index([("customerId", 1)])
    coll.create_index([("status", 1)])
    coll.create_index([("priority", 1)])


_CI_35 = {"locale": "en", "strength": 2}  # case-insensitive (manual: Case-Insensitive Indexes)


def _ticket_queries_35(coll: Any) -> dict[str, Any]:
    return {"agent queue": coll.find({"assignee": "agent:07", "status": "open"}).sort("priority", -1).limit(10),
            "a customer's tickets": coll.find({"customerId": "cust:042"}),
            "an agent's tickets, however the name is typed": coll.find({"assignee": "AGENT:07"}, collation=_CI_35)}


@LESSON.exercise(BehaviourCheck, "35-prune-tickets", takes=steps.function("prune"))
def _check_prune_tickets(lab: Lab, prune: Callable) -> str:
    with lab.sandbox(fresh=lambda db: _tickets_35(db.tickets)) as box:
        coll = box.db.tickets
        for cursor in _ticket_queries_35(coll).values():  # the workload has run: $indexStats has counts
            list(cursor)
        before = coll.index_information()
        prune(coll)
        if coll.count_documents({}) != 3000:
            raise NotYet(f"after prune the collection holds {coll.count_documents({})} of 3000 tickets: prune only "
                         "indexes, never documents.")
        infos = coll.index_information()
        gone = set(before) - set(infos)
        if "assignee_ci" in gone:
            raise NotYet("you dropped assignee_ci as a prefix of assignee_1_status_1_priority_-1, but its "
                         "collation (case-insensitive, strength 2) differs: a query uses an index for strings only "
                         "with the index's own collation, so the longer index cannot serve the case-insensitive "
                         "lookup. An index with another collation is not redundant; compare collations too.")
        for name, why in (("ref_1", "enforces unique ticket references (a duplicate `ref` would be accepted)"),
                          ("closedAt_1", "is a TTL index: it deletes solved tickets five years after they close")):
            if name in gone:
                raise NotYet(f"you dropped {name}: no query uses it, but it {why}. `$indexStats` counts query "
                             "use only; a unique or TTL index works on every write. Keep it.")
        for label, cursor in _ticket_queries_35(coll).items():
            fig = observe.plan_figures(cursor.explain())
            _served_exactly(
                fig, fig.collscan,
                gone=f"the {label} query now runs a COLLSCAN: you dropped the index it needs.",
                sort=f"the {label} query now has a blocking SORT ({fig.index}): keep the compound index that also "
                     "gives the priority order.",
                inexact=f"the {label} query reads {fig.keys_examined} keys and {fig.docs_examined} documents for "
                        f"{fig.returned} results through {fig.index}: keep the index that matches it exactly.")
        for short, long_ in observe.redundant_prefixes(coll):
            raise NotYet(f"{short} is still there, and it is a prefix of {long_}: the longer index serves every "
                         "query the shorter one could. Drop it.")
        unused = sorted(n for n in ("status_1", "priority_1") if n in infos)
        if unused:
            raise NotYet(f"{unused} serve no query of the workload (their `$indexStats` ops are 0) and enforce "
                         "nothing: each costs a write per insert. Drop them.")
    return (f"{len(infos)} indexes kept ({', '.join(sorted(infos))}): the three queries at their exact cost, the "
            "unique reference and the TTL expiry kept, the prefix and the unused indexes gone.")


