"""Exercises of lessons 31, 35, 36, 37, 38 and 39 (predictions and changed-scenario builds): every listed mistake
and near-miss fails with a message about that mistake; each solution passes; nonsense gets a message.

Facts used (MongoDB manual): "MongoDB Limits and Thresholds" (31: nesting depth 100, 16 MiB documents);
"Unique Indexes", "TTL Indexes" and "$indexStats" (35: accesses count query use only); "Embedded Data Versus
References" / "Model One-to-One Relationships with Embedded Documents" (36); "Case-Insensitive Indexes" (37: an
index at strength 2 is used only by queries with the same collation; a unique one refuses case variants, strength
2 still tells accents apart); "Extended Reference Pattern" (38: update the copies through the reference);
"Database Profiler Output" (39)."""
import copy

import pytest
from pymongo.errors import DuplicateKeyError

import labkit
from exercise_helpers import assert_prediction_round_trip, prune_indexes, rename_by_old_name, solved
from labkit.exercises.lessons import l31_hard_limits


def _msg(ex_id, *args):
    result = labkit.exercises.get(ex_id).check(*args)
    assert result.outcome in ("correct", "incorrect", "error", "not-attempted"), result
    return result


# --- predictions -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ex_id, right, wrong", [
    ("31-predict-pushes", 31, 32),
    ("35-predict-hidden-collscans", 0, 1),
    ("36-predict-round-trips", 4, 1),
    ("37-predict-regex-keys", 5000, 3),
    ("38-predict-top-daily", "support queue", "nightly tier report"),
    ("39-predict-findings-gone", 12, 4),
])
def test_predictions(ex_id, right, wrong):
    assert_prediction_round_trip(ex_id, right, wrong)


def test_prediction_choices_refuse_other_answers():
    ex = labkit.exercises.get("38-predict-top-daily")
    assert "Choose one of" in ex.predict("the report")
    assert "Choose one of" in labkit.exercises.get("35-predict-hidden-collscans").predict(7)


# --- 31: flatten a nested thread -------------------------------------------------------------------------

def flatten(thread):
    out, todo = [], [(thread, None)]
    while todo:
        node, parent = todo.pop()
        my_id = f"{thread['_id']}:{len(out)}"
        out.append({"_id": my_id, "threadId": thread["_id"], "parentId": parent, "text": node["text"],
                    "by": node.get("by")})
        todo += [(reply, my_id) for reply in node.get("replies", [])]
    return out


def flatten_keeps_replies(thread):
    return [dict(d, replies=[]) for d in flatten(thread)]


def flatten_top_level_only(thread):
    out = [{"_id": "root", "threadId": thread["_id"], "parentId": None, "text": thread["text"]}]
    out += [{"_id": f"r{k}", "threadId": thread["_id"], "parentId": "root", "text": r["text"]}
            for k, r in enumerate(thread.get("replies", []))]
    return out


def flatten_no_parent(thread):
    return [{k: v for k, v in d.items() if k != "parentId"} | {"parentId": None} for d in flatten(thread)]


def flatten_no_thread_id(thread):
    return [{k: v for k, v in d.items() if k != "threadId"} for d in flatten(thread)]


def flatten_parent_is_root(thread):
    docs = flatten(thread)
    return [dict(d, parentId=docs[0]["_id"] if d is not docs[0] else None) for d in docs]


def flatten_same_ids(thread):
    return [dict(d, _id="same") for d in flatten(thread)]


@pytest.mark.parametrize("fn, why", [
    (flatten_keeps_replies, "still hold `replies`"),
    (flatten_top_level_only, "Walk the whole tree"),
    (flatten_no_parent, "should answer"),
    (flatten_no_thread_id, "threadId"),
    (flatten_parent_is_root, "should answer"),
    (flatten_same_ids, "unique `_id`"),
    (lambda thread: flatten(thread)[0], "one document"),
    (lambda thread: "x", "list of documents"),
])
def test_flatten_thread_mistakes(fn, why):
    r = _msg("31-flatten-thread", fn)
    assert not r.correct and why in r.message, r.message


def test_flatten_thread_solution_and_nonsense():
    assert _msg("31-flatten-thread", flatten).correct
    assert _msg("31-flatten-thread", None).outcome == "not-attempted"
    assert "pass your function" in _msg("31-flatten-thread", 42).message


def test_flatten_thread_gets_a_thread_deeper_than_the_limit():
    # nesting depth limit 100 (manual, "Nested Depth for BSON Documents"): the chain is far deeper as one document
    from labkit.limits import nesting_depth
    assert nesting_depth(l31_hard_limits._thread_31("chain", [1] * 80)) > 100


# --- 35: prune the support desk's indexes ----------------------------------------------------------------

prune = prune_indexes(compare_collation=False)  # a prefix rule that ignores collation


def _dropper(*names):
    def fn(tickets):
        for n in names:
            tickets.drop_index(n)
    return fn


@pytest.mark.parametrize("fn, why", [
    (_dropper("assignee_1", "status_1", "priority_1", "ref_1"), "enforces unique ticket references"),
    (_dropper("assignee_1", "status_1", "priority_1", "closedAt_1"), "TTL index"),
    (_dropper("status_1", "priority_1"), "prefix of"),
    (_dropper("assignee_1", "status_1"), "priority_1"),
    (_dropper("assignee_1", "status_1", "priority_1", "customerId_1"), "COLLSCAN"),
    (_dropper("assignee_1_status_1_priority_-1", "status_1", "priority_1"), "blocking SORT"),
    (lambda t: (t.delete_many({"status": "solved"}), _dropper("assignee_1", "status_1", "priority_1")(t)),
     "never documents"),
])
def test_prune_tickets_mistakes(fn, why):
    r = _msg("35-prune-tickets", fn)
    assert not r.correct and why in r.message, r.message


def test_prune_tickets_solution():
    assert not _msg("35-prune-tickets", prune).correct  # its prefix rule ignores collation: drops assignee_ci
    assert _msg("35-prune-tickets", _dropper("assignee_1", "status_1", "priority_1")).correct
    assert "pass your function" in _msg("35-prune-tickets", "prune").message


# --- 36: embed a book's stock and authors ----------------------------------------------------------------

def _embed_pipeline(stock_first=True, authors_map=True, merge=True):
    stock = ({"inStock": {"$first": "$s.inStock"}, "warehouse": {"$first": "$s.warehouse"}} if stock_first
             else "$s")
    authors = {"$map": {"input": "$a" if authors_map else {"$slice": ["$a", 1]}, "as": "x",  # the first only
                        "in": {"name": "$$x.name", "role": "$$x.role"}}}
    last = ({"$merge": {"into": "books", "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}} if merge
            else {"$out": "books"})
    return [{"$lookup": {"from": "book_stock", "localField": "_id", "foreignField": "bookId", "as": "s"}},
            {"$lookup": {"from": "book_authors", "localField": "_id", "foreignField": "bookId", "as": "a"}},
            {"$project": {"stock": stock, "authors": authors}}, last]


def migrate(db, **kw):
    db.books.aggregate(_embed_pipeline(**kw))
    db.drop_collection("book_stock")
    db.drop_collection("book_authors")


def load_book(db, book_id):
    return db.books.find_one({"_id": book_id})


def load_book_split(db, book_id):
    book = db.books.find_one({"_id": book_id})
    book["stock"] = db.book_stock.find_one({"bookId": book_id})
    return book


@pytest.mark.parametrize("mig, load, why", [
    (lambda db: migrate(db, stock_first=False), load_book, "is an array"),
    (lambda db: migrate(db, authors_map=False), load_book, "Embed every author"),
    (lambda db: (db.books.aggregate(_embed_pipeline()[:2] + [{"$set": {"stock": {"$first": "$s"}, "authors": "$a"}},
                                                             {"$unset": ["s", "a"]}, _embed_pipeline()[-1]]),
                 db.drop_collection("book_stock"), db.drop_collection("book_authors")), load_book, "back-reference"),
    (lambda db: migrate(db, merge=False), load_book, "lost its title"),
    (lambda db: db.books.aggregate(_embed_pipeline()), load_book, "still exist"),
    (migrate, load_book_split, "sent 2 commands"),
    (migrate, lambda db, book_id: list(db.books.find({"_id": book_id})), "not the book document"),
    (lambda db: None, load_book, "should embed stock"),
])
def test_embed_books_mistakes(mig, load, why):
    r = _msg("36-embed-books", mig, load)
    assert not r.correct and why in r.message, r.message


def test_embed_books_solution_and_nonsense():
    assert _msg("36-embed-books", migrate, load_book).correct
    assert "two functions" in _msg("36-embed-books", migrate).message
    assert _msg("36-embed-books", None, load_book).outcome == "not-attempted"


# --- 37: team names unique regardless of case -------------------------------------------------------------

CI = {"locale": "en", "strength": 2}


prepare, add_team, find_team = (solved("37-team-names")[f] for f in ("prepare", "add_team", "find_team"))


def prepare_lower(teams):
    teams.update_many({}, [{"$set": {"nameLower": {"$toLower": "$name"}}}])
    teams.create_index("nameLower", unique=True)


def add_team_lower(teams, name):
    teams.insert_one({"name": name, "nameLower": name.lower()})


def find_team_lower(teams, name):
    return teams.find({"nameLower": name.lower()})


@pytest.mark.parametrize("fns, why", [
    ((lambda t: t.create_index("name", collation=CI), add_team, find_team), "accepted \"PAPER planes\""),
    ((lambda t: t.create_index("name", unique=True), add_team, find_team), "accepted \"PAPER planes\""),
    ((lambda t: t.create_index("name", unique=True, collation={"locale": "en", "strength": 1}), add_team, find_team),
     "strength 1 also ignores accents"),
    ((prepare, add_team, lambda t, n: t.find({"name": {"$regex": f"^{n}$", "$options": "i"}})),
     "regular expression"),
    ((prepare, add_team, lambda t, n: t.find({"name": n})), "names the same collation"),
    ((prepare, add_team, lambda t, n: t.find_one({"name": n}, collation=CI)), "cursor of a find"),
    ((prepare, add_team, lambda t, n: t.find({"name": n}, collation={"locale": "en", "strength": 1})),
     "keys examined"),
    ((lambda t: t.delete_many({}), add_team, find_team), "removes nothing"),
])
def test_team_names_mistakes(fns, why):
    r = _msg("37-team-names", *fns)
    assert not r.correct and why in r.message, r.message


def test_team_names_solutions():
    assert _msg("37-team-names", prepare, add_team, find_team).correct
    assert _msg("37-team-names", prepare_lower, add_team_lower, find_team_lower).correct
    assert "three functions" in _msg("37-team-names", prepare, add_team).message


def test_the_lesson_fact_a_strength_2_unique_index_refuses_case_variants():
    # manual, "Case-Insensitive Indexes": unique + strength 2 treats "apple" and "APPLE" as the same key
    from labkit.engine import EmbeddedClient
    coll = EmbeddedClient().t.teams
    prepare(coll)
    add_team(coll, "Apple")
    with pytest.raises(DuplicateKeyError):
        add_team(coll, "APPLE")


# --- 38: keep an extended reference right on rename ------------------------------------------------------

def rename_agent(db, agent_id, new_name):
    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})
    db.tickets.update_many({"agentId": agent_id}, {"$set": {"agent.name": new_name}})


def rename_loop(db, agent_id, new_name):
    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})
    for t in db.tickets.find({"agentId": agent_id}, {"_id": 1}):
        db.tickets.update_one({"_id": t["_id"]}, {"$set": {"agent.name": new_name}})


def rename_read_first(db, agent_id, new_name):
    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})
    ids = [t["_id"] for t in db.tickets.find({"agentId": agent_id}, {"_id": 1})]
    db.tickets.update_many({"_id": {"$in": ids}}, {"$set": {"agent.name": new_name}})


def rename_whole_copy(db, agent_id, new_name):
    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})
    db.tickets.update_many({"agentId": agent_id}, {"$set": {"agent": {"name": new_name}}})


def rename_replace(db, agent_id, new_name):
    db.agents.replace_one({"_id": agent_id}, {"name": new_name})
    db.tickets.update_many({"agentId": agent_id}, {"$set": {"agent.name": new_name}})


@pytest.mark.parametrize("fn, why", [
    (lambda db, a, n: db.agents.update_one({"_id": a}, {"$set": {"name": n}}), "still show the old name"),
    (lambda db, a, n: db.tickets.update_many({"agentId": a}, {"$set": {"agent.name": n}}), "rename the agent"),
    (rename_by_old_name, "the other \"Sam Lee\""),
    (rename_loop, "one per ticket"),
    (rename_read_first, "read-modify-write"),
    (rename_whole_copy, "lost the copied team"),
    (rename_replace, "lost its other fields"),
])
def test_rename_agent_mistakes(fn, why):
    r = _msg("38-rename-agent", fn)
    assert not r.correct and why in r.message, r.message


def test_rename_agent_solution_and_nonsense():
    assert _msg("38-rename-agent", rename_agent).correct
    assert "pass your function" in _msg("38-rename-agent", {"x": 1}).message
    r = _msg("38-rename-agent", lambda db: None)  # wrong signature: a message, not a traceback
    assert not r.correct and r.outcome == "error" and "TypeError" in r.message


# --- 39: review and fix another legacy store ------------------------------------------------------------

def _move_posts(db, with_author=True):
    db.posts.insert_many([({"authorId": a["_id"]} if with_author else {}) | p
                          for a in db.authors.find({}, {"posts": 1}) for p in a["posts"]])
    db.posts.create_index([("authorId", 1), ("at", -1)])
    db.authors.update_many({}, {"$unset": {"posts": ""}})


def _validate(db, *names):
    for name in names:
        db.command("collMod", name, validator={"$jsonSchema": {"bsonType": "object"}})


def fix(db):
    _move_posts(db)
    db.authors.drop_index("handle_1")
    _validate(db, "authors", "posts")


@pytest.mark.parametrize("fn, why", [
    (lambda db: (db.authors.update_many({}, {"$unset": {"posts": ""}}), db.authors.drop_index("handle_1"),
                 _validate(db, "authors")), "posts are gone"),
    (lambda db: (_move_posts(db, with_author=False), db.authors.drop_index("handle_1"),
                 _validate(db, "authors", "posts")), "authorId"),
    (lambda db: (_move_posts(db), db.authors.drop_index("handle_1_joined_-1"), _validate(db, "authors", "posts")),
     "keep the longer index"),
    (lambda db: (_move_posts(db), _validate(db, "authors", "posts")), "redundant-index"),
    (lambda db: (_move_posts(db), db.authors.drop_index("handle_1"), _validate(db, "authors")), "no-validation"),
    (lambda db: (db.authors.drop_index("handle_1"), _validate(db, "authors")), "unbounded-array"),
    (lambda db: db.authors.delete_many({"_id": "author:07"}), "of 30 authors"),
])
def test_fix_blog_mistakes(fn, why):
    r = _msg("39-fix-blog", fn)
    assert not r.correct and why in r.message, r.message


def test_fix_blog_solution_and_nonsense():
    assert _msg("39-fix-blog", fix).correct
    assert "pass your function" in _msg("39-fix-blog", [fix]).message


def test_checkers_never_touch_the_learners_data():
    # every build check runs on pristine data in its own sandbox: nothing of the caller's changes
    db = labkit.fresh_db("t_lessons_e_untouched", client=labkit.engine.EmbeddedClient())
    db.books.insert_one({"_id": "book:0041", "title": "mine"})
    snapshot = copy.deepcopy(list(db.books.find()))
    assert _msg("36-embed-books", migrate, load_book).correct
    assert list(db.books.find()) == snapshot
