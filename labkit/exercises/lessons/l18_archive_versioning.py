"""Lesson 18 (Archive and document versioning: keep the hot collection small): its exercises and their checkers.

Notebook: ``notebooks/18_archive_versioning.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _locked(rev: int, what: str, it: str, where: str) -> str:
    """The message for a retry refused with a duplicate key after a crash between the two writes."""
    return (f"after a crash between the two writes, the retry fails with a duplicate key: the copy of revision {rev} "
            f"is already filed, so every later save of {what} fails the same way and {it} is locked for ever. File "
            f"the copy with an upsert that only inserts (`update_one({where}, {{\"$setOnInsert\": copy}}, "
            "upsert=True)`).")


@LESSON.exercise(BehaviourCheck, "18-versioning",
                 takes=steps.db_and_function("save_revision", "practice"))
def _check_versioning(lab: Lab, db: Any, save_revision: Callable) -> str:
    from pymongo.errors import DuplicateKeyError

    doc_id = "doc:versioning-check"
    # the learner's index definitions on documents_history, not their data
    learners = {"documents_history": db["documents_history"]} if hasattr(db, "list_collection_names") else None
    with lab.sandbox(indexes=learners) as box:
        sdb, rec = box.db, box.recorder
        unique = [spec for name, spec in sdb.documents_history.index_information().items()
                  if name != "_id_" and spec.get("unique")]
        if not any([f for f, _ in spec["key"]] == ["docId", "rev"] for spec in unique):
            if any([f for f, _ in k] == ["docId", "rev"] for k in steps.index_keys(sdb.documents_history)):
                raise NotYet("the {docId, rev} index exists but is not unique: create it with `unique=True`.")
            raise NotYet("create the unique index on documents_history: `[(\"docId\", 1), (\"rev\", 1)]`, "
                         "`unique=True`.")
        sdb.documents.insert_one({"_id": doc_id, "rev": 1, "title": "Check", "body": "v1"})
        rec.clear()

        def twice(exc: Any) -> str:
            key = (exc.details or {}).get("keyValue") or {}
            if "rev" in key:
                return (f"revision {key['rev']} was filed in the history twice: the current document's rev must "
                        "grow with every save (`$inc` rev by one).")
            return (f"saving a revision failed with a duplicate key ({key}): give each history copy an _id of its "
                    "own (not the current document's _id).")

        def save(target: Any, body: str) -> None:
            lab.call(save_revision, target, doc_id, {"body": body}, raises={DuplicateKeyError: twice})

        # 1. three saves, one at a time; each must be two writes, the history copy first
        document_first = False
        for body in ("v2", "v3", "v4"):
            rec.clear()
            save(sdb, body)
            targets = [(next(iter(c)), c[next(iter(c))]) for c in rec.writes()]
            if len(targets) > 2 or rec.write_statements() > 2:
                raise NotYet(f"one save sent {rec.write_statements()} write statements ({targets}); it takes two: "
                             "file the copy in documents_history, then update the document.")
            document_first = document_first or [c for _, c in targets] == ["documents", "documents_history"]
        current = sdb.documents.find_one({"_id": doc_id}) or {}
        if current and current.get("title") != "Check":
            raise NotYet(f"after saving {{body: ...}} changes the document's title is {current.get('title')!r}, not "
                         "'Check': a save changes only the fields it is given (`$set` the changes), it does not "
                         "replace the document.")
        history = list(sdb.documents_history.find({"docId": doc_id}).sort("rev", 1))
        if not history:
            raise NotYet("no history copy carries `docId`: store the document's id in a `docId` field of each copy.")
        if current.get("body") != "v4":
            raise NotYet(f"after three saves the current body is {current.get('body')!r}, expected 'v4': apply "
                         "`changes` to the document in db.documents.")
        if current.get("rev") != 4:
            raise NotYet(f"after three saves the current rev is {current.get('rev')!r}, expected 4: `$inc` rev by one.")
        got = [(h.get("rev"), h.get("body")) for h in history]
        if got == [(2, "v2"), (3, "v3"), (4, "v4")]:
            raise NotYet("the history holds the NEW revisions; copy the current revision before changing it, so the "
                         "history holds revisions 1-3.")
        if got != [(1, "v1"), (2, "v2"), (3, "v3")]:
            raise NotYet(f"the history should hold (rev, body) (1, 'v1'), (2, 'v2'), (3, 'v3'); it holds {got}.")
        if document_first:
            raise NotYet("your save updates the document first and files the copy second: a crash between the "
                         "two writes loses the old revision for ever. File the copy first.")

        # 2. the process dies between the two writes; the same save is retried
        with lab.until_crash():
            save_revision(steps.CrashingDb(sdb, 1), doc_id, {"body": "v5"})
        lab.call(save_revision, sdb, doc_id, {"body": "v5"},
                 raises={DuplicateKeyError: _locked(4, "this document", "it", '{"_id": ...}')})
        current = sdb.documents.find_one({"_id": doc_id}) or {}
        got = [(h.get("rev"), h.get("body")) for h in sdb.documents_history.find({"docId": doc_id}).sort("rev", 1)]
        if (current.get("rev"), current.get("body")) != (5, "v5") or got != [(1, "v1"), (2, "v2"), (3, "v3"),
                                                                             (4, "v4")]:
            raise NotYet(f"after a crash between the two writes and a retry, the document is at rev "
                         f"{current.get('rev')!r} ({current.get('body')!r}) and the history holds {got}; expected "
                         "rev 5 and revisions 1-4, each once.")

        # 3. two editors save at the same moment: the second runs right after the first one's read
        lab.interleaved(lambda: save_revision(sdb, doc_id, {"body": "v6"}),
                        lambda: save_revision(sdb, doc_id, {"body": "v7"}), rec)
        current = sdb.documents.find_one({"_id": doc_id}) or {}
        revs = [h.get("rev") for h in sdb.documents_history.find({"docId": doc_id}).sort("rev", 1)]
        if revs != list(range(1, int(current.get("rev") or 1))):
            raise NotYet(f"two editors saved at the same moment: the document is now at rev {current.get('rev')!r} "
                         f"but the history holds revisions {revs}, so a revision was overwritten without a copy. "
                         "Update the document only if it is still at the revision you copied: "
                         "`update_one({\"_id\": doc_id, \"rev\": current[\"rev\"]}, ...)`.")
    return ("two writes per save (the copy first), one copy per revision, unique by {docId, rev}; a crash between "
            "the writes and its retry, and two editors at once, lose no revision.")


LESSON.add(Prediction, "18-predict-crash-retry")


def _save_price_call(args: Any) -> tuple:
    """``ex_price.check(save_price)``."""
    save_price = args[0] if isinstance(args, tuple) and len(args) == 1 else args
    if not callable(save_price):
        raise NotYet("pass your function: `ex_price.check(save_price)`.")
    return (save_price,)


def _fresh_products(db: Any) -> None:
    db["products"].insert_many([{"_id": "sku:1", "rev": 1, "price": 10.0}, {"_id": "sku:2", "rev": 1, "price": 5.0},
                                {"_id": "sku:3", "rev": 1, "price": 7.0}])


@LESSON.exercise(BehaviourCheck, "18-price-history-crash-safe", takes=_save_price_call,
                 fresh=_fresh_products, sandbox_name="18-price-history")
def _check_price_history(lab: Lab, save_price: Callable) -> str:
    from pymongo.errors import DuplicateKeyError

    with lab.sandbox() as box:
        db = box.db
        products, history = db["products"], db["price_history"]

        def copies(pid: str) -> list[tuple[Any, Any]]:
            return sorted((h.get("rev"), h.get("price")) for h in history.find({"productId": pid}))

        # 1. three saves in a row (within the same second)
        for price in (11.0, 12.0, 13.0):
            try:
                saved = save_price(db, products.find_one({"_id": "sku:1"}), price)
            except DuplicateKeyError as exc:
                raise NotYet(f"the second of three saves in a row failed with a duplicate key "
                             f"{(exc.details or {}).get('keyValue')}: a history _id made of the time (or of the "
                             "product alone) collides when edits come close together. Key the copy by product and "
                             "revision.") from None
            if saved is not True:
                raise NotYet(f"save_price returned {saved!r} for a save that went through; return True.")
        current = products.find_one({"_id": "sku:1"})
        if (current.get("rev"), current.get("price")) != (4, 13.0):
            raise NotYet(f"after three saves sku:1 is at rev {current.get('rev')!r}, price {current.get('price')!r}; "
                         "expected rev 4, price 13.0 (`$set` the price and `$inc` rev by one).")
        got = copies("sku:1")
        if not got and history.count_documents({}):
            raise NotYet("the history copies carry no `productId`: store the product's _id in `productId`.")
        if got == [(2, 11.0), (3, 12.0), (4, 13.0)]:
            raise NotYet("the history holds the NEW revisions; file the revision being replaced (`seen`) before "
                         "changing the product.")
        if got != [(1, 10.0), (2, 11.0), (3, 12.0)]:
            raise NotYet(f"after three saves the history of sku:1 should hold (rev, price) (1, 10.0), (2, 11.0), "
                         f"(3, 12.0); it holds {got}.")

        # 2. a crash after the first write, then the retry with the same `seen`
        seen = products.find_one({"_id": "sku:2"})
        with lab.until_crash():
            save_price(steps.CrashingDb(db, 1), seen, 6.0)
        after_crash = products.find_one({"_id": "sku:2"})
        if after_crash.get("rev") != 1 and not copies("sku:2"):
            raise NotYet("a crash after your first write left sku:2 changed with revision 1 nowhere in the "
                         "history: write the history copy first, then change the product.")
        retried = lab.call(save_price, db, seen, 6.0,
                           raises={DuplicateKeyError: _locked(1, "sku:2", "the product", "...")})
        got = copies("sku:2")
        if len(got) > 1 and len({r for r, _ in got}) < len(got):
            raise NotYet(f"after a crash and a retry the history of sku:2 holds {got}: revision 1 twice. Give the "
                         "copy a key of its own made of product and revision, and file it idempotently.")
        final = products.find_one({"_id": "sku:2"})
        if retried is not True or (final.get("rev"), final.get("price")) != (2, 6.0) or got != [(1, 5.0)]:
            raise NotYet(f"after a crash and a retry sku:2 is at rev {final.get('rev')!r}, price "
                         f"{final.get('price')!r}, history {got}, and the retry returned {retried!r}; expected "
                         "rev 2, price 6.0, history [(1, 5.0)] and True.")

        # 3. two editors load the same revision; the first saves
        ana, ben = products.find_one({"_id": "sku:3"}), products.find_one({"_id": "sku:3"})
        first = save_price(db, ana, 8.0)
        try:
            second = save_price(db, ben, 9.0)
        except DuplicateKeyError:
            second = "DuplicateKeyError"
        final = products.find_one({"_id": "sku:3"})
        if final.get("price") == 9.0 or final.get("rev", 0) > 2:
            raise NotYet("two editors loaded sku:3 at revision 1; the second save overwrote the first (a lost "
                         "update). Filter the product update on the revision you loaded: "
                         "{_id: ..., rev: seen['rev']}.")
        if first is not True or second is not False:
            raise NotYet(f"the first editor's save returned {first!r}, the second's {second!r}: return True when "
                         "saved, False when the update matched nothing (`result.matched_count == 0`).")
    return ("three quick saves, a crash between the two writes and its retry, and two competing editors all end "
            "with one history copy per revision and no lost update.")


