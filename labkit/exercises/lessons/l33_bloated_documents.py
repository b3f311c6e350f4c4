"""Lesson 33 (Anti-pattern: bloated documents): its exercises and their checkers.

Notebook: ``notebooks/33_bloated_documents.ipynb``.
"""
from __future__ import annotations

from typing import Any

from labkit.exercises import observe
from labkit.exercises import steps
from labkit.exercises.kinds import Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.problem import Exercise
from labkit.exercises.registry import register


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
    from labkit.exercises.problem import remembered

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
    if not steps.is_database(db):
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

    db, save_user = args if isinstance(args, tuple) and len(args) == 2 and steps.is_function(args[1]) else (None, None)
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
