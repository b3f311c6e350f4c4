"""Lesson 15 (Attribute pattern: many similar fields, one index): its exercises and their checkers.

Notebook: ``notebooks/15_attribute.ipynb``.
"""
from __future__ import annotations

from typing import Any

from labkit.exercises import steps
from labkit.exercises.kinds import Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.problem import Exercise
from labkit.exercises.registry import register


def _attribute_against_setup(docs: list[dict]) -> None:
    """Compare the rewritten products with the setup copy kept by ``Exercise.remember`` (when there is one):
    nothing deleted or added, the other fields unchanged, every spec_* value now one {k, v} pair."""
    from labkit.exercises.problem import remembered

    setup = remembered("products")
    if not setup:
        return
    now = {d["_id"]: d for d in docs}
    gone = sorted(set(setup) - set(now), key=str)
    if gone:
        raise NotYet(f"{len(gone)} of the {len(setup)} products of the setup are gone (e.g. {gone[0]!r}): the "
                     "rewrite replaces each document, it must not lose any. Re-run the setup cell and rewrite again.")
    extra = sorted(set(now) - set(setup), key=str)
    if extra:
        raise NotYet(f"{len(extra)} product(s) are not in the setup (e.g. {extra[0]!r}): replace each document in "
                     "place (`replace_one({'_id': ...})`), do not insert copies.")
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


def _check_attribute(args: Any) -> str:
    if not (isinstance(args, tuple) and len(args) == 2 and callable(args[1])):
        raise NotYet("call it with the collection and your function: `ex.check(practice.products, to_attributes)`.")
    coll, to_attributes = args
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
    _attribute_against_setup(docs)
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
    some = docs[0]["specs"][0]
    lo, hi = some["v"] - 100, some["v"] + 100
    query = {"specs": {"$elemMatch": {"k": some["k"], "v": {"$gte": lo, "$lte": hi}}}}
    expect = sum(1 for d in docs if any(s.get("k") == some["k"] and lo <= s.get("v") <= hi for s in d["specs"]))
    got = coll.count_documents(query)
    if got != expect:
        raise NotYet(f"the $elemMatch query for {some['k']} finds {got} products, expected {expect}: check the values.")
    return (f"{len(docs)} products in attribute form and one compound index that serves any spec name "
            f"({got} products with {some['k']} in {lo}..{hi}).")


@register
def _ex15() -> Exercise:
    return Exercise(
        id="15-attribute",
        lesson="15_attribute",
        task="Move every spec_* field into specs: [{k, v}], rewrite the collection, and create the one index it needs.",
        checker=_check_attribute,
        hints=["Build the new document from the fields that do not start with `spec_`, then add the `specs` list.",
               "`k[len(\"spec_\"):]` drops the prefix; the index is `[(\"specs.k\", 1), (\"specs.v\", 1)]`."],
        solution_text=(
            "def to_attributes(doc):\n"
            "    out = {k: v for k, v in doc.items() if not k.startswith(\"spec_\")}\n"
            "    out[\"specs\"] = [{\"k\": k[len(\"spec_\"):], \"v\": v} for k, v in doc.items() if k.startswith(\"spec_\")]\n"
            "    return out\n\n"
            "for product in list(practice.products.find()):\n"
            "    practice.products.replace_one({\"_id\": product[\"_id\"]}, to_attributes(product))\n"
            "practice.products.create_index([(\"specs.k\", 1), (\"specs.v\", 1)])\n"
            "ex.check(practice.products, to_attributes)"
        ),
    )


@register
def _ex15_predict() -> Exercise:
    return Prediction(
        id="15-predict-entries-vs-sparse",
        lesson="15_attribute",
        task="Will the attribute pattern's one index hold fewer entries than the 40 sparse country indexes "
             "together, the same number, or more?",
        checker=None,
        choices=("fewer", "the same", "more"),
        explain=lambda verdict: (f"Measured: {verdict}. A sparse index on releaseFR holds one entry per movie "
                                 "released in France; the 40 together hold one per release. The attribute index "
                                 "holds one entry per element of `releases`, which is also one per release. What "
                                 "the attribute pattern saves over sparse indexes is the number of indexes (and "
                                 "the 64-per-collection limit), not entries."),
        hints=["Count the entries of a sparse index on releaseFR, then of all 40; then the elements of all the "
               "`releases` arrays."],
        solution_text='predict_entries.predict("the same")',
    )
