"""Lesson 33 (Anti-pattern: bloated documents): its exercises and their checkers.

Notebook: ``notebooks/33_bloated_documents.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


_HOT = ("name", "price", "category", "rating", "thumbnailUrl")


_COLD = ("description", "specs", "history", "thumbnail")


def _held(docs: Iterable[dict], fields: Iterable[str], *, held: bool = True) -> list[str]:
    """The ``fields`` that some of ``docs`` hold (``held=False``: that some of them lack), sorted."""
    return sorted({f for d in docs for f in fields if (f in d) == held})


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


def _lost_from_setup(setup: dict, products: list, details: dict) -> str | None:
    """Against the setup copy kept by ``ex.remember(practice, "products")``: a product gone, or a hot or cold
    value that no longer equals the original (None when nothing was lost, or no copy was kept)."""
    if not setup:
        return None
    now = {p["_id"]: p for p in products}
    gone, extra = steps.gone_and_extra(setup, now, ordered=False)
    if gone:
        return (f"{len(gone)} of the {len(setup)} products of the setup are gone from practice.products (e.g. "
                f"{gone[0]!r}); a split moves fields, it never removes products.")
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


@LESSON.exercise(StateCheck, "33-split-hot-cold", takes=steps.database())
def _check_split_hot_cold(lab: Lab, db: Any) -> str:
    products = list(db.products.find())
    if not products:
        raise NotYet("practice.products is empty; re-run the cell that creates it (and keep the hot fields there).")
    still_cold = _held(products, _COLD)
    if still_cold:
        raise NotYet(f"practice.products still holds cold field(s) {still_cold}; `$unset` them once they are copied.")
    lost_hot = _held(products, _HOT, held=False)
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
    hot_dup = _held(details.values(), ("name", "price"))
    if hot_dup:
        raise NotYet(f"product_details also copies {hot_dup}; keep only the cold fields there (one owner per field).")
    lost = _lost_from_setup(lab.setup("products"), products, details)
    if lost:
        raise NotYet(lost)
    hot, cold = (next(db[name].aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]["avgObjSize"]
                 for name in ("products", "product_details"))  # $collStats: the collStats command is deprecated
    return f"products avgObjSize is now {hot:,} bytes; the {cold:,}-byte cold part is read only by the sheet."


LESSON.add(Prediction, "33-predict-projection-docs")


_PROFILE_HOT = ("name", "avatarUrl", "plan")


def _profiles_33() -> list[dict]:
    import datetime as dt

    return [{"_id": f"user:{i:03d}", "name": f"User {i}", "avatarUrl": f"https://img.example/u{i}.png",
             "plan": ("free", "pro", "team")[i % 3], "email": f"user{i}@example.com",
             "bio": f"Bio of user {i}. " * 40,
             "settings": {f"option{k}": (i * k) % 7 for k in range(40)},
             "loginHistory": [dt.datetime(2026, 1, 1) + dt.timedelta(hours=i + 7 * k) for k in range(50)]}
            for i in range(1, 21)]


@LESSON.exercise(BehaviourCheck, "33-save-profile-split", sandbox_name="33-save-profile",
                 takes=steps.call("call it with the practice database and your function: "
                                  "`ex_profile.check(practice, save_user)`.", None, steps.is_function))
def _check_save_profile(lab: Lab, db: Any, save_user: Callable) -> str:
    import bson

    originals = _profiles_33()
    cold = sorted(set(originals[0]) - set(_PROFILE_HOT) - {"_id"})
    with lab.sandbox() as box:
        worst = 0
        for user in originals:
            box.recorder.clear()
            lab.call(save_user, box.db, bson.decode(bson.encode(user)))  # a deep copy
            worst = max(worst, box.recorder.write_statements())
        users = {u["_id"]: u for u in box.db.users.find()}
        details = {d["_id"]: d for d in box.db.user_details.find()}
        header = box.db.users.find_one({"_id": "user:001"}) or {}
    if len(users) != len(originals):
        raise NotYet(f"db.users holds {len(users)} documents after {len(originals)} saves: insert one per user, "
                     "with the user's `_id`.")
    for fields, say in ((_held(users.values(), cold),
                         "db.users still holds cold field(s) {}: every page header would read them into the cache. "
                         "Keep only _id and the header's fields (name, avatarUrl, plan) in users."),
                        (_held(users.values(), _PROFILE_HOT, held=False),
                         "db.users lacks hot field(s) {}: the header shows them on every page, so they stay in the "
                         "small document.")):
        if fields:
            raise NotYet(say.format(fields))
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
    dup = _held(details.values(), _PROFILE_HOT)
    if dup:
        raise NotYet(f"user_details also holds hot field(s) {dup}: one owner per field, or the two copies drift "
                     "apart on the next rename. Keep them only in users.")
    if worst > 2:
        raise NotYet(f"one save sent {worst} write statements: two inserts are enough (users and user_details).")
    return (f"20 users saved in {worst} writes each; the header document is {len(bson.encode(header))} bytes and "
            "every cold field is kept, unchanged, in user_details under the same _id.")


