"""``$``-prefixed field names written by updates (MongoDB 5.0+), in-process and over the wire (pymongo against
``serve_in_thread()``).

Facts: manual "Field Names with Periods and Dollar Signs" / "Dollar-Prefixed Field Names" (its housing, inventory
and school examples: an update pipeline with ``$replaceWith`` + ``$setField`` + ``$literal`` writes a top-level
``$``-prefixed field; an operator update may change ``address.$street`` but not ``$rooms``; an upsert that
inserts is validated as an insert); jstests/core/field_name_validation.js (pipeline-style updates may write
``$``-prefixed and reserved ``$ref``/``$id``/``$db`` names at any level, replacement-style updates nested ones
only, an ``_id`` object never); src/mongo/db/update/storage_validation.cpp (with FCV >= 5.0 only a top-level
``$``-prefixed field an update writes is checked: DollarPrefixedFieldName 52, "... is not allowed in the context
of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.")."""
from __future__ import annotations

import pytest
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure, WriteError

from both_paths import client, server  # noqa: F401 - the fixtures: every test below runs both ways

HINT = "is not allowed in the context of an update's replacement document. Consider using an aggregation " \
       "pipeline with $replaceWith."


@pytest.fixture
def db(client):
    """The test database, emptied, on ``client`` (both_paths: in-process, and pymongo on the served engine)."""
    client.drop_database("dd")
    return client.dd


def _set_field(name, value, input_="$$ROOT"):
    return {"$replaceWith": {"$setField": {"field": {"$literal": name}, "input": input_, "value": value}}}


def test_set_field_in_an_update_pipeline_writes_a_top_level_dollar_field(db):
    # manual, "Document Replacing Updates" / "Updates Using Aggregation Pipelines": the housing document
    h = db.housing
    h.insert_one({"_id": "E123", "address": {"$number": 123, "$street": "Elm Road"}, "$rooms": {"br": 2, "bath": 1}})
    assert h.update_one({"_id": "E123"}, {"$set": {"address.$street": "Elm Ave"}}).modified_count == 1
    with pytest.raises(WriteError) as e:  # an operator update may not write the top-level $rooms
        h.update_one({"_id": "E123"}, {"$set": {"$rooms": {"br": 3}}})
    assert e.value.code == 52 and "The dollar ($) prefixed field '$rooms' in '$rooms' " + HINT in str(e.value)
    assert h.update_one({"_id": "E123"}, [_set_field("$rooms", {"br": 3, "bath": 1})]).modified_count == 1
    assert h.update_one({"_id": "E123"}, [_set_field("$garden", True)]).modified_count == 1
    assert h.find_one() == {"_id": "E123", "address": {"$number": 123, "$street": "Elm Ave"},
                            "$rooms": {"br": 3, "bath": 1}, "$garden": True}
    # read back with $getField (manual "Document Modifying Updates")
    got = h.find_one({"$expr": {"$eq": [{"$getField": {"$literal": "$rooms"}}, {"br": 3, "bath": 1}]}})
    assert got["_id"] == "E123"
    assert h.count_documents({"address.$street": "Elm Ave"}) == 1


def test_pipeline_updates_may_write_dollar_names_at_every_level(db):
    # field_name_validation.js, "Pipeline-style updates are allowed to contain $-prefixed fields"
    c = db.p
    c.insert_one({"_id": 1, "a": {"b": 1}})
    c.update_one({"_id": 1}, [{"$replaceWith": {"$literal": {"$a": 1}}}])
    assert c.find_one({"_id": 1}) == {"_id": 1, "$a": 1}
    c.update_one({"_id": 1}, [{"$replaceWith": {"$literal": {"a": {"$a": 1}, "$ref": 1}}}])
    assert c.find_one({"_id": 1}) == {"_id": 1, "a": {"$a": 1}, "$ref": 1}
    c.update_one({"_id": 2}, [{"$replaceWith": {"$literal": {"$db": 1}}}], upsert=True)
    assert c.find_one({"_id": 2}) == {"_id": 2, "$db": 1}
    got = c.find_one_and_update({"_id": 3}, [{"$replaceWith": {"$literal": {"_id": 3, "$in": 2, "x": 3}}}],
                                upsert=True, return_document=ReturnDocument.AFTER)
    assert got == {"_id": 3, "$in": 2, "x": 3}
    # an _id object still may not hold a $-prefixed name
    with pytest.raises(OperationFailure) as e:
        c.update_one({"k": 9}, [{"$replaceWith": {"$literal": {"_id": {"$x": 1}}}}], upsert=True)
    assert e.value.code == 52


def test_operator_updates_check_only_top_level_dollar_fields(db):
    # storage_validation.cpp: only the top-level field an update writes is checked
    c = db.o
    c.insert_one({"_id": 1, "$bin": 200, "pricing": {"sale": True, "$discount": 60}})
    c.update_one({"_id": 1}, {"$inc": {"pricing.$discount": 10}})  # manual, "Document Modifying Updates"
    c.update_one({"_id": 1}, {"$set": {"x": {"$y": 1}, "pricing.$new": 1}})  # nested: stored
    c.update_one({"_id": 1}, {"$push": {"arr": {"$z": 1}}})
    assert c.find_one({"_id": 1}) == {"_id": 1, "$bin": 200, "pricing": {"sale": True, "$discount": 70, "$new": 1},
                                      "x": {"$y": 1}, "arr": [{"$z": 1}]}
    for update in ({"$inc": {"$bin": 1}}, {"$set": {"$new": 1}}, {"$set": {"$new.a": 1}},
                   {"$rename": {"x": "$x"}}):
        with pytest.raises(WriteError) as e:
            c.update_one({"_id": 1}, update)
        assert e.value.code == 52 and HINT in str(e.value), update
    assert c.find_one({"_id": 1})["$bin"] == 200  # nothing changed
    c.update_one({"_id": 1}, {"$unset": {"$bin": 1}})  # removing one is allowed
    assert "$bin" not in c.find_one({"_id": 1})
    # an upsert that inserts is validated as an insert (manual, the expenses example)
    c.update_one({"date": "2021-07-07"}, {"$set": {"phone": 25.17, "$hotel": 320.10}}, upsert=True)
    assert c.find_one({"date": "2021-07-07"}, {"_id": 0}) == {"date": "2021-07-07", "phone": 25.17,
                                                             "$hotel": 320.10}
    c.insert_one({"date": "2021-07-08", "phone": 1.0})
    with pytest.raises(WriteError) as e:  # the same update matching an existing document fails
        c.update_one({"date": "2021-07-08"}, {"$set": {"phone": 25.17, "$hotel": 320.10}}, upsert=True)
    assert e.value.code == 52
    assert c.find_one({"date": "2021-07-08"}, {"_id": 0}) == {"date": "2021-07-08", "phone": 1.0}
    # writing the value a top-level $ field already has is a no-op, not a write (modifier_node.cpp)
    assert c.update_one({"date": "2021-07-07"}, {"$set": {"$hotel": 320.10}}).modified_count == 0
    # findAndModify: field_name_validation.js
    with pytest.raises(OperationFailure) as e:
        c.find_one_and_update({"_id": 1}, {"$set": {"$invalid": 1}})
    assert e.value.code == 52


def test_replacements_keep_refusing_top_level_dollar_fields(db):
    # field_name_validation.js: nested $-prefixed names are stored by a replacement, top-level ones are not
    c = db.r
    c.insert_one({"_id": 1})
    c.replace_one({"_id": 1}, {"a": {"$c": 1}, "foo": {"bar": {"$d": 4}}})
    assert c.find_one({"_id": 1}) == {"_id": 1, "a": {"$c": 1}, "foo": {"bar": {"$d": 4}}}
    with pytest.raises(WriteError) as e:  # pymongo only refuses a first key with $; the server the rest
        c.replace_one({"_id": 1}, {"a": 1, "$rooms": 1})
    assert e.value.code == 52 and "The dollar ($) prefixed field '$rooms' in '$rooms' " + HINT in str(e.value)
    with pytest.raises(ValueError):  # pymongo, before sending: "replacement can not include $ operators"
        c.replace_one({"_id": 1}, {"$rooms": 1})
    # the update command with a $-first document is an operator update: an unknown modifier (FailedToParse 9),
    # reserved names too (field_name_validation.js)
    for u in ({"$c": 1}, {"$ref": 1}):
        out = db.command({"update": "r", "updates": [{"q": {"_id": 1}, "u": u}]})
        assert out["writeErrors"][0]["code"] == 9, u
    assert c.find_one({"_id": 1}) == {"_id": 1, "a": {"$c": 1}, "foo": {"bar": {"$d": 4}}}
