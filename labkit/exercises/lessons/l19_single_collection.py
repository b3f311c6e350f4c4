"""Lesson 19 (Single-collection design: a many-to-many in one indexed query): its exercises and their checkers.

Notebook: ``notebooks/19_single_collection.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(StateCheck, "19-single-collection",
                 # a collection passes this test (it answers every attribute with a collection); the outcome
                 # "error" explains a collection passed for the database
                 takes=steps.database(lambda db: hasattr(db, "list_collection_names")))
def _check_single_collection(lab: Lab, db: Any) -> str:
    # the setup copy kept by ex.remember(practice, "books", "authors"), else what practice holds now
    books = lab.setup("books") or {b["_id"]: b for b in db.books.find()}
    authors = lab.setup("authors") or {a["_id"]: a for a in db.authors.find()}
    if not books or not authors:
        raise NotYet("practice.books or practice.authors is empty; re-run the setup cell above the exercise.")
    library = {d["_id"]: d for d in db.library.find()}
    missing = sorted((set(books) | set(authors)) - set(library))
    if missing:
        raise NotYet(f"{len(missing)} book(s)/author(s) are not in practice.library yet (e.g. {missing[0]!r}); "
                     "copy every book and every author, keeping their _id.")
    wrong_type = sorted([i for i in books if library[i].get("docType") != "book"]
                        + [i for i in authors if library[i].get("docType") != "author"])
    if wrong_type:
        raise NotYet(f"{wrong_type[0]!r} has docType {library[wrong_type[0]].get('docType')!r}: books need "
                     "docType 'book' and authors docType 'author'.")
    # the pages print a book's title and an author's name: the copies must keep them
    for src, field, what in ((books, "title", "book"), (authors, "name", "author")):
        for i in sorted(src):
            if field in src[i] and library[i].get(field) != src[i][field]:
                got = (f"{field} {library[i][field]!r}" if field in library[i] else f"no `{field}`")
                raise NotYet(f"{i!r} in practice.library has {got} (practice has {src[i][field]!r}): the "
                             f"{what} page shows the {field} from this document, so copy the {what}'s fields "
                             f"(at least `{field}`) along with docType and relatedIds.")
    if any(not isinstance(d.get("relatedIds"), list) for d in library.values()):
        raise NotYet("every document needs a `relatedIds` array (its own id plus the ids it is related to).")
    keys = steps.index_keys(db.library)
    if not any(k and k[0][0] == "relatedIds" for k in keys):
        raise NotYet("no index starts with `relatedIds`: each page would scan the whole collection.")
    books_of: dict = {}
    for b in books.values():
        for a in b["authorIds"]:
            books_of.setdefault(a, set()).add(b["_id"])
    for book_id in sorted(books):  # every page, not a sample: a link missing on a later book is a wrong page
        want = {book_id, *books[book_id]["authorIds"]}
        got = {d["_id"] for d in db.library.find({"relatedIds": book_id}, {"_id": 1})}
        if got == want - {book_id}:
            raise NotYet(f"the page of {book_id!r} returns its authors but not the book itself: put each "
                         "document's own id in its relatedIds.")
        if got != want:
            raise NotYet(f"find({{'relatedIds': {book_id!r}}}) returns {sorted(got)}, expected the book and its "
                         f"authors {sorted(want)}: authors list the ids of their books in relatedIds.")
    for author_id in sorted(authors):
        want = {author_id, *books_of.get(author_id, ())}
        got = {d["_id"] for d in db.library.find({"relatedIds": author_id}, {"_id": 1})}
        if got != want:
            raise NotYet(f"find({{'relatedIds': {author_id!r}}}) returns {sorted(got)}, expected the author and "
                         f"their books {sorted(want)}: books list their authors' ids (and their own) in relatedIds.")
    explain = db.library.find({"relatedIds": sorted(books)[0]}).explain()
    names = [s.get("stage") for s in observe.plan_stages(explain["queryPlanner"]["winningPlan"])]
    if "COLLSCAN" in names:
        raise NotYet("the book page still scans the collection; the planner did not use your index on relatedIds.")
    stats = explain["executionStats"]
    if stats["totalDocsExamined"] > stats["nReturned"]:
        raise NotYet(f"the book page examines {stats['totalDocsExamined']} documents for {stats['nReturned']} "
                     "results; index `relatedIds` on its own so the lookup is exact.")
    return (f"{len(books)} books and {len(authors)} authors in one collection; each page is one IXSCAN on relatedIds "
            "that returns exactly the document and its related documents.")


LESSON.add(Prediction, "19-predict-author-page-docs")


@LESSON.exercise(BehaviourCheck, "19-enrol", takes=steps.db_and_function("enrol", "practice"))
def _check_enrol(lab: Lab, db: Any, enrol: Callable) -> str:
    courses = [f"course:{c}" for c in ("db", "ml", "ux", "go")]
    students = [f"student:{i:02d}" for i in range(1, 13)]
    pairs = [(courses[i % 4], s) for i, s in enumerate(students)] + [(courses[0], s) for s in students[:6]]
    pairs.append(pairs[0])  # the same enrolment twice: a retry
    with lab.sandbox() as box:
        catalog = box.db["catalog"]
        catalog.insert_many([{"_id": c, "docType": "course", "title": c[7:].upper(), "relatedIds": [c]}
                             for c in courses]
                            + [{"_id": s, "docType": "student", "name": s.title(), "relatedIds": [s]}
                               for s in students])
        catalog.create_index("relatedIds")
        worst, rewrites = 0, False
        for course, student in pairs:
            box.recorder.clear()
            lab.call(enrol, catalog, course, student)
            worst = max(worst, box.recorder.write_statements())
            rewrites = rewrites or any(steps.computed_in_python(spec, "relatedIds")
                                       for spec in box.recorder.update_specs())
        docs = {d["_id"]: d for d in catalog.find()}
        pages = {x: {d["_id"] for d in catalog.find({"relatedIds": x}, {"_id": 1})} for x in courses + students}
    want: dict = {x: {x} for x in courses + students}
    for c, s in pairs:
        want[c].add(s)
        want[s].add(c)
    if set(docs) != set(want):
        raise NotYet(f"the catalog holds {len(docs)} documents after the enrolments, expected the "
                     f"{len(want)} courses and students: update the existing documents, do not insert or delete.")
    dupes = sorted(x for x, d in docs.items() if len(d.get("relatedIds") or []) != len(set(map(str, d.get("relatedIds") or []))))
    if dupes:
        raise NotYet(f"{dupes[0]} lists an id twice in relatedIds after the same enrolment ran twice: use "
                     "`$addToSet` (with `$each`), not `$push`, so a retried enrolment changes nothing.")
    lost_self = sorted(x for x, d in docs.items() if x not in (d.get("relatedIds") or []))
    if lost_self:
        raise NotYet(f"{lost_self[0]} no longer lists its own id in relatedIds, so its own page misses it: "
                     "add to the array, do not replace it.")
    for x in courses + students:
        if pages[x] != want[x]:
            other = "students" if x in courses else "courses"
            missing = sorted(want[x] - pages[x])
            if not missing:
                extra = sorted(pages[x] - want[x])
                raise NotYet(f"the page of {x} (find({{'relatedIds': {x!r}}})) also returns {extra[:3]}, which "
                             f"were never enrolled with it: the update must touch only the two documents of the "
                             "enrolment (`{\"_id\": {\"$in\": [course_id, student_id]}}`).")
            raise NotYet(f"the page of {x} (find({{'relatedIds': {x!r}}})) misses {missing[:3]}: an enrolment "
                         f"links both ways, so the course and the student each list the other's id (here its "
                         f"{other}).")
    if rewrites:
        raise NotYet("your enrol writes relatedIds with a value built in Python (read, append, `$set` back): two "
                     "enrolments of one course at once both read the old list and the later write drops the other "
                     "student. `$addToSet` lets the server add the id.")
    if worst > 2:
        raise NotYet(f"one enrolment sent {worst} write statements: one `update_many` on both documents "
                     "(`{\"_id\": {\"$in\": [course_id, student_id]}}`) with `$addToSet` of both ids does it, "
                     "since each document already lists its own id.")
    return (f"{len(pairs)} enrolments (one retried) in at most {worst} write statement(s) each; every course and "
            "student page is one indexed find returning it and everything linked to it.")


