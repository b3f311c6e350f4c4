"""Exercises of the antipatterns lessons."""
from __future__ import annotations

from typing import Any

from labkit.exercises import Exercise, NotYet, Prediction, _stages, register  # noqa: F401


def _is_collection(x: Any) -> bool:
    return all(callable(getattr(type(x), m, None)) for m in ("find", "index_information", "insert_one"))


def _is_database(x: Any) -> bool:
    return callable(getattr(type(x), "list_collection_names", None))


def _is_function(x: Any) -> bool:
    """A function the learner wrote (a collection or database is callable too, but only to raise TypeError)."""
    return callable(x) and not _is_collection(x) and not _is_database(x)


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
               "Read the cumulative share column of `ranked`: take rows from the top until it passes 99%, then "
               "stop; what is left may be slow."],
        solution_text=('chosen = workload.sort_values("per_second", ascending=False).head(4)\n'
                       'ex.check(workload, chosen)'),
    )


@register
def _ex30_predict() -> Exercise:
    from labkit.exercises import Prediction

    return Prediction(
        id="30-predict-naive-page-docs",
        lesson="30_workload",
        task="The naive product page of product:007 (400 reviews): how many documents do its three queries examine "
             "in total?",
        checker=None,
        tolerance=0.02,
        explain=lambda n: (f"Measured: {n}. The product is one document and the 5 newest reviews are 5 more (the "
                           "{productId, createdAt} index gives them in order), but the rating average reads every "
                           "review of the product: the page's cost grows with the product's popularity, 2,000 times "
                           "a second."),
        hints=["Count each of the three steps separately: the product, the five newest reviews, and what the "
               "average has to read."],
        solution_text="predict_page.predict(1 + 5 + 400)",
    )


# A changed scenario for the per-piece ratio: a news site (other operations, other pieces of data, other rates).
_NEWS_WORKLOAD = [("Show article", "read", 5000.0), ("Front page", "read", 900.0), ("Like article", "write", 300.0),
                  ("Add comment", "write", 20.0), ("Edit article", "write", 0.01), ("Sign up", "write", 1.0),
                  ("Show profile", "read", 50.0)]
_NEWS_TOUCHES = {
    "Show article": {"article": "read", "comments": "read", "likes": "read"},
    "Front page": {"article": "read", "likes": "read", "sections": "read"},  # sections: never written
    "Like article": {"likes": "write"},
    "Add comment": {"comments": "write", "article": "read", "users": "read"},
    "Edit article": {"article": "write"},
    "Sign up": {"users": "write"},
    "Show profile": {"users": "read", "comments": "read"},
}


def _ratios(workload: list, touches: dict, *, kind_of: str = "touch", weighted: bool = True) -> dict:
    rate = {op: (t, f) for op, t, f in workload}
    reads: dict = {}
    writes: dict = {}
    for op, pieces in touches.items():
        typ, f = rate[op]
        for piece, kind in pieces.items():
            k = kind if kind_of == "touch" else typ
            target = reads if k == "read" else writes
            target[piece] = target.get(piece, 0.0) + (f if weighted else 1.0)
            (writes if target is reads else reads).setdefault(piece, 0.0)
    return {p: (reads[p] / writes[p] if writes[p] else float("inf")) for p in reads}


def _check_reads_per_write(fn: Any) -> str:
    import math

    import pandas as pd

    if not _is_function(fn):
        raise NotYet("pass your function: `ex_ratio.check(reads_per_write)`.")
    scenarios = [_NEWS_WORKLOAD, [(op, t, f * (3.0 if t == "write" else 0.5)) for op, t, f in _NEWS_WORKLOAD]]
    for workload in scenarios:
        frame = pd.DataFrame(workload, columns=["operation", "type", "per_second"])
        try:
            got = fn(frame.copy(), {k: dict(v) for k, v in _NEWS_TOUCHES.items()})
        except ZeroDivisionError:
            raise NotYet("your function divided by zero: 'sections' is read by the front page and never written, "
                         "so its reads per write is `float(\"inf\")`; test for zero writes before dividing.") from None
        if isinstance(got, pd.Series):
            got = got.to_dict()
        if not isinstance(got, dict):
            raise NotYet(f"return a dict {{piece of data: reads per write}}, got {type(got).__name__}.")
        want = _ratios(workload, _NEWS_TOUCHES)

        def same(a: dict, b: dict) -> bool:
            if set(a) != set(b):
                return False
            for k in b:
                x, y = a[k], b[k]
                if not isinstance(x, (int, float)) or isinstance(x, bool):
                    return False
                if math.isinf(y) or math.isinf(x):
                    if not (math.isinf(x) and math.isinf(y)):
                        return False
                elif abs(x - y) > 0.01 * max(abs(y), 1e-9):
                    return False
            return True

        if set(got) != set(want):
            raise NotYet(f"your result has the pieces {sorted(got)}; the touches name {sorted(want)}: one entry per "
                         "piece of data.")
        if same(got, want):
            continue
        values = [v for v in got.values() if isinstance(v, (int, float))]
        total_r = sum(f for _, t, f in workload if t == "read")
        total_w = sum(f for _, t, f in workload if t == "write")
        if len(values) == len(got) and all(math.isfinite(v) for v in values) and len({round(v, 6) for v in values}) == 1:
            raise NotYet(f"every piece gets the same ratio ({values[0]:g}): that is the database-wide reads per "
                         f"write ({total_r:g} reads/s over {total_w:g} writes/s), which hides what matters. Sum, "
                         "for each piece, the rates of the operations that read it and of those that write it.")
        if same(got, _ratios(workload, _NEWS_TOUCHES, kind_of="operation")):
            raise NotYet("you used each operation's type for every piece it touches: 'Add comment' is a write "
                         "operation but only *reads* the article and the user. Use the kind given for each piece "
                         "in `touches`.")
        if same(got, _ratios(workload, _NEWS_TOUCHES, weighted=False)):
            raise NotYet("you counted operations, not their rates: weight each read and write by its `per_second` "
                         "(5,000 article views a second are not one read).")
        inverted = {k: (1 / v if v not in (0, float("inf")) else (float("inf") if v == 0 else 0.0))
                    for k, v in want.items()}
        if same(got, inverted):
            raise NotYet("your ratios are upside down (writes per read): divide reads by writes.")
        wrong = sorted(k for k in want if not same({k: got[k]}, {k: want[k]}))
        raise NotYet(f"reads per write of {wrong[0]!r} is {got[wrong[0]]!r}, expected about {want[wrong[0]]:.4g}: "
                     "add up per_second of the operations that read it, divide by those that write it.")
    first = _ratios(_NEWS_WORKLOAD, _NEWS_TOUCHES)
    best = max((k for k, v in first.items() if not math.isinf(v)), key=lambda k: first[k])
    return (f"right on two versions of the news site's workload: at the first one's rates {best!r} is read "
            f"{first[best]:,.0f} times per write, the piece most worth shaping around its reads.")


@register
def _ex30_ratio() -> Exercise:
    return Exercise(
        id="30-reads-per-write",
        lesson="30_workload",
        task="A news site: write reads_per_write(workload, touches) returning {piece of data: reads per write}, "
             "weighting each touch by its operation's rate (float('inf') when a piece is never written).",
        checker=_check_reads_per_write,
        hints=["For each row of `workload`, look up `touches[operation]`: each piece there is read or written at "
               "that row's per_second.",
               "Keep two dicts, reads and writes per piece; the ratio is reads / writes, or `float(\"inf\")` when "
               "writes is 0."],
        solution_text=(
            "def reads_per_write(workload, touches):\n"
            "    reads, writes = {}, {}\n"
            "    for op, rate in zip(workload[\"operation\"], workload[\"per_second\"]):\n"
            "        for piece, kind in touches[op].items():\n"
            "            reads.setdefault(piece, 0.0)\n"
            "            writes.setdefault(piece, 0.0)\n"
            "            (reads if kind == \"read\" else writes)[piece] += rate\n"
            "    return {p: reads[p] / writes[p] if writes[p] else float(\"inf\") for p in reads}\n\n\n"
            "ex_ratio.check(reads_per_write)"
        ),
    )


# --- setup copies (``ex.remember(practice, ...)``), used by 31, 34, 36 and 38 ---------------------------------

def _setup_of(name: str) -> dict:
    """The setup copy of collection ``name`` kept by ``ex.remember`` ({_id: document}); {} when none was kept."""
    from labkit.exercises import remembered

    setup = remembered(name)
    return setup if isinstance(setup, dict) else {}


def _setup_names() -> list[str]:
    """The names of every collection the learner's notebook remembered for this check."""
    from labkit.exercises import _REMEMBERED

    return sorted(n for n, docs in _REMEMBERED.get().items() if docs)


def _gone_or_added(setup: dict, now: dict, what: str, where: str, why: str) -> str | None:
    """A message when documents of the setup are missing from ``now`` or ``now`` has documents it never had."""
    gone = [i for i in setup if i not in now]
    if gone:
        return (f"{len(gone)} of the {len(setup)} {what} of the setup are gone from {where} (e.g. {gone[0]!r}); "
                f"{why} Re-run the practice setup cell and try again.")
    extra = [i for i in now if i not in setup]
    if extra:
        return (f"{where} has {len(extra)} {what} the setup did not have (e.g. {extra[0]!r}); re-run the practice "
                "setup cell and try again.")
    return None


def _changed_field(setup: dict, now: dict, where: str, skip: tuple[str, ...] = ()) -> str | None:
    """A message naming the first document of ``now`` whose field differs from the setup (fields in ``skip``,
    the ones the task reshapes, are left out)."""
    for i, orig in setup.items():
        doc = now.get(i)
        if doc is None:
            continue
        for f, v in orig.items():
            if f == "_id" or f in skip:
                continue
            if doc.get(f, _MISSING) != v:
                state = "is missing" if f not in doc else f"is {doc.get(f)!r}, not the setup's {v!r}"
                return (f"{where} {i!r}: `{f}` {state}; the task changes the shape, not the data (re-run the "
                        "practice setup cell if it was changed by accident).")
    return None


_MISSING = object()


def _added_fields(setup: dict, now: dict, allowed: tuple[str, ...]) -> tuple[Any, list[str]] | None:
    """The first document of ``now`` with fields neither the setup had nor the task adds (``allowed``)."""
    for i, orig in setup.items():
        doc = now.get(i)
        if doc is None:
            continue
        extra = sorted(set(doc) - set(orig) - set(allowed))
        if extra:
            return i, extra
    return None


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
    setup = _setup_of("products")
    if setup:
        now = {d["_id"]: d for d in docs}
        problem = (_gone_or_added(setup, now, "products", "practice.products",
                                  "reshaping changes each product's fields, it never removes products.")
                   or _changed_field(setup, now, "product", skip=("colors", "sizes", "variants"))
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
    from labkit.exercises import observe
    for short, long_ in observe.redundant_prefixes(products):
        if any(f.startswith("variants.") for f in keys.get(short, [])):
            raise NotYet(f"{short} is a prefix of {long_}: the compound index already serves every query the shorter "
                         "one could, and each extra index costs a write per insert. Drop it.")
    query = {"variants.color": "red", "variants.size": "M"}
    explain = products.find(query).explain()
    names = [s.get("stage") for s in _stages(explain["queryPlanner"]["winningPlan"])]
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


def _hashable(x: Any) -> Any:
    """``x`` itself when it can go into a set, else its repr (a learner's variant may hold a list or a dict)."""
    try:
        hash(x)
    except TypeError:
        return repr(x)
    return x


def _combos(variants: Any) -> set:
    return {(_hashable(v.get("color")), _hashable(v.get("size"))) for v in variants or [] if isinstance(v, dict)}


def _variants_vs_setup(setup: dict, now: dict) -> str | None:
    """Against the setup copy: each product's variants are exactly the color x size combinations its arrays held
    (or the variants it already had, when the copy was kept after reshaping)."""
    for pid, orig in setup.items():
        if isinstance(orig.get("colors"), list) and isinstance(orig.get("sizes"), list):
            want = {(_hashable(c), _hashable(z)) for c in orig["colors"] for z in orig["sizes"]}
        elif isinstance(orig.get("variants"), list):
            want = _combos(orig["variants"])
        else:
            continue
        got = _combos(now[pid].get("variants"))
        if got != want:
            missing, extra = sorted(want - got, key=repr), sorted(got - want, key=repr)
            detail = (f"{len(missing)} combination(s) missing, e.g. {missing[0]}" if missing else
                      f"{len(extra)} combination(s) it never came in, e.g. {extra[0]}")
            return (f"{pid} came in {len(want)} color x size combinations but its variants hold {len(got)} "
                    f"({detail}): build one variant per color and size of the old arrays, so the index answers "
                    "the same questions the arrays did.")
        if len(now[pid]["variants"]) != len(got):
            return f"{pid} lists a variant twice; one {{color, size}} per combination."
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
        got = _combos(d["variants"])
        if got != want:
            missing, extra = sorted(want - got, key=repr), sorted(got - want, key=repr)
            detail = (f"{len(missing)} combination(s) missing, e.g. {missing[0]}" if missing else
                      f"{len(extra)} combination(s) it never came in, e.g. {extra[0]}")
            return (f"{pid} came in {len(want)} color x size combinations but its variants hold {len(got)} "
                    f"({detail}): build one variant per color and size of the old arrays, so the index answers "
                    "the same questions the arrays did.")
        if len(d["variants"]) != len(got):
            return f"{pid} lists a variant twice; one {{color, size}} per combination."
    return None


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


@register
def _ex31_predict() -> Exercise:
    return Prediction(
        id="31-predict-pushes",
        lesson="31_hard_limits",
        task="How many 512 KiB `$push` writes does the account document accept before the server refuses one?",
        checker=None,
        explain=lambda n: (f"Measured: {n} pushes accepted. 16 MiB is 32 x 512 KiB, but each array element also "
                           "carries its own BSON overhead (type byte, index key, string length) and the document "
                           "has its other fields, so the 32nd payload no longer fits: the push that would cross "
                           "16,777,216 bytes fails, and so does every later one."),
        hints=["16 MiB / 512 KiB = 32. Does the document hold anything besides the payloads?"],
        solution_text="predict_pushes.predict(31)",
    )


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


def _check_flatten_thread(flatten: Any) -> str:
    import copy

    from labkit.exercises import observe
    from labkit.limits import nesting_depth

    if not _is_function(flatten):
        raise NotYet(f"pass your function `flatten` itself (no parentheses), not {type(flatten).__name__}.")
    # a long chain (deeper than the 100-level limit as nested documents) and a bushy thread
    threads = [_thread_31("chain", [1] * 80), _thread_31("bushy", [3, 3, 2, 2])]
    total = 0
    with observe.sandbox("31-flatten-thread") as box:
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


@register
def _ex31_flatten() -> Exercise:
    return Exercise(
        id="31-flatten-thread",
        lesson="31_hard_limits",
        task="Write flatten(thread): one document per message (the first one and every reply), with `threadId` "
             "and `parentId`, no nesting.",
        checker=_check_flatten_thread,
        hints=["Walk the tree with a list of (node, parent _id) pairs still to visit; give each node a new `_id`.",
               "Each output document: `{_id, threadId: thread['_id'], parentId, text, by}`; the first message's "
               "parentId is None; never copy `replies`."],
        solution_text=(
            'def flatten(thread):\n'
            '    out, todo = [], [(thread, None)]\n'
            '    while todo:\n'
            '        node, parent = todo.pop()\n'
            '        my_id = f"{thread[\'_id\']}:{len(out)}"\n'
            '        out.append({"_id": my_id, "threadId": thread["_id"], "parentId": parent,\n'
            '                    "text": node["text"], "by": node.get("by")})\n'
            '        todo += [(reply, my_id) for reply in node.get("replies", [])]\n'
            '    return out\n\n'
            'ex_flat.check(flatten)'),
    )


# --- notebook 32 -------------------------------------------------------------------------------------------

def _check_capped_subset(record_event: Any) -> str:
    import datetime as dt

    from labkit.connection import connect
    from labkit.exercises import observe

    if not _is_function(record_event):
        raise NotYet(f"pass your function `record_event` itself (no parentheses), not {type(record_event).__name__}.")
    events = [{"_id": f"evt:{i:03d}", "at": dt.datetime(2026, 7, 1) + dt.timedelta(minutes=i), "type": "heartbeat",
               "value": i} for i in range(25)]
    with observe.sandbox("32-capped-subset", connect()) as box:  # the learner's kind of engine, pristine data
        db = box.db
        db.devices.insert_one({"_id": "device:900", "site": "site:01", "recentEvents": []})
        try:
            for ev in events:
                record_event(db, "device:900", dict(ev))
        except TypeError as exc:
            raise NotYet(f"calling `record_event(db, device_id, event)` failed: {exc}. Keep that signature.") from None
        device_writes = _device_write_statements(box.recorder)
        stored = list(db.events.find({"deviceId": "device:900"}))
        parent = db.devices.find_one({"_id": "device:900"}) or {}
        # two events at once: the second runs right after the first one's first read
        db.devices.insert_one({"_id": "device:901", "site": "site:01", "recentEvents": []})
        late = dt.datetime(2026, 7, 2)
        observe.interleaved(
            lambda: record_event(db, "device:901", {"_id": "evt:race:a", "at": late, "type": "alarm", "value": 1}),
            lambda: record_event(db, "device:901", {"_id": "evt:race:b", "at": late + dt.timedelta(seconds=1),
                                                    "type": "alarm", "value": 2}), box.recorder)
        raced = [e.get("_id") for e in (db.devices.find_one({"_id": "device:901"}) or {}).get("recentEvents") or []
                 if isinstance(e, dict)]
    if len(stored) != 25:
        raise NotYet(f"db.events holds {len(stored)} events for the device after 25 calls; insert each event, with "
                     "its `deviceId`, into the child collection.")
    recent = parent.get("recentEvents")
    if not isinstance(recent, list):
        raise NotYet("the device has no `recentEvents` array; `$push` each event into it.")
    if len(recent) > 10:
        raise NotYet(f"`recentEvents` holds {len(recent)} events: the push is not capped. Add `$each` and "
                     "`$slice` to the `$push`.")
    values = [e.get("value") for e in recent if isinstance(e, dict)]
    if values == list(range(9, -1, -1)):
        raise NotYet("`recentEvents` kept the 10 *oldest* events: with `$sort: {at: -1}` the newest come first, so "
                     "`$slice: -10` keeps the oldest ones at the end. Newest last is `$slice: -10` with no `$sort` "
                     "(or `$sort: {at: 1}`).")
    if values == list(range(24, 14, -1)):
        raise NotYet("`recentEvents` holds the 10 newest events but newest first; the task keeps them newest last "
                     "(the order they arrive in): `$slice: -10`, with no `$sort` or `$sort: {at: 1}`.")
    if sorted(values) == list(range(10)):
        raise NotYet("`recentEvents` kept the 10 *oldest* events: `$slice: 10` keeps the first elements; "
                     "use `$slice: -10` to keep the last ones.")
    if values != list(range(15, 25)):
        raise NotYet(f"`recentEvents` should hold the 10 newest events, newest last; it holds values {values}.")
    if device_writes > len(events):
        raise NotYet(f"25 events took {device_writes} write statements on the device: between the push and the trim "
                     "the array holds more than 10 events, and a crash there leaves it so. One `$push` with `$each` "
                     "and `$slice: -10` appends and trims in one atomic write.")
    big = [k for k, v in parent.items() if isinstance(v, list) and len(v) > 10]
    if big:
        raise NotYet(f"the device also keeps {big} with more than 10 elements; keep the full history only in db.events.")
    if sorted(raced) != ["evt:race:a", "evt:race:b"]:
        raise NotYet(f"two events arrived at once on another device: its recentEvents holds {raced}, not both. "
                     "Reading the device, building the list in Python and writing it back loses the other call's "
                     "event; let one `$push` with `$each` and `$slice: -10` change it on the server.")
    return ("25 events in the child collection, the 10 newest in the parent, nothing unbounded left, and two "
            "events at once both kept.")




def _device_write_statements(recorder: Any) -> int:
    """Update statements sent to the ``devices`` collection (update and findAndModify commands)."""
    n = 0
    for c in recorder.writes():
        name = next(iter(c))
        if c.get(name) == "devices" and name == "update":
            n += len(c.get("updates") or [])
        elif c.get(name) == "devices" and name == "findAndModify":
            n += 1
    return n


@register
def _ex32_predict() -> Exercise:
    from labkit.exercises import Prediction

    return Prediction(
        id="32-predict-history-docs",
        lesson="32_unbounded_arrays",
        task="After the fix: how many event documents does the 10-newest query on the events collection examine "
             "for device:007?",
        checker=None,
        explain=lambda n: (f"Measured: {n}. The index {{deviceId: 1, at: -1}} holds device:007's events in "
                           "newest-first order, so the scan stops after the 10 keys it needs and fetches exactly "
                           "those 10: the cost no longer depends on how many events the device has recorded."),
        hints=["The events collection has an index on {deviceId: 1, at: -1}: where does the scan stop?"],
        solution_text="predict_history.predict(10)",
    )


@register
def _ex32() -> Exercise:
    return Exercise(
        id="32-capped-subset",
        lesson="32_unbounded_arrays",
        task="Write record_event(db, device_id, event): full history in db.events, 10 newest in recentEvents.",
        checker=_check_capped_subset,
        hints=["Two writes: `insert_one` into `db.events` (add `deviceId`), then `update_one` on the device.",
               "`{\"$push\": {\"recentEvents\": {\"$each\": [event], \"$slice\": -10}}}` keeps the last 10."],
        solution_text=(
            'def record_event(db, device_id, event):\n'
            '    db.events.insert_one({"deviceId": device_id, **event})\n'
            '    db.devices.update_one({"_id": device_id},\n'
            '                          {"$push": {"recentEvents": {"$each": [event], "$slice": -10}}})\n\n'
            'ex.check(record_event)'),
    )


# --- notebook 33 -------------------------------------------------------------------------------------------

_HOT = ("name", "price", "category", "rating", "thumbnailUrl")
_COLD = ("description", "specs", "history", "thumbnail")


def _cold_emptied(details: dict) -> str | None:
    """A message when product_details holds the cold fields but not their content (the task: no cold data lost)."""
    kinds = {"description": str, "specs": dict, "history": list, "thumbnail": str}
    for pid, d in sorted(details.items(), key=lambda kv: str(kv[0])):
        problems = [f for f, kind in kinds.items() if not isinstance(d.get(f), kind) or not d.get(f)]
        if problems:
            return (f"product_details {pid!r} has {', '.join(problems)} but not their content (empty, or not the "
                    "product's value): the task is to move the cold data, not to lose it. Copy the values first "
                    "(`$project` + `$out`, or `$merge`), then `$unset` them from products.")
    return None


def _lost_from_setup(products: list, details: dict) -> str | None:
    """Against the setup copy kept by ``ex.remember(practice, "products")``: a product gone, or a hot or cold
    value that no longer equals the original (None when nothing was lost, or no copy was kept)."""
    from labkit.exercises import remembered

    setup = remembered("products")
    if not setup:
        return None
    now = {p["_id"]: p for p in products}
    gone = [i for i in setup if i not in now]
    if gone:
        return (f"{len(gone)} of the {len(setup)} products of the setup are gone from practice.products (e.g. "
                f"{gone[0]!r}); a split moves fields, it never removes products.")
    extra = [i for i in now if i not in setup]
    if extra:
        return f"practice.products has {len(extra)} product(s) the setup did not have (e.g. {extra[0]!r})."
    for i, orig in setup.items():
        for f, v in orig.items():
            if f == "_id":
                continue
            where = details.get(i, {}) if f in _COLD else now[i]
            if where.get(f) != v:
                side = "product_details" if f in _COLD else "products"
                return (f"{side} {i!r}: `{f}` is not the value the setup had; copy each field as it is "
                        "(no cold data lost, no hot data changed).")
    return None


def _check_split_hot_cold(db: Any) -> str:
    if not _is_database(db):
        raise NotYet(f"pass the practice database (`practice`), not {type(db).__name__}.")
    products = list(db.products.find())
    if not products:
        raise NotYet("practice.products is empty; re-run the cell that creates it (and keep the hot fields there).")
    still_cold = sorted({f for p in products for f in _COLD if f in p})
    if still_cold:
        raise NotYet(f"practice.products still holds cold field(s) {still_cold}; `$unset` them once they are copied.")
    lost_hot = sorted({f for p in products for f in _HOT if f not in p})
    if lost_hot:
        raise NotYet(f"some products lost hot field(s) {lost_hot}; the listing needs them in practice.products.")
    details = {d["_id"]: d for d in db.product_details.find()}
    if not details:
        raise NotYet("practice.product_details is empty; copy the cold fields there first (before removing them!).")
    missing = [p["_id"] for p in products if p["_id"] not in details]
    if missing:
        raise NotYet(f"{len(missing)} product(s), e.g. {missing[0]!r}, have no product_details document with the "
                     "same `_id`; share `_id` so the sheet can read both by key.")
    incomplete = [i for i, d in details.items() if any(f not in d for f in _COLD)]
    if incomplete:
        raise NotYet(f"product_details {incomplete[0]!r} lacks some of {list(_COLD)}; copy all four cold fields.")
    emptied = _cold_emptied(details)
    if emptied:
        raise NotYet(emptied)
    hot_dup = sorted({f for d in details.values() for f in ("name", "price") if f in d})
    if hot_dup:
        raise NotYet(f"product_details also copies {hot_dup}; keep only the cold fields there (one owner per field).")
    lost = _lost_from_setup(products, details)
    if lost:
        raise NotYet(lost)
    hot = db.command("collStats", "products")["avgObjSize"]
    cold = db.command("collStats", "product_details")["avgObjSize"]
    return f"products avgObjSize is now {hot:,} bytes; the {cold:,}-byte cold part is read only by the sheet."


@register
def _ex33_predict() -> Exercise:
    from labkit.exercises import Prediction

    return Prediction(
        id="33-predict-projection-docs",
        lesson="33_bloated_documents",
        task="The listing (20 products, 4 fields projected): how many whole documents does the server examine?",
        checker=None,
        explain=lambda n: (f"Measured: {n}. A projection trims what is sent back, not what is read: the FETCH "
                           "stage loads each of the 20 whole documents (cold fields included) into the cache before "
                           "projecting 4 fields out of it. Only a covered query or a smaller document reads less."),
        hints=["Does a projection change which documents the FETCH stage loads?"],
        solution_text="predict_projection.predict(20)",
    )


@register
def _ex33() -> Exercise:
    return Exercise(
        id="33-split-hot-cold",
        lesson="33_bloated_documents",
        task="Split practice.products into hot fields (products) and cold fields (product_details, same _id).",
        checker=_check_split_hot_cold,
        hints=["Copy first, delete second: `$project` the cold fields and `$out` them to product_details.",
               "Then `update_many({}, {\"$unset\": {\"description\": \"\", \"specs\": \"\", ...}})`."],
        solution_text=(
            'practice.products.aggregate([{"$project": {f: 1 for f in COLD}}, {"$out": "product_details"}])\n'
            'practice.products.update_many({}, {"$unset": {f: "" for f in COLD}})\nex.check(practice)'),
    )


_PROFILE_HOT = ("name", "avatarUrl", "plan")


def _profiles_33() -> list[dict]:
    import datetime as dt

    return [{"_id": f"user:{i:03d}", "name": f"User {i}", "avatarUrl": f"https://img.example/u{i}.png",
             "plan": ("free", "pro", "team")[i % 3], "email": f"user{i}@example.com",
             "bio": f"Bio of user {i}. " * 40,
             "settings": {f"option{k}": (i * k) % 7 for k in range(40)},
             "loginHistory": [dt.datetime(2026, 1, 1) + dt.timedelta(hours=i + 7 * k) for k in range(50)]}
            for i in range(1, 21)]


def _check_save_profile(args: Any) -> str:
    import bson

    from labkit.exercises import observe

    db, save_user = args if isinstance(args, tuple) and len(args) == 2 and _is_function(args[1]) else (None, None)
    if save_user is None:
        raise NotYet("call it with the practice database and your function: `ex_profile.check(practice, save_user)`.")
    originals = _profiles_33()
    cold = sorted(set(originals[0]) - set(_PROFILE_HOT) - {"_id"})
    with observe.sandbox("33-save-profile", db) as box:
        worst = 0
        for user in originals:
            box.recorder.clear()
            observe.call_learner(save_user, box.db, bson.decode(bson.encode(user)))  # a deep copy
            worst = max(worst, box.recorder.write_statements())
        users = {u["_id"]: u for u in box.db.users.find()}
        details = {d["_id"]: d for d in box.db.user_details.find()}
        header = box.db.users.find_one({"_id": "user:001"}) or {}
    if len(users) != len(originals):
        raise NotYet(f"db.users holds {len(users)} documents after {len(originals)} saves: insert one per user, "
                     "with the user's `_id`.")
    still_cold = sorted({f for u in users.values() for f in cold if f in u})
    if still_cold:
        raise NotYet(f"db.users still holds cold field(s) {still_cold}: every page header would read them into "
                     "the cache. Keep only _id and the header's fields (name, avatarUrl, plan) in users.")
    lost_hot = sorted({f for u in users.values() for f in _PROFILE_HOT if f not in u})
    if lost_hot:
        raise NotYet(f"db.users lacks hot field(s) {lost_hot}: the header shows them on every page, so they stay "
                     "in the small document.")
    if not details:
        raise NotYet("db.user_details is empty: the cold fields go there (no cold data lost).")
    unmatched = [u for u in users if u not in details]
    if unmatched:
        raise NotYet(f"{unmatched[0]} has no user_details document with the same `_id`: share the `_id`, so the "
                     "settings page reads both by key.")
    for orig in originals:
        d = details[orig["_id"]]
        bad = [f for f in cold if d.get(f) != orig[f]]
        if bad:
            raise NotYet(f"user_details of {orig['_id']} has {bad[0]!r} missing, emptied or changed: the split must "
                         "keep every cold value as it was (no cold data lost).")
    dup = sorted({f for d in details.values() for f in _PROFILE_HOT if f in d})
    if dup:
        raise NotYet(f"user_details also holds hot field(s) {dup}: one owner per field, or the two copies drift "
                     "apart on the next rename. Keep them only in users.")
    if worst > 2:
        raise NotYet(f"one save sent {worst} write statements: two inserts are enough (users and user_details).")
    return (f"20 users saved in {worst} writes each; the header document is {len(bson.encode(header))} bytes and "
            "every cold field is kept, unchanged, in user_details under the same _id.")


@register
def _ex33_profile() -> Exercise:
    return Exercise(
        id="33-save-profile-split",
        lesson="33_bloated_documents",
        task="User profiles: write save_user(db, user) that stores _id, name, avatarUrl and plan in db.users and "
             "every other field in db.user_details under the same _id, losing nothing.",
        checker=_check_save_profile,
        hints=["Split the dict in Python: `hot = {k: user[k] for k in (\"_id\", *HOT)}`, the rest is cold.",
               "`db.users.insert_one(hot)`; `db.user_details.insert_one({\"_id\": user[\"_id\"], **cold})`."],
        solution_text=(
            "HOT = (\"name\", \"avatarUrl\", \"plan\")\n\n\n"
            "def save_user(db, user):\n"
            "    db.users.insert_one({k: user[k] for k in (\"_id\", *HOT)})\n"
            "    db.user_details.insert_one({k: v for k, v in user.items() if k not in HOT})\n\n\n"
            "ex_profile.check(practice, save_user)"
        ),
    )


# --- notebook 34 -------------------------------------------------------------------------------------------

def _check_merge_collections(db: Any) -> str:
    if not _is_database(db):
        raise NotYet(f"pass the practice database (`practice`), not {type(db).__name__}.")
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
    setups = {n.removeprefix("events_"): _setup_of(n) for n in _setup_names() if n.startswith("events_")}
    if setups:
        extra = sorted({str(d.get("tenantId")) for d in docs} - set(setups))
        if extra:
            raise NotYet(f"events holds documents of tenant(s) {extra}, which had no events_<tenant> collection in "
                         "the setup; re-run the practice setup cell and merge again.")
        for tenant, setup in sorted(setups.items()):
            mine = {d["_id"]: d for d in docs if d.get("tenantId") == tenant}
            problem = (_gone_or_added(setup, mine, "documents", f"events for tenant {tenant!r} (from events_{tenant})",
                                      "a merge copies every document of every tenant.")
                       or _changed_field(setup, mine, "events document", skip=("tenantId",)))
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
    stages = [s.get("stage") for s in _stages(explain["queryPlanner"]["winningPlan"])]
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


@register
def _ex34() -> Exercise:
    return Exercise(
        id="34-merge-collections",
        lesson="34_massive_collections",
        task="Merge the events_<tenant> collections into one `events` collection with tenantId, indexes and a TTL.",
        checker=_check_merge_collections,
        hints=["Loop over `practice.list_collection_names()`; for each events_<tenant>, insert its documents with "
               "`tenantId` added, then drop it.",
               "Indexes: `[(\"tenantId\", 1), (\"at\", -1)]`, and `[(\"at\", 1)]` with `expireAfterSeconds=30 * 86_400`."],
        solution_text=(
            'for name in sorted(practice.list_collection_names()):\n'
            '    if name.startswith("events_"):\n'
            '        tenant = name.removeprefix("events_")\n'
            '        practice.events.insert_many([d | {"tenantId": tenant} for d in practice[name].find()])\n'
            '        practice.drop_collection(name)\n'
            'practice.events.create_index([("tenantId", 1), ("at", -1)])\n'
            'practice.events.create_index([("at", 1)], expireAfterSeconds=30 * 86_400)\nex.check(practice)'),
    )


def _explain_ttl_deleted(measured: Any) -> str:
    return (f"{measured} orders. A TTL index deletes a document once its date is older than now - "
            "expireAfterSeconds: at 2026-11-20 08:00 with 15 days that is 2026-11-05 08:00, so the days 1-4 "
            "November go (12 orders per tenant and day) and 5 November's first order, at exactly 08:00, stays "
            "(the date must be strictly older). Whole days go at once with no collection dropped.")


@register
def _ex34_predict() -> Exercise:
    return Prediction(
        id="34-predict-ttl",
        lesson="34_massive_collections",
        task="Predict: one TTL pass at 2026-11-20 08:00 over `orders` (TTL index on createdAt, 15 days; 12 orders "
             "per tenant per day from 1 to 15 November, the first of each day at 08:00). How many orders does "
             "it delete?",
        checker=None,
        hints=["The cut-off is now - expireAfterSeconds; count the whole days before it, per tenant."],
        solution_text="ex_ttl.predict(4 * len(TENANTS) * 12)",
        explain=_explain_ttl_deleted,
    )


def _sessions_34(now: Any) -> list[dict]:
    import datetime as dt
    ago = [200, 50, 40, 20, 10, 5]  # minutes since last activity
    return [{"_id": f"s{i}", "userId": f"u{i}", "createdAt": now - dt.timedelta(hours=3),
             "lastSeen": now - dt.timedelta(minutes=m)} for i, m in enumerate(ago)]


def _check_ttl_sessions(args: Any) -> str:
    import datetime as dt

    from labkit.engine.catalog.ttl import ttl_pass
    from labkit.exercises import observe

    if not (isinstance(args, tuple) and len(args) == 2 and _is_function(args[0]) and _is_function(args[1])):
        raise NotYet("call it with your two functions: `ex.check(setup_sessions, touch)`.")
    setup_sessions, touch = args
    # Always a private embedded engine: a server's TTL monitor cannot be run at a chosen time.
    box = observe.sandbox("34-ttl-sessions", None)
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


@register
def _ex34_sessions() -> Exercise:
    return Exercise(
        id="34-ttl-sessions",
        lesson="34_massive_collections",
        task="An app keeps login sessions in one collection per day and drops old days. Instead, write "
             "setup_sessions(db) so that a session in `sessions` ({_id, userId, createdAt, lastSeen}) expires 30 "
             "minutes after its last activity, and touch(coll, session_id, now) that records activity.",
        checker=_check_ttl_sessions,
        hints=["Expiry counts from the field the TTL index is on: which date says 'last activity'?",
               "`db.sessions.create_index(\"lastSeen\", expireAfterSeconds=30 * 60)`; touch is one "
               "`update_one({\"_id\": session_id}, {\"$set\": {\"lastSeen\": now}})`."],
        solution_text=(
            "def setup_sessions(db):\n"
            "    db.sessions.create_index(\"lastSeen\", expireAfterSeconds=30 * 60)\n\n\n"
            "def touch(coll, session_id, now):\n"
            "    coll.update_one({\"_id\": session_id}, {\"$set\": {\"lastSeen\": now}})\n\n\n"
            "ex_sessions.check(setup_sessions, touch)"),
    )


# --- notebook 35 -------------------------------------------------------------------------------------------

_STATUSES_35 = ["new", "paid", "shipped", "delivered"]


def _order_35(i: int) -> dict:
    """Lesson 35's order generator (the same rule as the notebook), for pristine data."""
    import datetime as dt
    return {"_id": f"order:{i:05d}", "customerId": f"cust:{(i * 7919) % 400:03d}", "status": _STATUSES_35[i % 4],
            "region": f"region:{(i * 31) % 6}", "sku": f"sku:{(i * 13) % 250:03d}",
            "total": round((i * 37) % 500 + 0.99, 2),
            "createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(minutes=53 * i)}


def _check_drop_unneeded(orders: Any) -> str:
    from labkit.exercises import observe

    if not _is_collection(orders):
        raise NotYet(f"pass the collection (`practice.orders`), not {type(orders).__name__}.")
    # The learner's indexes on pristine orders (the lesson's 1,500), so deleting orders cannot hide a cost.
    with observe.sandbox("35-drop-unneeded", orders) as box:
        box.db.orders.insert_many([_order_35(i) for i in range(1500)])
        observe.copy_indexes(orders, box.db.orders)
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
            if not any("IXSCAN" in n for n in fig.stages):
                raise NotYet(f"the {label} query now runs {fig.stages[-1] if fig.stages else '?'}: you dropped the "
                             "index it needs.")
            if fig.blocking_sort:
                raise NotYet(f"the {label} query has a blocking SORT: keep the compound index that also gives the "
                             "order.")
            if fig.keys_examined > fig.returned + 1 or fig.docs_examined > fig.returned:
                raise NotYet(f"the {label} query still uses an index, but it reads {fig.keys_examined} keys and "
                             f"{fig.docs_examined} documents for {fig.returned} results ({fig.index}): you dropped "
                             "the index that matches it exactly. No COLLSCAN is not the same as cheap.")
            used |= {st.get("indexName") for st in _stages(explain["queryPlanner"]["winningPlan"])
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


@register
def _ex35() -> Exercise:
    return Exercise(
        id="35-drop-unneeded",
        lesson="35_unnecessary_indexes",
        task="Drop every index of practice.orders that the three workload queries do not need.",
        checker=_check_drop_unneeded,
        hints=["Look at the lesson's index report: which indexes served no query, and which is a prefix of another?",
               "Three queries, so at most three indexes besides `_id_`: for each query, the one whose keys are its "
               "equality fields, then its sort. Prefixes of those and indexes no query uses go."],
        solution_text=('for name in ["customerId_1", "status_1", "total_1", "createdAt_1"]:\n'
                       '    practice.orders.drop_index(name)\nex.check(practice.orders)'),
    )


@register
def _ex35_predict() -> Exercise:
    return Prediction(
        id="35-predict-hidden-collscans",
        lesson="35_unnecessary_indexes",
        task="With every drop candidate hidden, how many of the three query shapes fall back to a COLLSCAN?",
        checker=None,
        choices=(0, 1, 2, 3),
        explain=lambda n: (f"Measured: {n}. Every drop candidate is either unused by the workload or a prefix of an "
                           "index that is kept, so each query shape still finds the index it used before: hiding "
                           "them changes no plan, which is what makes them safe to drop."
                           if n == 0 else f"Measured: {n} shape(s) lost their index: un-hide before dropping."),
        hints=["Which index did each query shape use before (the `plans_by_shape()` table)? Is any of them hidden?"],
        solution_text="predict_hidden.predict(0)",
    )


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
    coll.create_index([("assignee", 1), ("status", 1), ("priority", -1)])
    coll.create_index([("customerId", 1)])
    coll.create_index([("status", 1)])
    coll.create_index([("priority", 1)])


def _ticket_queries_35(coll: Any) -> dict[str, Any]:
    return {"agent queue": coll.find({"assignee": "agent:07", "status": "open"}).sort("priority", -1).limit(10),
            "a customer's tickets": coll.find({"customerId": "cust:042"})}


def _check_prune_tickets(prune: Any) -> str:
    from labkit.exercises import observe

    if not _is_function(prune):
        raise NotYet(f"pass your function `prune` itself (no parentheses), not {type(prune).__name__}.")
    with observe.sandbox("35-prune-tickets") as box:
        coll = box.db.tickets
        _tickets_35(coll)
        for cursor in _ticket_queries_35(coll).values():  # the workload has run: $indexStats has counts
            list(cursor)
        before = coll.index_information()
        prune(coll)
        if coll.count_documents({}) != 3000:
            raise NotYet(f"after prune the collection holds {coll.count_documents({})} of 3000 tickets: prune only "
                         "indexes, never documents.")
        infos = coll.index_information()
        gone = set(before) - set(infos)
        for name, why in (("ref_1", "enforces unique ticket references (a duplicate `ref` would be accepted)"),
                          ("closedAt_1", "is a TTL index: it deletes solved tickets five years after they close")):
            if name in gone:
                raise NotYet(f"you dropped {name}: no query uses it, but it {why}. `$indexStats` counts query "
                             "use only; a unique or TTL index works on every write. Keep it.")
        for label, cursor in _ticket_queries_35(coll).items():
            fig = observe.plan_figures(cursor.explain())
            if fig.collscan:
                raise NotYet(f"the {label} query now runs a COLLSCAN: you dropped the index it needs.")
            if fig.blocking_sort:
                raise NotYet(f"the {label} query now has a blocking SORT ({fig.index}): keep the compound index "
                             "that also gives the priority order.")
            if fig.keys_examined > fig.returned + 1 or fig.docs_examined > fig.returned:
                raise NotYet(f"the {label} query reads {fig.keys_examined} keys and {fig.docs_examined} documents "
                             f"for {fig.returned} results through {fig.index}: keep the index that matches it "
                             "exactly.")
        for short, long_ in observe.redundant_prefixes(coll):
            raise NotYet(f"{short} is still there, and it is a prefix of {long_}: the longer index serves every "
                         "query the shorter one could. Drop it.")
        unused = sorted(n for n in ("status_1", "priority_1") if n in infos)
        if unused:
            raise NotYet(f"{unused} serve no query of the workload (their `$indexStats` ops are 0) and enforce "
                         "nothing: each costs a write per insert. Drop them.")
    return (f"{len(infos)} indexes kept ({', '.join(sorted(infos))}): the two queries at their exact cost, the "
            "unique reference and the TTL expiry kept, the prefix and the unused indexes gone.")


@register
def _ex35_prune() -> Exercise:
    return Exercise(
        id="35-prune-tickets",
        lesson="35_unnecessary_indexes",
        task="Write prune(tickets): drop the indexes a support desk's two queries do not need, without losing "
             "what an index enforces.",
        checker=_check_prune_tickets,
        hints=["Read `$indexStats` after the workload ran (ops 0 = unused) and compare key patterns for prefixes; "
               "then look at each index's options before dropping it.",
               "A unique index and a TTL index do work that no query counter shows: keep them whatever "
               "`$indexStats` says. The rest: a prefix of a kept compound index, or 0 ops, goes."],
        solution_text=(
            'def prune(tickets):\n'
            '    used = {s["name"] for s in tickets.aggregate([{"$indexStats": {}}]) if s["accesses"]["ops"] > 0}\n'
            '    infos = tickets.index_information()\n'
            '    for name, info in infos.items():\n'
            '        if name == "_id_" or info.get("unique") or "expireAfterSeconds" in info:\n'
            '            continue  # constraints work on writes; no query counter shows it\n'
            '        keys = list(info["key"])\n'
            '        prefix = any(len(o["key"]) > len(keys) and list(o["key"])[:len(keys)] == keys\n'
            '                     for other, o in infos.items() if other != name)\n'
            '        if prefix or name not in used:\n'
            '            tickets.drop_index(name)\n\n'
            'ex_prune.check(prune)'),
    )


# --- notebook 36 -------------------------------------------------------------------------------------------

def _check_embed_context(db: Any) -> str:
    if not _is_database(db):
        raise NotYet(f"pass the practice database (`practice`), not {type(db).__name__}.")
    users = list(db.users.find().sort("_id", 1))
    if not users:
        raise NotYet("practice.users is empty; re-run the practice setup cell.")
    for field, kind in (("profile", "subdocument"), ("settings", "subdocument")):
        if any(isinstance(u.get(field), list) for u in users):
            raise NotYet(f"`{field}` is an array (what `$lookup` returns); it is one-to-one, so make it a "
                         f"{kind}, e.g. with `$first`.")
        missing = [u["_id"] for u in users if not isinstance(u.get(field), dict) or not u[field]]
        if missing:
            raise NotYet(f"{len(missing)} user(s), e.g. {missing[0]!r}, have no embedded `{field}` {kind}.")
    if any("displayName" not in u["profile"] for u in users) or any("theme" not in u["settings"] for u in users):
        raise NotYet("the embedded profile needs `displayName` and the settings need `theme`.")
    bad = [u["_id"] for u in users if not isinstance(u.get("addresses"), list)
           or not 1 <= len(u["addresses"]) <= 3 or not all(isinstance(a, dict) and "city" in a for a in u["addresses"])]
    if bad:
        raise NotYet(f"{len(bad)} user(s), e.g. {bad[0]!r}, lack an `addresses` array of 1 to 3 {{label, city}} objects.")
    lost = _context_vs_setup({u["_id"]: u for u in users})
    if lost:
        raise NotYet(lost)
    left = sorted({"user_profiles", "user_addresses", "user_settings"} & set(db.list_collection_names()))
    if left:
        raise NotYet(f"{left} still exist; once reads use the embedded document, drop them so nobody writes there.")
    sample = users[len(users) // 2]["_id"]
    stats = db.users.find({"_id": sample}).explain()["executionStats"]
    return (f"the request context for {sample} is one round trip examining {stats['totalDocsExamined']} document, "
            "and a profile + settings change is one atomic update.")


def _context_vs_setup(now: dict) -> str | None:
    """Against the setup copies (``ex.remember(practice, "users", "user_profiles", ...)``): no user gone or
    changed, and each embedded profile, settings and address list holds what the side collection had."""
    users = _setup_of("users")
    if not users:
        return None
    problem = (_gone_or_added(users, now, "users", "practice.users",
                              "embedding adds fields to each user, it never removes users.")
               or _changed_field(users, now, "user", skip=("profile", "settings", "addresses")))
    if problem:
        return problem
    added = _added_fields(users, now, ("profile", "settings", "addresses"))
    if added:
        return (f"user {added[0]!r} also got {added[1]}: embed only `profile`, `settings` and `addresses` (the "
                "`$lookup` arrays are working space; `$project` them away before `$merge`).")
    for coll, field in (("user_profiles", "profile"), ("user_settings", "settings")):
        for side in _setup_of(coll).values():
            user = now.get(side.get("userId"))
            if user is None:
                continue
            for f, v in side.items():
                if f in ("_id", "userId"):
                    continue
                if f not in user[field]:
                    return (f"{user['_id']!r}: the embedded `{field}` lacks `{f}`, which its {coll} document had; "
                            "embedding moves the data, it does not lose any.")
                if user[field][f] != v:
                    return (f"{user['_id']!r}: `{field}.{f}` is {user[field][f]!r}, but its {coll} document had "
                            f"{v!r}; copy each value as it is.")
    addresses: dict = {}
    for a in _setup_of("user_addresses").values():
        addresses.setdefault(a.get("userId"), []).append((_hashable(a.get("label")), _hashable(a.get("city"))))
    for uid, want in sorted(addresses.items(), key=lambda kv: str(kv[0])):
        if uid not in now:
            continue
        got = [(_hashable(a.get("label")), _hashable(a.get("city"))) for a in now[uid]["addresses"]]
        if sorted(got, key=repr) != sorted(want, key=repr):
            return (f"{uid!r} has {len(got)} embedded address(es) {sorted(got, key=repr)}, but user_addresses had "
                    f"{len(want)}: {sorted(want, key=repr)}; embed every address with its label and city.")
    return None


@register
def _ex36() -> Exercise:
    return Exercise(
        id="36-embed-context",
        lesson="36_separate_data",
        task="Embed profile, settings and addresses into practice.users and drop the three side collections.",
        checker=_check_embed_context,
        hints=["Reuse the lesson's `embed_stages`: three $lookup stages, a $project with $first and $map, "
               "and $merge back into users.",
               "`practice.users.aggregate(embed_stages)`, then drop the three side collections."],
        solution_text=(
            'practice.users.aggregate(embed_stages)\n'
            'for name in ("user_profiles", "user_addresses", "user_settings"):\n'
            '    practice.drop_collection(name)\nex.check(practice)'),
    )


@register
def _ex36_predict() -> Exercise:
    return Prediction(
        id="36-predict-round-trips",
        lesson="36_separate_data",
        task="How many round trips does one call of `load_context_split` send to the server?",
        checker=None,
        explain=lambda n: (f"Measured: {n} round trips, one command per collection: users, user_profiles, "
                           "user_addresses, user_settings. Each waits for the one before, so a page pays the "
                           "network latency that many times; embedded, it is one."),
        hints=["Count the find / find_one calls in the function: each is one command."],
        solution_text="predict_trips.predict(4)",
    )


_GENRES_36 = ("poetry", "travel", "history", "cooking")


def _books_36(db: Any) -> dict[str, dict]:
    """Pristine books in three collections (one-to-one stock, one-to-few authors); returns what each book is."""
    books, stock, authors, want = [], [], [], {}
    for b in range(240):
        bid = f"book:{b:04d}"
        names = [f"Author {(b * 3 + k) % 97}" for k in range(1 + b % 3)]
        books.append({"_id": bid, "title": f"Title {b}", "genre": _GENRES_36[b % 4]})
        stock.append({"_id": f"stock:{b:04d}", "bookId": bid, "inStock": (b * 7) % 40, "warehouse": f"W{b % 5}"})
        authors += [{"_id": f"ba:{b:04d}:{k}", "bookId": bid, "name": n, "role": ["author", "editor", "translator"][k]}
                    for k, n in enumerate(names)]
        want[bid] = {"title": f"Title {b}", "inStock": (b * 7) % 40, "warehouse": f"W{b % 5}", "authors": names}
    db.books.insert_many(books)
    db.book_stock.insert_many(stock[::-1])  # not in _id order: a join must match by bookId
    db.book_authors.insert_many(authors[::-1])
    db.book_stock.create_index([("bookId", 1)])
    db.book_authors.create_index([("bookId", 1)])
    return want


def _check_embed_books(args: Any) -> str:
    from labkit.exercises import observe

    if not (isinstance(args, tuple) and len(args) == 2 and _is_function(args[0]) and _is_function(args[1])):
        raise NotYet("call it with your two functions: `ex.check(migrate, load_book)`.")
    migrate, load_book = args
    with observe.sandbox("36-embed-books") as box:
        db = box.db
        want = _books_36(db)
        migrate(db)
        books = {b["_id"]: b for b in db.books.find()}
        if len(books) != len(want):
            raise NotYet(f"db.books holds {len(books)} of {len(want)} books after migrate: merge into the existing "
                         "books (`whenMatched: \"merge\"`), do not replace the collection.")
        for bid, w in want.items():
            b = books[bid]
            if b.get("title") != w["title"]:
                raise NotYet(f"{bid} lost its title: the migration replaced the book instead of adding to it "
                             "(`$merge` with `whenMatched: \"merge\"` keeps the existing fields).")
            st = b.get("stock")
            if isinstance(st, list):
                raise NotYet(f"{bid}'s `stock` is an array (what `$lookup` returns): stock is one-to-one, so embed "
                             "it as a subdocument (`$first`).")
            if not isinstance(st, dict) or (st.get("inStock"), st.get("warehouse")) != (w["inStock"], w["warehouse"]):
                raise NotYet(f"{bid} should embed stock {{inStock: {w['inStock']}, warehouse: {w['warehouse']!r}}}, "
                             f"it has {st!r}.")
            au = b.get("authors")
            names = [a.get("name") for a in au if isinstance(a, dict)] if isinstance(au, list) else None
            if names is None or sorted(map(str, names)) != sorted(w["authors"]):
                raise NotYet(f"{bid} has {len(w['authors'])} author(s) {w['authors']}; its embedded `authors` is "
                             f"{au!r}. Embed every author as {{name, role}} in an array (one-to-few).")
            if any(not isinstance(a, dict) or "role" not in a or "bookId" in a or "_id" in a for a in au):
                raise NotYet(f"{bid}'s authors should be {{name, role}} objects; the `bookId` back-reference (and "
                             "the side document's `_id`) have no place inside the book.")
        left = sorted({"book_stock", "book_authors"} & set(db.list_collection_names()))
        if left:
            raise NotYet(f"{left} still exist after migrate: once reads use the embedded document, drop them, so "
                         "nobody writes to a copy that is no longer read.")
        box.recorder.clear()
        doc = load_book(db, "book:0041")
        trips = box.recorder.round_trips()
        names = box.recorder.names()
    if not isinstance(doc, dict) or doc.get("_id") != "book:0041":
        raise NotYet(f"load_book(db, 'book:0041') returned {type(doc).__name__}, not the book document.")
    if trips != 1:
        raise NotYet(f"load_book sent {trips} commands ({names}): with everything embedded, one find of the book is "
                     "the whole request.")
    if not isinstance(doc.get("stock"), dict) or not isinstance(doc.get("authors"), list):
        raise NotYet("load_book's document has no embedded stock and authors: do not project them away.")
    return (f"{len(want)} books embed their stock and authors, the side collections are gone, and loading a book "
            "is 1 round trip.")


@register
def _ex36_books() -> Exercise:
    return Exercise(
        id="36-embed-books",
        lesson="36_separate_data",
        task="Write migrate(db) embedding book_stock (one-to-one) and book_authors (one-to-few) into books, and "
             "load_book(db, book_id) reading a book in one round trip.",
        checker=_check_embed_books,
        hints=["The lesson's `embed_stages`, re-aimed: two `$lookup` stages on `bookId`, a `$project` with `$first` "
               "for stock and `$map` for authors, `$merge` back into books.",
               "`whenMatched: \"merge\"` keeps title and genre; drop `book_stock` and `book_authors` after the "
               "`$merge`; `load_book` is one `find_one`."],
        solution_text=(
            'def migrate(db):\n'
            '    db.books.aggregate([\n'
            '        {"$lookup": {"from": "book_stock", "localField": "_id", "foreignField": "bookId", "as": "s"}},\n'
            '        {"$lookup": {"from": "book_authors", "localField": "_id", "foreignField": "bookId", "as": "a"}},\n'
            '        {"$project": {"stock": {"inStock": {"$first": "$s.inStock"}, "warehouse": {"$first": "$s.warehouse"}},\n'
            '                      "authors": {"$map": {"input": "$a", "as": "x",\n'
            '                                           "in": {"name": "$$x.name", "role": "$$x.role"}}}}},\n'
            '        {"$merge": {"into": "books", "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}}])\n'
            '    db.drop_collection("book_stock")\n'
            '    db.drop_collection("book_authors")\n\n\n'
            'def load_book(db, book_id):\n'
            '    return db.books.find_one({"_id": book_id})\n\n\n'
            'ex_books.check(migrate, load_book)'),
    )


# --- notebook 37 -------------------------------------------------------------------------------------------

def _has_regex(value: Any) -> bool:
    import re

    if isinstance(value, re.Pattern) or type(value).__name__ == "Regex":
        return True
    if isinstance(value, dict):
        return any(k == "$regex" or _has_regex(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_regex(v) for v in value)
    return False


def _check_login_filter(args: Any) -> str:
    members, login_filter = _pair(args, "`ex.check(practice.members, login_filter)`")
    if not _is_collection(members):
        raise NotYet(f"the first argument should be the collection `practice.members`, not {type(members).__name__}.")
    if not _is_function(login_filter):
        raise NotYet("the second argument should be your function `login_filter` (no parentheses).")
    sample = list(members.find().sort("_id", 1).limit(60))[::20]
    if not sample:
        raise NotYet("practice.members is empty; re-run the practice setup cell.")
    total = members.count_documents({})
    for doc in sample:
        email = doc.get("email")
        if not isinstance(email, str):
            raise NotYet(f"member {doc.get('_id')!r} has no `email` string (it has {email!r}): the normalized field "
                         "is built from it. Re-run the practice setup cell.")
        for variant in (email, email.upper(), email.lower(), email.swapcase()):
            filt = login_filter(variant)
            if not isinstance(filt, dict):
                raise NotYet(f"login_filter({variant!r}) returned {type(filt).__name__}; return a filter document.")
            if _has_regex(filt):
                raise NotYet("the filter uses a regular expression: with the `i` option no index range is possible, "
                             "so every key is examined. Query a normalized field with plain equality instead.")
            fields = [k for k in filt if not k.startswith("$")]
            if fields:
                with_field = members.count_documents({fields[0]: {"$exists": True}})
                if with_field < total:
                    raise NotYet(f"only {with_field} of {total} members have `{fields[0]}`; set it on every member "
                                 "(update_many with a pipeline and `$toLower`).")
            found = [d["_id"] for d in members.find(filt)]
            if found != [doc["_id"]]:
                raise NotYet(f"login_filter({variant!r}) found {found[:3]}{'...' if len(found) > 3 else ''}, "
                             f"expected only {doc['_id']!r}. Normalize the input the same way as the stored field.")
            explain = members.find(filt).explain()
            names = [s.get("stage") for s in _stages(explain["queryPlanner"]["winningPlan"])]
            keys = explain["executionStats"]["totalKeysExamined"]
            if not any("IXSCAN" in str(n) for n in names) or keys > 2:
                raise NotYet(f"the right member comes back, but the plan is {names} with {keys} keys examined: "
                             "index the normalized field.")
    return "every spelling finds exactly one member through one index key."


@register
def _ex37() -> Exercise:
    return Exercise(
        id="37-login-filter",
        lesson="37_case_insensitive",
        task="Make the case-insensitive login use an index: a normalized field, its index, and login_filter(email).",
        checker=_check_login_filter,
        hints=["`update_many({}, [{\"$set\": {\"emailLower\": {\"$toLower\": \"$email\"}}}])` adds the field.",
               "Index `emailLower`, and have login_filter return `{\"emailLower\": email.lower()}`."],
        solution_text=(
            'practice.members.update_many({}, [{"$set": {"emailLower": {"$toLower": "$email"}}}])\n'
            'practice.members.create_index([("emailLower", 1)], unique=True)\n\n'
            'def login_filter(email):\n    return {"emailLower": email.lower()}\n\n'
            'ex.check(practice.members, login_filter)'),
    )


@register
def _ex37_predict() -> Exercise:
    return Prediction(
        id="37-predict-regex-keys",
        lesson="37_case_insensitive",
        task="How many index keys does `/^sam$/i` examine on the `username` index of the 5,000 accounts?",
        checker=None,
        tolerance=0.05,
        explain=lambda n: (f"Measured: {n} keys examined for 3 accounts returned. With the `i` option the server "
                           "cannot turn the pattern into a range of the index (\"sam\", \"Sam\" and \"SAM\" are far "
                           "apart in binary order), so it reads every key and tests the pattern on each."),
        hints=["Can a case-insensitive pattern become one range of a binary-ordered index?"],
        solution_text="predict_keys.predict(5000)",
    )


_TEAMS_37 = ("Night Owls", "Red Rockets", "Blue Herons", "Quiet Foxes", "Iron Bees", "Sea Lions")


def _team_name_37(i: int) -> str:
    base = _TEAMS_37[i % len(_TEAMS_37)]
    return f"{[base, base.upper(), base.lower()][i % 3]} {i}"


def _check_team_names(args: Any) -> str:
    from pymongo.errors import DuplicateKeyError

    from labkit.exercises import observe

    if not (isinstance(args, tuple) and len(args) == 3 and all(_is_function(a) for a in args)):
        raise NotYet("call it with your three functions: `ex.check(prepare, add_team, find_team)`.")
    prepare, add_team, find_team = args
    with observe.sandbox("37-team-names") as box:
        teams = box.db.teams
        teams.insert_many([{"_id": f"team:{i:04d}", "name": _team_name_37(i)} for i in range(1200)])
        prepare(teams)
        if teams.count_documents({}) != 1200:
            raise NotYet(f"after prepare the collection holds {teams.count_documents({})} of 1200 teams: prepare "
                         "adds what the lookup needs, it removes nothing.")
        add_team(teams, "Paper Planes")
        try:
            add_team(teams, "PAPER planes")
        except DuplicateKeyError:
            pass
        else:
            same = teams.count_documents({"name": {"$in": ["Paper Planes", "PAPER planes"]}})
            raise NotYet(f"add_team accepted \"PAPER planes\" next to \"Paper Planes\" ({same} teams now): sign-up "
                         "must refuse a name that differs only in case. A unique index that ignores case (a "
                         "collation at strength 2, or a unique index on a lower-cased copy) makes the insert "
                         "fail with a duplicate key error.")
        try:
            add_team(teams, "Papér Planes")
        except DuplicateKeyError:
            raise NotYet("add_team refused \"Papér Planes\" because \"Paper Planes\" exists: ignoring case is "
                         "strength 2; strength 1 also ignores accents, which the task does not ask for.") from None
        for i in (7, 500, 1013):
            name = _team_name_37(i)
            for spelled in (name, name.upper(), name.lower(), name.swapcase()):
                box.recorder.clear()
                cursor = find_team(teams, spelled)
                if not all(callable(getattr(type(cursor), m, None)) for m in ("explain", "clone", "__iter__")):
                    raise NotYet(f"find_team should return the cursor of a find (no list(), no find_one), got "
                                 f"{type(cursor).__name__}; the checker explains it.")
                found = [d["_id"] for d in cursor.clone()]
                finds = [c for c in box.recorder.commands if "find" in c]
                if any(_has_regex(c.get("filter")) for c in finds):
                    raise NotYet("find_team uses a regular expression: with the `i` option no index range exists, "
                                 "so every key is read. Use equality, with the index's collation or on a "
                                 "lower-cased field.")
                if found != [f"team:{i:04d}"]:
                    raise NotYet(f"find_team(teams, {spelled!r}) found {found[:3]}, expected only team:{i:04d}. "
                                 "A collation index is used (and the comparison ignores case) only when the query "
                                 "names the same collation.")
                fig = observe.plan_figures(cursor.clone().explain())
                if fig.collscan or fig.keys_examined > 2:
                    raise NotYet(f"the right team comes back for {spelled!r}, but through {list(fig.stages)} with "
                                 f"{fig.keys_examined} keys examined: a collation index serves a query only when "
                                 "the query names the same collation (or query the indexed lower-case field).")
    return ("case variants are refused at sign-up by a unique index, accents still count, and every spelling "
            "finds its team through one index key.")


@register
def _ex37_teams() -> Exercise:
    return Exercise(
        id="37-team-names",
        lesson="37_case_insensitive",
        task="Team names are unique regardless of case: write prepare(teams), add_team(teams, name) and "
             "find_team(teams, name) (a cursor), each lookup one index key.",
        checker=_check_team_names,
        hints=["One unique index that ignores case does both jobs: it refuses \"PAPER planes\" and serves the lookup.",
               "`teams.create_index(\"name\", unique=True, collation={\"locale\": \"en\", \"strength\": 2})`; "
               "find_team must pass the same collation to `find`."],
        solution_text=(
            'CI = {"locale": "en", "strength": 2}\n\n\n'
            'def prepare(teams):\n'
            '    teams.create_index("name", unique=True, collation=CI)\n\n\n'
            'def add_team(teams, name):\n'
            '    teams.insert_one({"name": name})\n\n\n'
            'def find_team(teams, name):\n'
            '    return teams.find({"name": name}, collation=CI)\n\n\n'
            'ex_teams.check(prepare, add_team, find_team)'),
    )


# --- notebook 38 -------------------------------------------------------------------------------------------

def _check_extended_reference(db: Any) -> str:
    if not _is_database(db):
        raise NotYet(f"pass the practice database (`practice`), not {type(db).__name__}.")
    customers = {c["_id"]: c for c in db.customers.find()}
    if not customers:
        raise NotYet("practice.customers is empty: keep the customers collection, the reference points to it.")
    orders = list(db.orders.find())
    if not orders:
        raise NotYet("practice.orders is empty; re-run the practice setup cell.")
    setup_customers, setup_orders = _setup_of("customers"), _setup_of("orders")
    problem = None
    if setup_customers:
        problem = (_gone_or_added(setup_customers, customers, "customers", "practice.customers",
                                  "an extended reference copies two fields, the customers stay the source.")
                   or _changed_field(setup_customers, customers, "customer"))
    if setup_orders and not problem:
        problem = (_gone_or_added(setup_orders, {o["_id"]: o for o in orders}, "orders", "practice.orders",
                                  "the copy is added to each order, no order is removed.")
                   or _changed_field(setup_orders, {o["_id"]: o for o in orders}, "order", skip=("customer",)))
        added = None if problem else _added_fields(setup_orders, {o["_id"]: o for o in orders}, ("customer",))
        if added:
            problem = (f"order {added[0]!r} also got {added[1]}: add only the `customer` subdocument (a `$lookup` "
                       "array merged into the order copies the whole customer). `$project` it away before `$merge`.")
    if problem:
        raise NotYet(problem)
    no_ref = [o["_id"] for o in orders if _hashable(o.get("customerId")) not in customers]
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


@register
def _ex38() -> Exercise:
    return Exercise(
        id="38-extended-reference",
        lesson="38_lookup_overuse",
        task="Copy each customer's name and tier into practice.orders as `customer`, keeping `customerId`.",
        checker=_check_extended_reference,
        hints=["The lesson's `copy_stages` do the copy: $lookup the customer, $project the two fields, $merge back.",
               "`practice.orders.aggregate(copy_stages)`, then `ex.check(practice)`."],
        solution_text='practice.orders.aggregate(copy_stages)\nex.check(practice)',
    )


_OPS_38 = ("support queue", "nightly tier report", "customer detail")


@register
def _ex38_predict() -> Exercise:
    return Prediction(
        id="38-predict-top-daily",
        lesson="38_lookup_overuse",
        task="Which operation examines the most keys and documents per day: the support queue, the nightly "
             "tier report or the customer detail?",
        checker=None,
        choices=_OPS_38,
        explain=lambda op: (f"Measured: {op}. The nightly report examines the most per run, but it runs once a "
                            "day; the queue's small join runs 500 times a second, 43,200,000 times a day, so "
                            "frequency x cost puts the hot join first: that is the one to fix."),
        hints=["Multiply each operation's cost per run by its runs per day before comparing."],
        solution_text='predict_top.predict("support queue")',
    )


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


def _check_rename_agent(rename_agent: Any) -> str:
    from labkit.exercises import observe

    if not _is_function(rename_agent):
        raise NotYet(f"pass your function `rename_agent` itself (no parentheses), not {type(rename_agent).__name__}.")
    with observe.sandbox("38-rename-agent") as box:
        db = box.db
        _agents_38(db)
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


@register
def _ex38_rename() -> Exercise:
    return Exercise(
        id="38-rename-agent",
        lesson="38_lookup_overuse",
        task="Tickets copy their agent's name and team: write rename_agent(db, agent_id, new_name) keeping every "
             "copy right in two writes.",
        checker=_check_rename_agent,
        hints=["The agent's own document first, then the copies: which field tells you whose copy a ticket holds?",
               "`update_one({\"_id\": agent_id}, {\"$set\": {\"name\": ...}})`, then `update_many({\"agentId\": "
               "agent_id}, {\"$set\": {\"agent.name\": ...}})`."],
        solution_text=(
            'def rename_agent(db, agent_id, new_name):\n'
            '    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})\n'
            '    db.tickets.update_many({"agentId": agent_id}, {"$set": {"agent.name": new_name}})\n\n\n'
            'ex_rename.check(rename_agent)'),
    )


# --- notebook 39 -------------------------------------------------------------------------------------------

def _review_kinds() -> tuple[str, ...]:
    from labkit.review import KINDS

    return tuple(KINDS)


def _has_ci_index(db: Any) -> bool:
    for spec in db.customers.list_indexes():
        key = list(spec.get("key", {}))
        coll = spec.get("collation") or {}
        if key[:1] == ["email"] and coll.get("strength") in (1, 2):
            return True
    return False


def _check_schema_review(args: Any) -> str:
    from labkit.review import ReviewInputError, review

    if not (isinstance(args, tuple) and len(args) == 3):
        raise NotYet("call it with three arguments: `ex.check(db, log_after, findings)`.")
    db, log, findings = args
    if not _is_database(db):
        raise NotYet(f"the first argument should be the lesson's database `db`, not {type(db).__name__}.")
    if not isinstance(log, list) or not all(isinstance(q, dict) for q in log):
        raise NotYet("the second argument should be the profiler log `log_after` (a list of dicts).")
    if not any(isinstance(q.get("ns"), str) for q in log):
        raise NotYet("the log holds no profiler documents (with `ns`, `op`, `command`): build it with "
                     "`profile_log(db, workload_after)`.")
    if isinstance(findings, (list, tuple)) and not (findings and isinstance(findings[0], str)):
        findings = set(map(tuple, findings))
    if not isinstance(findings, (set, frozenset)):
        raise NotYet(f"`findings` should be a set of (kind, where) pairs, got {type(findings).__name__}.")
    kinds = _review_kinds()
    claims = set()
    for item in findings:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise NotYet(f"{item!r} is not a (kind, where) pair.")
        if item[0] not in kinds:
            raise NotYet(f"{item[0]!r} is not a kind of the review: {list(kinds)}.")
        claims.add((item[0], str(item[1]).strip()))
    names = set(db.list_collection_names())
    if db.customers.count_documents({}) != 60 or db.customers.count_documents({"email": {"$type": "string"}}) != 60:
        raise NotYet("db.customers should still hold its 60 customers, each with an email.")
    keeps = [n for n in sorted(names - {"customers"}) if db[n].count_documents({"customerId": "cust:013"}) >= 1800]
    if not keeps and db.customers.count_documents({"_id": "cust:013", "activity.1799": {"$exists": True}}) == 0:
        raise NotYet("customer cust:013's 1,800 activity events are gone: move them (one document per event, "
                     "with customerId) before removing the array.")
    logins = [q for q in log if str(q.get("ns", "")).endswith(".customers") and "email" in str(
        (q.get("command") or {}).get("filter", {}))]
    if not logins:
        raise NotYet("the login query (customers by email) is missing from the log: change it in "
                     "`workload_after`, do not remove it.")
    try:
        result = review(db, query_log=log)
    except ReviewInputError as exc:
        raise NotYet(f"the review cannot read that log: {exc}") from None
    truth = result.kinds()
    wrong = sorted(claims - truth)
    if wrong:
        raise NotYet(f"{wrong[0]!r} is not what the review reports now. Re-run `labkit.review(db, "
                     "query_log=log_after)` after your last change and submit its `.kinds()`.")
    missing = sorted(truth - claims)
    if missing:
        raise NotYet(f"all {len(claims)} claims hold, but {len(missing)} finding(s) are still hidden, of kind(s) "
                     f"{sorted({k for k, _ in missing})}. Re-run the review and submit everything it reports.")
    left = sorted(f"{k} {w}" for k, w in truth if w.split(".")[0] == "customers")
    if left:
        raise NotYet(f"the review still reports {left} on customers: fix those (the exercise's list) and re-run.")
    if not _has_ci_index(db):
        raise NotYet("the login needs an index on email with a case-insensitive collation (strength 2).")
    return (f"the review reports {len(truth)} finding(s) and nothing on customers: activity moved out "
            f"({', '.join(keeps)}), the login uses a case-insensitive index, and every event is kept.")


@register
def _ex39() -> Exercise:
    return Exercise(
        id="39-schema-review",
        lesson="39_schema_review",
        task="Fix the four findings left on customers, rebuild the log, re-run the review and submit what it "
             "still reports: ex.check(db, log_after, findings).",
        checker=_check_schema_review,
        hints=["Activity: insert one document per event into db.customer_activity (with customerId), then "
               "$unset the array. Login: create_index('email', collation={'locale': 'en', 'strength': 2}) and "
               "an equality filter with that collation in workload_after[0].",
               "After the fixes: `log_after = profile_log(db, workload_after)`, `final = labkit.review(db, "
               "query_log=log_after)`, then `ex.check(db, log_after, final.kinds())`."],
        solution_text=(
            'CI = {"locale": "en", "strength": 2}\n'
            'db.customer_activity.insert_many([{"customerId": c["_id"], **event}\n'
            '                                  for c in db.customers.find({}, {"activity": 1}).sort("_id", 1)\n'
            '                                  for event in c["activity"]])\n'
            'db.customer_activity.create_index([("customerId", 1), ("at", -1)])\n'
            'db.customers.update_many({}, {"$unset": {"activity": ""}})\n'
            'db.customers.drop_index("email_1")\n'
            'db.customers.create_index("email", name="email_ci", collation=CI)\n'
            'db.command("collMod", "customers", validator={"$jsonSchema": {"bsonType": "object", '
            '"required": ["email", "name"]}})\n'
            'db.command("collMod", "customer_activity", validator={"$jsonSchema": {"bsonType": "object", '
            '"required": ["customerId", "at"]}})\n'
            'workload_after[0] = {"collection": "customers", "op": "find", "perSecond": 120,\n'
            '                     "filter": {"email": "ana.0@example.com"}, "collation": CI, "projection": None}\n'
            'log_after = profile_log(db, workload_after)\n'
            'final = labkit.review(db, query_log=log_after)\n'
            'ex.check(db, log_after, final.kinds())'),
    )


@register
def _ex39_predict() -> Exercise:
    return Prediction(
        id="39-predict-findings-gone",
        lesson="39_schema_review",
        task="After the products and orders fixes, how many findings will the re-run review no longer report?",
        checker=None,
        explain=lambda n: (f"Measured: {n} findings gone. Each fix removes the findings of the places it changed: "
                           "on products (the bloated document, the unbounded revisions, the redundant index, the "
                           "missing validator) and on every orders_* collection (the family of same-shaped "
                           "collections, the hot join, their missing validators); the new collections come with "
                           "validators, so they raise none of their own. Only the customers findings are left."),
        hints=["Count the findings on products and on the orders_* collections in the first review."],
        solution_text="predict_gone.predict(len([f for f in before.findings if not f.where.startswith('customers')]))",
    )


def blog_store(db: Any) -> int:
    """A pristine legacy blog store: authors embed every post; returns the number of posts."""
    import datetime as dt

    t0 = dt.datetime(2025, 6, 1)
    authors, total = [], 0
    for a in range(30):
        n = 400 if a == 7 else (a * 5) % 23
        total += n
        authors.append({"_id": f"author:{a:02d}", "handle": f"writer{a}", "joined": t0 + dt.timedelta(days=a),
                        "posts": [{"slug": f"a{a}-p{i}", "title": f"Post {i} by writer{a}",
                                   "at": t0 + dt.timedelta(hours=9 * i + a)} for i in range(n)]})
    db.authors.insert_many(authors)
    db.authors.create_index([("handle", 1)])
    db.authors.create_index([("handle", 1), ("joined", -1)])
    return total


def _check_fix_blog(fix: Any) -> str:
    from labkit.exercises import observe
    from labkit.review import review

    if not _is_function(fix):
        raise NotYet(f"pass your function `fix` itself (no parentheses), not {type(fix).__name__}.")
    with observe.sandbox("39-fix-blog") as box:
        db = box.db
        total = blog_store(db)
        orig = {p["slug"]: (a["_id"], p.get("title"), p.get("at")) for a in db.authors.find() for p in a["posts"]}
        fix(db)
        if db.authors.count_documents({}) != 30:
            raise NotYet(f"db.authors holds {db.authors.count_documents({})} of 30 authors after fix: keep them.")
        slugs: dict[str, str] = {}
        changed: list[str] = []
        for name in sorted(set(db.list_collection_names()) - {"authors"}):
            for d in db[name].find({"slug": {"$exists": True}}, {"slug": 1, "authorId": 1, "title": 1, "at": 1}):
                slugs[str(d.get("slug"))] = str(d.get("authorId"))
                was = orig.get(str(d.get("slug")))
                if was is not None and (d.get("title"), d.get("at")) != was[1:]:
                    changed.append(str(d.get("slug")))
        for d in db.authors.find({"posts.0": {"$exists": True}}, {"posts.slug": 1}):
            for p in d.get("posts") or []:
                slugs.setdefault(str(p.get("slug")), d["_id"])
        if len(slugs) < total:
            raise NotYet(f"{total - len(slugs)} of {total} posts are gone: move the posts (one document per post, "
                         "with `authorId`) before removing the array.")
        if changed:
            raise NotYet(f"{len(changed)} moved post(s), e.g. {changed[0]!r}, lost or changed their `title` or `at`: "
                         "move each post whole (every field it had), adding only `authorId`.")
        wrong = [s for s, a in slugs.items() if not (a.startswith("author:") and a[7:].isdigit() and s.startswith(f"a{int(a[7:])}-"))]
        if wrong:
            raise NotYet(f"{len(wrong)} moved post(s), e.g. {wrong[0]!r}, have no (or the wrong) `authorId`: a post "
                         "document needs the reference to its author.")
        keys = {tuple(spec["key"]) for spec in db.authors.list_indexes()}
        if ("handle", "joined") not in keys:
            raise NotYet("you dropped `handle_1_joined_-1`: it serves everything `handle_1` served and more. Drop the "
                         "prefix, keep the longer index.")
        result = review(db)
    left = sorted(f"{k} {w}" for k, w in result.kinds())
    if left:
        raise NotYet(f"the review still reports {left}: fix those too (a validator on every collection you keep "
                     "or create) and re-run.")
    return (f"{total} posts moved to their own documents, the prefix index dropped, validators in place: the "
            "review of the blog store reports nothing.")


@register
def _ex39_blog() -> Exercise:
    return Exercise(
        id="39-fix-blog",
        lesson="39_schema_review",
        task="Another legacy store (a blog): write fix(db) so that `labkit.review(db)` reports nothing, keeping "
             "every post.",
        checker=_check_fix_blog,
        hints=["Review it first: `labkit.review(blog).kinds()` lists an unbounded array, a redundant index and a "
               "missing validator, all on authors.",
               "Posts to `db.posts` (one per post, with `authorId`, indexed), `$unset` the array, drop `handle_1`, "
               "and `collMod` a `$jsonSchema` validator onto authors and posts."],
        solution_text=(
            'def fix(db):\n'
            '    db.posts.insert_many([{"authorId": a["_id"], **p}\n'
            '                          for a in db.authors.find({}, {"posts": 1}) for p in a["posts"]])\n'
            '    db.posts.create_index([("authorId", 1), ("at", -1)])\n'
            '    db.authors.update_many({}, {"$unset": {"posts": ""}})\n'
            '    db.authors.drop_index("handle_1")\n'
            '    db.command("collMod", "authors", validator={"$jsonSchema": {"bsonType": "object",\n'
            '                                                                "required": ["handle"]}})\n'
            '    db.command("collMod", "posts", validator={"$jsonSchema": {"bsonType": "object",\n'
            '                                                              "required": ["authorId", "slug"]}})\n\n\n'
            'ex_blog.check(fix)'),
    )
