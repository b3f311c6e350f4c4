"""Exercises of the relationship lessons (notebooks 00-08)."""
from __future__ import annotations

from typing import Any

from labkit.exercises import Exercise, NotYet, Prediction, _db_and_function, _stages, register

# --- notebook 00 -------------------------------------------------------------------------------------------

def _check_rank_workload(answer: Any) -> str:
    import pandas as pd

    if not isinstance(answer, pd.DataFrame):
        raise NotYet(f"expected a pandas DataFrame (the workload table, re-ordered), got {type(answer).__name__}.")
    needed = {"operation", "per_second"}
    missing = needed - set(answer.columns)
    if missing:
        raise NotYet(f"the table lost column(s) {sorted(missing)}; keep every column of `workload`.")
    if len(answer) != 7 or answer["operation"].nunique() != 7:
        raise NotYet(f"the table should still have all 7 operations; it has {answer['operation'].nunique()}.")
    freq = list(answer["per_second"])
    if freq == sorted(freq):
        raise NotYet("it is sorted, but least frequent first: the operations to design for should come first "
                     "(ascending=False).")
    if freq != sorted(freq, reverse=True):
        raise NotYet("the rows are not ordered by `per_second`; sort by that column, most frequent first.")
    top = answer.iloc[0]["operation"]
    return f"'{top}' runs most often, so the product document is shaped around it."


@register
def _ex00() -> Exercise:
    return Exercise(
        id="00-rank-workload",
        lesson="00_start_here",
        task="Rank the online store's operations by how often they run, most frequent first.",
        checker=_check_rank_workload,
        hints=["DataFrames have a `sort_values` method.",
               "`workload.sort_values(\"per_second\", ascending=False)`"],
        solution_text='ranked = workload.sort_values("per_second", ascending=False)\nex.check(ranked)',
    )


# A message board's workloads, built by the checker itself (the learner's table is never used).
_BOARD_WORKLOADS = [
    [("read a thread", "read", 900.0), ("list a forum", "read", 300.0), ("post a reply", "write", 12.0),
     ("search", "read", 40.0), ("edit a reply", "write", 1.5), ("moderation report", "read", 0.01)],
    [("show inbox", "read", 50.0), ("send message", "write", 45.0), ("open message", "read", 48.0),
     ("delete message", "write", 3.0), ("export archive", "read", 0.001)],
    [("live score", "read", 5000.0), ("post score", "write", 1.0)],
    # the running total reaches exactly 80% with the second row: the third is not needed
    [("view cart", "read", 50.0), ("add to cart", "write", 30.0), ("checkout", "write", 20.0)],
    # the operations above the average rate (40, 30) make only 70%: the rule is the running total
    [("show map", "read", 40.0), ("search places", "read", 30.0), ("save place", "write", 12.0),
     ("share place", "write", 10.0), ("rate place", "write", 8.0)],
]


def _top_share_expected(rows: list[tuple], share: float = 0.8) -> list[str]:
    ranked = sorted(rows, key=lambda r: -r[2])
    total, out, acc = sum(r[2] for r in rows), [], 0.0
    for name, _, rate in ranked:
        out.append(name)
        acc += rate
        if acc >= share * total:
            break
    return out


def _check_top_operations(fn: Any) -> str:
    import pandas as pd

    from labkit.exercises import observe

    if not callable(fn):
        raise NotYet("pass your function itself: `ex.check(top_operations)`.")
    for rows in _BOARD_WORKLOADS:
        table = pd.DataFrame(rows[::-1], columns=["operation", "type", "per_second"])
        expected = _top_share_expected(rows)
        got = observe.call_learner(fn, table.copy())
        if isinstance(got, (pd.Series, pd.Index)):
            got = list(got)
        if isinstance(got, pd.DataFrame):
            got = list(got["operation"]) if "operation" in got.columns else list(got.index)
        if not isinstance(got, (list, tuple)):
            raise NotYet(f"return a list of operation names, most frequent first; got {type(got).__name__}.")
        got = list(got)
        if got == expected:
            continue
        names = ", ".join(f"{n!r}" for n in expected)
        if set(got) == set(expected) and got != expected:
            raise NotYet(f"the right operations, in the wrong order: most frequent first ({names}).")
        if got and got[0] == min(rows, key=lambda r: r[2])[0]:
            raise NotYet("the list starts with the rarest operation: sort by `per_second` with ascending=False.")
        if len(got) == len(rows):
            raise NotYet("you returned every operation; stop as soon as the running total reaches 80% of all "
                         "operations per second.")
        if got == expected[:-1]:
            raise NotYet("one short: include the operation whose rate makes the running total reach 80% "
                         f"(for this workload: {names}).")
        if len(got) > len(expected) and got[:len(expected)] == expected:
            raise NotYet(f"one or more too many: stop at the first operation where the running total reaches 80% "
                         f"({names}).")
        if all(isinstance(g, str) for g in got) and set(got) - {r[0] for r in rows}:
            raise NotYet("return the names from the `operation` column.")
        raise NotYet(f"for a workload of {len(rows)} operations the answer is {names}; yours is {got}. Sort by "
                     "`per_second`, most frequent first, and keep rows until their running total reaches 80% "
                     "of the table's total.")
    return (f"on {len(_BOARD_WORKLOADS)} other workloads your function picked the operations that make up 80% of "
            "the traffic: "
            "those are the rows a schema is designed for.")


@register
def _ex00b() -> Exercise:
    return Exercise(
        id="00-top-operations",
        lesson="00_start_here",
        task="Write top_operations(workload): the operation names that together make up at least 80% of the "
             "operations per second, most frequent first (checked on other workloads than the store's).",
        checker=_check_top_operations,
        hints=["Sort by `per_second` (most frequent first), then take a running total with `cumsum()`.",
               "Keep rows while the running total *before* the row is still under 80% of the total."],
        solution_text=('def top_operations(workload):\n'
                       '    ranked = workload.sort_values("per_second", ascending=False)\n'
                       '    before = ranked["per_second"].cumsum() - ranked["per_second"]\n'
                       '    return list(ranked[before < 0.8 * ranked["per_second"].sum()]["operation"])\n\n'
                       'ex2.check(top_operations)'),
    )


def _explain_page_docs(measured: Any) -> str:
    return (f"The referenced page reads the product (1 document), the 5 newest reviews through an index (5), and "
            f"every review of the product again to average their ratings: {measured} documents in all, and that "
            "last part grows with each review. The embedded page reads 1 document.")


@register
def _ex00_predict() -> Exercise:
    return Prediction(
        id="00-predict-page-docs",
        lesson="00_start_here",
        task="Predict: with reviews in their own collection, how many documents does one product page examine "
             "for a product with 200 reviews (product, 5 newest reviews, rating average)?",
        checker=None,
        hints=["Count each read: the product, the 5 newest reviews, and what the rating average has to read."],
        solution_text="ex_page.predict(206)",
        explain=_explain_page_docs,
        tolerance=0.05,
    )


# --- notebook 01 -------------------------------------------------------------------------------------------

def _check_fred_document(db: Any) -> None:
    """The end state the lesson's own cell should leave (the single-argument form ``ex.check(db)``)."""
    import datetime as dt

    fred = db.users.find_one({"_id": "user:234"})
    if fred is None:
        raise NotYet("Fred (user:234) is missing from db.users; re-run the cells above the exercise.")
    roles = fred.get("roles")
    if not isinstance(roles, list):
        raise NotYet("Fred's `roles` is no longer an array; use `$push` to add one element to it.")
    mods = [r for r in roles if isinstance(r, dict) and r.get("title") == "moderator"]
    if not mods:
        raise NotYet("Fred has no embedded role with title 'moderator' yet.")
    if len(mods) > 1:
        raise NotYet(f"Fred holds 'moderator' {len(mods)} times; an assignment should appear once.")
    if fred.get("updatedAt") != dt.datetime(2026, 10, 6, 8, 0):
        raise NotYet(f"updatedAt is {fred.get('updatedAt')!r}; set it to 2026-10-06 08:00 in the same update.")


_USERS_01 = [
    {"_id": "user:234", "name": "Fred", "email": "fred@example.com",
     "roles": [{"title": "admin", "canEdit": False}], "updatedAt": None},
    {"_id": "user:345", "name": "Ada", "email": "ada@example.com",
     "roles": [{"title": "author", "canEdit": False}, {"title": "reviewer", "canEdit": False},
               {"title": "editor", "canEdit": False}], "updatedAt": None},
    {"_id": "user:456", "name": "Lin", "email": "lin@example.com",
     "roles": [{"title": "editor", "canEdit": False}], "updatedAt": None},
]


def _users_sandbox(name: str, like: Any) -> Any:
    import copy

    from labkit.exercises import observe
    box = observe.sandbox(name, like)
    box.db.users.insert_many(copy.deepcopy(_USERS_01))
    box.recorder.clear()
    return box


def _write_shape_mistakes(rec: Any, before: dict, after: dict | None, field: str = "roles") -> None:
    """Messages for the lesson 01 mistakes seen in the commands: several writes, a replacement, a rewritten array."""
    writes = rec.write_statements()
    if writes == 0:
        raise NotYet("your function sent no write to the server; it should update the user document.")
    if writes > 1:
        names = ", ".join(rec.names())
        raise NotYet(f"your function sent {writes} writes ({names}): between them another reader sees the role "
                     "changed but the timestamp stale, and a failure halfway leaves it so. Put both operators in "
                     "ONE update: `{\"$push\": {...}, \"$set\": {...}}`.")
    spec = (rec.update_specs() or [{}])[0]
    u = spec.get("u")
    if isinstance(u, dict) and u and not any(str(k).startswith("$") for k in u):
        lost = sorted(set(before) - set(after or {}) - {"_id"})
        raise NotYet("that was a replacement (`replace_one` or an update without operators): the whole user "
                     f"document was rewritten{' and ' + ', '.join(lost) + ' lost' if lost else ''}. Use update "
                     "operators so only the changed fields are written.")
    if isinstance(u, dict) and isinstance(u.get("$set"), dict) and field in u["$set"]:
        raise NotYet(f"your update rewrites the whole `{field}` array with `$set` (read in Python, changed, written "
                     "back): a role added by someone else in between is lost. Change one element in place "
                     "(`$push`, or `roles.$` with a filter on `roles.title`).")


def _check_embed_atomic(args: Any) -> str:
    import datetime as dt

    if not isinstance(args, tuple):
        if not hasattr(args, "list_collection_names"):
            raise NotYet(f"pass the lesson's database and your function: `ex.check(db, give_role)`, not "
                         f"{type(args).__name__}.")
        _check_fred_document(args)
        raise NotYet("Fred's document looks right, but a document alone cannot show that it was ONE write. Wrap "
                     "your update in `def give_role(db, user_id, title, can_edit, when): ...` and call "
                     "`ex.check(db, give_role)`: the check runs it on its own users and watches the commands.")
    db, give_role = _db_and_function(args, "give_role")
    when = dt.datetime(2026, 11, 3, 9, 30)
    with _users_sandbox("01-embed-atomic", db) as box:
        before = box.db.users.find_one({"_id": "user:345"})
        give_role(box.db, "user:345", "moderator", True, when)
        after = box.db.users.find_one({"_id": "user:345"})
        others = list(box.db.users.find({"_id": {"$ne": "user:345"}}).sort("_id", 1))
        _write_shape_mistakes(box.recorder, before, after)
    if after is None:
        raise NotYet("Ada (user:345) is gone after your function ran; update her document, do not delete it.")
    expected_others = sorted([u for u in _USERS_01 if u["_id"] != "user:345"], key=lambda u: u["_id"])
    if after == before and others != expected_others:
        changed = [u["_id"] for u, e in zip(others, expected_others) if u != e]
        raise NotYet(f"your function changed {changed} instead of the user it was given (user:345): use the "
                     "`user_id`, `title`, `can_edit` and `when` arguments instead of Fred's values.")
    roles = after.get("roles")
    if not isinstance(roles, list):
        raise NotYet("`roles` is no longer an array; use `$push` to add one element to it.")
    if [r for r in roles if r.get("title") != "moderator"] != before["roles"]:
        raise NotYet("Ada's existing roles changed; add the new assignment without touching the others.")
    mods = [r for r in roles if isinstance(r, dict) and r.get("title") == "moderator"]
    if len(mods) != 1:
        raise NotYet(f"Ada holds 'moderator' {len(mods)} times after one call; add exactly one assignment.")
    if mods[0] != {"title": "moderator", "canEdit": True}:
        raise NotYet(f"the new assignment is {mods[0]}; it should be {{title: 'moderator', canEdit: True}} "
                     "(use the function's arguments, not Fred's values).")
    if after.get("updatedAt") != when:
        raise NotYet(f"updatedAt is {after.get('updatedAt')!r} after the call; set it to the `when` argument in "
                     "the same update.")
    if {k: v for k, v in after.items() if k not in ("roles", "updatedAt")} != \
            {k: v for k, v in before.items() if k not in ("roles", "updatedAt")}:
        raise NotYet("other fields of the user changed; only `roles` and `updatedAt` should.")
    if others != expected_others:
        raise NotYet("other users changed too: filter the update on the user's `_id`.")
    return "one update carried both the new role and the timestamp: readers never see one without the other."


def _check_positional_role(args: Any) -> str:
    db, set_can_edit = _db_and_function(args, "set_can_edit")
    with _users_sandbox("01-positional-role", db) as box:
        before = {u["_id"]: u for u in box.db.users.find()}
        set_can_edit(box.db, "user:345", "editor", True)
        after = {u["_id"]: u for u in box.db.users.find()}
        rec = box.recorder
        writes = rec.write_statements()
        specs = rec.update_specs()
    if writes != 1:
        raise NotYet(f"your function sent {writes} write(s); one update of one array element is enough.")
    ada, ada0 = after.get("user:345") or {}, before["user:345"]
    roles, roles0 = ada.get("roles") or [], ada0["roles"]
    if len(roles) != len(roles0):
        raise NotYet(f"Ada had {len(roles0)} roles and now has {len(roles)}: change the existing 'editor' element, "
                     "do not add or remove one.")
    changed = [i for i, (a, b) in enumerate(zip(roles0, roles)) if a != b]
    u = (specs or [{}])[0].get("u") or {}
    fixed = sorted(k for op in u.values() if isinstance(op, dict) for k in op
                   if any(part.isdigit() for part in str(k).split(".")))
    if fixed and not changed == [2]:
        raise NotYet(f"the update names a fixed position ({', '.join(fixed)}), but 'editor' sits at position 2 for "
                     "this user and elsewhere for others: filter on `roles.title` and set `roles.$.canEdit`, so "
                     "the server finds the element.")
    if changed and changed != [2]:
        titles = ", ".join(repr(roles0[i]["title"]) for i in changed)
        raise NotYet(f"the update changed element(s) {changed} ({titles}) instead of 'editor', which is at "
                     "position 2 for this user: positions differ from user to user. Filter on `roles.title` and "
                     "set `roles.$.canEdit`, so the server finds the element.")
    if isinstance(u.get("$set"), dict) and "roles" in u["$set"]:
        raise NotYet("your update rewrites the whole `roles` array: set one field of the matched element instead "
                     "(`{\"$set\": {\"roles.$.canEdit\": ...}}`).")
    if roles[2] != {"title": "editor", "canEdit": True}:
        raise NotYet(f"Ada's 'editor' role is {roles[2]}; it should now have canEdit True.")
    if after.get("user:456") != before["user:456"]:
        raise NotYet("Lin's 'editor' role changed too: filter on the user's `_id` as well as `roles.title`.")
    return "the server found 'editor' wherever it sat in Ada's array and changed that one field, in one update."


@register
def _ex01() -> Exercise:
    return Exercise(
        id="01-embed-atomic",
        lesson="01_embed_one_to_few",
        task="Write give_role(db, user_id, title, can_edit, when): add an embedded role and set updatedAt in ONE write.",
        checker=_check_embed_atomic,
        hints=["One `update_one` can carry several operators: `$push` for the array, `$set` for the timestamp.",
               "`db.users.update_one({\"_id\": user_id}, {\"$push\": {\"roles\": {...}}, \"$set\": {\"updatedAt\": when}})`"],
        solution_text=(
            "def give_role(db, user_id, title, can_edit, when):\n"
            "    db.users.update_one({\"_id\": user_id},\n"
            "                        {\"$push\": {\"roles\": {\"title\": title, \"canEdit\": can_edit}},\n"
            "                         \"$set\": {\"updatedAt\": when}})\n\nex.check(db, give_role)"
        ),
    )


@register
def _ex01b() -> Exercise:
    return Exercise(
        id="01-positional-role",
        lesson="01_embed_one_to_few",
        task="Write set_can_edit(db, user_id, title, can_edit): change canEdit of the role with that title, wherever it is.",
        checker=_check_positional_role,
        hints=["You do not know the role's position: let the query find it (`\"roles.title\": title`).",
               "`update_one({\"_id\": user_id, \"roles.title\": title}, {\"$set\": {\"roles.$.canEdit\": can_edit}})`"],
        solution_text=(
            "def set_can_edit(db, user_id, title, can_edit):\n"
            "    db.users.update_one({\"_id\": user_id, \"roles.title\": title},\n"
            "                        {\"$set\": {\"roles.$.canEdit\": can_edit}})\n\nex.check(db, set_can_edit)"
        ),
    )


def _explain_policy_rewrites(measured: Any) -> str:
    return (f"Every user holding 'admin' carries a copy of the permission, so the policy change rewrites {measured} "
            "user documents (one per copy, each a write with its index updates). Referenced, the definition is one "
            "document: one write, whoever holds the role.")


@register
def _ex01_predict() -> Exercise:
    return Prediction(
        id="01-predict-policy-rewrites",
        lesson="01_embed_one_to_few",
        task="Predict: with roles embedded, how many user documents does 'admins may no longer edit' rewrite among "
             "the 3,000 generated users? (The indexed plan above shows how many users hold 'admin'.)",
        checker=None,
        hints=["Each user holding 'admin' has its own copy of the permission."],
        solution_text="ex_policy.predict(663)",
        explain=_explain_policy_rewrites,
    )


_ORDERS_01 = [
    {"_id": "order:1", "customer": "Ivy", "status": "open", "lines": [{"sku": "mug", "qty": 2, "price": 8.5}],
     "itemCount": 2, "total": 17.0},
    {"_id": "order:2", "customer": "Tom", "status": "open", "lines": [{"sku": "tea", "qty": 1, "price": 4.0}],
     "itemCount": 1, "total": 4.0},
]


def _orders_sandbox(like: Any) -> Any:
    import copy

    from labkit.exercises import observe
    box = observe.sandbox("01-order-lines", like)
    box.db.orders.insert_many(copy.deepcopy(_ORDERS_01))
    box.recorder.clear()
    return box


def _check_order_lines(args: Any) -> str:
    from labkit.exercises import observe

    db, add_line = _db_and_function(args, "add_line")
    with _orders_sandbox(db) as box:
        before = box.db.orders.find_one({"_id": "order:1"})
        observe.call_learner(add_line, box.db, "order:1", "tea", 3, 4.0)
        after = box.db.orders.find_one({"_id": "order:1"})
        other = box.db.orders.find_one({"_id": "order:2"})
        rec = box.recorder
        writes, names, specs = rec.write_statements(), rec.names(), rec.update_specs()
    if writes == 0:
        raise NotYet("your function sent no write; it should update the order document.")
    if writes > 1:
        raise NotYet(f"your function sent {writes} writes ({', '.join(names)}): between them a reader sees the new "
                     "line but the old total, and a failure halfway leaves the order so. One `update_one` can carry "
                     "`$push` and `$inc` together.")
    u = (specs or [{}])[0].get("u")
    if isinstance(u, dict) and u and not any(str(k).startswith("$") for k in u):
        raise NotYet("that was a replacement of the whole order (read in Python, changed, written back): an order "
                     "line added by someone else in between is lost. Use update operators (`$push`, `$inc`).")
    if after is None:
        raise NotYet("order:1 is gone after your function ran; update it, do not delete it.")
    if other != _ORDERS_01[1]:
        raise NotYet("order:2 changed too: filter the update on the order's `_id`.")
    lines = after.get("lines")
    if not isinstance(lines, list) or lines[:1] != before["lines"]:
        raise NotYet("the order's existing line changed or `lines` is no longer an array; append with `$push`.")
    if lines[1:] != [{"sku": "tea", "qty": 3, "price": 4.0}]:
        raise NotYet(f"after adding 3 x 'tea' at 4.0 the new lines are {lines[1:]}; expected exactly one "
                     "{sku: 'tea', qty: 3, price: 4.0}.")
    if after.get("itemCount") != 5:
        raise NotYet(f"itemCount is {after.get('itemCount')!r}; adding 3 items to 2 makes 5: `$inc` it by `qty`.")
    if after.get("total") != 29.0:
        raise NotYet(f"total is {after.get('total')!r}; 17.0 plus 3 x 4.0 makes 29.0: `$inc` it by `qty * price`.")
    # two calls at once: the second runs right after the first one's first read
    with _orders_sandbox(db) as box:
        observe.interleaved(lambda: add_line(box.db, "order:1", "tea", 3, 4.0),
                            lambda: add_line(box.db, "order:1", "jam", 1, 6.0), box.recorder)
        raced = box.db.orders.find_one({"_id": "order:1"}) or {}
    skus = sorted(line.get("sku") for line in raced.get("lines") or [] if isinstance(line, dict))
    if skus != ["jam", "mug", "tea"] or raced.get("total") != 35.0 or raced.get("itemCount") != 6:
        raise NotYet(f"two calls at once (tea and jam, the second running right after the first one read the "
                     f"order) leave lines {skus}, total {raced.get('total')!r} and itemCount "
                     f"{raced.get('itemCount')!r} instead of ['jam', 'mug', 'tea'], 35.0 and 6: a value computed "
                     "in Python from an earlier read overwrote the other call's change (a lost update). Let the "
                     "server do the arithmetic with `$inc`.")
    # the same line again (order:2 already holds 1 x tea at 4.0), and an order that does not exist
    with _orders_sandbox(db) as box:
        observe.call_learner(add_line, box.db, "order:2", "tea", 1, 4.0)
        again = box.db.orders.find_one({"_id": "order:2"}) or {}
        observe.call_learner(add_line, box.db, "order:404", "tea", 1, 4.0)
        ghost = box.db.orders.find_one({"_id": "order:404"})
    if len(again.get("lines") or []) != 2 or again.get("itemCount") != 2:
        raise NotYet(f"adding a second 1 x 'tea' at 4.0 to order:2 (which already has that line) leaves "
                     f"{len(again.get('lines') or [])} line(s) and itemCount {again.get('itemCount')!r}: `$addToSet` "
                     "drops a line equal to one already there while `$inc` still counts it. Order lines are "
                     "appended with `$push`.")
    if ghost is not None:
        raise NotYet("adding a line to order:404, which does not exist, created it (`upsert=True`): an order line "
                     "belongs to an existing order; leave the upsert out.")
    return ("one update appended the line and raised the total and the item count; two calls at once both "
            "counted, because the server did the arithmetic.")


@register
def _ex01c() -> Exercise:
    return Exercise(
        id="01-order-lines",
        lesson="01_embed_one_to_few",
        task="Write add_line(db, order_id, sku, qty, price): append an embedded order line and raise the order's "
             "itemCount and total, in ONE write that stays right when two calls run at once.",
        checker=_check_order_lines,
        hints=["An order's lines are bounded and read with the order: embed them, like a user's roles.",
               "`update_one({\"_id\": order_id}, {\"$push\": {\"lines\": {...}}, \"$inc\": {\"itemCount\": qty, "
               "\"total\": qty * price}})`"],
        solution_text=(
            "def add_line(db, order_id, sku, qty, price):\n"
            "    db.orders.update_one({\"_id\": order_id},\n"
            "                         {\"$push\": {\"lines\": {\"sku\": sku, \"qty\": qty, \"price\": price}},\n"
            "                          \"$inc\": {\"itemCount\": qty, \"total\": qty * price}})\n\n"
            "ex3.check(db, add_line)"
        ),
    )


# --- notebook 02 -------------------------------------------------------------------------------------------

def _check_feed_index(posts: Any) -> str:
    from labkit.exercises import observe

    if not _is_collection(posts):
        raise NotYet(f"pass the collection (`posts`), not {type(posts).__name__}.")
    # The learner's indexes, judged on pristine posts (Sam has 300, inserted out of order), never on the
    # learner's own data, which an earlier cell may have changed.
    with observe.sandbox("02-feed-index", posts) as box:
        observe.seed_posts(box.db, {"user:112": 300, "user:234": 120, "user:345": 40})
        observe.copy_indexes(posts, box.db.posts)
        cursor = box.db.posts.find({"authorId": "user:112"}, {"title": 1, "location": 1, "createdAt": 1})
        figures = observe.plan_figures(cursor.sort([("createdAt", -1), ("_id", -1)]).limit(20).explain())
        redundant = observe.redundant_prefixes(box.db.posts)
    if figures.collscan:
        raise NotYet("the feed still reads the whole collection (COLLSCAN): no index starts with `authorId`.")
    ix = figures.index
    if figures.blocking_sort:
        if ix and list(ix.items())[:2] == [("authorId", 1), ("createdAt", 1)]:
            raise NotYet(f"the plan still has a blocking SORT: {ix} cannot serve a sort on createdAt -1 then _id -1: an index serves a sort only when "
                         "every direction matches the sort, or every one is reversed. Use "
                         "{authorId: 1, createdAt: -1, _id: -1}.")
        raise NotYet(f"the plan uses {ix} but still has a blocking SORT stage: after `authorId` the index must "
                     "list the sort fields in the sort's order and directions (createdAt -1, then _id -1), "
                     "or exactly the reverse of all of them.")
    if figures.keys_examined > 20:
        raise NotYet(f"no blocking sort, but {figures.keys_examined} keys examined for 20 posts with {ix}: "
                     "put the equality field `authorId` first so the scan starts at Sam's newest post.")
    if figures.returned != 20:
        raise NotYet(f"the feed returned {figures.returned} posts on a collection where Sam has 300; "
                     "a partial or sparse index must not hide posts from the feed.")
    for short, long_ in redundant:
        raise NotYet(f"the feed is served, but `{short}` is a prefix of `{long_}`: the compound index already "
                         f"answers queries on `authorId` alone, so the extra index only slows every write. "
                         f"Drop it: `posts.drop_index(\"{short}\")`.")
    return (f"IXSCAN with {figures.keys_examined} keys and {figures.docs_examined} documents for "
            f"{figures.returned} posts, no blocking SORT, and no index that another one makes redundant.")


@register
def _ex02() -> Exercise:
    return Exercise(
        id="02-feed-index",
        lesson="02_one_to_many",
        task="Create the index that serves Sam's newest-20 feed without a blocking SORT, reading at most 20 keys.",
        checker=_check_feed_index,
        hints=["Equality field first, then the sort fields in the same order and directions as the sort.",
               "The sort is `createdAt: -1, _id: -1` and the filter is on `authorId`."],
        solution_text='posts.create_index({"authorId": 1, "createdAt": -1, "_id": -1})\nex.check(posts)',
    )


def _is_collection(obj: Any) -> bool:
    """A pymongo (or embedded) collection; a database answers every attribute with a sub-collection."""
    import mongomock
    import pymongo.collection

    return isinstance(obj, (pymongo.collection.Collection, mongomock.Collection))


def _explain_feed_keys(measured: Any) -> str:
    return (f"The index hands Sam's posts back already newest first, so the scan stops at the limit: {measured} "
            "keys for 20 posts, however long his history is. Without the index the server reads every post and "
            "sorts Sam's in memory.")


@register
def _ex02_predict() -> Exercise:
    return Prediction(
        id="02-predict-feed-keys",
        lesson="02_one_to_many",
        task="Predict: with {authorId: 1, createdAt: -1, _id: -1}, how many index keys does Sam's newest-20 feed "
             "examine? (Sam has thousands of posts.)",
        checker=None,
        hints=["An index that matches the filter and the sort returns documents in order; the limit stops it."],
        solution_text="ex_keys.predict(20)",
        explain=_explain_feed_keys,
    )


COMMENT_QUERY = {"postId": "post:9", "likes": {"$gte": 10}}


def _check_comment_index(comments: Any) -> str:
    from labkit.exercises import observe

    if not _is_collection(comments):
        raise NotYet(f"pass the collection (`practice.comments`), not {type(comments).__name__}.")
    with observe.sandbox("02-comment-index", comments) as box:
        observe.seed_comments(box.db, {"post:9": 1500, "post:10": 600, "post:11": 300})
        observe.copy_indexes(comments, box.db.comments)
        cursor = box.db.comments.find(COMMENT_QUERY, {"text": 1, "likes": 1, "createdAt": 1})
        fig = observe.plan_figures(cursor.sort("createdAt", 1).limit(20).explain())
        redundant = observe.redundant_prefixes(box.db.comments)
    ix = fig.index
    if fig.collscan:
        raise NotYet("the query still reads every comment (COLLSCAN): no index starts with `postId`.")
    if fig.blocking_sort:
        if ix and "likes" in ix and "createdAt" in ix and list(ix).index("likes") < list(ix).index("createdAt"):
            raise NotYet(f"{ix} puts the range (`likes`) before the sort field (`createdAt`): the keys come out "
                         "ordered by likes first, so the server sorts every matching comment in memory (blocking "
                         "SORT). Equality, Sort, Range: {postId: 1, createdAt: 1, likes: 1}.")
        raise NotYet(f"the plan uses {ix} but still has a blocking SORT: after `postId` the index must continue "
                     "with `createdAt`, the sort field.")
    if ix and next(iter(ix)) != "postId":
        raise NotYet(f"no blocking sort, but {ix} does not start with the equality field `postId`: the scan "
                     f"walks other posts' comments ({fig.keys_examined} keys for {fig.returned} comments).")
    if fig.docs_examined > fig.returned:
        raise NotYet(f"{fig.docs_examined} comments fetched for {fig.returned} returned: {ix} cannot check "
                     "`likes >= 10` on its keys, so every comment below 10 likes is fetched and thrown away. Add "
                     "`likes` after the sort field: {postId: 1, createdAt: 1, likes: 1}.")
    if fig.returned != 20:
        raise NotYet(f"the query returned {fig.returned} comments instead of 20; a partial or sparse index must not "
                     "hide comments.")
    for short, long_ in redundant:
        raise NotYet(f"the query is served, but `{short}` is a prefix of `{long_}`: the compound index already "
                     f"serves queries on its first fields, and the extra one slows every new comment. Drop it: "
                     f"`practice.comments.drop_index(\"{short}\")`.")
    return (f"{ix}: no blocking SORT, {fig.keys_examined} keys and {fig.docs_examined} comments examined for "
            f"{fig.returned} returned; the likes range is checked on the index keys (Equality, Sort, Range).")


@register
def _ex02b() -> Exercise:
    return Exercise(
        id="02-comment-index",
        lesson="02_one_to_many",
        task="Comments reference their post (`postId`). Index them for 'the first 20 comments of a post with at "
             "least 10 likes, oldest first': no blocking SORT and no comment fetched only to be thrown away.",
        checker=_check_comment_index,
        hints=["`postId` is the equality, `createdAt` the sort, `likes >= 10` the range.",
               "Equality, Sort, Range: {postId: 1, createdAt: 1, likes: 1}."],
        solution_text='practice.comments.create_index({"postId": 1, "createdAt": 1, "likes": 1})\n'
                      'ex2.check(practice.comments)',
    )


# --- notebook 03 -------------------------------------------------------------------------------------------

def _trims_after_lookup(pipeline: list, field: str) -> str | None:
    """The operator a stage after $lookup uses to cut the joined array ``field`` down, if any."""
    seen = False
    for stage in pipeline:
        if "$lookup" in stage:
            seen = True
            continue
        if not seen:
            continue
        text = repr(stage)
        if f"${field}" in text:
            for op in ("$slice", "$firstN", "$lastN", "$sortArray", "$filter", "$topN", "$maxN"):
                if op in text:
                    return op
    return None


def _lookup_order_mistake(sub: list) -> str | None:
    names = [next(iter(s), "") for s in sub if isinstance(s, dict)]
    if "$limit" in names and "$sort" in names and names.index("$limit") < names.index("$sort"):
        return ("inside the $lookup pipeline `$limit` comes before `$sort`: it keeps 10 posts in storage order "
                "and only then sorts those 10. Sort first, then limit.")
    if "$limit" in names and "$sort" not in names:
        return "the $lookup pipeline limits without sorting, so it keeps whichever 10 posts come first, not the newest."
    sort = next((s["$sort"] for s in sub if isinstance(s, dict) and "$sort" in s), None)
    if isinstance(sort, dict) and "createdAt" in sort and "_id" not in sort:
        return ("the sort has no tie-breaker: posts written at the same minute come back in an order the server "
                "does not promise (it can change with the plan). Add `_id: -1` after `createdAt: -1`.")
    return None


def _check_bounded_lookup(args: Any) -> str:
    from labkit.exercises import observe

    if not (isinstance(args, tuple) and len(args) == 2):
        raise NotYet("call it with the database and your pipeline: `ex.check(db, pipeline)`.")
    db, pipeline = args
    if not isinstance(pipeline, list) or not all(isinstance(s, dict) for s in pipeline):
        raise NotYet("`pipeline` must be a list of stage documents, e.g. [{\"$match\": ...}, {\"$lookup\": ...}].")
    lookups = [s["$lookup"] for s in pipeline if "$lookup" in s]
    if not lookups or not isinstance(lookups[0], dict):
        raise NotYet("the pipeline has no `$lookup` stage; join the posts on the server.")
    field = lookups[0].get("as")
    trim = _trims_after_lookup(pipeline, str(field))
    if trim:
        raise NotYet(f"the join reads every post of Sam's history and a later stage cuts `{field}` down with "
                     f"`{trim}`: the documents are still read and carried. Sort, limit and project *inside* the "
                     "$lookup pipeline instead.")
    sub = lookups[0].get("pipeline")
    if isinstance(sub, list):
        order = _lookup_order_mistake(sub)
        if order:
            raise NotYet(order)
    # Run it on pristine data: Sam has 60 posts inserted out of order, with ties on createdAt.
    with observe.sandbox("03-bounded-lookup", db) as box:
        observe.seed_posts(box.db, {"user:112": 60, "user:234": 25})
        box.db.posts.create_index({"authorId": 1, "createdAt": -1, "_id": -1})
        try:
            docs = list(box.db.users.aggregate(pipeline))
        except Exception as exc:  # noqa: BLE001 - the server's error, explained
            raise NotYet(f"the pipeline fails on the server: {exc}") from None
        expected = [d["_id"] for d in box.db.posts.find({"authorId": "user:112"}, {"_id": 1})
                    .sort([("createdAt", -1), ("_id", -1)]).limit(10)]
    if len(docs) > 1 and all(isinstance(d, dict) and d.get("_id") == "user:112" for d in docs):
        raise NotYet(f"the result is {len(docs)} copies of Sam's document: a stage after the join (`$unwind`?) "
                     "splits it into one document per post. The task wants ONE document holding the posts array.")
    if len(docs) != 1 or docs[0].get("_id") != "user:112":
        raise NotYet(f"expected exactly Sam's document (user:112); got {len(docs)} document(s). Start with $match.")
    joined = docs[0].get(field)
    if not isinstance(joined, list):
        raise NotYet(f"Sam's document has no joined array `{field}`; check the `as` field of $lookup and any "
                     "later $project.")
    got = [d.get("_id") for d in joined if isinstance(d, dict)]
    if len(got) > 10:
        raise NotYet(f"`{field}` holds {len(got)} posts; limit the join to 10 with `$limit` inside its pipeline.")
    if got == list(reversed(expected)):
        raise NotYet("these are the right posts in the wrong order: newest first is `createdAt: -1`.")
    if got[:1] == expected[:1] and got != expected and len(got) == 10:
        raise NotYet("the newest post is right but later ones are not: posts written at the same minute need the "
                     "tie-breaker `_id: -1` in the sort.")
    if got != expected:
        raise NotYet(f"`{field}` does not hold Sam's 10 newest posts, newest first (tie-break on `_id: -1`); "
                     "sort inside the $lookup pipeline before `$limit`.")
    extra = sorted({k for d in joined for k in d} - {"_id", "title", "createdAt"})
    if extra:
        raise NotYet(f"the posts still carry {extra}; add a `$project` inside the $lookup pipeline.")
    return "10 posts, newest first, three fields each, sorted, limited and projected inside the join."


@register
def _ex03() -> Exercise:
    return Exercise(
        id="03-bounded-lookup",
        lesson="03_lookup",
        task="Join Sam's 10 newest posts (only _id, title, createdAt) into his document with a bounded $lookup.",
        checker=_check_bounded_lookup,
        hints=["$lookup accepts localField/foreignField *and* a `pipeline` of stages applied to the matches.",
               "Inside the $lookup pipeline: $sort {createdAt: -1, _id: -1}, $limit 10, $project {title: 1, createdAt: 1}."],
        solution_text=(
            'pipeline = [\n    {"$match": {"_id": "user:112"}},\n'
            '    {"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": "posts",\n'
            '                 "pipeline": [{"$sort": {"createdAt": -1, "_id": -1}}, {"$limit": 10},\n'
            '                              {"$project": {"title": 1, "createdAt": 1}}]}},\n]\nex.check(db, pipeline)'
        ),
    )


def _explain_bounded_docs(measured: Any) -> str:
    return (f"The bounded join examined {measured} documents: Sam's user document, then 20 posts read in order "
            "from the {authorId, createdAt, _id} index and stopped by the $limit inside the join. His other posts "
            "are never read, however many he has.")


@register
def _ex03_predict() -> Exercise:
    return Prediction(
        id="03-predict-bounded-docs",
        lesson="03_lookup",
        task="Predict: Sam has thousands of posts. How many documents does the bounded $lookup (sort, limit 20, "
             "project inside the join) examine in all, his user document included?",
        checker=None,
        hints=["The join's $sort matches the index on the posts side, so the $limit stops the index scan."],
        solution_text="ex_docs.predict(21)",
        explain=_explain_bounded_docs,
        tolerance=0.05,
    )


def _seed_commenters(db: Any) -> None:
    db.users.insert_many([{"_id": f"user:{i}", "name": f"Commenter {i}", "bio": "b" * 200} for i in range(1, 500)])


def _check_top_comments(fn: Any) -> str:
    from labkit import ledger
    from labkit.exercises import observe

    if not callable(fn):
        raise NotYet("pass your function itself: `ex2.check(top_comments)` (it takes a post id and returns a "
                     "pipeline).")
    with observe.sandbox("03-top-comments") as box:
        observe.seed_comments(box.db, {"post:9": 1500, "post:10": 300})
        _seed_commenters(box.db)
        box.db.comments.create_index({"postId": 1, "likes": -1, "_id": 1})
        for post_id in ("post:9", "post:10"):
            pipeline = observe.call_learner(fn, post_id)
            if not isinstance(pipeline, list) or not all(isinstance(s, dict) for s in pipeline):
                raise NotYet("`top_comments(post_id)` must return a pipeline: a list of stage documents.")
            if not any("$lookup" in s for s in pipeline):
                raise NotYet("the pipeline has no `$lookup`: join each comment's commenter from `users` on the "
                             "server.")
            stages = [next(iter(s), "") for s in pipeline]
            if "$limit" in stages and ("$sort" not in stages or stages.index("$limit") < stages.index("$sort")):
                raise NotYet("`$limit` comes before any `$sort`: it keeps 5 comments in whatever order the server "
                             "reads them (here the index happens to give the right ones; another plan would not). "
                             "Sort by likes first, then limit.")
            sort = next((s["$sort"] for s in pipeline if isinstance(s, dict) and isinstance(s.get("$sort"), dict)),
                        None)
            if sort is not None and list(sort) == ["likes"]:
                raise NotYet("the sort has no tie-breaker: many comments share a like count, and among them the "
                             "server returns an order it does not promise (it can change with the plan), so the "
                             "page can show different comments from one run to the next. Add `_id: 1` after "
                             "`likes: -1`.")
            try:
                docs = list(box.db.comments.aggregate(pipeline))
            except Exception as exc:  # noqa: BLE001 - the server's error, explained
                raise NotYet(f"the pipeline fails on the server: {exc}") from None
            expected = list(box.db.comments.find({"postId": post_id}).sort([("likes", -1), ("_id", 1)]).limit(5))
            names = {u["_id"]: u["name"] for u in box.db.users.find({}, {"name": 1})}
            got = [d.get("_id") for d in docs]
            want = [c["_id"] for c in expected]
            if len(docs) > 5:
                raise NotYet(f"the pipeline returns {len(docs)} comments for {post_id}; the page shows 5: `$limit`.")
            if set(got) != set(want):
                likes = [d.get("likes") for d in docs]
                raise NotYet(f"for {post_id} these are not the 5 most-liked comments (likes {likes}): `$match` the "
                             "post, `$sort` by `likes: -1` (with `_id: 1` to break ties), then `$limit: 5`.")
            if got != want:
                raise NotYet("the right comments in the wrong order: most liked first, ties broken by `_id: 1`.")
            for doc, comment in zip(docs, expected):
                author = doc.get("author")
                if isinstance(author, list):
                    raise NotYet("`author` is still the array `$lookup` produced; take its one element's name "
                                 "(`{\"$set\": {\"author\": {\"$first\": \"$author.name\"}}}`).")
                if isinstance(author, dict):
                    raise NotYet("`author` is the commenter's whole document; the page needs only the name: "
                                 "`{\"$first\": \"$author.name\"}`.")
                if author != names.get(comment["userId"]):
                    raise NotYet(f"comment {comment['_id']} shows author {author!r}, but its commenter "
                                 f"({comment['userId']}) is {names.get(comment['userId'])!r}: join "
                                 "`localField: \"userId\"` to `foreignField: \"_id\"` and keep the name as `author`.")
                extra = sorted(set(doc) - {"_id", "text", "likes", "author"})
                if extra:
                    raise NotYet(f"the comments still carry {extra}; `$project` only text, likes and author.")
                if doc.get("text") != comment["text"] or doc.get("likes") != comment["likes"]:
                    raise NotYet("keep each comment's `text` and `likes` in the result.")
        cost = ledger.measure(box.db, lambda d: list(d.comments.aggregate(fn("post:9"))))
    if cost.docs_examined > 20:
        raise NotYet(f"the result is right, but the server examined {cost.docs_examined} documents for 5 comments "
                     "on a post with 1,500: the `$lookup` runs before the `$limit` (or the sort cannot use the "
                     "index), so every comment is joined. Sort and limit first; join only the 5 that are shown.")
    return (f"5 comments, most liked first, each with its commenter's name, for {cost.docs_examined} documents "
            "examined: the join ran only for the comments on the page.")


@register
def _ex03b() -> Exercise:
    return Exercise(
        id="03-top-comments",
        lesson="03_lookup",
        task="Write top_comments(post_id): a pipeline on `comments` giving the post's 5 most-liked comments, each "
             "with only text, likes and the commenter's name as `author`, joining `users` only for those 5.",
        checker=_check_top_comments,
        hints=["This join goes the other way: many comments to one user each. Decide which comments first, then "
               "join: `$match`, `$sort`, `$limit`, then `$lookup`.",
               "`{\"$lookup\": {\"from\": \"users\", \"localField\": \"userId\", \"foreignField\": \"_id\", "
               "\"as\": \"author\"}}`, then `{\"$set\": {\"author\": {\"$first\": \"$author.name\"}}}` and a "
               "`$project`."],
        solution_text=(
            "def top_comments(post_id):\n"
            "    return [\n"
            "        {\"$match\": {\"postId\": post_id}},\n"
            "        {\"$sort\": {\"likes\": -1, \"_id\": 1}},\n"
            "        {\"$limit\": 5},\n"
            "        {\"$lookup\": {\"from\": \"users\", \"localField\": \"userId\", \"foreignField\": \"_id\",\n"
            "                     \"pipeline\": [{\"$project\": {\"name\": 1}}], \"as\": \"author\"}},\n"
            "        {\"$project\": {\"text\": 1, \"likes\": 1, \"author\": {\"$first\": \"$author.name\"}}},\n"
            "    ]\n\nex2.check(top_comments)"
        ),
    )


# --- notebook 04 -------------------------------------------------------------------------------------------

def _pristine_follows(db: Any) -> None:
    """300 users; user:0 is followed by every even user, and user k follows the five users after it."""
    edges = []
    for k in range(1, 301):
        targets = ([0] if k % 2 == 0 else []) + [(k + j) % 300 + 1 for j in range(1, 6)]
        edges += [{"_id": f"follow:{k}:{t}", "followerId": f"user:{k:03d}", "followingId": f"user:{t:03d}"}
                  for t in targets if t != k]
    db.follows.insert_many(edges)


def _check_follow_indexes(follows: Any) -> str:
    from pymongo.errors import DuplicateKeyError, OperationFailure

    from labkit.exercises import observe

    import mongomock
    import pymongo.collection

    if not isinstance(follows, (pymongo.collection.Collection, mongomock.Collection)):
        raise NotYet(f"pass the collection (`practice.follows`), not {type(follows).__name__}.")
    learner_indexes = [spec for spec in follows.list_indexes() if spec["name"] != "_id_"]
    if not learner_indexes:
        raise NotYet("practice.follows has no index but `_id` yet: create one index per direction.")
    with observe.sandbox("04-follow-indexes", follows) as box:
        sandbox_follows = box.db.follows
        _pristine_follows(box.db)
        try:
            observe.copy_indexes(follows, sandbox_follows)
        except (DuplicateKeyError, OperationFailure) as exc:
            if getattr(exc, "code", None) == 11000:
                raise NotYet("one of your unique indexes refuses ordinary follows (built on follows where one "
                             "user follows several others, it fails with E11000): only the PAIR "
                             "{followerId, followingId} is unique, not either field alone.") from None
            raise
        for label, field, other, value in (("who follows", "followingId", "followerId", "user:000"),
                                           ("whom ... follows", "followerId", "followingId", "user:007")):
            plan = sandbox_follows.find({field: value}).sort(other, 1).limit(20).explain()
            figures = observe.plan_figures(plan)
            if figures.collscan:
                raise NotYet(f"'{label}' ({field} equality) still scans the collection: no index starts with "
                             f"`{field}`.")
            if figures.blocking_sort:
                raise NotYet(f"'{label}' has a blocking SORT: the index starting with `{field}` must continue "
                             f"with `{other}` so the page comes out in order.")
            if figures.keys_examined > figures.returned + 1:
                raise NotYet(f"'{label}' reads {figures.keys_examined} index keys for one page of "
                             f"{figures.returned}: the planner walks an index that does not start with `{field}` "
                             f"only for its sort order. Give this direction its own index that starts with "
                             f"`{field}`.")
        extra = observe.redundant_prefixes(sandbox_follows)
        if extra:
            raise NotYet(f"the index {extra[0][0]!r} is a prefix of {extra[0][1]!r}: every follow pays to maintain "
                         "it and no query needs it. Drop it; two indexes, one per direction, are enough.")
        edge = sandbox_follows.find_one({"_id": "follow:7:9"})
        try:
            sandbox_follows.insert_one({"_id": "follow:7:9:again", "followerId": edge["followerId"],
                                        "followingId": edge["followingId"]})
        except DuplicateKeyError:
            return "both directions are served by an index, in order, and duplicate edges are rejected."
    raise NotYet("a second follows document for the same follower/following pair was accepted (tried on a copy "
                 "of the indexes, your data is untouched): make the {followerId, followingId} index unique.")


@register
def _ex04() -> Exercise:
    return Exercise(
        id="04-follow-indexes",
        lesson="04_follows",
        task="Index follows so both directions run from an index without a blocking SORT, and duplicates fail.",
        checker=_check_follow_indexes,
        hints=["One index per direction: equality field first, then the field the page is sorted by.",
               "`create_index({...}, unique=True)` on {followerId: 1, followingId: 1}; mirror it for the other side."],
        solution_text=(
            'practice.follows.create_index({"followerId": 1, "followingId": 1}, unique=True)\n'
            'practice.follows.create_index({"followingId": 1, "followerId": 1})\nex.check(practice.follows)'
        ),
    )


def _explain_count_keys(measured: Any) -> str:
    return (f"Counting walks one index key per matching edge: {measured} keys for {measured} followers. The "
            "index makes each match cheap, not the count constant; a maintained counter reads one document.")


@register
def _ex04_predict() -> Exercise:
    return Prediction(
        id="04-predict-count-keys",
        lesson="04_follows",
        task="Predict: with the {followingId: 1, followerId: 1} index, how many index keys does counting Sam's "
             "followers examine?",
        checker=None,
        hints=["Look at how many followers the seed gave Sam (the summary above). What must a count visit?"],
        solution_text="ex_count.predict(4000)",
        explain=_explain_count_keys,
        tolerance=0.05,
    )


def _membership_state(db: Any, group_id: str) -> tuple[int, Any]:
    members = db.memberships.count_documents({"groupId": group_id})
    group = db.groups.find_one({"_id": group_id}) or {}
    return members, group.get("memberCount")


def _member_counter_method(rec: Any, what: str) -> None:
    """Refuse a recount, a read-modify-write of the counter, or a read of memberships before the insert."""
    commands = rec.commands
    counted = [c for c in commands if next(iter(c), None) in ("aggregate", "count")]
    if counted:
        raise NotYet(f"{what} counts the memberships again ({next(iter(counted[0]))} command): that reads one key per "
                     "member on every join and leave, which is what the counter is there to avoid. Move the "
                     "counter by one with `$inc`.")
    for spec in rec.update_specs():
        u = spec.get("u")
        if isinstance(u, list) or (isinstance(u, dict) and "memberCount" in (u.get("$set") or {})):
            raise NotYet(f"{what} writes memberCount with a value computed in Python from a read of the group "
                         "(read-modify-write): two joins at once both read 4 and both write 5, one is lost. Let "
                         "the server add: `$inc: {memberCount: 1}` (or -1).")
    if what == "join":
        names = [(next(iter(c), None), c.get(next(iter(c)))) for c in commands]
        first_write = next((i for i, (n, _) in enumerate(names) if n in ("insert", "update", "findAndModify")),
                           len(names))
        if any(n == "find" and coll == "memberships" for n, coll in names[:first_write]):
            raise NotYet("join reads memberships before inserting (find-then-insert): two joins at once both find "
                         "nothing and both go on. Insert straight away and let the unique index refuse the second "
                         "(catch DuplicateKeyError).")


def _check_member_counter(args: Any) -> str:
    from pymongo.errors import DuplicateKeyError

    from labkit.exercises import observe

    if not (isinstance(args, tuple) and len(args) == 3 and callable(args[1]) and callable(args[2])):
        raise NotYet("call it with the database and your two functions: `ex.check(practice, join, leave)`.")
    like, join, leave = args
    with observe.sandbox("04-member-counter", like) as box:
        db = box.db
        db.memberships.create_index({"groupId": 1, "userId": 1}, unique=True)
        db.groups.insert_many([{"_id": "group:chess", "name": "Chess", "memberCount": 3},
                               {"_id": "group:go", "name": "Go"}])
        db.memberships.insert_many([{"groupId": "group:chess", "userId": f"user:{i}"} for i in (1, 2, 3)])

        def step(fn: Any, what: str, group: str, user: str) -> None:
            try:
                observe.call_learner(fn, db, group, user)
            except DuplicateKeyError:
                raise NotYet(f"{what} let DuplicateKeyError escape: a repeated join (a double click, a retry) is "
                             "normal traffic. Catch it and leave the counter alone; the unique index already "
                             "refused the second membership.") from None

        box.recorder.clear()
        step(join, "join", "group:chess", "user:10")
        _member_counter_method(box.recorder, "join")
        members, count = _membership_state(db, "group:chess")
        if members != 4:
            raise NotYet(f"after one join the group has {members} memberships instead of 4: insert one membership "
                         "document {groupId, userId} per join.")
        if count != 4:
            raise NotYet(f"after one join memberCount is {count!r} instead of 4: increment it with "
                         "`$inc: {memberCount: 1}` on the group, in the same function.")
        if (db.groups.find_one({"_id": "group:go"}) or {}).get("memberCount") is not None:
            raise NotYet("a join to group:chess changed group:go's memberCount too: filter the counter update on "
                         "the group's `_id`.")
        step(join, "the second, repeated join", "group:chess", "user:10")
        members, count = _membership_state(db, "group:chess")
        if members != 4:
            raise NotYet(f"joining twice stored {members - 3} memberships for the same user: keep the unique index "
                         "on {groupId, userId} and let it refuse the duplicate.")
        if count != 4:
            raise NotYet(f"joining twice counted twice (memberCount {count!r} for 4 members): increment only after "
                         "the membership insert succeeded; the unique index, not a read before it, decides.")
        box.recorder.clear()
        step(leave, "leave", "group:chess", "user:10")
        _member_counter_method(box.recorder, "leave")
        members, count = _membership_state(db, "group:chess")
        if members != 3 or count != 3:
            raise NotYet(f"after leaving, the group has {members} memberships and memberCount {count!r} (expected "
                         "3 and 3): delete the membership and decrement by one.")
        step(leave, "leaving a group one is not in", "group:chess", "user:77")
        members, count = _membership_state(db, "group:chess")
        if count != 3:
            raise NotYet(f"leaving a group the user never joined changed memberCount to {count!r}: decrement only "
                         "when `delete_one(...).deleted_count == 1`.")
        step(join, "join", "group:go", "user:1")
        members, count = _membership_state(db, "group:go")
        if count != 1:
            raise NotYet(f"the first member of a group without a counter left memberCount at {count!r}: `$inc` "
                         "creates the field, `$set` from a stale read does not keep up.")
        others = db.groups.find_one({"_id": "group:chess"})
        if others.get("name") != "Chess":
            raise NotYet("the group document lost its other fields: update the counter with `$inc`, do not "
                         "replace the group.")
    return ("one membership document per join, refused when repeated, and a counter that moves by exactly one "
            "per real join or leave: a count read is one document, whatever the group's size.")


@register
def _ex04b() -> Exercise:
    return Exercise(
        id="04-member-counter",
        lesson="04_follows",
        task="Users join groups: one `memberships` document {groupId, userId} per membership (a unique index on "
             "the pair exists) and `groups.memberCount` maintained on each join and leave. Write "
             "`join(db, group_id, user_id)` and `leave(db, group_id, user_id)`; a repeated join or a leave of a "
             "non-member must not move the counter.",
        checker=_check_member_counter,
        hints=["Insert the membership first; if it raises DuplicateKeyError, stop there.",
               "`leave`: `if db.memberships.delete_one({...}).deleted_count: db.groups.update_one(..., "
               "{\"$inc\": {\"memberCount\": -1}})`."],
        solution_text=(
            "from pymongo.errors import DuplicateKeyError\n\n\ndef join(db, group_id, user_id):\n    try:\n"
            "        db.memberships.insert_one({\"groupId\": group_id, \"userId\": user_id})\n"
            "    except DuplicateKeyError:\n        return\n"
            "    db.groups.update_one({\"_id\": group_id}, {\"$inc\": {\"memberCount\": 1}})\n\n\n"
            "def leave(db, group_id, user_id):\n"
            "    if db.memberships.delete_one({\"groupId\": group_id, \"userId\": user_id}).deleted_count:\n"
            "        db.groups.update_one({\"_id\": group_id}, {\"$inc\": {\"memberCount\": -1}})\n\n\n"
            "ex2.check(practice, join, leave)"
        ),
    )


# --- notebook 05 -------------------------------------------------------------------------------------------

def _edges_and_copies(db: Any) -> tuple[set, set, set]:
    edges = {(e["followerId"], e["followingId"]) for e in db.follows.find({}, {"followerId": 1, "followingId": 1})}
    following, followers = set(), set()
    for u in db.users.find({}, {"followingIds": 1, "followerIds": 1}):
        following |= {(u["_id"], b) for b in u.get("followingIds") or []}
        followers |= {(a, u["_id"]) for a in u.get("followerIds") or []}
    return edges, following, followers


def _seed_follow_graph(db: Any, users: int = 40, seed: int = 5) -> None:
    """Pristine users and follows edges with both copies (followerIds / followingIds) consistent."""
    import random

    rng = random.Random(seed)
    ids = [f"user:{i:03d}" for i in range(users)]
    edges = sorted({(a, b) for a in ids for b in rng.sample(ids, 4) if a != b})
    db.follows.insert_many([{"_id": f"{a}->{b}", "followerId": a, "followingId": b} for a, b in edges])
    docs = {u: {"_id": u, "name": u[-3:], "followingIds": [], "followerIds": []} for u in ids}
    for a, b in edges:
        docs[a]["followingIds"].append(b)
        docs[b]["followerIds"].append(a)
    db.users.insert_many(list(docs.values()))


def _check_reconcile(args: Any) -> str:
    from labkit.exercises import observe

    db, reconcile = _db_and_function(args, "reconcile")
    with observe.sandbox("05-reconcile", db) as box:
        _seed_follow_graph(box.db)
        edges_before = list(box.db.follows.find().sort("_id", 1))
        # Break the copies on purpose: drop one side of two edges, add a bogus id, remove one array entirely.
        users = [u["_id"] for u in box.db.users.find({}, {"_id": 1}).sort("_id", 1).limit(6)]
        e0, e1 = edges_before[0], edges_before[-1]
        box.db.users.update_one({"_id": e0["followerId"]}, {"$pull": {"followingIds": e0["followingId"]}})
        box.db.users.update_one({"_id": e1["followingId"]}, {"$pull": {"followerIds": e1["followerId"]}})
        box.db.users.update_one({"_id": users[3]}, {"$push": {"followerIds": "user:does-not-exist"}})
        box.db.users.update_one({"_id": users[4]}, {"$unset": {"followingIds": ""}})
        broken = len({e0["followerId"], e1["followingId"], users[3], users[4]})
        total = box.db.users.count_documents({})
        box.recorder.clear()
        reconcile(box.db)
        modified = box.recorder.modified()
        statements = box.recorder.write_statements()
        edges_after = list(box.db.follows.find().sort("_id", 1))
        edges, following, followers = _edges_and_copies(box.db)
    if edges_after != edges_before:
        raise NotYet(f"the follows edges changed ({len(edges_before)} before, {len(edges_after)} after): "
                     "reconciliation rebuilds the copies from the edges and never touches the edges.")
    if following != edges:
        raise NotYet(f"{len(edges ^ following)} followingIds entries still disagree with the edges "
                     f"(e.g. {sorted(edges ^ following)[:1]}).")
    if followers != edges:
        extra = followers - edges
        if extra and not (edges - followers):
            raise NotYet(f"every missing id was added, but {len(extra)} id(s) that should not be there remain "
                         f"(e.g. {sorted(extra)[:1]}): reconciling also removes what no edge supports.")
        raise NotYet(f"{len(edges ^ followers)} followerIds entries still disagree with the edges "
                     f"(e.g. {sorted(edges ^ followers)[:1]}); remember ids that should not be there at all.")
    if modified > 2 * broken:
        raise NotYet(f"the copies are right, but your job rewrote {modified} user documents to repair {broken} "
                     f"broken users (of {total}): that is a full rebuild, and on a store of millions of users it "
                     "rewrites every one of them every night. Compare each user's arrays with the edges and write "
                     "only the users that differ.")
    if statements > 2 * broken:
        raise NotYet(f"the copies are right, but your job sent {statements} write statements to repair {broken} "
                     f"broken users (of {total}): writing every user, even with the values it already has, is a "
                     "full rebuild in cost (every statement is a write the server must find, compare and log). "
                     "Compare first and write only the users that differ.")
    return (f"all {len(edges)} edges are reflected exactly in both arrays, the edges are untouched, and only "
            f"{statements} user write(s) were sent to repair {broken} broken users.")


@register
def _ex05() -> Exercise:
    return Exercise(
        id="05-reconcile",
        lesson="05_two_way",
        task="Write reconcile(db): repair followerIds/followingIds from the follows edges, rewriting only the users "
             "whose copies are wrong.",
        checker=_check_reconcile,
        hints=["Group the edges by follower (for followingIds) and by followed user (for followerIds), then "
               "compare each user's arrays with those groups as sets.",
               "A user with no edges at all should end up with empty arrays; write a user only when a set differs."],
        solution_text=(
            "def reconcile(db):\n"
            "    following, followers = {}, {}\n"
            "    for e in db.follows.find({}, {\"followerId\": 1, \"followingId\": 1}):\n"
            "        following.setdefault(e[\"followerId\"], set()).add(e[\"followingId\"])\n"
            "        followers.setdefault(e[\"followingId\"], set()).add(e[\"followerId\"])\n"
            "    for u in db.users.find({}, {\"followingIds\": 1, \"followerIds\": 1}):\n"
            "        want = {\"followingIds\": sorted(following.get(u[\"_id\"], ())),\n"
            "                \"followerIds\": sorted(followers.get(u[\"_id\"], ()))}\n"
            "        fix = {f: ids for f, ids in want.items() if set(u.get(f) or []) != set(ids) or f not in u}\n"
            "        if fix:\n"
            "            db.users.update_one({\"_id\": u[\"_id\"]}, {\"$set\": fix})\n"
            "\nex.check(db, reconcile)"
        ),
    )


def _explain_txn_edge(measured: Any) -> str:
    return (f"{measured} edge(s) for that pair: the crash came after two of the three writes, inside "
            "`with_transaction`, so the callback raised, the transaction aborted and its writes (the edge and the "
            "follower's array) were discarded together. Nothing is half-done.")


@register
def _ex05_predict() -> Exercise:
    return Prediction(
        id="05-predict-transaction-crash",
        lesson="05_two_way",
        task="Predict: inside with_transaction, the follow crashes after the edge and the follower's array were "
             "written. How many follow edges for that pair are there afterwards?",
        checker=None,
        choices=(0, 1),
        hints=["A transaction commits all its writes or none; did this one commit?"],
        solution_text="ex_txn.predict(0)",
        explain=_explain_txn_edge,
    )


_ENROLL_STUDENTS = ("student:ana", "student:ben", "student:cho")
_ENROLL_COURSES = ("course:db101", "course:ml200")


def _enroll_state(db: Any) -> dict:
    students = {d["_id"]: d.get("courseIds") for d in db.students.find()}
    courses = {d["_id"]: d.get("studentIds") for d in db.courses.find()}
    edges = sorted((e.get("studentId"), e.get("courseId")) for e in db.enrollments.find())
    return {"students": students, "courses": courses, "edges": edges}


def _enroll_sandbox(like: Any) -> Any:
    from labkit.exercises import observe

    box = observe.sandbox("05-idempotent-enroll", like)
    box.db.students.insert_many([{"_id": s, "name": s.split(":")[1].title(), "courseIds": []}
                                 for s in _ENROLL_STUDENTS])
    box.db.courses.insert_many([{"_id": c, "title": c.split(":")[1], "studentIds": []} for c in _ENROLL_COURSES])
    box.db.enrollments.create_index({"studentId": 1, "courseId": 1}, unique=True)
    box.recorder.clear()
    return box


def _call_enroll(enroll: Any, db: Any, student: str, course: str, when: Any, what: str) -> None:
    import pymongo.errors

    try:
        enroll(db, student, course, when)
    except pymongo.errors.DuplicateKeyError:
        raise NotYet(f"{what}, your function raised DuplicateKeyError: the enrollment already exists, so a retry "
                     "stops at the first write and never repairs the copies. Make the edge write idempotent (an "
                     "upsert on the pair, or catch the duplicate and carry on) and the copies `$addToSet`.") from None


def _check_idempotent_enroll(args: Any) -> str:
    import datetime as dt

    db, enroll = _db_and_function(args, "enroll")
    when = dt.datetime(2026, 9, 1, 8, 0)
    want = {"students": {"student:ana": ["course:db101"], "student:ben": [], "student:cho": []},
            "courses": {"course:db101": ["student:ana"], "course:ml200": []},
            "edges": [("student:ana", "course:db101")]}
    # 1. one call: the edge and both copies
    with _enroll_sandbox(db) as box:
        _call_enroll(enroll, box.db, "student:ana", "course:db101", when, "on a first call")
        first = box.recorder.writes()
        first_specs = box.recorder.update_specs()
        once = _enroll_state(box.db)
    if not first:
        raise NotYet("your function sent no write; it should record the enrollment and both copies.")
    if once["edges"] != want["edges"]:
        raise NotYet(f"after one call `enrollments` holds {once['edges']}; it should hold exactly the one "
                     "(student:ana, course:db101) edge, with `studentId` and `courseId` fields.")
    if once != want:
        raise NotYet(f"after one call the copies are students {once['students']} and courses {once['courses']}: "
                     "add the course to the student's `courseIds` and the student to the course's `studentIds`.")
    for spec in first_specs:
        u = spec.get("u")
        sets = (u.get("$set") or {}) if isinstance(u, dict) else {}
        if isinstance(u, list) or any(f in sets for f in ("courseIds", "studentIds")):
            raise NotYet("your function writes a whole copy array with a value computed in Python (read, add, "
                         "`$set` back): two students enrolling in one course at once both read the old list and "
                         "the later write drops the other student. `$addToSet` lets the server add each id.")
    target = first[0].get(next(iter(first[0])))
    if target != "enrollments":
        raise NotYet(f"your function writes `{target}` before the enrollment: if it dies right after, a copy claims "
                     "an enrollment that does not exist. Write the authoritative edge first, then the copies.")
    # 2. a retry of a call that went through, and retries after crashes between the writes
    crashes = {
        "retried after it had succeeded": lambda d: None,
        "retried after a crash right after the enrollment was written": lambda d: (
            d.students.update_one({"_id": "student:ana"}, {"$set": {"courseIds": []}}),
            d.courses.update_one({"_id": "course:db101"}, {"$set": {"studentIds": []}})),
        "retried after a crash between the two copies": lambda d: (
            d.courses.update_one({"_id": "course:db101"}, {"$set": {"studentIds": []}}),
            d.students.update_one({"_id": "student:ana"}, {"$set": {"courseIds": ["course:db101"]}})),
    }
    for what, crash in crashes.items():
        with _enroll_sandbox(db) as box:
            _call_enroll(enroll, box.db, "student:ana", "course:db101", when, "on a first call")
            crash(box.db)
            _call_enroll(enroll, box.db, "student:ana", "course:db101", when, f"{what}")
            state = _enroll_state(box.db)
        if len(state["edges"]) > 1:
            raise NotYet(f"{what}, there are {len(state['edges'])} enrollment documents for one enrollment: give "
                         "the edge a deterministic key (upsert on studentId + courseId) so a retry finds it.")
        dupes = [k for part in ("students", "courses") for k, ids in state[part].items()
                 if isinstance(ids, list) and len(ids) != len(set(map(str, ids)))]
        if dupes:
            raise NotYet(f"{what}, {', '.join(dupes)} list the same id twice: `$push` adds it again on every retry; "
                         "`$addToSet` adds it only when missing.")
        if state != want:
            raise NotYet(f"{what}, the copies are students {state['students']} and courses {state['courses']}: a "
                         "retry must finish the writes a crash left undone.")
    # 3. calls at once: a retry fired while the first call still runs, and two students joining one course
    from labkit.exercises import observe
    at_once = ("when a retry runs while the first call is still going (right after its first read; a find "
               "before the insert sees nothing in both calls, so both insert)")
    with _enroll_sandbox(db) as box:
        observe.interleaved(lambda: _call_enroll(enroll, box.db, "student:ana", "course:db101", when, at_once),
                            lambda: _call_enroll(enroll, box.db, "student:ana", "course:db101", when, at_once),
                            box.recorder)
        twice = _enroll_state(box.db)
    if len(twice["edges"]) > 1:
        raise NotYet(f"a retry that runs while the first call is still going (right after its first read) leaves "
                     f"{len(twice['edges'])} enrollment documents: a find before the insert sees nothing in both "
                     "calls. Let one write decide: an upsert on {studentId, courseId}.")
    with _enroll_sandbox(db) as box:
        observe.interleaved(lambda: _call_enroll(enroll, box.db, "student:ana", "course:db101", when, "at once"),
                            lambda: _call_enroll(enroll, box.db, "student:ben", "course:db101", when, "at once"),
                            box.recorder)
        both = _enroll_state(box.db)
    if sorted(both["courses"].get("course:db101") or []) != ["student:ana", "student:ben"]:
        raise NotYet(f"ana and ben enrolling in course:db101 at once leave its studentIds "
                     f"{both['courses'].get('course:db101')}: an array read, changed in Python and written back "
                     "with `$set` loses the other call's student. `$addToSet` lets the server add each one.")
    return ("one call records the enrollment and both copies, edge first; a retry after a success or after a crash "
            "at either point leaves exactly one enrollment and both copies right, so retries can be automatic.")


@register
def _ex05b() -> Exercise:
    return Exercise(
        id="05-idempotent-enroll",
        lesson="05_two_way",
        task="Write enroll(db, student_id, course_id, when): record the enrollment, then the copies on the student "
             "and the course, so that retrying the call after a crash at any point (or after a success) leaves "
             "one enrollment and both copies right.",
        checker=_check_idempotent_enroll,
        hints=["A retry runs the whole function again: every write must be safe to repeat.",
               "Edge: `update_one({studentId, courseId}, {\"$setOnInsert\": {...}}, upsert=True)`; copies: "
               "`$addToSet`."],
        solution_text=(
            "def enroll(db, student_id, course_id, when):\n"
            "    db.enrollments.update_one({\"studentId\": student_id, \"courseId\": course_id},\n"
            "                              {\"$setOnInsert\": {\"enrolledAt\": when}}, upsert=True)\n"
            "    db.students.update_one({\"_id\": student_id}, {\"$addToSet\": {\"courseIds\": course_id}})\n"
            "    db.courses.update_one({\"_id\": course_id}, {\"$addToSet\": {\"studentIds\": student_id}})\n"
            "\nex2.check(db, enroll)"
        ),
    )


# --- notebook 06 -------------------------------------------------------------------------------------------

def _check_bounded_preview(args: Any) -> str:
    from labkit.exercises import observe

    db, add_follower = _db_and_function(args, "add_follower")
    test_id = "user:preview-check"
    names = ["Ann", "Bo", "Cy", "Di", "Ed"]
    with observe.sandbox("06-bounded-preview", db) as box:
        box.db.users.insert_one({"_id": test_id, "name": "Preview Check", "roles": []})
        box.recorder.clear()
        for i, name in enumerate(names[:3]):
            add_follower(box.db, test_id, f"user:p{i}", name)
        per_call = box.recorder.write_statements() / 3
        # Two followers arrive at once: the second call runs to completion right after the first one's read.
        observe.interleaved(lambda: add_follower(box.db, test_id, "user:p3", "Di"),
                            lambda: add_follower(box.db, test_id, "user:p4", "Ed"), box.recorder)
        reads = [n for n in box.recorder.names() if n in ("find", "aggregate")]
        doc = box.db.users.find_one({"_id": test_id})
    preview = (doc or {}).get("followerPreview")
    if not isinstance(preview, list):
        raise NotYet("after five calls the user has no `followerPreview` array; push into that field.")
    got = [(p.get("userId"), p.get("name")) for p in preview if isinstance(p, dict)]
    want = [("user:p4", "Ed"), ("user:p3", "Di"), ("user:p2", "Cy")]
    if reads and ("user:p4", "Ed") not in got or reads and ("user:p3", "Di") not in got:
        lost = "Ed" if ("user:p4", "Ed") not in got else "Di"
        raise NotYet(f"when two followers arrived at the same time, {lost} was lost: your function reads the "
                     "preview, changes it in Python and writes it back, so the second writer overwrites the "
                     "first. Let the server do it in one update: `$push` with `$each`, `$position` and `$slice`.")
    if per_call > 1:
        raise NotYet(f"each call sent {per_call:g} writes; keep the preview bounded in the same single update.")
    if len(preview) > 3:
        raise NotYet(f"the preview holds {len(preview)} entries after five follows; add `$slice: 3` to the $push.")
    if len(preview) < 3:
        raise NotYet(f"the preview holds only {len(preview)} entries; it should keep three.")
    if got == [("user:p2", "Cy"), ("user:p1", "Bo"), ("user:p0", "Ann")]:
        raise NotYet("the preview kept the three OLDEST followers: `$slice: -3` keeps the last three elements, and "
                     "with `$position: 0` the newest are at the front. Use `$slice: 3` to keep the first three.")
    if got == list(reversed(want)):
        raise NotYet("these are the three newest, but oldest first: use `$position: 0` so the newest comes first.")
    if got == [("user:p0", "Ann"), ("user:p1", "Bo"), ("user:p2", "Cy")] or got[:1] == [("user:p0", "Ann")]:
        raise NotYet("the preview kept the *oldest* followers: with `$position: 0`, `$slice: 3` keeps the first three, "
                     "which are the newest.")
    if got != want:
        raise NotYet(f"expected {want} (newest first), got {got}.")
    if any(set(p) != {"userId", "name"} for p in preview):
        raise NotYet("keep each entry to `{userId, name}`: copy only what the view needs.")
    return ("the preview stays at the three newest followers, newest first, in one update each, and two followers "
            "arriving together both show up.")


@register
def _ex06() -> Exercise:
    return Exercise(
        id="06-bounded-preview",
        lesson="06_denormalization",
        task="Write add_follower(db, user_id, follower_id, name) keeping followerPreview to the 3 newest, newest first.",
        checker=_check_bounded_preview,
        hints=["`$push` takes modifiers: `{\"$each\": [entry], \"$position\": 0, \"$slice\": 3}`."],
        solution_text=(
            "def add_follower(db, user_id, follower_id, name):\n"
            "    db.users.update_one({\"_id\": user_id}, {\"$push\": {\"followerPreview\": {\n"
            "        \"$each\": [{\"userId\": follower_id, \"name\": name}], \"$position\": 0, \"$slice\": 3}}})\n"
            "\nex.check(db, add_follower)"
        ),
    )


def _explain_oldest_preview(measured: Any) -> str:
    return (f"The oldest preview reached {measured:g} hours: the job runs every 6 hours and rebuilds every preview "
            "at least 24 - 6 = 18 hours old, so a preview is rebuilt at the first run after it turns 18 hours, "
            "and never gets older than that before a run. The one-day policy holds with a 6-hour margin.")


@register
def _ex06_predict() -> Exercise:
    return Prediction(
        id="06-predict-oldest-preview",
        lesson="06_denormalization",
        task="Predict: the rebuild job runs every 6 hours and rebuilds previews at least 18 hours old. Over the "
             "day after a full rebuild, how old (in hours) does the oldest preview get before a run?",
        checker=None,
        hints=["Walk the runs at 6, 12, 18 and 24 hours: at which one is a preview first at least 18 hours old?"],
        solution_text="ex_age.predict(18)",
        explain=_explain_oldest_preview,
    )


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


def _check_rename_member(args: Any) -> str:
    import copy

    from labkit.exercises import observe

    db, rename_member = _db_and_function(args, "rename_member")
    with observe.sandbox("06-rename-member", db) as box:
        _seed_teams(box.db)
        before = {c: {d["_id"]: d for d in box.db[c].find()} for c in ("users", "teams", "messages")}
        box.recorder.clear()
        observe.call_learner(rename_member, box.db, "user:7", "Sevi")
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
    fixed = sorted(k for s in specs for op in (s.get("u") or {}).values() if isinstance(op, dict) for k in op
                   if any(part.isdigit() for part in str(k).split(".")))
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
    whole = any(isinstance((s.get("u") or {}).get("$set"), dict) and "members" in s["u"]["$set"] for s in specs)
    if whole:
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


@register
def _ex06b() -> Exercise:
    return Exercise(
        id="06-rename-member",
        lesson="06_denormalization",
        task="Write rename_member(db, user_id, new_name): rename the user and every team's `members` preview entry "
             "for them, in two writes however many teams, leaving the messages' author snapshots alone.",
        checker=_check_rename_member,
        hints=["A preview entry is a display copy that follows the canonical name; a message's snapshot is history.",
               "`db.teams.update_many({\"members.userId\": user_id}, {\"$set\": {\"members.$.name\": new_name}})`"],
        solution_text=(
            "def rename_member(db, user_id, new_name):\n"
            "    db.users.update_one({\"_id\": user_id}, {\"$set\": {\"name\": new_name}})\n"
            "    db.teams.update_many({\"members.userId\": user_id}, {\"$set\": {\"members.$.name\": new_name}})\n"
            "\nex2.check(db, rename_member)"
        ),
    )


# --- notebook 07 -------------------------------------------------------------------------------------------

def _check_post_validator(validator: Any) -> str:
    import datetime as dt

    from pymongo.errors import OperationFailure

    from labkit.engine import EmbeddedClient

    if not isinstance(validator, dict) or not validator:
        raise NotYet("`validator` must be a dict such as {\"$jsonSchema\": {...}}.")
    schema = validator.get("$jsonSchema")
    used = _schema_keywords(schema) if isinstance(schema, dict) else set()
    if "type" in used and "bsonType" not in used:
        raise NotYet("MongoDB's `$jsonSchema` names BSON types with `bsonType` (\"string\", \"date\", \"int\"); "
                     "JSON Schema's `type: 'integer'` and friends are not BSON types, and there is no JSON "
                     "`date` type at all. Use `bsonType`.")
    if "format" in used:
        raise NotYet("MongoDB's `$jsonSchema` does not support the `format` keyword (the server refuses it); use "
                     "`bsonType: \"date\"` for dates and `pattern` for string shapes.")
    scratch = EmbeddedClient()["exercise_07"]
    try:
        coll = scratch.create_collection("posts", validator=validator)
    except OperationFailure as exc:
        raise NotYet(f"the server refuses these rules: {exc}") from None
    when = dt.datetime(2026, 10, 2, 12)
    good = [{"_id": "p1", "authorId": "user:112", "title": "favorite pizza", "createdAt": when},
            {"_id": "p2", "authorId": "user:234", "title": "x" * 200, "createdAt": when, "location": "Sacramento"}]
    bad = [
        ({"_id": "b1", "authorId": 112, "title": "t", "createdAt": when}, "a numeric authorId"),
        ({"_id": "b2", "authorId": "112", "title": "t", "createdAt": when}, "an authorId without the 'user:' prefix"),
        ({"_id": "b8", "authorId": "guest-user:9", "title": "t", "createdAt": when},
         "an authorId that contains 'user:' but does not start with it ('guest-user:9'; anchor the pattern: '^user:')"),
        ({"_id": "b9", "authorId": "user9", "title": "t", "createdAt": when},
         "an authorId 'user9' without the colon (the prefix is 'user:', colon included)"),
        ({"_id": "b10", "authorId": "user:1", "title": 42, "createdAt": when},
         "a numeric title (minLength/maxLength apply to strings only: add `bsonType: \"string\"`)"),
        ({"_id": "b3", "authorId": "user:1", "title": "", "createdAt": when}, "an empty title"),
        ({"_id": "b4", "authorId": "user:1", "title": "x" * 201, "createdAt": when}, "a 201-character title"),
        ({"_id": "b5", "authorId": "user:1", "title": "t", "createdAt": "2026-10-02"}, "createdAt given as a string"),
        ({"_id": "b6", "authorId": "user:1", "title": "t"}, "a post without createdAt"),
        ({"_id": "b7", "title": "t", "createdAt": when}, "a post without authorId"),
    ]
    try:
        return _try_post_validator(coll, good, bad)
    except (NotImplementedError, OperationFailure) as exc:  # an expression the embedded engine cannot evaluate
        if isinstance(exc, OperationFailure) and getattr(exc, "code", None) not in (115, 1):
            raise
        reason = str(exc).split(", full error:")[0]
        raise NotYet(f"the embedded engine cannot evaluate part of this validator ({reason}). The task asks for "
                     "`$jsonSchema` rules (`bsonType`, `pattern`, `minLength`/`maxLength`), which it checks "
                     "fully; try that form.") from None


def _failed_rules(info: Any) -> list[str]:
    """The property and operator names an errInfo (``details.schemaRulesNotSatisfied``) says failed."""
    out: list[str] = []
    todo = [info]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for key in ("propertyName", "operatorName"):
                if isinstance(node.get(key), str) and node[key] not in out and node[key] not in ("properties", "$jsonSchema"):
                    out.append(node[key])
            todo += list(node.values())
        elif isinstance(node, list):
            todo += node
    return out[:4]


def _try_post_validator(coll: Any, good: list, bad: list) -> str:
    from pymongo.errors import WriteError

    for doc in good:
        try:
            coll.insert_one(doc)
        except WriteError as exc:
            rules = _failed_rules((exc.details or {}).get("errInfo"))
            why = f" The server's errInfo names {', '.join(rules)}." if rules else ""
            raise NotYet(f"a valid post was rejected: {doc['_id']} ({doc}) with title of {len(doc['title'])} "
                         f"characters (extra fields such as `location` must stay allowed).{why}") from None
    for doc, what in bad:
        try:
            coll.insert_one(doc)
        except WriteError as exc:
            if exc.code != 121:
                raise NotYet(f"{what} failed with code {exc.code}, not validation (121).") from None
            continue
        raise NotYet(f"{what} was accepted; tighten the rules.")
    return f"valid posts pass and each of the {len(bad)} bad ones is rejected with code 121."


@register
def _ex07() -> Exercise:
    return Exercise(
        id="07-post-validator",
        lesson="07_validation",
        task="Write a validator for posts: authorId 'user:...' string, title 1-200 chars, createdAt a date.",
        checker=_check_post_validator,
        hints=["`required` lists the three fields; `properties` gives each a `bsonType`.",
               "`pattern: \"^user:\"`, `minLength: 1`, `maxLength: 200`, `bsonType: \"date\"`."],
        solution_text=(
            'validator = {"$jsonSchema": {\n    "bsonType": "object",\n'
            '    "required": ["authorId", "title", "createdAt"],\n    "properties": {\n'
            '        "authorId": {"bsonType": "string", "pattern": "^user:"},\n'
            '        "title": {"bsonType": "string", "minLength": 1, "maxLength": 200},\n'
            '        "createdAt": {"bsonType": "date"},\n    },\n}}\nex.check(validator)'
        ),
    )


def _explain_strict_repair(measured: Any) -> str:
    return ("`strict` validates the document an update *produces*, not the one it starts from: a repair whose "
            "result is valid is accepted, and one that leaves the document invalid is refused (which is what a "
            "migration wants to hear). `bypass_document_validation` is not needed for it.")


@register
def _ex07_predict() -> Exercise:
    return Prediction(
        id="07-predict-strict-repair",
        lesson="07_validation",
        task="Predict (True/False): under validationLevel 'strict', is an update that turns an invalid legacy "
             "document into a valid one accepted without bypass_document_validation?",
        checker=None,
        hints=["Which document does the server validate on an update: the old one or the result?"],
        solution_text="ex_strict.predict(True)",
        explain=_explain_strict_repair,
    )


PRODUCTS_SCHEMA = {
    "bsonType": "object",
    "required": ["sku", "name", "tags"],
    "properties": {
        "sku": {"bsonType": "string", "pattern": "^SKU-"},
        "name": {"bsonType": "string", "minLength": 1},
        "tags": {"bsonType": "array", "maxItems": 5, "items": {"bsonType": "string"}},
    },
}


def legacy_products() -> list[dict]:
    """Products as an old import wrote them (a few break ``PRODUCTS_SCHEMA``), for lesson 07's exercise."""
    return [
        {"_id": 1, "sku": "SKU-1", "name": "Kettle", "tags": ["kitchen", "steel"]},
        {"_id": 2, "sku": "SKU-2", "name": "Lamp", "tags": "desk, led,white"},
        {"_id": 3, "sku": "SKU-3", "name": "Chair", "tags": ["oak", "dining", "set", "brown", "solid", "wax",
                                                            "nordic"]},
        {"_id": 4, "sku": "SKU-4", "name": "", "tags": ["garden"]},
        {"_id": 5, "sku": "SKU-5", "name": "Mug"},
        {"_id": 6, "sku": "SKU-6", "name": "Rug", "tags": ["wool", "blue", "hand-made", "large", "round", "soft",
                                                          "washable", "sale"]},
    ]


def _tag_list(doc: dict) -> list:
    tags = doc.get("tags")
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    return list(tags or [])


def _check_migrate_products(args: Any) -> str:
    from pymongo.errors import WriteError

    from labkit.exercises import observe

    like, migrate = _db_and_function(args, "migrate", db="practice")
    with observe.sandbox("07-migrate-products", like) as box:
        db = box.db
        before = legacy_products()
        db.products.insert_many([dict(d) for d in before])
        db.command("collMod", "products", validator={"$jsonSchema": PRODUCTS_SCHEMA},
                   validationLevel="strict", validationAction="error")
        box.recorder.clear()
        try:
            observe.call_learner(migrate, db)
        except WriteError as exc:
            raise NotYet(f"the server refused one of your updates (code {exc.code}): under `strict` the document "
                         "an update produces must be valid; fix the whole document in one update.") from None
        commands = box.recorder.commands
        statements = box.recorder.write_statements()
        after = {d["_id"]: d for d in db.products.find()}
        failing = sorted(d["_id"] for d in db.products.find({"$nor": [{"$jsonSchema": PRODUCTS_SCHEMA}]}))
        options = db.products.options()
    if options.get("validationLevel") != "strict" or options.get("validationAction") != "error":
        raise NotYet("leave the rules as they are (strict, error): the migration repairs documents; it must not "
                     "loosen the validator.")
    missing = [d["_id"] for d in before if d["_id"] not in after]
    if missing:
        raise NotYet(f"product(s) {missing} were deleted: repair them instead; a migration loses nothing.")
    if failing:
        raise NotYet(f"product(s) {failing} still break the rules (find them with `$nor: [{{$jsonSchema: ...}}]`).")
    if any(c.get("bypassDocumentValidation") for c in commands):
        raise NotYet("your migration sends writes with `bypass_document_validation=True`: it is not needed (under "
                     "strict, an update whose result is valid passes) and it would let a wrong repair in "
                     "unchecked. Leave it out.")
    if any("collMod" in c for c in commands):
        raise NotYet("your migration changes the collection's rules (collMod) while it runs: for that time every "
                     "other writer may store invalid products. Keep strict/error on; a valid repair passes.")
    for d in before:
        got = after[d["_id"]]
        want = _tag_list(d)
        kept = list(got.get("tags") or []) + list(got.get("moreTags") or [])
        if kept != want:
            lost = [t for t in want if t not in kept]
            if not isinstance(d.get("tags"), list) and [str(t).strip() for t in kept] == want:
                raise NotYet(f"{d['sku']}'s tags {kept} keep the spaces around the commas: strip each tag "
                             "after splitting the string.")
            if lost:
                raise NotYet(f"{d['sku']} lost tag(s) {lost}: tags beyond the fifth go to `moreTags`, in order; "
                             "the bound must not silently drop data.")
            raise NotYet(f"{d['sku']} has tags {got.get('tags')} + moreTags {got.get('moreTags')}, expected "
                         f"{want} in that order (split a comma string and strip the spaces).")
        if not d.get("name") and got.get("name") != d["sku"]:
            raise NotYet(f"{d['sku']} has no usable name; the task says to use its sku ({d['sku']!r}).")
        if d.get("name") and got.get("name") != d["name"]:
            raise NotYet(f"{d['sku']}'s name {d['name']!r} became {got.get('name')!r}: only an empty name is "
                         "replaced by the sku; a migration keeps the data it can.")
        if d["_id"] == 1 and got != d:
            raise NotYet("SKU-1 was already valid but was rewritten: touch only the documents the audit finds.")
    invalid = sum(1 for d in before if d["_id"] != 1)
    if statements > invalid:
        raise NotYet(f"your migration sent {statements} write statements for {invalid} invalid products: it writes "
                     "the valid ones too. Audit first (`$nor: [{$jsonSchema: ...}]`) and repair only what it finds.")
    return ("every product passes the strict rules, no tag was lost (the overflow sits in `moreTags`), and the "
            "valid product was left alone: no bypass needed.")


@register
def _ex07b() -> Exercise:
    return Exercise(
        id="07-migrate-products",
        lesson="07_validation",
        task="`products` has strict rules (sku 'SKU-...', a non-empty name, at most 5 string tags) and legacy "
             "documents that break them. Write `migrate(db)`: repair each invalid product without bypassing "
             "validation and without losing a tag (a comma string becomes a list, tags beyond the fifth move to "
             "`moreTags`, a missing tag list becomes [], an empty name becomes the sku).",
        checker=_check_migrate_products,
        hints=["Audit first: `db.products.find({\"$nor\": [{\"$jsonSchema\": schema}]})`.",
               "Build the whole repaired shape in Python and `$set` it in one update per product: the result is "
               "valid, so `strict` accepts it."],
        solution_text=(
            "def migrate(db):\n    schema = db.products.options()[\"validator\"][\"$jsonSchema\"]\n"
            "    for doc in db.products.find({\"$nor\": [{\"$jsonSchema\": schema}]}):\n"
            "        tags = doc.get(\"tags\") or []\n        if isinstance(tags, str):\n"
            "            tags = [t.strip() for t in tags.split(\",\") if t.strip()]\n"
            "        fix = {\"tags\": tags[:5], \"name\": doc.get(\"name\") or doc[\"sku\"]}\n"
            "        if tags[5:]:\n            fix[\"moreTags\"] = tags[5:]\n"
            "        db.products.update_one({\"_id\": doc[\"_id\"]}, {\"$set\": fix})\n\n\n"
            "ex2.check(practice, migrate)"
        ),
    )


def _schema_keywords(schema: Any) -> set:
    """Every keyword used anywhere in a ``$jsonSchema`` document."""
    out: set = set()
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k != "properties":
                    out.add(k)
                todo.append(v if k != "properties" or not isinstance(v, dict) else list(v.values()))
        elif isinstance(node, list):
            todo.extend(node)
    return out


# --- notebook 08 -------------------------------------------------------------------------------------------

def _check_orphans(args: Any) -> str:
    if not (isinstance(args, tuple) and len(args) == 2):
        raise NotYet("call it with the database and your list: `ex.check(db, orphans)`.")
    db, orphans = args
    if not isinstance(orphans, list):
        raise NotYet(f"`orphans` should be a list of post ids, got {type(orphans).__name__}.")
    users = {u["_id"] for u in db.users.find({}, {"_id": 1})}
    truth = sorted(p["_id"] for p in db.posts.find({}, {"authorId": 1}) if p.get("authorId") not in users)
    if not truth:
        raise NotYet("there are no orphaned posts in this database; run the deletion cell first.")
    got = list(orphans)
    if got and isinstance(got[0], dict):
        raise NotYet("give the ids only (`d[\"_id\"]`), not whole documents.")
    try:
        repeated = len(set(got)) != len(got)
    except TypeError:
        raise NotYet("`orphans` should hold post ids (strings), one per orphaned post.") from None
    if repeated:
        raise NotYet(f"`orphans` lists some ids more than once ({len(got)} entries, {len(set(got))} different): "
                     "one entry per orphaned post (did the join produce one row per comment or per follow?).")
    if sorted(got, key=str) == truth and got != truth:
        raise NotYet("the right ids, but not sorted; use `sorted(...)`.")
    missing, extra = sorted(set(truth) - set(got)), sorted(set(got) - set(truth))
    if missing or extra:
        raise NotYet(f"{len(missing)} orphan(s) missing (e.g. {missing[:2]}) and {len(extra)} post(s) that still "
                     f"have an author (e.g. {extra[:2]}).")
    return f"all {len(truth)} orphaned posts found; a repair job would now delete or reassign them."


@register
def _ex08() -> Exercise:
    return Exercise(
        id="08-orphans",
        lesson="08_capstone_profile",
        task="List (sorted) the ids of posts whose author no longer exists.",
        checker=_check_orphans,
        hints=["`$lookup` from users on authorId; an orphan's joined array is empty (`$size: 0`)."],
        solution_text=(
            'orphans = sorted(d["_id"] for d in db.posts.aggregate([\n'
            '    {"$lookup": {"from": "users", "localField": "authorId", "foreignField": "_id", "as": "author"}},\n'
            '    {"$match": {"author": {"$size": 0}}},\n    {"$project": {"_id": 1}},\n]))\nex.check(db, orphans)'
        ),
    )


PROFILE_OPERATIONS = ("account + roles", "newest 20 posts", "followers page", "following page", "follower count")


def _explain_growing_operation(measured: Any) -> str:
    return (f"'{measured}' is the read whose cost grows with the account: a count visits one index key per "
            "follower, while every page stops after 20 keys and the account read is one key. It is the candidate "
            "for a maintained counter (lesson 04), measured before it is built.")


@register
def _ex08_predict() -> Exercise:
    return Prediction(
        id="08-predict-growing-read",
        lesson="08_capstone_profile",
        task="Predict: which of the profile page's reads examines the most index keys for the busiest account? "
             f"One of {list(PROFILE_OPERATIONS)}.",
        checker=None,
        hints=["Each page has a limit of 20. Which read has no limit?"],
        solution_text='ex_grow.predict("follower count")',
        explain=_explain_growing_operation,
        choices=PROFILE_OPERATIONS,
    )


def _seed_account_graph(db: Any) -> None:
    """Five users with posts, comments and follows in both directions, all pointing at each other."""
    users = [f"user:{i}" for i in range(1, 6)]
    db.users.insert_many([{"_id": u, "name": u.split(":")[1]} for u in users])
    db.posts.insert_many([{"_id": f"post:{u.split(':')[1]}:{k}", "authorId": u, "title": f"t{k}"}
                          for u in users for k in range(3)])
    comments, n = [], 0
    for post in db.posts.find({}, {"_id": 1}).sort("_id", 1):
        for u in users:
            if u not in post["_id"].replace("post:", "user:"):
                n += 1
                comments.append({"_id": f"comment:{n}", "postId": post["_id"], "authorId": u, "text": "hi"})
    db.comments.insert_many(comments)
    db.follows.insert_many([{"_id": f"follow:{a.split(':')[1]}:{b.split(':')[1]}", "followerId": a,
                             "followingId": b} for a in users for b in users if a != b])


def _dangling(db: Any, gone: str) -> dict[str, int]:
    posts = [p["_id"] for p in db.posts.find({"authorId": gone}, {"_id": 1})]
    return {
        "user document": db.users.count_documents({"_id": gone}),
        "their posts": len(posts),
        "comments on their posts": db.comments.count_documents({"postId": {"$regex": f"^post:{gone[5:]}:"}}),
        "their comments": db.comments.count_documents({"authorId": gone}),
        "follows of them (followingId)": db.follows.count_documents({"followingId": gone}),
        "follows by them (followerId)": db.follows.count_documents({"followerId": gone}),
    }


def _check_delete_account(args: Any) -> str:
    from labkit.exercises import observe

    like, delete_account = _db_and_function(args, "delete_account")
    with observe.sandbox("08-delete-account", like) as box:
        db = box.db
        _seed_account_graph(db)
        totals = {c: db[c].count_documents({}) for c in ("users", "posts", "comments", "follows")}
        expected_gone = _dangling(db, "user:2")
        observe.call_learner(delete_account, db, "user:2")
        left = _dangling(db, "user:2")
        after = {c: db[c].count_documents({}) for c in ("users", "posts", "comments", "follows")}
    leftovers = {k: v for k, v in left.items() if v}
    if leftovers:
        what = ", ".join(f"{v} {k}" for k, v in leftovers.items())
        hint = ""
        if "comments on their posts" in leftovers and not left["their posts"]:
            hint = (" The comments of the deleted posts point at posts that no longer exist: delete the comments "
                    "whose postId is one of the user's posts, before the posts go.")
        elif "follows of them (followingId)" in leftovers or "follows by them (followerId)" in leftovers:
            hint = (" A follow edge names the user on either side: delete edges where the user is the follower "
                    "and where the user is followed.")
        raise NotYet(f"after deleting user:2, {what} still point at them.{hint}")
    # nobody comments on their own posts in this graph, so the two comment sets are disjoint
    removed = {c: totals[c] - after[c] for c in totals}
    want = {"users": 1, "posts": expected_gone["their posts"],
            "comments": expected_gone["comments on their posts"] + expected_gone["their comments"],
            "follows": expected_gone["follows of them (followingId)"] + expected_gone["follows by them (followerId)"]}
    extra = {c: removed[c] - want[c] for c in want if removed[c] != want[c]}
    if extra:
        what = ", ".join(f"{c}: {removed[c]} removed instead of {want[c]}" for c in extra)
        raise NotYet(f"other users' data was deleted too ({what}): delete only what points at the deleted user.")
    return (f"user:2 and everything that pointed at them are gone ({removed['posts']} posts, {removed['comments']} "
            f"comments, {removed['follows']} follows), and nobody else lost anything.")


@register
def _ex08b() -> Exercise:
    return Exercise(
        id="08-delete-account",
        lesson="08_capstone_profile",
        task="Write `delete_account(db, user_id)` for a schema with users, posts (authorId), comments (postId, "
             "authorId) and follows (followerId, followingId): it deletes the user and everything that would point "
             "at nobody afterwards, and nothing else.",
        checker=_check_delete_account,
        hints=["List every reference to a user and to the user's posts: posts.authorId, comments.authorId, "
               "comments.postId (of their posts), follows.followerId, follows.followingId.",
               "Collect the user's post ids first; delete comments on them, then the posts, the user's comments, "
               "both directions of follows, and the user."],
        solution_text=(
            "def delete_account(db, user_id):\n"
            "    post_ids = [p[\"_id\"] for p in db.posts.find({\"authorId\": user_id}, {\"_id\": 1})]\n"
            "    db.comments.delete_many({\"$or\": [{\"postId\": {\"$in\": post_ids}}, {\"authorId\": user_id}]})\n"
            "    db.posts.delete_many({\"authorId\": user_id})\n"
            "    db.follows.delete_many({\"$or\": [{\"followerId\": user_id}, {\"followingId\": user_id}]})\n"
            "    db.users.delete_one({\"_id\": user_id})\n\n\nex2.check(db, delete_account)"
        ),
    )
