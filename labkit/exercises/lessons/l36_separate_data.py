"""Lesson 36 (Anti-pattern: separating data that is accessed together): its exercises and their checkers.

Notebook: ``notebooks/36_separate_data.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(StateCheck, "36-embed-context", takes=steps.database())
def _check_embed_context(lab: Lab, db: Any) -> str:
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
    users = steps.setup_of("users")
    if not users:
        return None
    problem = (steps.gone_or_added(users, now, "users", "practice.users",
                              "embedding adds fields to each user, it never removes users.")
               or steps.changed_field(users, now, "user", skip=("profile", "settings", "addresses")))
    if problem:
        return problem
    added = steps.added_fields(users, now, ("profile", "settings", "addresses"))
    if added:
        return (f"user {added[0]!r} also got {added[1]}: embed only `profile`, `settings` and `addresses` (the "
                "`$lookup` arrays are working space; `$project` them away before `$merge`).")
    for coll, field in (("user_profiles", "profile"), ("user_settings", "settings")):
        for side in steps.setup_of(coll).values():
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
    for a in steps.setup_of("user_addresses").values():
        addresses.setdefault(a.get("userId"), []).append((steps.hashable(a.get("label")),
                                                          steps.hashable(a.get("city"))))
    for uid, want in sorted(addresses.items(), key=lambda kv: str(kv[0])):
        if uid not in now:
            continue
        got = [(steps.hashable(a.get("label")), steps.hashable(a.get("city"))) for a in now[uid]["addresses"]]
        if sorted(got, key=repr) != sorted(want, key=repr):
            return (f"{uid!r} has {len(got)} embedded address(es) {sorted(got, key=repr)}, but user_addresses had "
                    f"{len(want)}: {sorted(want, key=repr)}; embed every address with its label and city.")
    return None


LESSON.add(Prediction, "36-predict-round-trips")


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


@LESSON.exercise(BehaviourCheck, "36-embed-books",
                 takes=steps.call("call it with your two functions: `ex.check(migrate, load_book)`.",
                                  steps.is_function, steps.is_function))
def _check_embed_books(lab: Lab, migrate: Callable, load_book: Callable) -> str:
    with lab.sandbox() as box:
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
            extra = sorted(set(st) - {"inStock", "warehouse"})
            if extra:
                raise NotYet(f"{bid}'s `stock` also holds {extra}: the whole book_stock document was embedded. The "
                             "task asks for its two fields, `inStock` and `warehouse`; the side document's `_id` "
                             "and its `bookId` back-reference have no place inside the book.")
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


