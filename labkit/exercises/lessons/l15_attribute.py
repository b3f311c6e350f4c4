"""Lesson 15 (Attribute pattern: many similar fields, one index): its exercises and their checkers.

Notebook: ``notebooks/15_attribute.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _attribute_against_setup(setup: dict, docs: list[dict]) -> None:
    """Compare the rewritten products with the setup copy kept by ``Exercise.remember`` (when there is one):
    nothing deleted or added, the other fields unchanged, every spec_* value now one {k, v} pair."""
    if not setup:
        return
    now = {d["_id"]: d for d in docs}
    steps.same_ids(setup, now,
                   gone="{n} of the {total} products of the setup are gone (e.g. {first!r}): the rewrite replaces "
                        "each document, it must not lose any. Re-run the setup cell and rewrite again.",
                   extra="{n} product(s) are not in the setup (e.g. {first!r}): replace each document in place "
                         "(`replace_one({{'_id': ...}})`), do not insert copies.")
    for pid in sorted(setup, key=str):
        old, new = setup[pid], now[pid]
        want = sorted((k[len("spec_"):], v) for k, v in old.items() if k.startswith("spec_"))
        got = sorted((e.get("k"), e.get("v")) for e in new.get("specs") or [] if isinstance(e, dict))
        if got != want:
            raise NotYet(f"product {pid!r}: specs {got} are not the setup's spec_* values {want}; every spec "
                         "field becomes exactly one {k, v} pair.")
        for field in sorted(k for k in old if not k.startswith("spec_")):
            if new.get(field) != old[field]:
                raise NotYet(f"product {pid!r}: `{field}` is not the value the setup had ({old[field]!r}); the "
                             "rewrite keeps every other field as it was.")


@LESSON.exercise(StateCheck, "15-attribute",
                 takes=steps.call("call it with the collection and your function: "
                                  "`ex.check(practice.products, to_attributes)`.", None, callable))
def _check_attribute(lab: Lab, coll: Any, to_attributes: Callable) -> str:
    sample = {"_id": "prod:check", "name": "Check", "price": 7, "spec_weight_g": 120, "spec_power_w": 5}
    out = to_attributes(dict(sample))
    if not isinstance(out, dict):
        raise NotYet(f"to_attributes should return the new document (a dict), got {type(out).__name__}.")
    left = sorted(k for k in out if k.startswith("spec_"))
    if left:
        raise NotYet(f"the returned document still has {left}: the spec_* fields move into `specs`, they do not stay.")
    for k in ("_id", "name", "price"):
        if out.get(k) != sample[k]:
            raise NotYet(f"field `{k}` changed or disappeared ({out.get(k)!r}); keep the other fields as they are.")
    specs = out.get("specs")
    if isinstance(specs, dict):
        raise NotYet("`specs` is a subdocument keyed by name; the pattern needs an ARRAY of {k, v} pairs, so that "
                     "one index on specs.k/specs.v serves every name.")
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise NotYet("`specs` should be a list of {\"k\": ..., \"v\": ...} subdocuments.")
    pairs = sorted((s.get("k"), s.get("v")) for s in specs if set(s) == {"k", "v"})
    if len(pairs) != len(specs):
        raise NotYet(f"each element should have exactly the fields k and v; got {specs}.")
    if pairs == sorted([("spec_power_w", 5), ("spec_weight_g", 120)]):
        raise NotYet("keep the name without its `spec_` prefix: k should be 'weight_g', not 'spec_weight_g'.")
    if any(isinstance(k, int) for k, _ in pairs):
        raise NotYet("k and v are swapped: k holds the spec's name, v its value.")
    if pairs != [("power_w", 5), ("weight_g", 120)]:
        raise NotYet(f"for {{spec_weight_g: 120, spec_power_w: 5}} expected the pairs weight_g=120 and power_w=5, "
                     f"got {pairs}.")
    docs = list(coll.find())
    if not docs:
        raise NotYet("the collection is empty; re-run the setup cell above the exercise.")
    wide = [d["_id"] for d in docs if any(k.startswith("spec_") for k in d)]
    if wide:
        raise NotYet(f"{len(wide)} document(s) still have spec_* fields (e.g. {wide[0]}); rewrite every document "
                     "with `replace_one({'_id': ...}, to_attributes(doc))`.")
    if any(not isinstance(d.get("specs"), list) or not d["specs"] for d in docs):
        raise NotYet("some documents have no `specs` array; run the rewrite on every document.")
    _attribute_against_setup(lab.setup("products"), docs)
    keys = steps.index_keys(coll)
    on_specs = [k for k in keys if any(f.startswith("specs.") for f, _ in k)]
    wanted = [("specs.k", 1), ("specs.v", 1)]
    if [[f for f, _ in k] for k in on_specs] == [["specs.v", "specs.k"]]:
        raise NotYet("the index starts with specs.v: put the equality field first, {specs.k: 1, specs.v: 1}.")
    if not any([(f, abs(d)) for f, d in k] == wanted for k in on_specs):
        if on_specs:
            raise NotYet(f"the indexes on specs are {on_specs}; the pattern uses ONE compound index: specs.k, then "
                         "specs.v.")
        raise NotYet("no index on the specs array yet: create the compound index on specs.k, then specs.v.")
    if len(on_specs) > 1:
        raise NotYet(f"{len(on_specs)} indexes on specs ({on_specs}); the compound one serves every name, drop the others.")
    # every spec name is searched: an index that serves one name only (partial on it) is not the pattern's index
    firsts: dict = {}
    for d in docs:
        for spec in d["specs"]:
            if isinstance(spec, dict):
                firsts.setdefault(spec.get("k"), spec.get("v"))
    for name in sorted(firsts, key=str):
        lo, hi = firsts[name] - 100, firsts[name] + 100
        query = {"specs": {"$elemMatch": {"k": name, "v": {"$gte": lo, "$lte": hi}}}}
        expect = sum(1 for d in docs if any(s.get("k") == name and lo <= s.get("v") <= hi for s in d["specs"]))
        got = coll.count_documents(query)
        if got != expect:
            raise NotYet(f"the $elemMatch query for {name} finds {got} products, expected {expect}: check the values.")
        _index_serves(coll, query, name)
    return (f"{len(docs)} products in attribute form and one compound index that serves every spec name "
            f"({', '.join(map(str, sorted(firsts, key=str)))}) as an index range.")


def _index_serves(coll: Any, query: dict, name: Any) -> None:
    """The search must run as an index scan bounded on specs.k and specs.v: a key pattern is not enough (a
    partial, hidden or collated index with the right keys may be one the planner cannot use for this query)."""
    from labkit.exercises import observe

    plan = coll.find(query).explain().get("queryPlanner", {}).get("winningPlan", {})
    scans = [s for s in observe.plan_stages(plan)
             if s.get("stage") in ("IXSCAN", "EXPRESS_IXSCAN") and "specs.k" in (s.get("keyPattern") or {})]
    bounds = scans[0].get("indexBounds", {}) if scans else {}
    if scans and bounds.get("specs.v") not in (None, ["[MinKey, MaxKey]"]):
        return
    spec = next((ix for ix in coll.list_indexes() if "specs.k" in ix["key"]), {})
    search = f"the search {{specs: {{$elemMatch: {{k: {name!r}, v: <range>}}}}}}"
    if spec.get("partialFilterExpression") is not None:
        raise NotYet(f"your specs index is partial (partialFilterExpression {spec['partialFilterExpression']}), and "
                     f"{search} does not include that condition, so the planner may not use the index: the search "
                     "scans every product. A partial index serves only the queries whose filter implies its own; "
                     "create the index on specs.k and specs.v without a partialFilterExpression.")
    if spec.get("hidden"):
        raise NotYet("your specs index is hidden, so the planner ignores it and the search scans every product: "
                     "`coll.unhide_index(...)` or create it again without `hidden`.")
    if spec.get("collation") and spec["collation"].get("locale") != "simple":
        raise NotYet(f"your specs index has collation {spec['collation']}; a search without that collation cannot "
                     "use it for the string k, so it scans every product. Create it without a collation.")
    raise NotYet(f"{search} does not run as an index scan bounded on both specs.k and specs.v "
                 f"(plan: {' > '.join(s.get('stage', '') for s in observe.plan_stages(plan))}): check the index "
                 "keys and options.")


LESSON.add(Prediction, "15-predict-entries-vs-sparse", choices=("fewer", "the same", "more"))
