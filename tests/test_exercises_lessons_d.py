"""Exercises of lessons 11, 13 (migration in batches), 16, 18 (versioning), 19, 30, 32 and 33 (lessons_d): each
solution passes, each listed mistake and near-miss fails with a message naming it, garbage gets a message.

Checkers run the learner's function on pristine data of their own (labkit.exercises.observe.sandbox) and watch
the commands it sends; the learner's database is only used to tell the embedded engine from a server."""
from __future__ import annotations

import pytest

import labkit
import labkit.exercises as exercises
from exercise_helpers import answer_cases, assert_prediction, assert_verdict, solved
from labkit.engine import EmbeddedClient


def _fresh(name):
    return labkit.fresh_db(name, client=EmbeddedClient())


def _check(ex_id, *args):
    return exercises.get(ex_id).check(*args)


# --- 13: migration in batches ----------------------------------------------------------------------------------
# Manual, "Update Documents" ($set and $unset in one update document apply atomically to one document) and
# "Atomicity and Transactions" (a write is atomic on the level of a single document).

migrate_good = solved("13-migrate-batches")["migrate_batch"]


def _address(d):
    street, _, city = d["address"].rpartition(", ")
    return {"street": street, "city": city}


def migrate_bulk(coll, batch_size):  # one bulk_write per batch: one round trip, one statement per customer
    from pymongo import UpdateOne
    todo = list(coll.find({"schemaVersion": 1}, {"address": 1}).sort("_id", 1).limit(batch_size))
    if todo:
        coll.bulk_write([UpdateOne({"_id": d["_id"], "schemaVersion": 1},
                                   {"$set": {"address": _address(d), "schemaVersion": 2}}) for d in todo])
    return len(todo)


def migrate_two_writes(coll, batch_size):  # near-miss: the new address, then the version bump, as two writes
    todo = list(coll.find({"schemaVersion": 1}).sort("_id", 1).limit(batch_size))
    for d in todo:
        coll.update_one({"_id": d["_id"]}, {"$set": {"address": _address(d)}})
        coll.update_one({"_id": d["_id"]}, {"$set": {"schemaVersion": 2}})
    return len(todo)


def migrate_everything(coll, batch_size):  # no batch at all: one update_many over every v1 customer
    n = coll.count_documents({"schemaVersion": 1})
    for d in list(coll.find({"schemaVersion": 1})):
        coll.update_one({"_id": d["_id"]}, {"$set": {"address": _address(d), "schemaVersion": 2}})
    return n


def _remembering_migrator():
    """Near-miss: keyset pagination kept in Python (the last _id seen), moved on before the batch is written."""
    state = {"last": ""}

    def migrate_batch(coll, batch_size):
        todo = list(coll.find({"schemaVersion": 1, "_id": {"$gt": state["last"]}}).sort("_id", 1).limit(batch_size))
        if todo:
            state["last"] = todo[-1]["_id"]
        for d in todo:
            coll.update_one({"_id": d["_id"]}, {"$set": {"address": _address(d), "schemaVersion": 2}})
        return len(todo)
    return migrate_batch


def migrate_no_return(coll, batch_size):
    migrate_good(coll, batch_size)


@pytest.mark.parametrize("fn", [migrate_good, migrate_bulk])
def test_13_migrate_solutions_pass(fn):
    db = _fresh("t13d")
    result = _check("13-migrate-batches", db, fn)
    assert result.correct, result.message
    assert "crash" in result.message
    assert db.list_collection_names() == []  # the learner's database is never touched


MIGRATE_MISTAKES = [  # run by test_fresh_db_answers
    (migrate_two_writes, "one update per customer must do the whole change"),
    (migrate_everything, ".limit(batch_size)"),
    (_remembering_migrator(), "not by a position or a counter kept in Python"),
    (migrate_no_return, "return the number of customers it upgraded"),
]


def test_13_migrate_damaged_learner_data_does_not_matter():
    db = _fresh("t13f")
    db.customers.insert_many([{"_id": 1, "schemaVersion": 1}])  # a broken customer without an address
    assert _check("13-migrate-batches", db, migrate_good).correct


def test_13_migrate_garbage():
    assert _check("13-migrate-batches", None, None).outcome == "not-attempted"
    assert "ex.check(db, migrate_batch)" in _check("13-migrate-batches", _fresh("t13g"), 42).message
    crashed = _check("13-migrate-batches", _fresh("t13g"), lambda coll, n: 1 / 0)
    assert crashed.outcome == "error" and "ZeroDivisionError" in crashed.message


# --- 18: versioning with a crash between the two writes ------------------------------------------------------
# Manual, "update_one ... upsert" with $setOnInsert (fields set only when the upsert inserts) and
# "Unique Indexes" (a second insert of the same key fails with E11000, code 11000).

def _practice18(unique=True):
    db = _fresh("t18d")
    db.documents.insert_one({"_id": "doc:1", "rev": 1, "title": "Policy", "body": "first draft"})
    db.documents_history.create_index([("docId", 1), ("rev", 1)], unique=unique)
    return db


def save_good(db, doc_id, changes):
    current = db.documents.find_one({"_id": doc_id})
    copy = {k: v for k, v in current.items() if k != "_id"} | {"docId": doc_id}
    db.documents_history.update_one({"_id": f"{doc_id}@rev{current['rev']}"}, {"$setOnInsert": copy}, upsert=True)
    db.documents.update_one({"_id": doc_id, "rev": current["rev"]}, {"$set": changes, "$inc": {"rev": 1}})


def save_insert_fixed_id(db, doc_id, changes):  # issue 15: locks the document after a crash between the writes
    current = db.documents.find_one({"_id": doc_id})
    db.documents_history.insert_one({k: v for k, v in current.items() if k != "_id"}
                                    | {"_id": f"{doc_id}@rev{current['rev']}", "docId": doc_id})
    db.documents.update_one({"_id": doc_id, "rev": current["rev"]}, {"$set": changes, "$inc": {"rev": 1}})


def save_insert_new_id(db, doc_id, changes):  # a fresh ObjectId per copy: the retry files revision 4 again
    current = db.documents.find_one({"_id": doc_id})
    db.documents_history.insert_one({k: v for k, v in current.items() if k != "_id"} | {"docId": doc_id})
    db.documents.update_one({"_id": doc_id, "rev": current["rev"]}, {"$set": changes, "$inc": {"rev": 1}})


def save_document_first(db, doc_id, changes):  # the copy written second, from the old revision read before
    current = db.documents.find_one({"_id": doc_id})
    db.documents.update_one({"_id": doc_id, "rev": current["rev"]}, {"$set": changes, "$inc": {"rev": 1}})
    copy = {k: v for k, v in current.items() if k != "_id"} | {"docId": doc_id}
    db.documents_history.update_one({"_id": f"{doc_id}@rev{current['rev']}"}, {"$setOnInsert": copy}, upsert=True)


def save_no_rev_filter(db, doc_id, changes):  # two editors at once: one revision overwritten without a copy
    current = db.documents.find_one({"_id": doc_id})
    copy = {k: v for k, v in current.items() if k != "_id"} | {"docId": doc_id}
    db.documents_history.update_one({"_id": f"{doc_id}@rev{current['rev']}"}, {"$setOnInsert": copy}, upsert=True)
    db.documents.update_one({"_id": doc_id}, {"$set": changes, "$inc": {"rev": 1}})


def save_three_writes(db, doc_id, changes):  # the change and the rev bump as two separate updates
    current = db.documents.find_one({"_id": doc_id})
    copy = {k: v for k, v in current.items() if k != "_id"} | {"docId": doc_id}
    db.documents_history.update_one({"_id": f"{doc_id}@rev{current['rev']}"}, {"$setOnInsert": copy}, upsert=True)
    db.documents.update_one({"_id": doc_id}, {"$set": changes})
    db.documents.update_one({"_id": doc_id}, {"$inc": {"rev": 1}})


def test_18_versioning_solution_passes_and_leaves_the_practice_data_alone():
    db = _practice18()
    result = _check("18-versioning", db, save_good)
    assert result.correct, result.message
    assert db.documents.find_one({"_id": "doc:1"})["rev"] == 1 and db.documents_history.count_documents({}) == 0


@pytest.mark.parametrize("fn, why", [
    (save_insert_fixed_id, "locked for ever"),
    (save_insert_new_id, "locked for ever"),
    (save_document_first, "File the copy first"),
    (save_no_rev_filter, "two editors saved at the same moment"),
    (save_three_writes, "it takes two"),
])
def test_18_versioning_mistakes(fn, why):
    assert_verdict(_check("18-versioning", _practice18(), fn), why)


def test_18_versioning_damaged_practice_data_does_not_matter():
    db = _practice18()
    db.documents.delete_many({})
    db.documents_history.insert_one({"docId": "doc:versioning-check", "rev": 1})
    assert _check("18-versioning", db, save_good).correct


def test_18_versioning_index_and_garbage():
    assert "not unique" in _check("18-versioning", _practice18(unique=False), save_good).message
    assert "create the unique index" in _check("18-versioning", _fresh("t18e"), save_good).message
    assert _check("18-versioning", None, None).outcome == "not-attempted"
    assert "ex.check(practice, save_revision)" in _check("18-versioning", _practice18(), "x").message
    assert _check("18-versioning", _practice18(), lambda db, i, c: None).message  # does nothing: a message


# --- 16: extended reference on a changed scenario (tickets and agents) ------------------------------------------
# Manual, "Extended Reference Pattern" (copy the frequently read fields, index and update the copies) and
# "db.collection.updateMany()" (one statement updates every matching document).

open_ticket_good, rename_good = (solved("16-extended-reference-tickets")[f]
                                  for f in ("open_ticket", "rename_agent"))


def open_ticket_whole_agent(db, ticket):  # listed mistake: the whole profile copied into every ticket
    db.tickets.insert_one(ticket | {"agent": db.agents.find_one({"_id": ticket["agentId"]})})


def open_ticket_name_only(db, ticket):
    agent = db.agents.find_one({"_id": ticket["agentId"]}, {"name": 1})
    db.tickets.insert_one(ticket | {"agent": agent})


def open_ticket_then_update(db, ticket):  # two writes per ticket
    db.tickets.insert_one(ticket)
    agent = db.agents.find_one({"_id": ticket["agentId"]}, {"name": 1, "team": 1})
    db.tickets.update_one({"_id": ticket["_id"]}, {"$set": {"agent": agent}})


def rename_per_ticket(db, agent_id, new_name):  # read the copies, then one update per ticket
    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})
    for t in db.tickets.find({"agent._id": agent_id}, {"_id": 1}):
        db.tickets.update_one({"_id": t["_id"]}, {"$set": {"agent.name": new_name}})


def rename_agent_only(db, agent_id, new_name):
    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})


def rename_copies_only(db, agent_id, new_name):
    db.tickets.update_many({"agent._id": agent_id}, {"$set": {"agent.name": new_name}})


def rename_everyone(db, agent_id, new_name):
    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})
    db.tickets.update_many({}, {"$set": {"agent.name": new_name}})


def _practice16(index="agent._id"):
    db = _fresh("t16d")
    if index:
        db.tickets.create_index(index)
    return db


def test_16_tickets_solution_passes():
    db = _practice16()
    result = _check("16-extended-reference-tickets", db, open_ticket_good, rename_good)
    assert result.correct, result.message
    assert db.tickets.count_documents({}) == 0  # the checker's tickets live in its own sandbox


@pytest.mark.parametrize("fns, index, why", [
    ((open_ticket_whole_agent, rename_good), "agent._id", "not the whole agent profile"),
    ((open_ticket_name_only, rename_good), "agent._id", "lacks ['team']"),
    ((open_ticket_then_update, rename_good), "agent._id", "one insert per ticket"),
    ((open_ticket_good, rename_per_ticket), "agent._id", "one per ticket?"),
    ((open_ticket_good, rename_agent_only), "agent._id", "update every copy"),
    ((open_ticket_good, rename_copies_only), "agent._id", "update db.agents too"),
    ((open_ticket_good, rename_everyone), "agent._id", "tickets of other agents"),
    ((open_ticket_good, rename_good), None, "create the index on the copied reference"),  # listed mistake
    ((open_ticket_good, rename_good), "agentId", "create the index on the copied reference"),
])
def test_16_tickets_mistakes(fns, index, why):
    assert_verdict(_check("16-extended-reference-tickets", _practice16(index), *fns), why)


def test_16_tickets_garbage():
    assert _check("16-extended-reference-tickets", None, None, None).outcome == "not-attempted"
    assert "your two functions" in _check("16-extended-reference-tickets", _practice16(), open_ticket_good).message
    crash = _check("16-extended-reference-tickets", _practice16(), lambda db, t: t["nope"], rename_good)
    assert crash.outcome == "error" and "KeyError" in crash.message


def test_16_predict_lookup_docs():
    assert exercises.get("16-predict-lookup-docs").check(206).outcome == "not-attempted"
    assert_prediction("16-predict-lookup-docs", 103, 206, "one customer per order")


# --- 30: reads per write per piece of data, on a changed scenario (a news site) --------------------------------
# The source material's workload method (MongoDB University, "Data Modeling": list operations with their rates;
# read/write ratio per piece of data). Plain arithmetic: the checker runs the function on two workloads of its own.

ratio_good = solved("30-reads-per-write")["reads_per_write"]


def ratio_database_wide(workload, touches):  # listed mistake: one ratio for the whole database
    r = workload[workload["type"] == "read"]["per_second"].sum()
    w = workload[workload["type"] == "write"]["per_second"].sum()
    return {p: r / w for pieces in touches.values() for p in pieces}


def ratio_operation_type(workload, touches):  # near-miss: the operation's type for every piece it touches
    kinds = dict(zip(workload["operation"], workload["type"]))
    return ratio_good(workload, {op: {p: kinds[op] for p in pieces} for op, pieces in touches.items()})


def ratio_unweighted(workload, touches):
    return ratio_good(workload.assign(per_second=1.0), touches)


def ratio_inverted(workload, touches):
    return {p: (0.0 if v == float("inf") else 1 / v) for p, v in ratio_good(workload, touches).items()}


ratio_divides_by_zero = solved("30-reads-per-write", change=(' if writes[p] else float("inf")', ""))["reads_per_write"]


def ratio_hard_coded(workload, touches):  # the first scenario's answer, typed in
    return {"article": 590_000.0, "comments": 252.5, "likes": 19.67, "users": 50.0, "sections": float("inf")}


def test_30_reads_per_write_solution_passes():
    result = _check("30-reads-per-write", ratio_good)
    assert result.correct, result.message


@pytest.mark.parametrize("fn, why", [
    (ratio_database_wide, "database-wide reads per write"),
    (ratio_operation_type, "Use the kind given for each piece"),
    (ratio_unweighted, "counted operations, not their rates"),
    (ratio_inverted, "upside down"),
    (ratio_divides_by_zero, "divided by zero"),
    (ratio_hard_coded, "reads per write of"),
    (lambda w, t: [1, 2], "return a dict"),
    (lambda w, t: {"article": 1.0}, "one entry per piece of data"),
])
def test_30_reads_per_write_mistakes(fn, why):
    assert_verdict(_check("30-reads-per-write", fn), why)


def test_30_garbage_and_prediction():
    assert _check("30-reads-per-write", None).outcome == "not-attempted"
    assert "pass your function" in _check("30-reads-per-write", 3).message
    assert_prediction("30-predict-naive-page-docs", 6, 406, "reads every review")


# --- 11: the deep page prediction (the write path's checker is tested in test_exercises_patterns.py) ----------

def test_11_predict_deep_page():
    assert_prediction("11-predict-deep-page-keys", 20, 980, "walks the {postId, createdAt} index past the 960 keys")


# --- predictions of 19, 32 and 33 ------------------------------------------------------------------------------
# Manual, "Multikey Indexes" (one key per array element), "Explain Results" (totalDocsExamined, FETCH) and
# "Project Fields to Return from Query" (a projection shapes the result, the FETCH stage still loads documents).

@pytest.mark.parametrize("ex_id, right, wrong, why", [
    ("19-predict-author-page-docs", 5, 1, "the author itself"),
    ("32-predict-history-docs", 10, 400, "stops after the 10 keys"),
    ("33-predict-projection-docs", 20, 0, "trims what is sent back, not what is read"),
])
def test_predictions_explain_the_measurement(ex_id, right, wrong, why):
    ex = exercises.get(ex_id)
    assert ex.check(right).outcome == "not-attempted"  # no prediction recorded yet
    ex.predict(wrong)
    result = ex.check(right)
    assert not result.correct and why in result.message
    ex.predict(right)
    assert ex.check(right).correct


# (lesson 32's capped-subset checks are in test_exercises_antipatterns_issue25.py)


# --- 19: enrolments in a single collection (courses and students, a changed scenario) -------------------------
# Manual, "$addToSet" with "$each" (adds each value only when absent) and "Multikey Indexes".

enrol_good = solved("19-enrol")["enrol"]


def enrol_two_updates(catalog, course_id, student_id):  # also right: one update per side
    catalog.update_one({"_id": course_id}, {"$addToSet": {"relatedIds": student_id}})
    catalog.update_one({"_id": student_id}, {"$addToSet": {"relatedIds": course_id}})


def enrol_push(catalog, course_id, student_id):  # a retried enrolment lists the id twice
    catalog.update_one({"_id": course_id}, {"$push": {"relatedIds": student_id}})
    catalog.update_one({"_id": student_id}, {"$push": {"relatedIds": course_id}})


def enrol_one_way(catalog, course_id, student_id):
    catalog.update_one({"_id": course_id}, {"$addToSet": {"relatedIds": student_id}})


def enrol_replace(catalog, course_id, student_id):  # overwrites the array with the new link only
    catalog.update_one({"_id": course_id}, {"$set": {"relatedIds": [student_id]}})
    catalog.update_one({"_id": student_id}, {"$set": {"relatedIds": [course_id]}})


def enrol_many_writes(catalog, course_id, student_id):
    for doc_id in (course_id, student_id):
        for linked in (course_id, student_id):
            catalog.update_one({"_id": doc_id}, {"$addToSet": {"relatedIds": linked}})


ENROL_ANSWERS = [  # why: None for a right answer; run by test_fresh_db_answers
    (enrol_good, None),
    (enrol_two_updates, None),
    (enrol_push, "use `$addToSet`"),
    (enrol_one_way, "links both ways"),
    (enrol_replace, "no longer lists its own id"),
    (enrol_many_writes, "write statements"),
]


# --- 33: hot/cold split on a changed scenario (user profiles) --------------------------------------------------
# Manual, data-modeling anti-pattern "Bloated Documents" (keep frequently accessed fields together, move the
# rest to a collection sharing the _id) and "WiredTiger cache" (whole documents are loaded).

HOT33 = ("name", "avatarUrl", "plan")


save_user_good = solved("33-save-profile-split")["save_user"]


def save_user_unsplit(db, user):
    db.users.insert_one(user)


def save_user_emptied(db, user):  # issue 15: the cold fields emptied, "no cold data lost" broken
    save_user_good(db, dict(user, bio="", loginHistory=[]))


def save_user_no_plan(db, user):
    db.users.insert_one({k: user[k] for k in ("_id", "name", "avatarUrl")})
    db.user_details.insert_one({k: v for k, v in user.items() if k not in HOT33})


def save_user_other_id(db, user):
    db.users.insert_one({k: user[k] for k in ("_id", *HOT33)})
    db.user_details.insert_one({k: v for k, v in user.items() if k not in HOT33 and k != "_id"}
                               | {"userId": user["_id"]})


def save_user_field_by_field(db, user):
    db.users.insert_one({k: user[k] for k in ("_id", *HOT33)})
    db.user_details.insert_one({"_id": user["_id"]})
    for k, v in user.items():
        if k not in HOT33 and k != "_id":
            db.user_details.update_one({"_id": user["_id"]}, {"$set": {k: v}})


SAVE_PROFILE_ANSWERS = [  # why: None for a right answer; run by test_fresh_db_answers
    (save_user_good, None),
    (save_user_unsplit, "still holds cold field(s)"),
    (save_user_emptied, "no cold data lost"),
    (save_user_no_plan, "lacks hot field(s) ['plan']"),
    (save_user_other_id, "same `_id`"),
    (save_user_field_by_field, "two inserts are enough"),
]


# --- 13, 19, 33: checkers run on a fresh database of the learner's --------------------------------------------

@pytest.mark.parametrize("ex_id, fn, why", [*answer_cases("13-migrate-batches", MIGRATE_MISTAKES),
                                            *answer_cases("19-enrol", ENROL_ANSWERS),
                                            *answer_cases("33-save-profile-split", SAVE_PROFILE_ANSWERS)])
def test_fresh_db_answers(ex_id, fn, why):
    assert_verdict(_check(ex_id, _fresh(f"t{ex_id[:2]}e"), fn), why)


@pytest.mark.parametrize("ex_id, junk, call", [
    ("19-enrol", 1, "ex.check(practice, enrol)"),
    ("33-save-profile-split", 5, "ex_profile.check(practice, save_user)"),
])
def test_fresh_db_garbage(ex_id, junk, call):
    assert _check(ex_id, None, None).outcome == "not-attempted"
    assert call in _check(ex_id, _fresh(f"t{ex_id[:2]}f"), junk).message
