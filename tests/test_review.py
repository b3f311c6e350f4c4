"""labkit.review: planted problems found with the right kind and namespace, planted non-problems left alone,
read-only, bounded cost, and the `python -m labkit review` command.

Facts used (MongoDB manual): "Database Profiler Output" (system.profile documents: op, ns, command with
find/filter/projection, aggregate/pipeline, update entries with command.q / command.u, ts); "$indexStats"
(accesses.ops counted since accesses.since, per node, reset on restart); "$sample"; "$collStats";
"MongoDB Limits and Thresholds" (64 indexes per collection, 100 levels of nesting); the anti-pattern pages
("Avoid Unbounded Arrays", "Remove Unnecessary Indexes": a compound index makes its prefix redundant, but a
unique or partial index is a constraint or a different index; "Reduce the Number of Collections",
"Reduce $lookup Operations", "Avoid Separating Data that is Accessed Together", "Case-Insensitive Queries
Without Case-Insensitive Indexes").
"""
from __future__ import annotations

import datetime as dt
import json

import pytest
from bson import json_util
from bson.regex import Regex

import labkit
from labkit.__main__ import main
from labkit.engine import EmbeddedClient
from labkit.review import KINDS, ReviewInputError, review

T0 = dt.datetime(2026, 1, 1)
OK_SCHEMA = {"$jsonSchema": {"bsonType": "object"}}


def _coll(db, name, docs, validator=OK_SCHEMA):
    if validator is not None:
        db.create_collection(name, validator=validator)
    if docs:
        db[name].insert_many(docs)
    return db[name]


def _shop(db):
    """A database with planted problems and planted non-problems (see EXPECTED)."""
    # unbounded array one level down, only in the newest documents (after the 50th), growing with age
    posts = [{"_id": i, "title": f"post {i}", "createdAt": T0 + dt.timedelta(hours=i)} for i in range(400)]
    for i in range(300, 400):
        posts[i]["meta"] = {"comments": [{"by": f"u{k}", "text": "hi"} for k in range(400 - i)]}
    posts[399]["meta"]["comments"] = [{"by": f"u{k}", "text": "hi"} for k in range(5000)]
    _coll(db, "posts", posts)
    # an array nothing bounds, small today (the seed's "common mistake"); and a $slice-capped one (query data)
    _coll(db, "products", [{"_id": f"p{i}", "name": f"kettle {i}", "price": 10 + i,
                            "revisions": [{"rev": r, "note": "edit"} for r in range(25)],
                            "recentReviews": [{"stars": 1 + r % 5} for r in range(30)]} for i in range(40)])
    # bounded by the validator's maxItems
    _coll(db, "carts", [{"_id": i, "items": [{"sku": f"p{k}", "qty": 1} for k in range(30)]} for i in range(30)],
          validator={"$jsonSchema": {"bsonType": "object", "properties": {
              "items": {"bsonType": "array", "maxItems": 50}}}})
    # indexes: a truly redundant prefix, a unique one and a partial one that only look redundant
    _coll(db, "orders", [{"_id": i, "customerId": f"c{i % 50}", "status": "open" if i % 3 else "done",
                          "createdAt": T0 + dt.timedelta(minutes=i), "country": "NL"} for i in range(300)])
    db.orders.create_index("customerId")
    db.orders.create_index([("customerId", 1), ("createdAt", -1)])
    db.orders.create_index("status", partialFilterExpression={"status": "open"})
    db.orders.create_index([("status", 1), ("createdAt", 1)])
    _coll(db, "customers", [{"_id": f"c{i}", "email": f"C{i}@Example.com", "name": f"C {i}"} for i in range(50)])
    db.customers.create_index("email", unique=True)
    db.customers.create_index([("email", 1), ("name", 1)])
    # a small lookup table, joined rarely
    _coll(db, "countries", [{"_id": c, "name": c.lower()} for c in ("NL", "DE", "FR", "BE")])
    # one entity split over four collections (anti-pattern 5, not "collection per tenant")
    _coll(db, "users", [{"_id": f"u{i}", "name": f"U {i}"} for i in range(30)])
    _coll(db, "user_profiles", [{"_id": i, "userId": f"u{i}", "bio": "x", "avatar": "a.png"} for i in range(30)])
    _coll(db, "user_addresses", [{"_id": i, "userId": f"u{i}", "street": "s", "city": "c"} for i in range(30)])
    _coll(db, "user_settings", [{"_id": i, "userId": f"u{i}", "theme": "dark", "lang": "en"} for i in range(30)])
    # one collection per tenant: same shape, name = stem + tenant
    for t in ("acme", "globex", "initech", "hooli"):
        _coll(db, f"invoices_{t}", [{"_id": k, "amount": k, "paid": False} for k in range(5)])
    # deep nesting: replies inside replies
    node: dict = {"text": "leaf"}
    for _ in range(30):
        node = {"text": "reply", "reply": node}
    _coll(db, "threads", [{"_id": 1, "root": node}])
    # 50 indexes on one collection
    _coll(db, "attrs", [{"_id": 1, **{f"a{k}": k for k in range(50)}}])
    for k in range(49):
        db.attrs.create_index(f"a{k}")
    # bloated: a hot query reads the title of a 20 kB document
    _coll(db, "articles", [{"_id": i, "title": f"t{i}", "body": "lorem " * 4000} for i in range(20)])
    # no validator at all
    _coll(db, "notes", [{"_id": 1, "text": "hello"}], validator=None)


def _log(dbname):
    """Profiler-shaped documents (manual: Database Profiler Output) for the workload of _shop."""
    out = []
    t = T0

    def add(op, coll, command, **extra):
        nonlocal t
        t += dt.timedelta(milliseconds=200)
        out.append({"op": op, "ns": f"{dbname}.{coll}", "command": command, "ts": t, **extra})

    for i in range(30):  # the request context: users, then its three satellites by the same key
        u = f"u{i}"
        add("query", "users", {"find": "users", "filter": {"_id": u}})
        for c in ("user_profiles", "user_addresses", "user_settings"):
            add("query", c, {"find": c, "filter": {"userId": u}})
    for i in range(30):  # a hot join
        add("command", "orders", {"aggregate": "orders", "pipeline": [
            {"$match": {"customerId": f"c{i}"}},
            {"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "c"}}]})
    for i in range(2):  # a rare join to the small lookup table
        add("command", "orders", {"aggregate": "orders", "pipeline": [
            {"$lookup": {"from": "countries", "localField": "country", "foreignField": "_id", "as": "k"}}]})
    for i in range(20):  # case-insensitive login
        add("query", "customers", {"find": "customers", "filter": {"email": Regex(f"^c{i}@example\\.com$", "i")}},
            keysExamined=50, docsExamined=1, nreturned=1, planSummary="IXSCAN { email: 1 }")
    for i in range(20):  # the hot projected query on articles
        add("query", "articles", {"find": "articles", "filter": {"_id": i}, "projection": {"title": 1}})
    for i in range(10):  # recentReviews is capped with $slice
        add("update", "products", {"q": {"_id": f"p{i}"}, "u": {"$push": {"recentReviews": {
            "$each": [{"stars": 5}], "$slice": -30}}}, "multi": False, "upsert": False})
    add("query", "orders", {"find": "orders", "filter": {"status": "open"}})
    return out


EXPECTED = {
    ("unbounded-array", "posts.meta.comments"), ("unbounded-array", "products.revisions"),
    ("redundant-index", "orders.customerId_1"),
    ("separate-data", "users"),
    ("many-collections", "invoices_*"),
    ("deep-nesting", "threads"), ("index-limit", "attrs"),
    ("bloated-document", "articles"),
    ("lookup-overuse", "orders"),
    ("case-insensitive-regex", "customers.email"),
    ("no-validation", "notes"),
}
NOT_EXPECTED = {
    ("unbounded-array", "products.recentReviews"), ("unbounded-array", "carts.items"),
    ("redundant-index", "customers.email_1"), ("redundant-index", "orders.status_1"),
    ("many-collections", "user_*"),
}


@pytest.fixture(scope="module")
def shop():
    db = labkit.fresh_db("t_review_shop")
    _shop(db)
    return db


def test_findings_exact_with_query_log(shop):
    r = review(shop, sample=200, query_log=_log(shop.name))
    got = {(f.kind, f.where) for f in r.findings}
    assert got == EXPECTED
    assert not got & NOT_EXPECTED
    by = {(f.kind, f.where): f for f in r.findings}
    assert by[("separate-data", "users")].namespace == f"{shop.name}.users"
    assert sorted(by[("separate-data", "users")].evidence["read together with"]) == [
        "user_addresses", "user_profiles", "user_settings"]
    assert by[("many-collections", "invoices_*")].namespace == shop.name
    assert by[("unbounded-array", "posts.meta.comments")].severity == "high"
    assert by[("unbounded-array", "posts.meta.comments")].namespace == f"{shop.name}.posts"
    assert by[("lookup-overuse", "orders")].evidence["from"] == "customers"
    for f in r.findings:
        assert f.kind in KINDS and f.lesson == KINDS[f.kind] and f.severity in ("high", "medium", "low")
        assert f.fix and f.evidence and f.summary
    assert r.skipped.keys() == {"unused-index"}  # counters are minutes old


def test_without_query_data_the_rest_still_runs(shop):
    r = review(shop, sample=200)
    got = {(f.kind, f.where) for f in r.findings}
    query_based = {k for k in EXPECTED if k[0] in ("separate-data", "lookup-overuse", "case-insensitive-regex",
                                                  "bloated-document")}
    # without observed updates nothing shows that recentReviews is capped, so it is flagged
    assert got == (EXPECTED - query_based) | {("unbounded-array", "products.recentReviews")}
    for k in ("separate-data", "lookup-overuse", "case-insensitive-regex"):
        assert "no query data" in r.skipped[k]
    assert "no query data" in r.query_data and "no query data" in r.summary()


def test_late_nested_array_found_by_sampling_not_first_documents():
    # the only array appears after the 50th document and one level down (issue 16)
    db = labkit.fresh_db("t_review_late", client=EmbeddedClient())
    docs = [{"_id": i, "createdAt": T0 + dt.timedelta(days=i)} for i in range(600)]
    for i in range(500, 600):
        docs[i]["meta"] = {"comments": list(range(5000 if i == 599 else 150))}
    _coll(db, "posts", docs)
    r = review(db, sample=100)
    assert {(f.kind, f.where) for f in r.findings} == {("unbounded-array", "posts.meta.comments")}
    assert r.sampled == [{"collection": "posts", "documents": 600, "sampled": 100, "method": "$sample 100",
                          "avgObjSize": r.sampled[0]["avgObjSize"], "indexes": 1}]


def test_age_correlation_flags_a_short_growing_array():
    # short today (max 15 scalars) but older documents hold longer arrays: it grows with age
    db = labkit.fresh_db("t_review_age", client=EmbeddedClient())
    _coll(db, "accounts", [{"_id": i, "createdAt": T0 + dt.timedelta(days=i), "logins": list(range(15 - i // 4))}
                           for i in range(60)])
    r = review(db)
    (f,) = r.findings
    assert (f.kind, f.where, f.severity) == ("unbounded-array", "accounts.logins", "high")
    assert f.evidence["age correlation"] < -0.9
    # the same lengths in random order: no relation to age, small, scalars: not flagged
    db2 = labkit.fresh_db("t_review_age2", client=EmbeddedClient())
    _coll(db2, "accounts", [{"_id": i, "createdAt": T0 + dt.timedelta(days=i), "logins": list(range((i * 7) % 15))}
                            for i in range(60)])
    assert review(db2).findings == []


def test_unused_index_reads_since_and_spares_constraints():
    db = labkit.fresh_db("t_review_unused", client=EmbeddedClient())
    _coll(db, "c", [{"_id": i, "a": i, "b": i, "e": f"{i}", "t": T0} for i in range(20)])
    db.c.create_index("a")
    db.c.create_index("b")
    db.c.create_index("e", unique=True)
    db.c.create_index("t", expireAfterSeconds=3600)
    db.c.find_one({"b": 3})
    young = review(db)
    assert not [f for f in young.findings if f.kind == "unused-index"]
    assert "usage_window" in young.skipped["unused-index"]
    old = review(db, usage_window=dt.timedelta(0))
    got = [(f.kind, f.where) for f in old.findings if f.kind == "unused-index"]
    assert got == [("unused-index", "c.a_1")]  # b_1 was used; unique and TTL indexes are never proposed
    f = next(f for f in old.findings if f.kind == "unused-index")
    assert f.evidence["ops"] == 0 and isinstance(f.evidence["since"], dt.datetime)


def test_hinted_prefix_is_not_redundant_and_collation_differs():
    db = labkit.fresh_db("t_review_hint", client=EmbeddedClient())
    _coll(db, "c", [{"_id": i, "a": i, "b": i} for i in range(10)])
    db.c.create_index("a")
    db.c.create_index([("a", 1), ("b", 1)], collation={"locale": "en", "strength": 2})
    db.c.create_index("b")
    db.c.create_index([("b", -1), ("a", 1)])
    r = review(db)
    # a_1: the longer index compares strings with a collation, so it does not serve a_1's queries;
    # b_1: a single-field prefix is served by the reversed compound index
    assert {(f.kind, f.where) for f in r.findings} == {("redundant-index", "c.b_1")}
    log = [{"op": "query", "ns": f"{db.name}.c", "command": {"find": "c", "filter": {"b": 1}, "hint": "b_1"}}]
    assert [f for f in review(db, query_log=log).findings if f.kind == "redundant-index"] == []


def _state(db):
    from pymongo.errors import OperationFailure

    out = {"collections": sorted(db.list_collection_names()), "databases": sorted(db.client.list_database_names())}
    try:  # the profiler's level and settings (manual: "profile" command, -1 reads them without changing)
        out["profile"] = {k: v for k, v in db.command("profile", -1).items() if k not in ("ok", "$clusterTime")}
    except OperationFailure:
        out["profile"] = "profile command not available on this engine"
    for name in out["collections"]:
        out[name] = {"docs": json_util.dumps(list(db[name].find().sort("_id", 1))),
                     "indexes": db[name].index_information(),
                     "options": db[name].options()}
    return out


def test_read_only_state_identical(shop, monkeypatch):
    before = _state(shop)
    from labkit.engine.catalog import collection as engine_collection
    from labkit.engine.commands import database as engine_database

    def refuse(*a, **k):
        raise AssertionError("the review wrote")

    writes = ["insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
              "find_one_and_update", "find_one_and_delete", "find_one_and_replace", "bulk_write", "create_index",
              "create_indexes", "drop_index", "drop_indexes", "drop", "rename"]
    for cls in {type(shop.posts)} | {c for c in vars(engine_collection).values() if isinstance(c, type)}:
        for w in writes:
            if hasattr(cls, w):
                monkeypatch.setattr(cls, w, refuse, raising=False)
    for w in ("create_collection", "drop_collection"):
        monkeypatch.setattr(type(shop), w, refuse, raising=False)
    assert engine_database  # imported for the classes above
    review(shop, sample=200, query_log=_log(shop.name))
    review(shop, sample=200, full=True)
    monkeypatch.undo()
    assert _state(shop) == before
    assert "system.profile" not in shop.list_collection_names()


def test_read_only_command_events_when_available(shop):
    import inspect

    from pymongo import monitoring

    if "event_listeners" not in inspect.signature(EmbeddedClient).parameters:
        pytest.skip("EmbeddedClient(event_listeners=...) is not available on this branch (boundary helper)")

    class Listener(monitoring.CommandListener):
        def __init__(self):
            self.names = []

        def started(self, event):
            self.names.append(event.command_name)

        def succeeded(self, event):
            pass

        def failed(self, event):
            pass

    listener = Listener()
    client = EmbeddedClient(event_listeners=[listener])
    db = labkit.fresh_db("t_review_events", client=client)
    _shop(db)
    listener.names.clear()
    review(db, sample=200, query_log=_log(db.name))
    writes = {"insert", "update", "delete", "create", "createIndexes", "drop", "dropIndexes", "collMod",
              "profile", "findAndModify", "renameCollection", "dropDatabase"}
    assert listener.names and not writes & set(listener.names)


def test_reports_formats(shop):
    r = review(shop, sample=200, query_log=_log(shop.name))
    frame = r.to_frame()
    assert list(frame.columns) == ["severity", "kind", "namespace", "where", "summary", "fix", "lesson"]
    assert len(frame) == len(EXPECTED)
    data = json.loads(r.to_json())
    assert {(f["kind"], f["where"]) for f in data["findings"]} == EXPECTED
    assert {s["collection"] for s in data["sampled"]} >= {"posts", "users"} and data["queryData"].startswith("query log")
    md = r.to_markdown()
    assert md.startswith(f"# Schema review: {shop.name}") and "| high | unbounded-array |" in md
    assert "posts.meta.comments" in repr(r) and "<table>" in r._repr_html_()
    empty = review(labkit.fresh_db("t_review_empty", client=EmbeddedClient()))
    assert empty.findings == [] and "No findings." in repr(empty) and empty.to_frame().empty


def test_bad_input_is_a_clear_error(tmp_path, shop):
    with pytest.raises(ReviewInputError, match="sample must be"):
        review(shop, sample=0)
    with pytest.raises(ReviewInputError, match="cannot be read"):
        review(shop, query_log=tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"op": "query"}\nnot json\n')
    with pytest.raises(ReviewInputError, match="line 2"):
        review(shop, query_log=bad)
    with pytest.raises(ReviewInputError, match="pass a database"):
        review("shop")
    with pytest.raises(ReviewInputError, match="profiler document"):
        review(shop, query_log=[1, 2])


def _write_log(path, dbname):
    path.write_text("".join(json_util.dumps(e) + "\n" for e in _log(dbname)))
    return path


def test_cli_all_formats_and_output(shop, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    log = _write_log(tmp_path / "log.jsonl", shop.name)
    assert main(["review", "--db", shop.name, "--sample", "200", "--query-log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "posts.meta.comments" in out and "separate-data" in out and "Sampled" in out
    assert main(["review", "--db", shop.name, "--format", "markdown", "--sample", "200"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# Schema review: {shop.name}") and "Not checked: separate-data: no query data" in out
    dest = tmp_path / "r.json"
    assert main(["review", "--db", shop.name, "--format", "json", "--output", str(dest), "--sample", "200",
                 "--query-log", str(log)]) == 0
    assert str(dest) in capsys.readouterr().out
    assert {(f["kind"], f["where"]) for f in json.loads(dest.read_text())["findings"]} == EXPECTED
    assert main(["review", "--db", shop.name, "--full", "--format", "json"]) == 0
    assert {s["method"] for s in json.loads(capsys.readouterr().out)["sampled"]} == {"full read"}


@pytest.mark.parametrize("argv, code, message", [
    (["review", "--db", "t_review_no_such_db"], 1, "does not exist"),
    (["review", "--db", "t_review_shop", "--query-log", "/nonexistent/log.jsonl"], 2, "--query-log: '/nonexistent"),
    (["review", "--db", "t_review_shop", "--sample", "0"], 2, "--sample: 0 is out of range"),
    (["review", "--db", "t_review_shop", "--output", "/nonexistent/dir/r.txt"], 2, "--output: '/nonexistent"),
])
def test_cli_bad_input_no_traceback(shop, argv, code, message, monkeypatch, capsys):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    if code == 2:  # refused while parsing the arguments, before anything is read (tests/test_cli_input.py)
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    else:
        assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    if "does not exist" in message:
        assert "labkit serve" in err


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["review", "--help"])
    assert info.value.code == 0 and "--query-log" in capsys.readouterr().out


def test_engine_sample_stage():
    # src/mongo/db/pipeline/document_source_sample.cpp: errors 28745-28749; N random documents, all when fewer
    from pymongo.errors import OperationFailure

    db = labkit.fresh_db("t_review_sample", client=EmbeddedClient())
    db.c.insert_many([{"_id": i, "a": {"b": [i]}} for i in range(50)])
    got = list(db.c.aggregate([{"$sample": {"size": 10}}]))
    assert len(got) == 10 and len({d["_id"] for d in got}) == 10
    got[0]["a"]["b"].append("changed")  # results are copies
    assert db.c.find_one({"_id": got[0]["_id"]})["a"]["b"] == [got[0]["_id"]]
    assert sorted(d["_id"] for d in db.c.aggregate([{"$sample": {"size": 500}}])) == list(range(50))
    assert list(db.c.aggregate([{"$sample": {"size": 0}}])) == []
    assert len(list(db.c.aggregate([{"$match": {"_id": {"$lt": 5}}}, {"$sample": {"size": 3.7}}, {"$project": {"a": 0}}]))) == 3
    for spec, code in [(5, 28745), ({"size": "x"}, 28746), ({"size": -1}, 28747), ({"size": 1, "n": 1}, 28748),
                       ({}, 28749), ({"size": True}, 28746)]:
        with pytest.raises(OperationFailure) as info:
            list(db.c.aggregate([{"$sample": spec}]))
        assert info.value.code == code


def test_thresholds_override(shop):
    log = _log(shop.name)
    strict = review(shop, sample=200, query_log=log, thresholds={"array_docs_min": 26, "lookup_share": 0.5})
    got = {(f.kind, f.where) for f in strict.findings}
    # revisions (25 sub-documents, no growth evidence) and the join (30 of ~170 reads) fall under the bar
    assert got == EXPECTED - {("unbounded-array", "products.revisions"), ("lookup-overuse", "orders")}
    with pytest.raises(ReviewInputError, match="unknown threshold"):
        review(shop, thresholds={"nope": 1})
    with pytest.raises(ReviewInputError, match="must be a number"):
        review(shop, thresholds={"lookup_share": "x"})


def test_profiler_is_read_when_no_log_is_given():
    # system.profile documents in the manual's "Database Profiler Output" shape; the review's own reads
    # (comment "labkit.review") are not counted as workload
    db = labkit.fresh_db("t_review_profiler", client=EmbeddedClient())
    _coll(db, "customers", [{"_id": i, "email": f"{i}@x"} for i in range(10)])
    prof = [{"op": "query", "ns": f"{db.name}.customers", "ts": T0 + dt.timedelta(seconds=i),
             "command": {"find": "customers", "filter": {"email": {"$regex": "^a", "$options": "i"}}}}
            for i in range(5)]
    own = [{"op": "command", "ns": f"{db.name}.customers", "ts": T0,
            "command": {"aggregate": "customers", "pipeline": [{"$match": {"email": Regex("x", "i")}}],
                        "comment": "labkit.review"}}]
    if "system.profile" in db.list_collection_names():  # the engine's own profiler (if any) may hold entries
        pytest.skip("system.profile already exists")
    db["system.profile"].insert_many(prof + own)
    r = review(db)
    assert r.query_data == "profiler system.profile (6 entries)"
    (f,) = [f for f in r.findings if f.kind == "case-insensitive-regex"]
    assert (f.where, f.evidence["queries"]) == ("customers.email", 5)


def test_sparse_ttl_hidden_indexes_are_not_redundant():
    db = labkit.fresh_db("t_review_special", client=EmbeddedClient())
    _coll(db, "c", [{"_id": i, "a": i, "b": i, "t": T0, "h": i} for i in range(10)])
    db.c.create_index("a", sparse=True)
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.create_index("t", expireAfterSeconds=60)
    db.c.create_index([("t", 1), ("b", 1)])
    db.c.create_index("h", hidden=True)
    db.c.create_index([("h", 1), ("b", 1)])
    db.c.create_index("b")
    db.c.create_index([("b", 1), ("a", 1)], sparse=True)  # a longer sparse index does not hold every document
    assert [f for f in review(db).findings if f.kind == "redundant-index"] == []


def test_more_non_problems():
    # one-to-many read together (a user and their 40 orders) is separate on purpose; $addToSet into a short
    # roles array is not growth; a big document whose hot reads take the whole document is not "bloated"
    # (manual: "Avoid Separating Data that is Accessed Together" is about one-to-one / one-to-few)
    db = labkit.fresh_db("t_review_nonproblems", client=EmbeddedClient())
    _coll(db, "users", [{"_id": f"u{i}", "roles": ["a", "b"]} for i in range(20)])
    _coll(db, "orders", [{"_id": i, "userId": f"u{i % 20}"} for i in range(800)])
    _coll(db, "pages", [{"_id": i, "title": "t", "html": "x" * 20_000} for i in range(10)])
    log = []
    t = T0
    for i in range(20):
        t += dt.timedelta(milliseconds=100)
        log.append({"op": "query", "ns": f"{db.name}.users", "ts": t,
                    "command": {"find": "users", "filter": {"_id": f"u{i}"}}, "nreturned": 1})
        log.append({"op": "query", "ns": f"{db.name}.orders", "ts": t,
                    "command": {"find": "orders", "filter": {"userId": f"u{i}"}}, "nreturned": 40})
        log.append({"op": "update", "ns": f"{db.name}.users", "ts": t,
                    "command": {"q": {"_id": f"u{i}"}, "u": {"$addToSet": {"roles": "c"}}}})
        log.append({"op": "query", "ns": f"{db.name}.pages", "ts": t, "command": {"find": "pages", "filter": {"_id": i % 10}}})
        if i % 5 == 0:
            log.append({"op": "query", "ns": f"{db.name}.pages", "ts": t,
                        "command": {"find": "pages", "filter": {}, "projection": {"title": 1}}})
    assert review(db, query_log=log).findings == []
    assert ("separate-data", "users") in review(db, query_log=log, thresholds={"together_fanout": 100}).kinds()
    # the same co-reads one-to-one are flagged
    one = [dict(e, nreturned=1) if e["ns"].endswith(".orders") else e for e in log]
    db2 = labkit.fresh_db("t_review_oneone", client=EmbeddedClient())
    _coll(db2, "users", [{"_id": f"u{i}"} for i in range(20)])
    _coll(db2, "orders", [{"_id": i, "userId": f"u{i}"} for i in range(20)])
    one = [dict(e, ns=e["ns"].replace(db.name, db2.name)) for e in one if ".pages" not in e["ns"]]
    assert {(f.kind, f.where) for f in review(db2, query_log=one).findings} == {("separate-data", "users")}


def test_lookup_of_one_to_few_collections_is_separate_data():
    # lesson 36's context pipeline: users joined to three one-to-one collections by _id on every request
    db = labkit.fresh_db("t_review_lookup36", client=EmbeddedClient())
    _coll(db, "users", [{"_id": f"u{i}"} for i in range(20)])
    for c in ("user_profiles", "user_addresses", "user_settings"):
        _coll(db, c, [{"_id": i, "userId": f"u{i}", c: 1} for i in range(20)])
    _coll(db, "events", [{"_id": i, "userId": f"u{i % 20}"} for i in range(600)])  # one-to-many
    pipeline = [{"$match": {"_id": "u1"}}] + [
        {"$lookup": {"from": c, "localField": "_id", "foreignField": "userId", "as": c}}
        for c in ("user_profiles", "user_addresses", "user_settings", "events")]
    log = [{"op": "command", "ns": f"{db.name}.users", "ts": T0 + dt.timedelta(seconds=i),
            "command": {"aggregate": "users", "pipeline": pipeline}} for i in range(10)]
    r = review(db, query_log=log)
    assert {(f.kind, f.where) for f in r.findings} == {("separate-data", "users"), ("lookup-overuse", "users")}
    (joins,) = [f for f in r.findings if f.kind == "lookup-overuse"]  # one finding per collection
    assert joins.evidence["joins"] == {"events": 10, "user_addresses": 10, "user_profiles": 10, "user_settings": 10}
    f = next(f for f in r.findings if f.kind == "separate-data")
    assert f.evidence["read together with"] == ["user_addresses", "user_profiles", "user_settings"]
    assert f.evidence["keys"]["user_profiles"] == "users._id = user_profiles.userId"


def test_cli_bad_log_content_and_json_array_log(shop, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"op": "query"}\n{"op": \n')
    assert main(["review", "--db", shop.name, "--query-log", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "Traceback" not in err
    array = tmp_path / "log.json"  # a JSON array (e.g. mongoexport --jsonArray) is read too
    array.write_text(json_util.dumps(_log(shop.name)))
    assert main(["review", "--db", shop.name, "--sample", "200", "--query-log", str(array), "--format", "json"]) == 0
    assert {(f["kind"], f["where"]) for f in json.loads(capsys.readouterr().out)["findings"]} == EXPECTED


def test_same_findings_on_a_server_through_the_wire(monkeypatch):
    """Issue 16: the review works on a real server; here pymongo talks to the served engine over TCP, so every
    read the review makes ($sample, $collStats, $indexStats, listCollections, the profiler) goes through the
    wire protocol. The findings are the embedded ones, exactly."""
    from labkit.engine.transport.wire import serve_in_thread

    with serve_in_thread() as server:
        monkeypatch.setenv("MONGODB_URI", server.uri)
        monkeypatch.setenv("LABKIT_DB_PREFIX", "t_wire_")
        db = labkit.fresh_db("review_shop")
        _shop(db)
        served = review(db, sample=200, query_log=_log(db.name))
        local = labkit.fresh_db("t_review_local", client=EmbeddedClient())
        _shop(local)
        embedded = review(local, sample=200, query_log=_log(local.name))
        assert {(f.kind, f.where) for f in served.findings} == {(f.kind, f.where) for f in embedded.findings}
        assert {(f.kind, f.where) for f in served.findings} == EXPECTED
        labkit.reset_db("review_shop", client=db.client)
