"""Lesson 11 (Outlier: embed for the common case, overflow for the viral post): its exercises and their checkers.

Notebook: ``notebooks/11_outlier.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


CAP_11 = 50  # the manual's threshold: a book with more than 50 sales is an outlier


def _fresh_sales(db: Any) -> None:
    db["sales"].insert_many([
        {"_id": 1, "title": "Invisible Cities", "customers_purchased": [], "has_extras": False},
        {"_id": 2, "title": "The Wooden Amulet", "customers_purchased": [], "has_extras": False},
        {"_id": 3, "title": "Almost Full", "customers_purchased": [f"early{i:02d}" for i in range(CAP_11 - 1)],
         "has_extras": False},
        {"_id": 4, "title": "Full", "customers_purchased": [f"first{i:02d}" for i in range(CAP_11)],
         "has_extras": False}])


def _everywhere(db: Any, book_id: int) -> list[str]:
    """Every purchase of a book, as a reader who trusts has_extras finds it: the array, then extra_sales."""
    book = db["sales"].find_one({"_id": book_id}) or {}
    found = list(book.get("customers_purchased") or [])
    if book.get("has_extras"):
        found += [e.get("customer") for e in db["extra_sales"].find({"book_id": book_id}).sort("_id", 1)]
    return found


@LESSON.exercise(BehaviourCheck, "11-outlier-write", fresh=_fresh_sales,
                 takes=steps.db_and_function("record_purchase", "practice"))
def _check_outlier_write(lab: Lab, db: Any, record_purchase: Callable) -> str:
    """The manual's outlier example (book sales; the first 50 buyers in the book, later ones in extra_sales,
    has_extras set): sequential purchases, two at once on a nearly full book, and a crash between the writes."""
    with lab.sandbox() as box:
        sdb = box.db
        for i in range(60):
            lab.call(record_purchase, sdb, 2, f"user{i:02d}")
        for i in range(3):
            lab.call(record_purchase, sdb, 1, f"reader{i}")
        busy, quiet = sdb["sales"].find_one({"_id": 2}) or {}, sdb["sales"].find_one({"_id": 1}) or {}
        extras = list(sdb["extra_sales"].find({}, {"_id": 0}))
        arrays = busy.get("customers_purchased") or []
        if len(arrays) > CAP_11:
            raise NotYet(f"the book's customers_purchased holds {len(arrays)} buyers after 60 purchases: stop at "
                         f"{CAP_11}. Put the condition in the update's filter (`\"customers_purchased.49\": "
                         "{\"$exists\": False}`), so the server pushes only while there is room.")
        if arrays != [f"user{i:02d}" for i in range(CAP_11)]:
            raise NotYet(f"the book should keep its first {CAP_11} buyers (user00..user49) and send later ones to "
                         f"extra_sales, as the manual's example does; it holds {arrays[:3]}... instead.")
        mine = [e for e in extras if e.get("book_id") == 2]
        if not mine and any("book_id" not in e for e in extras):
            raise NotYet("the extra purchases are in extra_sales without `book_id`: nobody can find them by book. "
                         "Insert `{book_id, customer}`.")
        if sorted(e.get("customer") for e in mine) != [f"user{i:02d}" for i in range(CAP_11, 60)]:
            raise NotYet(f"extra_sales holds {len(mine)} purchases of book 2, expected the 10 buyers after the "
                         "first 50 (user50..user59), each once: a purchase that does not fit the book must be "
                         "stored in extra_sales, not dropped.")
        if busy.get("has_extras") is not True:
            raise NotYet("book 2 has extra purchases but `has_extras` is not True, so readers never look in "
                         "extra_sales: set it when a purchase goes there.")
        if quiet.get("has_extras") or any(e.get("book_id") == 1 for e in extras):
            raise NotYet("book 1, with 3 purchases, must not use extra_sales or say `has_extras: True`.")
        # two purchases at once on a book with room for one
        lab.interleaved(lambda: record_purchase(sdb, 3, "racer-a"), lambda: record_purchase(sdb, 3, "racer-b"),
                        box.recorder)
        almost = sdb["sales"].find_one({"_id": 3}) or {}
        if len(almost.get("customers_purchased") or []) > CAP_11:
            raise NotYet(f"two purchases arrived at once on a book with {CAP_11 - 1} buyers and the array now "
                         f"holds {len(almost['customers_purchased'])}: checking the length in Python and then "
                         "pushing lets both in. Make the room check part of the update's filter, so the server "
                         "decides atomically.")
        if sorted(x for x in _everywhere(sdb, 3) if x.startswith("racer")) != ["racer-a", "racer-b"]:
            raise NotYet("of two purchases that arrived at once on a nearly full book, a reader trusting "
                         f"has_extras finds {sorted(x for x in _everywhere(sdb, 3) if x.startswith('racer'))}: "
                         "both must be recorded, one in the book, one in extra_sales with has_extras set.")
    # the process stops after each possible write, then the caller retries the same purchase
    for allowed in (1, 2):
        with lab.sandbox() as box:
            sdb = box.db
            with lab.until_crash():
                record_purchase(steps.CrashingDb(sdb, allowed), 4, "late")
            book = sdb["sales"].find_one({"_id": 4}) or {}
            hidden = sdb["extra_sales"].count_documents({"book_id": 4, "customer": "late"})
            if hidden and not book.get("has_extras"):
                raise NotYet("the process stopped after the purchase went into extra_sales but before has_extras "
                             "was set: readers never look there, so the purchase is hidden (and a retry stores it "
                             "twice). Set `has_extras: True` first (it is harmless before the insert), then insert "
                             "the purchase.")
            lab.call(record_purchase, sdb, 4, "late")
            times = _everywhere(sdb, 4).count("late")
            if times != 1:
                raise NotYet(f"after a stop between your writes and the caller's retry, the purchase is recorded "
                             f"{times} times: order the writes so that a stop leaves nothing a retry would repeat "
                             "(the flag first, then the insert).")
    return (f"the first {CAP_11} buyers stay in the book, later ones go to extra_sales with has_extras set; two "
            "purchases at once never overfill the book, and a stop between the writes hides or doubles nothing.")


LESSON.add(Prediction, "11-predict-deep-page-keys")
