"""Update operators, positional operators, arrayFilters, upserts and ``_id`` rules as a MongoDB 8.0 server
applies them (labkit/engine/update/update_ops.py). Each test names where the rule comes from: a page of the manual
("Update Operators" and its per-operator pages, "Upsert behavior", "Updates with Aggregation Pipeline") or a
test file of the server under ``jstests/core/write/update/``. Facts and expected results come from there; the
code is this project's own."""
from __future__ import annotations

import datetime
import re

import pytest
from bson import Decimal128, Int64, ObjectId, Timestamp
from pymongo import ReturnDocument, UpdateOne, UpdateMany, ReplaceOne
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

from labkit.engine import EmbeddedClient

from store_checks import consistent


@pytest.fixture()
def c():
    return EmbeddedClient().upd.c


def one(c, doc: dict, update, query=None, **kw):
    """Insert ``doc``, run one update_one, return (result, stored document)."""
    c.insert_one(doc)
    res = c.update_one(query if query is not None else {"_id": doc["_id"]}, update, **kw)
    return res, c.find_one({"_id": doc["_id"]})


def error_of(fn) -> tuple[int, str]:
    with pytest.raises((WriteError, OperationFailure)) as ei:
        fn()
    return ei.value.code, (ei.value.details or {}).get("errmsg", str(ei.value))


# ------------------------------------------------------------------------------------------ field operators
def test_set_in_place_and_new_fields_in_path_order(c):
    # manual "$set": existing fields are replaced in place; new fields are appended. The server adds new
    # fields in field-name order (its update tree keeps children sorted), whatever order the update names them.
    res, d = one(c, {"_id": 1, "b": 1, "z": 0}, {"$set": {"z": 5, "y": 1, "a": 2, "b": 1}})
    assert list(d) == ["_id", "b", "z", "a", "y"] and d == {"_id": 1, "b": 1, "z": 5, "a": 2, "y": 1}
    assert res.modified_count == 1


def test_noop_updates_are_matched_not_modified(c):
    # manual "$set" / update command output: nModified counts documents actually changed; a $set to the
    # same value (same type) is a no-op. jstests update_modifier_pop.js asserts nMatched 1, nModified 0.
    c.insert_one({"_id": 1, "a": 1, "b": [1, 2]})
    for upd in ({"$set": {"a": 1}}, {"$set": {}}, {"$unset": {"zz": 1}}, {"$pull": {"b": 9}},
                {"$addToSet": {"b": 2}}, {"$min": {"a": 5}}, {"$max": {"a": 0}}, {"$inc": {"a": 0}},
                {"$pop": {"nope": 1}}, {"$rename": {"nope": "x"}}):
        r = c.update_one({"_id": 1}, upd)
        assert (r.matched_count, r.modified_count) == (1, 0), upd
    # 1 -> 1.0 changes the BSON type: a modification
    assert c.update_one({"_id": 1}, {"$set": {"a": 1.0}}).modified_count == 1
    assert type(c.find_one()["a"]) is float


def test_set_empty_operator_document_is_allowed(c):
    # manual "$set" (Behavior): starting in MongoDB 5.0 an empty operand ({$set: {}}) is not an error.
    res, d = one(c, {"_id": 1, "a": 1}, {"$set": {}, "$inc": {"a": 1}})
    assert d == {"_id": 1, "a": 2}


def test_inc_types_and_errors(c):
    # manual "$inc": creates a missing field; int + double -> double; NumberLong kept; a non-numeric field
    # fails with TypeMismatch (14) and the server's message; a non-numeric argument fails to parse (14).
    _, d = one(c, {"_id": 1, "i": 1, "f": 1.5, "l": Int64(5), "dec": Decimal128("1.1")},
               {"$inc": {"i": 2, "f": 1, "l": 1, "new": 3, "dec": 1, "n.x": 1}})
    assert d["i"] == 3 and type(d["i"]) is int
    assert d["f"] == 2.5 and d["new"] == 3 and d["n"] == {"x": 1}
    assert type(d["l"]) is Int64 and d["l"] == 6
    assert d["dec"] == Decimal128("2.1")
    c.insert_one({"_id": 2, "s": "x"})
    code, msg = error_of(lambda: c.update_one({"_id": 2}, {"$inc": {"s": 1}}))
    assert code == 14
    assert msg == ("Cannot apply $inc to a value of non-numeric type. {_id: 2} has the field 's' of "
                   "non-numeric type string")
    code, msg = error_of(lambda: c.update_one({"_id": 2}, {"$inc": {"s": "1"}}))
    assert code == 14 and msg == 'Cannot increment with non-numeric argument: {s: "1"}'
    code, _ = error_of(lambda: c.update_one({"_id": 2}, {"$inc": {"s": True}}))
    assert code == 14


def test_mul_on_missing_field_is_zero_of_the_argument_type(c):
    # manual "$mul": "If the field does not exist in a document, $mul creates the field and sets the value
    # to zero of the same numeric type as the multiplier." (jstests update_mul_examples.js)
    _, d = one(c, {"_id": 1, "p": 2}, {"$mul": {"p": 2.5, "q": 3, "r": 1.5, "s": Int64(2)}})
    assert d == {"_id": 1, "p": 5.0, "q": 0, "r": 0.0, "s": 0}
    assert type(d["q"]) is int and type(d["r"]) is float and type(d["s"]) is Int64


def test_min_max_compare_in_bson_order(c):
    # manual "$min"/"$max" and "Comparison/Sort Order": values of different types compare by BSON type order
    # (null < numbers < string < object < array < ... < bool < date). $min {c: true} when c is null keeps
    # null (null sorts first); $max replaces it. jstests update_min_max_examples.js for numbers and dates.
    _, d = one(c, {"_id": 1, "c": None, "n": 2, "s": "b"}, {"$min": {"c": True, "n": 1, "s": 5}})
    assert d == {"_id": 1, "c": None, "n": 1, "s": 5}
    _, d = one(c, {"_id": 2, "c": None, "n": 2}, {"$max": {"c": True, "n": 1, "new": "x"}})
    assert d == {"_id": 2, "c": True, "n": 2, "new": "x"}
    t = datetime.datetime(2021, 1, 1, 12, 0, 0, 757000)
    _, d = one(c, {"_id": 3, "a": t}, {"$max": {"a": t + datetime.timedelta(milliseconds=2)}})
    assert d["a"] == t + datetime.timedelta(milliseconds=2)


def test_unset_and_rename(c):
    # manual "$unset": removes the field; an array element becomes null (jstests update_arrayFilters.js);
    # a path through a scalar is a no-op. manual "$rename": renames, moving the value to the new name
    # (a new field is appended); source == target fails (2).
    _, d = one(c, {"_id": 1, "a": 1, "b": {"c": 1, "d": 2}, "e": [1, 2]},
               {"$unset": {"a": "", "b.c": 1, "e.1": 1, "z.x.y": 1}})
    assert d == {"_id": 1, "b": {"d": 2}, "e": [1, None]}
    _, d = one(c, {"_id": 2, "nickname": "x", "z": 1}, {"$rename": {"nickname": "alias", "z": "w.v"}})
    assert d == {"_id": 2, "alias": "x", "w": {"v": 1}}
    code, _ = error_of(lambda: c.update_one({"_id": 2}, {"$rename": {"alias": "alias"}}))
    assert code == 2
    code, msg = error_of(lambda: c.update_one({"_id": 2}, {"$rename": {"alias": 1}}))
    assert code == 2 and msg.startswith("The 'to' field for $rename must be a string")


def test_rename_takes_effect_at_its_destination(c):
    # src/mongo/db/update/rename_node.cpp: $rename is a node at the *destination* path of the update tree,
    # so a renamed field that is new is appended in destination order among the other new fields.
    _, d = one(c, {"_id": 1, "a": 1}, {"$rename": {"a": "z"}, "$set": {"m": 1}})
    assert list(d.items()) == [("_id", 1), ("m", 1), ("z", 1)]


def test_rename_through_arrays_refused(c):
    # manual "$rename": "$rename does not work on embedded documents in arrays"; the server's message names
    # the _id and the array field (src/mongo/db/update/rename_node.cpp). A renamed array value is fine.
    c.insert_one({"_id": 1, "a": [{"b": 1}], "c": {"d": 1}, "e": [1]})
    assert error_of(lambda: c.update_one({}, {"$rename": {"a.0.b": "x"}})) == (
        2, "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has an array field called 'a'")
    assert error_of(lambda: c.update_one({}, {"$rename": {"c.d": "e.x"}})) == (
        2, "The destination field cannot be an array element, 'e.x' in doc with _id: 1 has an array field called 'e'")
    c.update_one({}, {"$rename": {"e": "z", "c.d": "f.g"}})
    assert c.find_one() == {"_id": 1, "a": [{"b": 1}], "c": {}, "f": {"g": 1}, "z": [1]}


def test_rename_dynamic_paths_refused(c):
    # jstests update_arrayFilters.js: "The source field for $rename may not be dynamic: a.$[]" and
    # "The destination field for $rename may not be dynamic: b.$[]" (BadValue).
    c.insert_one({"_id": 0, "a": [0], "b": [1]})
    assert error_of(lambda: c.update_one({"_id": 0}, {"$rename": {"a.$[]": "b"}})) == (
        2, "The source field for $rename may not be dynamic: a.$[]")
    assert error_of(lambda: c.update_one({"_id": 0}, {"$rename": {"a": "b.$[]"}})) == (
        2, "The destination field for $rename may not be dynamic: b.$[]")
    c.update_one({"_id": 0}, {"$rename": {"a": "b"}})
    assert c.find_one() == {"_id": 0, "b": [0]}


def test_current_date(c):
    # manual "$currentDate": true or {$type: "date"} sets a date, {$type: "timestamp"} a timestamp; other
    # values are refused (2).
    _, d = one(c, {"_id": 1}, {"$currentDate": {"d": True, "e": {"$type": "date"}, "t": {"$type": "timestamp"}}})
    assert isinstance(d["d"], datetime.datetime) and isinstance(d["e"], datetime.datetime)
    assert isinstance(d["t"], Timestamp)
    code, _ = error_of(lambda: c.update_one({"_id": 1}, {"$currentDate": {"d": {"$type": "string"}}}))
    assert code == 2
    code, _ = error_of(lambda: c.update_one({"_id": 1}, {"$currentDate": {"d": 1}}))
    assert code == 2


def test_bit(c):
    # manual "$bit": and / or / xor on integers; jstests update_arrayFilters.js ($bit with a.$[i]).
    _, d = one(c, {"_id": 1, "a": 13, "b": [0, 2]}, {"$bit": {"a": {"and": 10}, "b.$[i]": {"or": 10}}},
               array_filters=[{"i": 0}])
    assert d == {"_id": 1, "a": 8, "b": [10, 2]}
    code, _ = error_of(lambda: c.update_one({"_id": 1}, {"$bit": {"a": {"not": 1}}}))
    assert code == 2


def test_creating_fields_through_scalars_is_path_not_viable(c):
    # jstests update_arrayFilters.js: "Cannot create field 'b' in element {a: [ { b: 0.0 } ]}" (28);
    # the manual's "$set" through a null or a scalar likewise fails with PathNotViable.
    c.insert_one({"_id": 1, "a": None, "s": 5, "arr": [{"b": 0}]})
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"a.b": 1}})) == (
        28, "Cannot create field 'b' in element {a: null}")
    assert error_of(lambda: c.update_one({"_id": 1}, {"$inc": {"s.t.u": 1}})) == (
        28, "Cannot create field 't' in element {s: 5}")
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"arr.b": 1}})) == (
        28, "Cannot create field 'b' in element {arr: [ { b: 0 } ]}")
    # numeric path components index arrays and pad with nulls
    c.update_one({"_id": 1}, {"$set": {"arr.3": 7, "obj.0": 1}})
    assert c.find_one()["arr"] == [{"b": 0}, None, None, 7] and c.find_one()["obj"] == {"0": 1}


def test_conflicting_paths(c):
    # update_arrayFilters.js / manual "Update Operators": two operations on the same path or on a path and
    # its prefix fail with ConflictingUpdateOperators (40), naming the later path and the conflict point.
    c.insert_one({"_id": 1, "a": {"b": 1}})
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"a": 1}, "$inc": {"a.b": 1}})) == (
        40, "Updating the path 'a.b' would create a conflict at 'a'")
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"a.b": 1}, "$unset": {"a": 1}})) == (
        40, "Updating the path 'a' would create a conflict at 'a'")
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"x": 1}, "$rename": {"y": "x"}})) == (
        40, "Updating the path 'x' would create a conflict at 'x'")
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"a.$[i]": 0, "a.0": 0}},
                                         array_filters=[{"i": 0}])) == (
        40, "Updating the path 'a.0' would create a conflict at 'a'")
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"a.$[i]": 0, "a.$": 0}},
                                         array_filters=[{"i": 0}])) == (
        40, "Updating the path 'a.$' would create a conflict at 'a'")
    assert c.find_one() == {"_id": 1, "a": {"b": 1}}


def test_update_document_errors(c):
    # Unknown modifier: FailedToParse (9); an operator given a non-document: 9; empty paths: 56;
    # a $-prefixed name inside a written value is stored (storage_validation.cpp checks only the top level since
    # 5.0; tests/test_engine_dollar_fields.py has the rest).
    c.insert_one({"_id": 1})
    code, msg = error_of(lambda: c.update_one({"_id": 1}, {"$foo": {"a": 1}}))
    assert code == 9 and msg.startswith("Unknown modifier: $foo.")
    code, msg = error_of(lambda: c.update_one({"_id": 1}, {"$set": 1}))
    assert code == 9 and msg.startswith("Modifiers operate on fields but we found type int instead.")
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"": 1}})) == (56, "An empty update path is not valid.")
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"a..b": 1}}))[0] == 56
    assert c.find_one() == {"_id": 1}
    c.update_one({"_id": 1}, {"$set": {"a": {"$b": 1}}})
    assert c.find_one() == {"_id": 1, "a": {"$b": 1}}


# ------------------------------------------------------------------------------------------ array operators
def test_push_modifiers(c):
    # manual "$push": $each, then $position, then $sort, then $slice (the order the server applies them).
    _, d = one(c, {"_id": 1, "s": [3, 1]}, {"$push": {"s": {"$each": [5, 0], "$sort": 1, "$slice": 3}}})
    assert d["s"] == [0, 1, 3]
    _, d = one(c, {"_id": 2, "s": [1, 2]}, {"$push": {"s": {"$each": [9], "$position": 0}}})
    assert d["s"] == [9, 1, 2]
    _, d = one(c, {"_id": 3, "s": [1, 2, 3]}, {"$push": {"s": {"$each": [8], "$position": -1}}})
    assert d["s"] == [1, 2, 8, 3]
    _, d = one(c, {"_id": 4, "q": [{"x": 2}, {"x": 1}]},
               {"$push": {"q": {"$each": [{"x": 3}], "$sort": {"x": -1}, "$slice": -2}}})
    assert d["q"] == [{"x": 2}, {"x": 1}]
    _, d = one(c, {"_id": 5}, {"$push": {"n": 1, "m": {"$each": []}}})
    assert d == {"_id": 5, "m": [], "n": [1]}
    c.insert_one({"_id": 6, "s": 1})
    assert error_of(lambda: c.update_one({"_id": 6}, {"$push": {"s": 2}})) == (
        2, "The field 's' must be an array but is of type int in document {_id: 6}")
    assert error_of(lambda: c.update_one({"_id": 6}, {"$push": {"t": {"$each": 1}}}))[0] == 2
    assert error_of(lambda: c.update_one({"_id": 6}, {"$push": {"t": {"$each": [1], "$slice": "x"}}}))[0] == 2
    assert error_of(lambda: c.update_one({"_id": 6}, {"$push": {"t": {"$each": [1], "$bad": 1}}}))[0] == 2


def test_add_to_set(c):
    # manual "$addToSet": adds only values not already present (BSON equality: 1 and 1.0 are equal,
    # documents compare field by field in order); $each adds each; a non-array field fails (2).
    _, d = one(c, {"_id": 1, "t": [1, {"a": 1, "b": 2}]},
               {"$addToSet": {"t": {"$each": [1.0, {"b": 2, "a": 1}, {"a": 1, "b": 2}, 3, 3]}}})
    assert d["t"] == [1, {"a": 1, "b": 2}, {"b": 2, "a": 1}, 3]
    c.insert_one({"_id": 2, "t": "x"})
    code, msg = error_of(lambda: c.update_one({"_id": 2}, {"$addToSet": {"t": 1}}))
    assert code == 2 and msg.startswith("Cannot apply $addToSet to non-array field.")


def test_pop(c):
    # jstests update_modifier_pop.js: only 1 / -1 parse (9); no-op when missing; fails through a scalar or
    # an array; fails on a non-array; pops from the end / the start.
    c.insert_one({"_id": 0})
    for bad in (0, -2, 2.5, 1.1, {"b": 1}):
        assert error_of(lambda: c.update_one({"_id": 0}, {"$pop": {"a.b": bad}}))[0] == 9
    c.delete_many({})
    c.insert_one({"_id": 0, "a": {"b": 1}})
    assert error_of(lambda: c.update_one({"_id": 0}, {"$pop": {"a.b.c": 1}}))[0] == 28
    c.replace_one({"_id": 0}, {"a": {"b": [1, 2]}})
    assert error_of(lambda: c.update_one({"_id": 0}, {"$pop": {"a.b.c": 1}}))[0] == 28
    c.replace_one({"_id": 0}, {"a": {"b": {"c": 1}}})
    assert error_of(lambda: c.update_one({"_id": 0}, {"$pop": {"a.b": 1}}))[0] == 14
    c.replace_one({"_id": 0}, {"a": {"b": [1, 2, 3]}})
    assert c.update_one({"_id": 0}, {"$pop": {"a.b": 1}}).modified_count == 1
    c.update_one({"_id": 0}, {"$pop": {"a.b": -1}})
    assert c.find_one() == {"_id": 0, "a": {"b": [2]}}
    c.replace_one({"_id": 0}, {"a": [{"b": 0}, {"b": 1}]})
    r = c.update_one({"_id": 0}, {"$pop": {"a.2.b": 1}})
    assert (r.matched_count, r.modified_count) == (1, 0)


def test_pull_forms(c):
    # manual "$pull": a condition on scalars ({$gte: 6}), a value (BSON equality), a document condition
    # on embedded documents (matched as a query against each element), $elemMatch-free nested conditions;
    # a non-array fails (2). $pullAll removes every listed value.
    _, d = one(c, {"_id": 1, "v": [1, 6, 7, 2, 6.0], "f": ["apples", "pears"], "r": [{"s": 8, "i": "A"},
                                                                                     {"s": 7, "i": "B"}]},
               {"$pull": {"v": {"$gte": 6}, "f": {"$in": ["apples", "kiwi"]}, "r": {"s": 8, "i": "A"}}})
    assert d == {"_id": 1, "v": [1, 2], "f": ["pears"], "r": [{"s": 7, "i": "B"}]}
    _, d = one(c, {"_id": 2, "v": [1, 1.0, 2, [1], {"a": 1}]}, {"$pull": {"v": 1}})
    assert d["v"] == [2, [1], {"a": 1}]
    _, d = one(c, {"_id": 3, "v": [{"a": 1, "b": 2}, {"a": 2}]}, {"$pull": {"v": {"a": 1}}})
    assert d["v"] == [{"a": 2}]  # a query on the element: extra fields do not matter
    _, d = one(c, {"_id": 4, "s": [0, 5, 5, 1, 0]}, {"$pullAll": {"s": [0, 5]}})
    assert d["s"] == [1]
    c.insert_one({"_id": 5, "s": 1})
    assert error_of(lambda: c.update_one({"_id": 5}, {"$pull": {"s": 1}})) == (
        2, "Cannot apply $pull to a non-array value")
    assert error_of(lambda: c.update_one({"_id": 5}, {"$pullAll": {"s": 1}}))[0] == 2


# ------------------------------------------------------------------------------------------ positional operators
def test_positional_dollar_uses_the_matched_element(c):
    # manual "$ (update)": update_one({"a": 2}, {"$set": {"a.$": 5}}) sets the matched element;
    # jstests update_min_max_examples.js ("y.a": 6 with "$max": {"y.$.a": 7}) and update_modifier_pop.js.
    _, d = one(c, {"_id": 1, "a": [1, 2, 3]}, {"$set": {"a.$": 5}}, query={"a": 2})
    assert d["a"] == [1, 5, 3]
    _, d = one(c, {"_id": 7, "y": [{"a": 2}, {"a": 6}, {"a": [9, 1, 1]}]}, {"$max": {"y.$.a": 7}},
               query={"_id": 7, "y.a": 6})
    assert d["y"] == [{"a": 2}, {"a": 7}, {"a": [9, 1, 1]}]
    _, d = one(c, {"_id": 8, "g": [{"k": 1, "q": 1}, {"k": 2, "q": 1}]}, {"$inc": {"g.$.q": 4}},
               query={"g": {"$elemMatch": {"k": 2}}})
    assert d["g"] == [{"k": 1, "q": 1}, {"k": 2, "q": 5}]


def test_positional_dollar_without_a_match_fails(c):
    # manual "$ (update)": the positional operator needs the array field in the query; otherwise error 2
    # "The positional operator did not find the match needed from the query." and nothing changes.
    c.insert_one({"_id": 1, "a": [1, 2], "b": {"c": 1}})
    for upd in ({"$set": {"a.$": 5}}, {"$inc": {"b.$": 1}}, {"$push": {"a.$": 1}}):
        assert error_of(lambda: c.update_one({}, upd)) == (
            2, "The positional operator did not find the match needed from the query.")
    assert c.find_one() == {"_id": 1, "a": [1, 2], "b": {"c": 1}}
    assert error_of(lambda: c.update_one({"a": 1}, {"$set": {"a.$.x.$": 1}}))[0] == 2  # too many positionals


def test_all_positional_and_array_filters(c):
    # jstests update_arrayFilters.js (the "Examples" section): $[] updates every element, $[<id>] those its
    # filter matches; nested $[i].c.$[j]; logical array filters; multi updates.
    _, d = one(c, {"_id": 0, "a": [0, 1, 0, 1]}, {"$set": {"a.$[i]": 2}}, array_filters=[{"i": 0}])
    assert d["a"] == [2, 1, 2, 1]
    c.update_one({"_id": 0}, {"$set": {"a.$[]": 3}})
    assert c.find_one({"_id": 0})["a"] == [3, 3, 3, 3]
    _, d = one(c, {"_id": 1, "a": [{"b": 0}, {"b": 1}]}, {"$set": {"a.$[i].b": 2}}, array_filters=[{"i.b": 0}])
    assert d["a"] == [{"b": 2}, {"b": 1}]
    _, d = one(c, {"_id": 2, "a": [[0, 1], [0, 1]]}, {"$set": {"a.$[].$[j]": 2}}, array_filters=[{"j": 0}])
    assert d["a"] == [[2, 1], [2, 1]]
    _, d = one(c, {"_id": 3, "a": [{"b": 0, "c": [{"d": 0}, {"d": 1}]}, {"b": 1, "c": [{"d": 0}, {"d": 1}]}]},
               {"$set": {"a.$[i].c.$[j].d": 2}}, array_filters=[{"i.b": 0}, {"j.d": 0}])
    assert d["a"] == [{"b": 0, "c": [{"d": 2}, {"d": 1}]}, {"b": 1, "c": [{"d": 0}, {"d": 1}]}]
    _, d = one(c, {"_id": 4, "a": [0, 1, 3]}, {"$set": {"a.$[i]": 2}}, array_filters=[{"$or": [{"i": 0}, {"i": 3}]}])
    assert d["a"] == [2, 1, 2]
    c.delete_many({})
    c.insert_many([{"_id": 0, "a": [0, 1, 0, 1]}, {"_id": 1, "a": [0, 2, 0, 2]}])
    r = c.update_many({}, {"$set": {"a.$[i]": 3}}, array_filters=[{"i": 0}])
    assert r.modified_count == 2 and [x["a"] for x in c.find()] == [[3, 1, 3, 1], [3, 2, 3, 2]]


def test_array_filters_with_every_operator(c):
    # jstests update_arrayFilters.js, "Tests for individual update modifiers".
    cases = [
        ({"a": [0, 1, 0, 1]}, {"$unset": {"a.$[i]": True}}, [{"i": 0}], [None, 1, None, 1]),
        ({"a": [0, 1, 0, 1]}, {"$inc": {"a.$[i]": 1}}, [{"i": 1}], [0, 2, 0, 2]),
        ({"a": [0, 2, 0, 2]}, {"$mul": {"a.$[i]": 3}}, [{"i": 2}], [0, 6, 0, 6]),
        ({"a": [[0], [1]]}, {"$addToSet": {"a.$[i]": 2}}, [{"i": 0}], [[0, 2], [1]]),
        ({"a": [[0, 1], [1, 2]]}, {"$pop": {"a.$[i]": 1}}, [{"i": 0}], [[0], [1, 2]]),
        ({"a": [[0, 1, 2, 3], [1, 2, 3, 4]]}, {"$pullAll": {"a.$[i]": [0, 2]}}, [{"i": 0}], [[1, 3], [1, 2, 3, 4]]),
        ({"a": [[0, 1], [1, 2]]}, {"$pull": {"a.$[i]": 1}}, [{"i": 2}], [[0, 1], [2]]),
        ({"a": [[0, 1], [2, 3]]}, {"$push": {"a.$[i]": 4}}, [{"i": 0}], [[0, 1, 4], [2, 3]]),
        ({"a": [{"b": 0, "c": 1}, {"b": 0, "c": -1}, {"b": 1, "c": 1}]}, {"$min": {"a.$[i].c": 0}},
         [{"i.b": 0}], [{"b": 0, "c": 0}, {"b": 0, "c": -1}, {"b": 1, "c": 1}]),
    ]
    for n, (doc, upd, af, expected) in enumerate(cases):
        c.insert_one({"_id": n, **doc})
        c.update_one({"_id": n}, upd, array_filters=af)
        assert c.find_one({"_id": n})["a"] == expected, upd


def test_array_filter_errors(c):
    # jstests update_arrayFilters.js, "Error cases" and parse errors.
    c.insert_one({"_id": 0, "a": [0], "b": [{"j": 0}]})
    assert error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 0}})) == (
        2, "No array filter found for identifier 'i' in path 'a.$[i]'")
    assert error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 5}}, array_filters=[{"i": 0}, {"j": 0}])) == (
        9, "The array filter for identifier 'j' was not used in the update { $set: { a.$[i]: 5 } }")
    code, msg = error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 5}}, array_filters=[{"i": 0, "j": 0}]))
    assert code == 9 and "Expected a single top-level field name" in msg
    code, msg = error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 5, "a.$[j]": 6}},
                                              array_filters=[{"i": 0}, {"j": 0}, {"i": 1}]))
    assert code == 9 and "Found multiple array filters with the same top-level field name" in msg
    code, msg = error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 5}}, array_filters=[{"$alwaysTrue": 1}]))
    assert code == 9 and "Cannot use an expression without a top-level field name in arrayFilters" in msg
    code, msg = error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[I]": 1}}, array_filters=[{"I": 0}]))
    assert code == 2 and msg.startswith("Error parsing array filter") and msg.endswith(
        "The top-level field name must be an alphanumeric string beginning with a lowercase letter, found 'I'")
    code, msg = error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[$i]": 1}}, array_filters=[{"$i": 0}]))
    assert code == 2 and "unknown top level operator: $i" in msg
    assert error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i.j]": 1, "b.$[i]": 1}},
                                         array_filters=[{"i.j": 0}])) == (
        28, "Cannot create field '$[i' in element {a: [ 0 ]}")
    assert error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 1}}, array_filters=["bad"]))[0] == 14
    assert error_of(lambda: c.update_one({"_id": 0}, [{"$set": {"x": 1}}], array_filters=[{"i": 0}]))[0] == 72
    assert c.find_one() == {"_id": 0, "a": [0], "b": [{"j": 0}]}
    # parse errors come first: also when no document matches
    assert error_of(lambda: c.update_one({"_id": 99}, {"$set": {"a.$[i]": 0}}))[0] == 2


def test_array_update_conflicts_at_runtime(c):
    # jstests update_arrayFilters.js, "Nested array update conflict detection".
    c.insert_one({"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 0}]}, {"x": 1, "b": [{"y": 0, "c": 0}]}]})
    assert error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].c": 2}},
                                         array_filters=[{"i.x": 0}, {"j.x": 0}, {"k.y": 0}])) == (
        40, "Update created a conflict at 'a.0.b.$[k].c'")
    c.update_one({"_id": 0}, {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].c": 2}},
                 array_filters=[{"i.x": 0}, {"j.x": 1}, {"k.y": 0}])
    assert c.find_one()["a"] == [{"x": 0, "b": [{"y": 0, "c": 1}]}, {"x": 1, "b": [{"y": 0, "c": 2}]}]
    c.replace_one({"_id": 0}, {"a": [{"x": 0, "b": [{"y": 0, "c": 0}]}, {"x": 1, "b": [{"y": 0, "c": 0}, {"y": 1, "c": 0}]}]})
    assert error_of(lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[m].c": 2}},
                                         array_filters=[{"i.x": 0}, {"j.x": 0}, {"k.y": 0}, {"m.y": 0}])) == (
        40, "Update created a conflict at 'a.0.b.0.c'")


def test_array_filters_follow_the_collation(c):
    # jstests update_arrayFilters.js, "arrayFilters respect operation collation".
    c.insert_one({"_id": 0, "a": ["foo", "FOO"]})
    c.update_one({"_id": 0}, {"$set": {"a.$[i]": "bar"}}, array_filters=[{"i": "foo"}],
                 collation={"locale": "en_US", "strength": 2})
    assert c.find_one() == {"_id": 0, "a": ["bar", "bar"]}


def test_array_filters_in_find_one_and_update_and_bulk(c):
    # jstests update_arrayFilters.js: arrayFilters on findAndModify, updateOne/updateMany in bulkWrite.
    c.insert_many([{"_id": 0, "a": [0, 1]}, {"_id": 1, "a": [0, 0]}])
    d = c.find_one_and_update({"_id": 0}, {"$set": {"a.$[i]": 5}}, array_filters=[{"i": 0}],
                              return_document=ReturnDocument.AFTER)
    assert d == {"_id": 0, "a": [5, 1]}
    r = c.bulk_write([UpdateMany({}, {"$inc": {"a.$[i]": 1}}, array_filters=[{"i": 0}]),
                      UpdateOne({"_id": 0}, {"$set": {"a.$[j]": 9}}, array_filters=[{"j": 5}])])
    assert r.matched_count == 3 and r.modified_count == 2
    assert list(c.find()) == [{"_id": 0, "a": [9, 1]}, {"_id": 1, "a": [1, 1]}]
    with pytest.raises(BulkWriteError) as ei:
        c.bulk_write([UpdateOne({"_id": 0}, {"$set": {"a.$[i]": 0}})])
    assert ei.value.details["writeErrors"][0]["code"] == 2
    d = c.find_one_and_update({"a": 1}, {"$set": {"a.$": 7}}, return_document=ReturnDocument.AFTER)
    assert d == {"_id": 0, "a": [9, 7]}


# ------------------------------------------------------------------------------------------ _id and replacement
def test_id_is_immutable(c):
    # manual "Field Order" / "_id Field": _id cannot be changed: 66 ImmutableField.
    c.insert_one({"_id": 1, "a": 1})
    assert error_of(lambda: c.update_one({"_id": 1}, {"$set": {"_id": 2}})) == (
        66, "Performing an update on the path '_id' would modify the immutable field '_id'")
    assert error_of(lambda: c.update_one({"_id": 1}, {"$unset": {"_id": 1}}))[0] == 66
    code, msg = error_of(lambda: c.replace_one({"_id": 1}, {"_id": 2, "a": 1}))
    assert code == 66 and msg == "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2"
    assert c.update_one({"_id": 1}, {"$set": {"_id": 1}}).modified_count == 0  # the same value: allowed
    assert c.find_one() == {"_id": 1, "a": 1}


def test_replace_keeps_the_matched_id_first(c):
    # manual "db.collection.replaceOne()": the replacement may omit _id; the stored document keeps the
    # matched _id, first (fixDocumentForInsert / the replacement executor put _id first).
    c.insert_many([{"_id": 1, "v": 1}, {"_id": 5, "v": 2}])
    r = c.replace_one({"_id": {"$gt": 1}}, {"w": 2})
    assert (r.matched_count, r.modified_count) == (1, 1)
    assert c.find_one({"_id": 5}) == {"_id": 5, "w": 2}
    c.replace_one({"_id": 1}, {"z": 0, "_id": 1})
    assert list(c.find_one({"_id": 1})) == ["_id", "z"]
    assert c.replace_one({"_id": 1}, {"z": 0}).modified_count == 0


def test_inserted_documents_keep_id_first_and_reject_array_ids(c):
    # ops/insert.cpp fixDocumentForInsert: _id is moved to the front; array and regex _id are BadValue (2).
    c.insert_one({"a": 1, "_id": 7})
    c.insert_one({"b": 1})
    c.insert_many([{"c": 1, "_id": 8}])
    assert [list(d)[0] for d in c.find()] == ["_id", "_id", "_id"]
    assert list(c.find_one({"_id": 7})) == ["_id", "a"]
    assert error_of(lambda: c.insert_one({"_id": [1, 2]})) == (2, "The '_id' value cannot be of type array")
    assert error_of(lambda: c.insert_one({"_id": re.compile("x")}))[0] == 2
    assert c.count_documents({}) == 3


def test_document_ids_compare_field_order(c):
    # manual "Comparison/Sort Order" (Objects): documents compare field by field in order, so {a: 1, b: 2}
    # and {b: 2, a: 1} are different _id values; {a: 1.0, b: 2} equals {a: 1, b: 2} (numbers compare by value).
    c.insert_many([{"_id": {"a": 1, "b": 2}}, {"_id": {"b": 2, "a": 1}}])
    assert c.count_documents({}) == 2
    with pytest.raises(Exception) as ei:
        c.insert_one({"_id": {"a": 1.0, "b": 2}})
    assert getattr(ei.value, "code", None) == 11000
    assert c.delete_one({"_id": {"b": 2, "a": 1}}).deleted_count == 1
    assert list(c.find()) == [{"_id": {"a": 1, "b": 2}}]


def test_null_id_queries(c):
    # manual "$type": {_id: {$type: "null"}} (or 10) finds a null _id; a null _id can be stored, updated
    # and upserted like any other value.
    c.insert_many([{"_id": None, "x": 1}, {"_id": 2, "x": 2}])
    assert list(c.find({"_id": {"$type": "null"}})) == [{"_id": None, "x": 1}]
    assert list(c.find({"_id": {"$type": 10}}, {"_id": 1})) == [{"_id": None}]
    assert c.update_one({"_id": None}, {"$inc": {"x": 1}}).modified_count == 1
    assert c.find_one({"_id": None}) == {"_id": None, "x": 2}


# ------------------------------------------------------------------------------------------ upserts
def upserted(c, query, update, **kw):
    c.delete_many({})
    if isinstance(update, list) or (update and next(iter(update)).startswith("$")):
        c.update_one(query, update, upsert=True, **kw)
    else:
        c.replace_one(query, update, upsert=True)
    return c.find_one()


def test_upsert_seeds_from_the_filter_equalities(c):
    # jstests upsert_fields.js: equality fields (also $eq, one-element $in/$all, through $and and a
    # one-clause $or) seed the new document; ranges, $ne, $nor, $exists, regexes do not.
    assert upserted(c, {"x": 1}, {"$set": {"a": 1}})["x"] == 1
    assert upserted(c, {"x": {"$eq": 1}}, {"$set": {"a": 1}})["x"] == 1
    assert upserted(c, {"x": {"$in": [1]}}, {"$set": {"a": 1}})["x"] == 1
    assert upserted(c, {"x": {"$all": [1]}}, {"$set": {"a": 1}})["x"] == 1
    assert upserted(c, {"$and": [{"x": 1}]}, {"$set": {"a": 1}})["x"] == 1
    assert upserted(c, {"$or": [{"x": 1}]}, {"$set": {"a": 1}})["x"] == 1
    assert upserted(c, {"x.x": 1}, {"$set": {"a": 1}})["x"] == {"x": 1}
    for q in ({"x": {"$gt": 1}}, {"x": {"$ne": 1}}, {"x": {"$in": [1, 2]}}, {"x": {"$exists": True}},
              {"$or": [{"x": 1}, {"x": 2}]}, {"$nor": [{"x": 1}]}, {"x": re.compile("abc")}):
        assert "x" not in upserted(c, q, {"$set": {"a": 1}}), q
    assert upserted(c, {"x": {"$eq": re.compile("abc")}}, {"$set": {"a": 1}})["x"] == re.compile("abc")
    # replacement-style upserts take only _id from the filter
    assert "x" not in upserted(c, {"x": 1}, {"a": 1})
    assert upserted(c, {"_id": 1, "x": [1, {"x": 1}], "x.x": 1}, {})["_id"] == 1


def test_upsert_field_order_and_set_on_insert(c):
    # path_support.h: the equality matches are kept in a sorted map, so the seeded fields come in path order
    # (after _id); the update's new fields follow. manual "$setOnInsert": applied only when inserting.
    d = upserted(c, {"k": 1, "b": 2, "_id": 3}, {"$set": {"q": 1}, "$setOnInsert": {"c": 0}})
    assert list(d.items()) == [("_id", 3), ("b", 2), ("k", 1), ("c", 0), ("q", 1)]
    r = c.update_one({"_id": 3}, {"$setOnInsert": {"z": 1}}, upsert=True)
    assert (r.matched_count, r.modified_count, r.upserted_id) == (1, 0, None)
    assert "z" not in c.find_one()
    d = upserted(c, {"_id": 0, "a": [0]}, {"$setOnInsert": {"a.$[i]": 1}}, array_filters=[{"i": 0}])
    assert d == {"_id": 0, "a": [1]}


def test_upsert_ids(c):
    # jstests upsert_fields.js: _id from the filter (also {_id: null}), from the update ($set/$setOnInsert/
    # the replacement), else generated; array _ids fail; conflicting equalities fail (54).
    r = c.update_one({"_id": None}, {"$set": {"q": 1}}, upsert=True)
    assert r.upserted_id is None and c.find_one({"_id": None}) == {"_id": None, "q": 1}
    assert upserted(c, {}, {"$set": {"_id": 1}})["_id"] == 1
    assert upserted(c, {}, {"$setOnInsert": {"_id": 1}})["_id"] == 1
    assert upserted(c, {}, {"_id": 1})["_id"] == 1
    assert isinstance(upserted(c, {"_id": {"$gt": 1}}, {"$set": {"a": 1}})["_id"], ObjectId)
    assert upserted(c, {"_id.x": 1, "_id.y": 2}, {"$set": {"a": 1}})["_id"] == {"x": 1, "y": 2}
    for q, u in (({"_id": [1, 2]}, {"$set": {"a": 1}}), ({}, {"$set": {"_id": [1, 2]}}),
                 ({"$and": [{"_id": 1}, {"_id": 2}]}, {"$set": {"a": 1}}), ({"x": 1, "x.x": 1}, {"$set": {"a": 1}}),
                 ({"x": {"$all": [1, 2]}}, {"$set": {"a": 1}})):
        c.delete_many({})
        with pytest.raises(WriteError):
            c.update_one(q, u, upsert=True)
        assert c.count_documents({}) == 0


def test_upsert_with_positional_needs_a_match(c):
    # manual "$ (update)": "Do not use the positional operator $ with upsert operations" - the new document
    # has no matched element: error 2.
    code, _ = error_of(lambda: c.update_one({"a": 2}, {"$set": {"a.$": 5}}, upsert=True))
    assert code == 2 and c.count_documents({}) == 0


# ------------------------------------------------------------------------------------------ pipelines
def test_update_pipelines(c):
    # manual "Updates with Aggregation Pipeline": $set/$addFields, $unset, $project, $replaceRoot/
    # $replaceWith; the _id is kept when the output drops it and may not change (66); other stages refused.
    c.insert_one({"_id": 1, "a": 1, "b": {"c": 2}})
    c.update_one({"_id": 1}, [{"$set": {"s": {"$add": ["$a", 1]}}}, {"$unset": "a"}])
    assert c.find_one() == {"_id": 1, "b": {"c": 2}, "s": 2}
    c.update_one({"_id": 1}, [{"$replaceRoot": {"newRoot": "$b"}}])
    assert c.find_one() == {"_id": 1, "c": 2}
    c.update_one({"_id": 1}, [{"$replaceWith": {"z": 1, "_id": 1}}])
    assert list(c.find_one().items()) == [("_id", 1), ("z", 1)]
    c.update_one({"_id": 1}, [{"$project": {"_id": 0, "z": 1}}])
    assert c.find_one() == {"_id": 1, "z": 1}
    assert error_of(lambda: c.update_one({"_id": 1}, [{"$replaceWith": {"_id": 2}}]))[0] == 66
    assert error_of(lambda: c.update_one({"_id": 1}, [{"$match": {}}]))[0] == 72
    assert c.find_one() == {"_id": 1, "z": 1}
    c.update_one({"x": 5}, [{"$set": {"y": "$x"}}], upsert=True)
    assert c.find_one({"x": 5}, {"_id": 0}) == {"x": 5, "y": 5}


# ------------------------------------------------------------------------------------------ indexes
def test_indexes_follow_positional_and_array_updates(c):
    # Every write keeps every index consistent (an engine invariant; the server's indexes are updated in
    # the same write): positional, array filters, $push/$pull on a multikey index, upserts, a failed update.
    c.create_index("a")
    c.create_index([("t.k", 1)])
    c.insert_many([{"_id": i, "a": [i, i + 1], "t": [{"k": i}, {"k": i * 2}]} for i in range(5)])
    c.update_many({"a": 2}, {"$set": {"a.$": 20}})
    c.update_many({}, {"$inc": {"t.$[e].k": 100}}, array_filters=[{"e.k": {"$gte": 4}}])
    c.update_one({"_id": 1}, {"$push": {"a": {"$each": [7, 8], "$slice": -2}}, "$pull": {"t": {"k": 1}}})
    c.update_one({"a": 99}, {"$set": {"t.0.k": 5}}, upsert=True)
    with pytest.raises(WriteError):
        c.update_many({}, {"$inc": {"a": 1}})
    consistent(c)
    assert [d["_id"] for d in c.find({"a": 20}).hint("a_1")] == [2]
    assert sorted(d["_id"] for d in c.find({"t.k": {"$gte": 100}}).hint("t.k_1")) == [2, 3, 4]
    assert c.find_one({"_id": 1}) == {"_id": 1, "a": [7, 8], "t": [{"k": 2}]}


# ------------------------------------------------------------------------------------------ let
def test_let_on_writes(c):
    # manual "db.collection.updateOne()" / "updateMany()" / "findOneAndUpdate()" / "deleteMany()" /
    # "bulkWrite()" (let, new in 5.0): $$name variables for $expr in the filter and in pipeline updates;
    # names checked as user variable names (16870).
    c.insert_many([{"_id": i, "a": i} for i in range(5)])
    assert c.update_many({"$expr": {"$gte": ["$a", "$$lo"]}}, {"$inc": {"n": 1}}, let={"lo": 3}).modified_count == 2
    c.update_one({"_id": 0}, [{"$set": {"v": "$$x"}}], let={"x": 7})
    assert c.find_one({"_id": 0}) == {"_id": 0, "a": 0, "v": 7}
    d = c.find_one_and_update({"$expr": {"$eq": ["$a", "$$k"]}}, {"$set": {"w": 1}}, let={"k": 2},
                              return_document=ReturnDocument.AFTER)
    assert d == {"_id": 2, "a": 2, "w": 1}
    r = c.bulk_write([UpdateOne({"$expr": {"$eq": ["$a", "$$k"]}}, {"$set": {"b": 1}})], let={"k": 1})
    assert r.modified_count == 1 and c.find_one({"_id": 1}) == {"_id": 1, "a": 1, "b": 1}
    assert c.delete_many({"$expr": {"$eq": ["$a", "$$k"]}}, let={"k": 4}).deleted_count == 1
    with pytest.raises(OperationFailure) as ei:
        c.update_one({}, {"$set": {"a": 1}}, let={"Bad": 1})
    assert ei.value.code == 16870


def test_repeated_update_shapes_check_their_arguments(c):
    # The engine reuses the parse of an update with the same operators and paths (update_ops._SHAPES); the
    # server's argument checks still apply to every statement (manual "$inc", "$rename", "$push").
    c.insert_one({"_id": 1, "a": 1, "b": 2})
    c.update_one({"_id": 1}, {"$inc": {"a": 1}, "$push": {"l": 1}})
    assert error_of(lambda: c.update_one({"_id": 1}, {"$inc": {"a": "x"}, "$push": {"l": 1}}))[0] == 14
    assert error_of(lambda: c.update_one({"_id": 1}, {"$inc": {"a": 1}, "$push": {"l": {"$each": 1}}}))[0] == 2
    c.update_one({"_id": 1}, {"$rename": {"b": "c"}})
    c.update_one({"_id": 1}, {"$rename": {"c": "d"}})
    assert error_of(lambda: c.update_one({"_id": 1}, {"$rename": {"d": "d"}}))[0] == 2
    assert c.find_one() == {"_id": 1, "a": 2, "l": [1], "d": 2}
