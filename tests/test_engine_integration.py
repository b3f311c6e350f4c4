"""Engine behaviours the lessons depend on, found while building them (each compared with MongoDB's docs)."""
import labkit
from labkit.engine import EmbeddedClient


def _db():
    db = labkit.fresh_db("integration", client=EmbeddedClient())
    db.users.insert_one({"_id": "user:112", "name": "Sam", "roles": [{"title": "admin", "canEdit": True}]})
    db.posts.insert_many([{"_id": f"post:{i}", "authorId": "user:112", "title": f"t{i}", "n": i} for i in range(50)])
    db.posts.create_index({"authorId": 1, "n": -1})
    return db


def test_inclusion_projection_keeps_stored_field_order():
    """The server returns fields in stored order with _id first (manual: "Project Fields to Return")."""
    db = _db()
    assert list(db.users.find_one({}, {"roles": 1, "name": 1})) == ["_id", "name", "roles"]
    assert list(db.users.find_one({}, {"roles": 0})) == ["_id", "name"]


def test_create_index_accepts_a_mapping():
    """pymongo accepts {"a": 1, "b": -1} as well as a list of pairs; the server names it a_1_b_-1."""
    db = _db()
    assert db.users.create_index({"name": 1, "roles.title": -1}) == "name_1_roles.title_-1"


def test_concise_lookup_pipeline_is_bounded_by_the_foreign_index():
    """localField/foreignField + pipeline: the equality match is planned with the sub-pipeline (manual:
    "Correlated Subqueries Using Concise Syntax"), so $sort + $limit read only the page through the index."""
    db = _db()
    pipeline = [{"$match": {"_id": "user:112"}},
                {"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": "posts",
                             "pipeline": [{"$sort": {"n": -1}}, {"$limit": 5}, {"$project": {"n": 1}}]}}]
    [doc] = db.users.aggregate(pipeline)
    assert [p["n"] for p in doc["posts"]] == [49, 48, 47, 46, 45]
    plan = db.command("explain", {"aggregate": "users", "pipeline": pipeline, "cursor": {}}, verbosity="executionStats")
    lookup = next(s for s in plan["stages"] if "$lookup" in s)
    assert lookup["totalDocsExamined"] <= 5 and lookup["totalKeysExamined"] <= 6
    assert lookup["indexesUsed"] == ["authorId_1_n_-1"]
