"""Exercises of the antipatterns lessons."""
from __future__ import annotations

from typing import Any

from labkit.exercises import Exercise, NotYet, _stages, register  # noqa: F401


def _is_collection(x: Any) -> bool:
    return all(callable(getattr(type(x), m, None)) for m in ("find", "index_information", "insert_one"))


def _is_database(x: Any) -> bool:
    return callable(getattr(type(x), "list_collection_names", None))


def _pair(args: Any, what: str) -> tuple:
    if not (isinstance(args, tuple) and len(args) == 2):
        raise NotYet(f"call it with two arguments: {what}.")
    return args


# --- notebook 30 -------------------------------------------------------------------------------------------

def _check_pick_operations(args: Any) -> str:
    import pandas as pd

    workload, chosen = _pair(args, "`ex.check(workload, chosen)`")
    if not isinstance(workload, pd.DataFrame) or "per_second" not in getattr(workload, "columns", []):
        raise NotYet("the first argument should be the lesson's `workload` DataFrame (with `per_second`).")
    if not isinstance(chosen, pd.DataFrame):
        raise NotYet(f"`chosen` should be a DataFrame holding rows of `workload`, got {type(chosen).__name__}.")
    if "operation" not in chosen.columns or "per_second" not in chosen.columns:
        raise NotYet("keep the `operation` and `per_second` columns in `chosen` (select rows, not columns).")
    known = dict(zip(workload["operation"], workload["per_second"]))
    names = list(chosen["operation"])
    strangers = [n for n in names if n not in known]
    if strangers:
        raise NotYet(f"{strangers} are not operations of `workload`; pick rows from it.")
    if len(set(names)) != len(names):
        raise NotYet("some operations appear twice; each row once is enough.")
    if not names:
        raise NotYet("`chosen` is empty: pick the operations that carry most of the traffic.")
    left_out = {n: f for n, f in known.items() if n not in names}
    rarest_in = min(known[n] for n in names)
    busier_out = sorted((n for n, f in left_out.items() if f > rarest_in), key=lambda n: -known[n])
    if busier_out:
        rare = min(names, key=lambda n: known[n])
        raise NotYet(f"'{rare}' ({known[rare]:g}/s) is in but '{busier_out[0]}' ({known[busier_out[0]]:g}/s) is "
                     "left out: design for the most frequent operations, so rank by `per_second` first.")
    share = sum(known[n] for n in names) / sum(known.values())
    if share < 0.99:
        raise NotYet(f"your operations carry {share:.1%} of the traffic; take enough of the top rows to cover "
                     "at least 99%.")
    if len(names) > 4:
        slow = min(names, key=lambda n: known[n])
        raise NotYet(f"{len(names)} operations is too many: '{slow}' runs {known[slow]:g} times a second and may be "
                     "slow. Design for the top three or four and let rare operations pay more.")
    return (f"{len(names)} operations carrying {share:.2%} of the traffic; everything rarer may cost more per "
            "call without anyone noticing.")


@register
def _ex30() -> Exercise:
    return Exercise(
        id="30-pick-operations",
        lesson="30_workload",
        task="Choose the operations (rows of `workload`) that the schema should be shaped around.",
        checker=_check_pick_operations,
        hints=["Rank by `per_second`, most frequent first, and keep the top rows.",
               "The top three or four rows carry over 99% of the traffic: "
               "`workload.sort_values(\"per_second\", ascending=False).head(4)`."],
        solution_text=('chosen = workload.sort_values("per_second", ascending=False).head(4)\n'
                       'ex.check(workload, chosen)'),
    )


# --- notebook 31 -------------------------------------------------------------------------------------------

def _check_no_parallel_arrays(products: Any) -> str:
    if not _is_collection(products):
        raise NotYet(f"pass the collection (`practice.products`), not {type(products).__name__}.")
    docs = list(products.find())
    if not docs:
        raise NotYet("the collection is empty; re-run the cell that creates `practice.products`.")
    both = [d["_id"] for d in docs if isinstance(d.get("colors"), list) and isinstance(d.get("sizes"), list)]
    if both:
        raise NotYet(f"{len(both)} product(s), e.g. {both[0]!r}, still hold both `colors` and `sizes` arrays; "
                     "remove them with `$unset` once `variants` is set.")
    bad = [d["_id"] for d in docs if not (isinstance(d.get("variants"), list) and d["variants"] and all(
        isinstance(v, dict) and "color" in v and "size" in v for v in d["variants"]))]
    if bad:
        raise NotYet(f"{len(bad)} product(s), e.g. {bad[0]!r}, have no `variants` array of {{color, size}} objects.")
    keys = {name: [k for k, _ in info["key"]] for name, info in products.index_information().items()}
    wanted = [n for n, k in keys.items() if "variants.color" in k and "variants.size" in k]
    if not wanted:
        single = [n for n, k in keys.items() if any(f.startswith("variants.") for f in k)]
        extra = f" ({single} cover one field only)" if single else ""
        raise NotYet("no index holds both `variants.color` and `variants.size`" + extra + "; create one compound index.")
    if keys[wanted[0]][0] != "variants.color":
        raise NotYet(f"index {wanted[0]} starts with {keys[wanted[0]][0]!r}; put `variants.color` first so the color "
                     "equality bounds the scan.")
    query = {"variants.color": "red", "variants.size": "M"}
    explain = products.find(query).explain()
    names = [s.get("stage") for s in _stages(explain["queryPlanner"]["winningPlan"])]
    if "IXSCAN" not in names:
        raise NotYet(f"the color + size query does not use the index (plan: {names}).")
    expected = sum(1 for d in docs if any(v["color"] == "red" for v in d["variants"])
                   and any(v["size"] == "M" for v in d["variants"]))
    got = explain["executionStats"]["nReturned"]
    if got != expected:
        raise NotYet(f"the query returned {got} products, expected {expected}; check the variant values.")
    return f"{len(docs)} products with variants, one compound multikey index, IXSCAN returning {got} products."


@register
def _ex31() -> Exercise:
    return Exercise(
        id="31-no-parallel-arrays",
        lesson="31_hard_limits",
        task="Replace the parallel `colors`/`sizes` arrays with `variants: [{color, size}]` and index both fields.",
        checker=_check_no_parallel_arrays,
        hints=["Build the variants in Python for each product: one {color, size} per combination.",
               "One update per product: `$set` the variants and `$unset` colors and sizes; then "
               "`create_index([(\"variants.color\", 1), (\"variants.size\", 1)])`."],
        solution_text=(
            'for p in practice.products.find():\n'
            '    variants = [{"color": c, "size": s} for c in p["colors"] for s in p["sizes"]]\n'
            '    practice.products.update_one({"_id": p["_id"]}, {"$set": {"variants": variants},\n'
            '                                                       "$unset": {"colors": "", "sizes": ""}})\n'
            'practice.products.create_index([("variants.color", 1), ("variants.size", 1)])\n'
            'ex.check(practice.products)'),
    )
