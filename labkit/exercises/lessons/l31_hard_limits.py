"""Lesson 31 (The hard limits, live): its exercises and their checkers.

Notebook: ``notebooks/31_hard_limits.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(StateCheck, "31-no-parallel-arrays",
                 takes=steps.collection("practice.products"))
def _check_no_parallel_arrays(lab: Lab, products: Any) -> str:
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
    setup = lab.setup("products")
    if setup:
        now = {d["_id"]: d for d in docs}
        problem = (steps.gone_or_added(setup, now, "products", "practice.products",
                                  "reshaping changes each product's fields, it never removes products.")
                   or steps.changed_field(setup, now, "product", skip=("colors", "sizes", "variants"))
                   or _variants_vs_setup(setup, now))
        if problem:
            raise NotYet(problem)
    wrong = _variants_lost(docs)
    if wrong:
        raise NotYet(wrong)
    keys = {name: [k for k, _ in info["key"]] for name, info in products.index_information().items()}
    wanted = [n for n, k in keys.items() if "variants.color" in k and "variants.size" in k]
    if not wanted:
        single = [n for n, k in keys.items() if any(f.startswith("variants.") for f in k)]
        extra = f" ({single} cover one field only)" if single else ""
        raise NotYet("no index holds both `variants.color` and `variants.size`" + extra + "; create one compound index.")
    if keys[wanted[0]][0] != "variants.color":
        raise NotYet(f"index {wanted[0]} starts with {keys[wanted[0]][0]!r}; put `variants.color` first so the color "
                     "equality bounds the scan.")
    for short, long_ in observe.redundant_prefixes(products):
        if any(f.startswith("variants.") for f in keys.get(short, [])):
            raise NotYet(f"{short} is a prefix of {long_}: the compound index already serves every query the shorter "
                         "one could, and each extra index costs a write per insert. Drop it.")
    query = {"variants.color": "red", "variants.size": "M"}
    explain = products.find(query).explain()
    names = [s.get("stage") for s in observe.plan_stages(explain["queryPlanner"]["winningPlan"])]
    if not any("IXSCAN" in str(n) for n in names):
        raise NotYet(f"the color + size query does not use the index (plan: {names}).")
    expected = sum(1 for d in docs if any(v["color"] == "red" and v["size"] == "M" for v in d["variants"]))
    got = explain["executionStats"]["nReturned"]
    if got != expected:
        raise NotYet(f"the query returned {got} products, expected {expected}; check the variant values.")
    if got == 0:
        raise NotYet("the color + size query returns no product at all: the variants no longer describe what the "
                     "products come in.")
    return f"{len(docs)} products with variants, one compound multikey index, IXSCAN returning {got} products."


_COLORS_31 = ["red", "blue", "green", "black"]


_SIZES_31 = ["S", "M", "L", "XL"]


def _combos(variants: Any) -> set:
    return {(steps.hashable(v.get("color")), steps.hashable(v.get("size")))
            for v in variants or [] if isinstance(v, dict)}


def _variants_wrong(pid: Any, want: set, variants: Any) -> str | None:
    """A message when ``variants`` do not hold exactly the color x size combinations ``want``, each once."""
    got = _combos(variants)
    if got != want:
        missing, extra = sorted(want - got, key=repr), sorted(got - want, key=repr)
        detail = (f"{len(missing)} combination(s) missing, e.g. {missing[0]}" if missing else
                  f"{len(extra)} combination(s) it never came in, e.g. {extra[0]}")
        return (f"{pid} came in {len(want)} color x size combinations but its variants hold {len(got)} "
                f"({detail}): build one variant per color and size of the old arrays, so the index answers "
                "the same questions the arrays did.")
    if len(variants) != len(got):
        return f"{pid} lists a variant twice; one {{color, size}} per combination."
    return None


def _variants_vs_setup(setup: dict, now: dict) -> str | None:
    """Against the setup copy: each product's variants are exactly the color x size combinations its arrays held
    (or the variants it already had, when the copy was kept after reshaping)."""
    for pid, orig in setup.items():
        if isinstance(orig.get("colors"), list) and isinstance(orig.get("sizes"), list):
            want = {(steps.hashable(c), steps.hashable(z)) for c in orig["colors"] for z in orig["sizes"]}
        elif isinstance(orig.get("variants"), list):
            want = _combos(orig["variants"])
        else:
            continue
        wrong = _variants_wrong(pid, want, now[pid].get("variants"))
        if wrong:
            return wrong
    return None


def _variants_lost(docs: list) -> str | None:
    """A message when the variants do not hold exactly each product's color x size combinations.

    The lesson's products follow one rule (``shirt:NNN`` has the first 1 + N % 4 colors and the first
    1 + (N // 4) % 4 sizes), so the checker knows what every product came in without trusting the data."""
    for d in docs:
        pid = str(d.get("_id"))
        if not (pid.startswith("shirt:") and pid[6:].isdigit()):
            continue
        i = int(pid[6:])
        want = {(c, z) for c in _COLORS_31[: 1 + i % 4] for z in _SIZES_31[: 1 + (i // 4) % 4]}
        wrong = _variants_wrong(pid, want, d["variants"])
        if wrong:
            return wrong
    return None


LESSON.add(Prediction, "31-predict-pushes")


def _thread_31(name: str, shape: list[int]) -> dict:
    """A nested thread for the flatten check: ``shape[d]`` replies under each node of depth ``d``.

    Every node's text is unique, so the checker can tell which reply answered which."""
    counter = [0]

    def node(depth: int, path: str) -> dict:
        counter[0] += 1
        doc: dict = {"text": f"{name} message {path or 'root'}", "by": f"user:{counter[0] % 7}"}
        if depth < len(shape):
            doc["replies"] = [node(depth + 1, f"{path}.{k}" if path else str(k)) for k in range(shape[depth])]
        return doc

    root = node(0, "")
    return {"_id": f"thread:{name}", "post": f"post:{name}", **root}


def _tree_31(thread: dict) -> dict[str, Any]:
    """text -> parent text (None for the thread's first message)."""
    out: dict[str, Any] = {}
    todo = [(thread, None)]
    while todo:
        node, parent = todo.pop()
        out[node["text"]] = parent
        todo += [(r, node["text"]) for r in node.get("replies") or []]
    return out


@LESSON.exercise(BehaviourCheck, "31-flatten-thread", takes=steps.function("flatten"))
def _check_flatten_thread(lab: Lab, flatten: Callable) -> str:
    import copy

    from labkit.limits import nesting_depth

    # a long chain (deeper than the 100-level limit as nested documents) and a bushy thread
    threads = [_thread_31("chain", [1] * 80), _thread_31("bushy", [3, 3, 2, 2])]
    total = 0
    with lab.sandbox() as box:
        for thread in threads:
            want = _tree_31(thread)
            docs = flatten(copy.deepcopy(thread))
            if isinstance(docs, dict):
                raise NotYet("flatten returned one document; return a list with one document per message.")
            if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
                raise NotYet(f"flatten should return a list of documents, got {type(docs).__name__}.")
            nested = [d for d in docs if "replies" in d]
            if nested:
                raise NotYet(f"{len(nested)} document(s) still hold `replies`: each message is its own document, "
                             "and the tree lives in `parentId`, not in nesting.")
            if len(docs) != len(want):
                raise NotYet(f"{thread['_id']} has {len(want)} messages (the first one and every reply at every "
                             f"depth); flatten returned {len(docs)} documents. Walk the whole tree.")
            deep = max(nesting_depth(d) for d in docs)
            if deep > 3:
                raise NotYet(f"a flattened document is still {deep} levels deep; keep each one flat.")
            try:
                box.db.messages.insert_many(docs)
            except Exception as exc:  # noqa: BLE001 - the learner's documents; a message, not a traceback
                raise NotYet(f"inserting the documents failed ({type(exc).__name__}: {str(exc)[:160]}); give every "
                             "message a unique `_id`.") from None
            stored = list(box.db.messages.find({"threadId": thread["_id"]}))
            if len(stored) != len(want):
                raise NotYet(f"a query by `threadId: {thread['_id']!r}` finds {len(stored)} of {len(want)} messages: "
                             "give every message the thread's `_id` as `threadId`, so one query reads the thread.")
            by_id = {d["_id"]: d for d in stored}
            texts = [d.get("text") for d in stored]
            if not all(isinstance(t, str) for t in texts) or set(texts) != set(want):
                raise NotYet("the messages' `text` fields are not the thread's texts: keep each message's text.")
            for d in stored:
                parent = by_id.get(d.get("parentId")) if d.get("parentId") is not None else None
                if d.get("parentId") is not None and parent is None:
                    raise NotYet(f"message {d['text']!r} has parentId {d.get('parentId')!r}, which is no message's "
                                 "`_id`: point it at the `_id` of the message it answers.")
                got = parent["text"] if parent else None
                if got != want[d["text"]]:
                    expected = want[d["text"]]
                    raise NotYet(f"message {d['text']!r} should answer {expected!r} but its parentId says "
                                 f"{got!r}" + (" (the first message has no parent: parentId None)" if expected is None
                                               else "") + ".")
            total += len(stored)
    return (f"{total} messages in two threads, each its own flat document with `threadId` and `parentId`: no "
            "depth limit, and one indexed query reads a whole thread.")


