"""Lesson 01 (Embed one-to-few: roles inside the user): its exercises and their checkers.

Notebook: ``notebooks/01_embed_one_to_few.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


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
    # Bo comes first in natural order and holds 'editor' too: an update that forgets the user's _id changes his
    {"_id": "user:123", "name": "Bo", "email": "bo@example.com",
     "roles": [{"title": "viewer", "canEdit": False}, {"title": "editor", "canEdit": False}], "updatedAt": None},
    {"_id": "user:234", "name": "Fred", "email": "fred@example.com",
     "roles": [{"title": "admin", "canEdit": False}], "updatedAt": None},
    {"_id": "user:345", "name": "Ada", "email": "ada@example.com",
     "roles": [{"title": "author", "canEdit": False}, {"title": "reviewer", "canEdit": False},
               {"title": "editor", "canEdit": False}], "updatedAt": None},
    {"_id": "user:456", "name": "Lin", "email": "lin@example.com",
     "roles": [{"title": "editor", "canEdit": False}], "updatedAt": None},
]


def _fresh_users(db: Any) -> None:
    import copy

    db.users.insert_many(copy.deepcopy(_USERS_01))


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
    if steps.replacement(u):
        lost = sorted(set(before) - set(after or {}) - {"_id"})
        raise NotYet("that was a replacement (`replace_one` or an update without operators): the whole user "
                     f"document was rewritten{' and ' + ', '.join(lost) + ' lost' if lost else ''}. Use update "
                     "operators so only the changed fields are written.")
    if isinstance(u, dict) and isinstance(u.get("$set"), dict) and field in u["$set"]:
        raise NotYet(f"your update rewrites the whole `{field}` array with `$set` (read in Python, changed, written "
                     "back): a role added by someone else in between is lost. Change one element in place "
                     "(`$push`, or `roles.$` with a filter on `roles.title`).")


def _give_role_call(args: Any) -> tuple:
    """``ex.check(db, give_role)``; the lesson's database alone (``ex.check(db)``) has Fred's document checked,
    then asks for the function."""
    if not isinstance(args, tuple):
        if not hasattr(args, "list_collection_names"):
            raise NotYet(f"pass the lesson's database and your function: `ex.check(db, give_role)`, not "
                         f"{type(args).__name__}.")
        _check_fred_document(args)
        raise NotYet("Fred's document looks right, but a document alone cannot show that it was ONE write. Wrap "
                     "your update in `def give_role(db, user_id, title, can_edit, when): ...` and call "
                     "`ex.check(db, give_role)`: the check runs it on its own users and watches the commands.")
    return steps.db_and_function("give_role")(args)


@LESSON.exercise(BehaviourCheck, "01-embed-atomic", takes=_give_role_call, fresh=_fresh_users)
def _check_embed_atomic(lab: Lab, db: Any, give_role: Callable) -> str:
    import datetime as dt

    when = dt.datetime(2026, 11, 3, 9, 30)
    with lab.sandbox() as box:
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


@LESSON.exercise(BehaviourCheck, "01-positional-role",
                 takes=steps.db_and_function("set_can_edit"), fresh=_fresh_users)
def _check_positional_role(lab: Lab, db: Any, set_can_edit: Callable) -> str:
    with lab.sandbox() as box:
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
    others_changed = [before[k]["name"] for k in sorted(before) if k != "user:345" and after.get(k) != before[k]]
    if roles == roles0 and others_changed:
        raise NotYet(f"asked to change Ada's (user:345) 'editor' role, your update changed {others_changed[0]}'s "
                     "instead: the first user holding 'editor' matched a filter that does not name the user. "
                     "Filter on the user's `_id` as well as `roles.title`.")
    if len(roles) != len(roles0):
        raise NotYet(f"Ada had {len(roles0)} roles and now has {len(roles)}: change the existing 'editor' element, "
                     "do not add or remove one.")
    changed = [i for i, (a, b) in enumerate(zip(roles0, roles)) if a != b]
    u = (specs or [{}])[0].get("u") or {}
    fixed = steps.fixed_positions((specs or [{}])[:1])
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
    if others_changed:
        raise NotYet(f"{others_changed[0]}'s roles changed too: filter on the user's `_id` as well as "
                     "`roles.title`.")
    # More calls on fresh users: other users, other titles, a user who does not hold the title, a False.
    calls = [("user:456", "editor", True), ("user:345", "reviewer", True), ("user:123", "editor", False),
             ("user:234", "editor", True)]
    import copy

    from pymongo.errors import OperationFailure

    def _failed(exc: Any) -> str:
        why = (getattr(exc, "details", None) or {}).get("errmsg") or str(exc)
        return (f"calling your function for Fred, who holds no 'editor' role, failed ({why}): with `upsert=True` "
                "the server tries to create the user, and the positional `$` has no matched element to point at. "
                "A role that is not there should change nothing: leave the upsert out.")

    with lab.sandbox() as box:
        expected = {u["_id"]: copy.deepcopy(u) for u in _USERS_01}
        for user_id, title, can_edit in calls:
            lab.call(set_can_edit, box.db, user_id, title, can_edit, raises={OperationFailure: _failed})
            for role in expected[user_id]["roles"]:
                if role["title"] == title:
                    role["canEdit"] = can_edit
        got = {u["_id"]: u for u in box.db.users.find()}
        fixed = steps.fixed_positions(box.recorder.update_specs())
    if fixed:
        raise NotYet(f"the update names a fixed position ({', '.join(sorted(set(fixed)))}): it happened to be "
                     "right for Ada, but 'editor' sits at position 1 for Bo and 0 for Lin. Filter on `roles.title` "
                     "and set `roles.$.canEdit`, so the server finds the element in each user's array.")
    for user_id in sorted(expected):
        if got.get(user_id) != expected[user_id]:
            name = expected[user_id]["name"]
            if user_id == "user:234":
                raise NotYet("Fred holds no 'editor' role, yet calling your function for him changed his "
                             f"document ({got.get(user_id)}): with no matching element the update should change "
                             "nothing (no `upsert`, no `$push`).")
            raise NotYet(f"after the calls {calls}, {name}'s roles are {(got.get(user_id) or {}).get('roles')} "
                         f"instead of {expected[user_id]['roles']}: each call must change only the named user's "
                         "role with the named title, to the value it is given.")
    return ("the server found the role wherever it sat in each user's array and changed that one field, in one "
            "update per call, and only for the user named.")


LESSON.add(Prediction, "01-predict-policy-rewrites")


def _money(text: str) -> Any:
    from bson.decimal128 import Decimal128

    return Decimal128(text)


def _orders_01() -> list[dict]:
    """Two open orders; prices and totals are Decimal128, as money should be."""
    return [
        {"_id": "order:1", "customer": "Ivy", "status": "open",
         "lines": [{"sku": "mug", "qty": 2, "price": _money("8.50")}], "itemCount": 2, "total": _money("17.00")},
        {"_id": "order:2", "customer": "Tom", "status": "open",
         "lines": [{"sku": "tea", "qty": 1, "price": _money("0.10")}], "itemCount": 1, "total": _money("0.10")},
    ]


def _fresh_orders(db: Any) -> None:
    db.orders.insert_many(_orders_01())


def _amount(value: Any) -> Any:
    """A stored amount as a Python Decimal (None for anything that is not Decimal128)."""
    from bson.decimal128 import Decimal128

    return value.to_decimal() if isinstance(value, Decimal128) else None


def _first_call(lab: Lab, add_line: Callable, db: Any, *args: Any) -> None:
    """The first call of the learner's add_line: Python arithmetic on a Decimal128 (`qty * price`) is named;
    any other exception (a wrong signature, a bug) goes to the usual outcome, which names it."""
    try:
        lab.call(add_line, db, *args)
    except TypeError as exc:
        if "Decimal128" not in str(exc):
            raise
        raise NotYet("`Decimal128` does no arithmetic in Python (`qty * price` raised TypeError: "
                     f"{exc}): compute with the Decimal it holds, `Decimal128(price.to_decimal() * qty)`, and let "
                     "the server add it with `$inc`.") from None


@LESSON.exercise(BehaviourCheck, "01-order-lines", takes=steps.db_and_function("add_line"),
                 fresh=_fresh_orders)
def _check_order_lines(lab: Lab, db: Any, add_line: Callable) -> str:
    from decimal import Decimal

    tea = _money("0.10")
    with lab.sandbox() as box:
        before = box.db.orders.find_one({"_id": "order:1"})
        _first_call(lab, add_line, box.db, "order:1", "tea", 3, tea)
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
    if steps.replacement((specs or [{}])[0].get("u")):
        raise NotYet("that was a replacement of the whole order (read in Python, changed, written back): an order "
                     "line added by someone else in between is lost. Use update operators (`$push`, `$inc`).")
    if after is None:
        raise NotYet("order:1 is gone after your function ran; update it, do not delete it.")
    if other != _orders_01()[1]:
        raise NotYet("order:2 changed too: filter the update on the order's `_id`.")
    lines = after.get("lines")
    if not isinstance(lines, list) or lines[:1] != before["lines"]:
        raise NotYet("the order's existing line changed or `lines` is no longer an array; append with `$push`.")
    new_lines = lines[1:]
    if len(new_lines) == 1 and isinstance(new_lines[0], dict) and isinstance(new_lines[0].get("price"), float):
        raise NotYet(f"the new line's price is stored as a float ({new_lines[0]['price']!r}): money stays "
                     "`Decimal128`, exactly as it was given; store `price` itself.")
    if new_lines != [{"sku": "tea", "qty": 3, "price": tea}]:
        raise NotYet(f"after adding 3 x 'tea' at 0.10 the new lines are {new_lines}; expected exactly one "
                     "{sku: 'tea', qty: 3, price: Decimal128('0.10')}.")
    if after.get("itemCount") != 5:
        raise NotYet(f"itemCount is {after.get('itemCount')!r}; adding 3 items to 2 makes 5: `$inc` it by `qty`.")
    inc = (specs or [{}])[0].get("u", {}).get("$inc") if isinstance((specs or [{}])[0].get("u"), dict) else None
    if isinstance(inc, dict) and isinstance(inc.get("total"), float):
        raise NotYet(f"your update adds a float to the total (`$inc: {{total: {inc['total']!r}}}`): a binary float "
                     "cannot hold most cents exactly (3 x 0.1 is 0.30000000000000004 as a float). Keep the amount "
                     "a Decimal128 all the way: `Decimal128(price.to_decimal() * qty)`.")
    total = after.get("total")
    if _amount(total) is None:
        raise NotYet(f"total is now a {type(total).__name__} ({total!r}): a float amount added to the Decimal128 "
                     "total loses exactness. `$inc` it by a Decimal128: `Decimal128(price.to_decimal() * qty)`.")
    if _amount(total) != Decimal("17.30"):
        raise NotYet(f"total is {total}; 17.00 plus 3 x 0.10 makes exactly 17.30: keep the arithmetic in "
                     "Decimal, `Decimal128(price.to_decimal() * qty)`.")
    # two calls at once: the second runs right after the first one's first read
    with lab.sandbox() as box:
        lab.interleaved(lambda: add_line(box.db, "order:1", "tea", 3, tea),
                        lambda: add_line(box.db, "order:1", "jam", 1, _money("6.00")), box.recorder)
        raced = box.db.orders.find_one({"_id": "order:1"}) or {}
    skus = sorted(line.get("sku") for line in raced.get("lines") or [] if isinstance(line, dict))
    if skus != ["jam", "mug", "tea"] or _amount(raced.get("total")) != Decimal("23.30") \
            or raced.get("itemCount") != 6:
        raise NotYet(f"two calls at once (tea and jam, the second running right after the first one read the "
                     f"order) leave lines {skus}, total {raced.get('total')} and itemCount "
                     f"{raced.get('itemCount')!r} instead of ['jam', 'mug', 'tea'], 23.30 and 6: a value computed "
                     "in Python from an earlier read overwrote the other call's change (a lost update). Let the "
                     "server do the arithmetic with `$inc`.")
    # the same line again (order:2 already holds 1 x tea at 0.10), and an order that does not exist
    with lab.sandbox() as box:
        lab.call(add_line, box.db, "order:2", "tea", 1, tea)
        again = box.db.orders.find_one({"_id": "order:2"}) or {}
        lab.call(add_line, box.db, "order:404", "tea", 1, tea)
        ghost = box.db.orders.find_one({"_id": "order:404"})
    if len(again.get("lines") or []) != 2 or again.get("itemCount") != 2:
        raise NotYet(f"adding a second 1 x 'tea' at 0.10 to order:2 (which already has that line) leaves "
                     f"{len(again.get('lines') or [])} line(s) and itemCount {again.get('itemCount')!r}: `$addToSet` "
                     "drops a line equal to one already there while `$inc` still counts it. Order lines are "
                     "appended with `$push`.")
    if ghost is not None:
        raise NotYet("adding a line to order:404, which does not exist, created it (`upsert=True`): an order line "
                     "belongs to an existing order; leave the upsert out.")
    return ("one update appended the line and raised the item count and the Decimal128 total exactly; two calls at "
            "once both counted, because the server did the arithmetic.")
