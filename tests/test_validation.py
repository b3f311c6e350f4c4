"""Tests for labkit.validation: MongoDB's $jsonSchema dialect, validators and errInfo.

Each test names the MongoDB manual example (or server source rule) it reproduces.
"""
from __future__ import annotations

import datetime
import logging
import re

import pytest
from bson import SON
from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
from pymongo.errors import OperationFailure, WriteError

from labkit import validation as v

from manual_examples import INVENTORY, INVENTORY_SCHEMA, STUDENTS_SCHEMA

# ---------------------------------------------------------------------------------------
# Manual examples used throughout
# ---------------------------------------------------------------------------------------

STUDENTS = {"$jsonSchema": STUDENTS_SCHEMA}


def _alice(gpa):
    return {"_id": ObjectId("62bb3f4b2b8c1d0f0b5f1a2c"), "name": "Alice", "year": 2019,
            "major": "History", "gpa": gpa, "address": {"city": "NYC", "street": "33rd Street"}}


CONTACTS = {"$jsonSchema": {
    "bsonType": "object",
    "required": ["phone", "name"],
    "properties": {
        "phone": {"bsonType": "string", "description": "phone must be a string and is required"},
        "name": {"bsonType": "string", "description": "name must be a string and is required"},
    },
}}
ANNE = {"_id": 1, "name": "Anne", "phone": "+1 555 123 456", "city": "London", "status": "Complete"}
IVAN = {"_id": 2, "name": "Ivan", "city": "Vancouver"}


def _matches(schema, doc):
    v.check_schema(schema)
    return v.schema_matches(schema, doc)


PREFIX = "Parsing of collection validator failed :: caused by :: "


def _code(validator):
    """(code, message) of the validator's parse error, without the server's context prefix."""
    with pytest.raises(OperationFailure) as info:
        v.check_validator(validator)
    message = info.value.details["errmsg"]
    assert message.startswith(PREFIX)
    return info.value.code, message[len(PREFIX):]


# ---------------------------------------------------------------------------------------
# check_validator: parse-time errors
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("keyword", ["$ref", "$schema", "default", "definitions", "format", "id"])
def test_unsupported_keywords_are_rejected(keyword):
    """Manual, "$jsonSchema" > Omissions: MongoDB does not support $ref, $schema, default,
    definitions, format and id; the server answers FailedToParse (9)."""
    code, message = _code({"$jsonSchema": {"properties": {"a": {keyword: "x"}}}})
    assert code == 9
    assert message == f"$jsonSchema keyword '{keyword}' is not currently supported"


def test_unknown_keyword_is_rejected():
    """Server json_schema_parser.cpp: any keyword outside the dialect fails to parse."""
    code, message = _code({"$jsonSchema": {"bsonType": "object", "minimumLength": 3}})
    assert (code, message) == (9, "Unknown $jsonSchema keyword: minimumLength")


def test_type_integer_is_not_supported():
    """Manual, "$jsonSchema" > Omissions: "The integer type. You must use the BSON type int
    or long with the bsonType keyword"."""
    for spec in ("integer", ["string", "integer"]):
        code, message = _code({"$jsonSchema": {"properties": {"n": {"type": spec}}}})
        assert (code, message) == (9, "$jsonSchema type 'integer' is not currently supported.")


def test_type_accepts_json_aliases_and_number_only():
    """Manual, "$jsonSchema" > Available Keywords: type takes JSON types (number, not bool);
    bsonType takes BSON aliases."""
    v.check_validator({"$jsonSchema": {"properties": {"n": {"type": "number"},
                                                      "b": {"type": "boolean"}}}})
    assert _code({"$jsonSchema": {"properties": {"b": {"type": "bool"}}}}) == (
        2, "Unknown type name alias: bool")
    assert _code({"$jsonSchema": {"properties": {"b": {"bsonType": "boolean"}}}}) == (
        2, "Unknown type name alias: boolean")
    assert _code({"$jsonSchema": {"properties": {"b": {"bsonType": []}}}})[0] == 9


def test_type_and_bson_type_are_exclusive():
    """Server json_schema_parser.cpp: "Cannot specify both $jsonSchema keywords 'type' and
    'bsonType'"."""
    assert _code({"$jsonSchema": {"type": "object", "bsonType": "object"}}) == (
        9, "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")


def test_exclusive_bounds_are_draft4_booleans():
    """Manual, "$jsonSchema" > Available Keywords: exclusiveMinimum/exclusiveMaximum are
    booleans and need minimum/maximum."""
    assert _code({"$jsonSchema": {"properties": {"n": {"minimum": 1, "exclusiveMinimum": 1}}}}) == (
        14, "$jsonSchema keyword 'exclusiveMinimum' must be a boolean")
    assert _code({"$jsonSchema": {"properties": {"n": {"exclusiveMaximum": True}}}}) == (
        9, "$jsonSchema keyword 'maximum' must be a present if exclusiveMaximum is present")


def test_required_must_be_non_empty_unique_strings():
    """Server json_schema_parser.cpp parseRequired: array of unique strings, non-empty."""
    assert _code({"$jsonSchema": {"required": "name"}})[0] == 14
    assert _code({"$jsonSchema": {"required": []}}) == (
        9, "$jsonSchema keyword 'required' cannot be an empty array")
    assert _code({"$jsonSchema": {"required": ["a", "a"]}}) == (
        9, "$jsonSchema keyword 'required' array cannot contain duplicate values")


def test_enum_must_be_non_empty_without_duplicates():
    """Server json_schema_parser.cpp parseEnum: enum cannot be empty nor repeat a value."""
    assert _code({"$jsonSchema": {"properties": {"s": {"enum": []}}}}) == (
        9, "$jsonSchema keyword 'enum' cannot be an empty array")
    assert _code({"$jsonSchema": {"properties": {"s": {"enum": [1, 1.0]}}}})[0] == 9


def test_logical_keywords_need_non_empty_arrays_of_schemas():
    """Server json_schema_parser.cpp parseLogicalKeyword: allOf/anyOf/oneOf need a non-empty
    array of objects (BadValue when empty)."""
    assert _code({"$jsonSchema": {"anyOf": []}}) == (
        2, "$jsonSchema keyword 'anyOf' must be a non-empty array")
    assert _code({"$jsonSchema": {"oneOf": [1]}})[0] == 14
    assert _code({"$jsonSchema": {"not": []}})[0] == 14


def test_title_and_description_are_accepted_strings():
    """Manual, "Specify JSON Schema Validation": title and description document the rules
    and are ignored by matching; they must be strings."""
    v.check_validator(STUDENTS)
    assert _code({"$jsonSchema": {"title": 5}}) == (
        14, "$jsonSchema keyword 'title' must be of type string")


def test_length_keywords_need_non_negative_integers():
    """Server MatchExpressionParser::parseIntegerElementToNonNegativeLong for minLength,
    maxItems, minProperties..."""
    assert _code({"$jsonSchema": {"properties": {"s": {"minLength": -1}}}})[0] == 9
    assert _code({"$jsonSchema": {"properties": {"s": {"maxItems": 1.5}}}})[0] == 9
    v.check_validator({"$jsonSchema": {"properties": {"s": {"maxLength": 2.0}}}})


def test_nested_schemas_are_checked():
    """Manual, "$jsonSchema": items, additionalProperties, dependencies... hold schemas, and
    an error deep inside is still reported."""
    deep = {"$jsonSchema": {"properties": {"a": {"items": {"properties": {"b": {
        "anyOf": [{"bsonType": "string"}, {"format": "email"}]}}}}}}}
    assert _code(deep)[0] == 9
    v.check_validator({"$jsonSchema": {"dependencies": {"title": "ok", "a": ["b"]}}})


def test_validator_top_level_operators():
    """Manual, "Schema Validation" > Restrictions: validators cannot use $where or $text;
    unknown top-level operators and a non-object $jsonSchema fail."""
    assert _code({"$where": "true"}) == (2, "$where is not allowed in this context")
    assert _code({"$jsonschema": {}}) == (2, "unknown top level operator: $jsonschema. If you"
                                             " have a field name that starts with a '$' symbol,"
                                             " consider using $getField or $setField.")
    assert _code({"$jsonSchema": []}) == (14, "$jsonSchema must be an object")
    assert _code({"$or": [{"a": 1}, {"$jsonSchema": {"id": "x"}}]})[0] == 9
    assert _code({"qty": {"$gt": 1, "$foo": 2}}) == (2, "unknown operator: $foo")
    assert _code({"loc": {"$near": [0, 0]}}) == (
        2, "$geoNear, $near, and $nearSphere are not allowed in this context")
    v.check_validator({"$expr": {"$gt": ["$a", "$b"]}, "status": {"$in": ["A", "B"]}})


def test_additional_properties_false_without_id_warns(caplog):
    """Server log 3216000: a top-level additionalProperties: false that forgets _id rejects
    every document (manual, "Specify JSON Schema Validation" > _id and additionalProperties)."""
    schema = {"properties": {"a": {}}, "additionalProperties": False}
    with caplog.at_level(logging.WARNING, logger="labkit.engine"):
        v.check_validator({"$jsonSchema": schema})
    assert "does not allow '_id' field" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="labkit.engine"):  # queries do not warn
        applies = v.make_filter_applies()
        assert not any(applies({"$jsonSchema": schema}, {"_id": i, "a": 1}) for i in range(3))
    assert caplog.text == ""


# ---------------------------------------------------------------------------------------
# Matching: types
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value,name", [
    ("s", "string"), (1, "int"), (2 ** 31, "long"), (Int64(1), "long"), (1.5, "double"),
    (Decimal128("1.1"), "decimal"), (True, "bool"), (datetime.datetime(2024, 1, 1), "date"),
    (ObjectId(), "objectId"), ({}, "object"), (SON([("a", 1)]), "object"), ([], "array"),
    (None, "null"), (b"x", "binData"), (Binary(b"x", 4), "binData"), (Regex("a"), "regex"),
    (re.compile("a"), "regex"), (Timestamp(0, 1), "timestamp"), (MinKey(), "minKey"),
    (MaxKey(), "maxKey"), (Code("f"), "javascript"), (Code("f", {}), "javascriptWithScope"),
])
def test_bson_type_names(value, name):
    """Manual, "BSON Types" table: the string alias of each Python value's BSON type."""
    assert v.bson_type_name(value) == name
    assert _matches({"properties": {"x": {"bsonType": name}}}, {"x": value})


def test_bool_is_not_a_number():
    """Manual, "BSON Types" > "number" alias matches int, long, double, decimal only."""
    schema = {"properties": {"n": {"bsonType": "number"}}}
    for value in (1, Int64(2), 2.5, Decimal128("3")):
        assert _matches(schema, {"n": value})
    assert not _matches(schema, {"n": True})
    assert not _matches({"properties": {"n": {"bsonType": "int"}}}, {"n": False})
    assert not _matches({"properties": {"n": {"type": "number"}}}, {"n": "1"})


def test_json_object_type_excludes_arrays():
    """Manual, "$jsonSchema" > type: JSON "object" is an embedded document, not an array."""
    schema = {"properties": {"o": {"type": "object"}}}
    assert _matches(schema, {"o": {"a": 1}})
    assert not _matches(schema, {"o": [1]})


def test_nullable_field():
    """Manual, "Specify Validation for Polymorphic/Nullable fields": bsonType: ["string",
    "null"] accepts a string or null (and a missing field)."""
    schema = {"properties": {"middle": {"bsonType": ["string", "null"]}}}
    assert _matches(schema, {"middle": None})
    assert _matches(schema, {"middle": "Q"})
    assert _matches(schema, {})
    assert not _matches(schema, {"middle": 1})


def test_top_level_non_object_type_matches_nothing():
    """Server json_schema_parser.cpp: a top-level schema whose type excludes object matches
    no document (MongoDB only stores objects)."""
    assert not _matches({"bsonType": "string"}, {"a": 1})
    info = v.validation_error_info({"$jsonSchema": {"bsonType": "string"}}, {"_id": 1})
    assert info["details"]["reason"] == "expression always evaluates to false"


# ---------------------------------------------------------------------------------------
# Matching: one keyword each
# ---------------------------------------------------------------------------------------

def test_students_example_int_gpa_fails_double_passes():
    """Manual, "Specify JSON Schema Validation" (students): gpa 3 (int) fails the
    bsonType ["double"] rule and gpa 3.0 is accepted."""
    assert not v.document_matches(STUDENTS, _alice(3))
    assert v.document_matches(STUDENTS, _alice(3.0))


def test_required():
    """Manual, "Specify JSON Schema Validation": required fields must be present."""
    doc = _alice(3.0)
    del doc["major"]
    assert not v.document_matches(STUDENTS, doc)


def test_properties_apply_only_when_present():
    """Manual, "$jsonSchema" > properties: a property's schema applies only if the field
    exists (gpa may be absent)."""
    doc = _alice(3.0)
    del doc["gpa"]
    assert v.document_matches(STUDENTS, doc)


def test_minimum_maximum_inclusive_and_exclusive():
    """Manual, "Specify JSON Schema Validation": year in [2017, 3017]; exclusiveMaximum true
    makes the bound strict (Draft 4 boolean form)."""
    assert not v.document_matches(STUDENTS, {**_alice(3.0), "year": 2016})
    assert v.document_matches(STUDENTS, {**_alice(3.0), "year": 3017})
    schema = {"properties": {"n": {"minimum": 0, "maximum": 10, "exclusiveMaximum": True}}}
    assert _matches(schema, {"n": 0}) and not _matches(schema, {"n": 10})
    assert _matches(schema, {"n": Decimal128("9.99")})
    assert _matches(schema, {"n": "eleven"})  # restriction keywords ignore other types


def test_multiple_of():
    """Manual, "$jsonSchema" > multipleOf: the value must be a multiple of the number."""
    schema = {"properties": {"p": {"multipleOf": 0.01}}}
    assert _matches(schema, {"p": 19.99})
    assert not _matches(schema, {"p": 19.999})
    assert _matches({"properties": {"q": {"multipleOf": 5}}}, {"q": Int64(25)})


def test_string_length_counts_code_points():
    """Manual, "$jsonSchema" > minLength/maxLength: lengths of strings (in characters)."""
    schema = {"properties": {"s": {"minLength": 2, "maxLength": 3}}}
    assert _matches(schema, {"s": "héé"})
    assert not _matches(schema, {"s": "h"})
    assert not _matches(schema, {"s": "abcd"})


def test_pattern():
    """Manual, "$jsonSchema" > pattern: a regular expression the string must match."""
    schema = {"properties": {"email": {"bsonType": "string", "pattern": "@mongodb\\.com$"}}}
    assert _matches(schema, {"email": "a@mongodb.com"})
    assert not _matches(schema, {"email": "a@example.com"})


def test_enum():
    """Manual, "Specify Allowed Field Values": enum restricts a field to listed values;
    BSON comparison makes 1 equal 1.0 but not true."""
    schema = {"properties": {"status": {"enum": ["Unknown", "Incomplete"]}}}
    assert _matches(schema, {"status": "Unknown"})
    assert not _matches(schema, {"status": "Done"})
    numeric = {"properties": {"n": {"enum": [1, {"a": 1, "b": 2}]}}}
    assert _matches(numeric, {"n": 1.0}) and _matches(numeric, {"n": Decimal128("1")})
    assert not _matches(numeric, {"n": True})
    assert _matches(numeric, {"n": SON([("b", 2), ("a", 1)])})


def test_additional_properties_false_needs_id():
    """Manual, "Specify JSON Schema Validation" > Tips: with additionalProperties: false the
    _id field must be listed in properties."""
    schema = {"properties": {"_id": {"bsonType": "objectId"}, "name": {"bsonType": "string"}},
              "additionalProperties": False}
    assert _matches(schema, {"_id": ObjectId(), "name": "x"})
    assert not _matches(schema, {"_id": ObjectId(), "name": "x", "extra": 1})


def test_additional_properties_schema():
    """Manual, "$jsonSchema" > additionalProperties: a schema for undeclared fields."""
    schema = {"properties": {"_id": {}}, "additionalProperties": {"bsonType": "string"}}
    assert _matches(schema, {"_id": 1, "a": "x"})
    assert not _matches(schema, {"_id": 1, "a": 1})


def test_pattern_properties():
    """Manual, "$jsonSchema" > patternProperties: schemas for fields whose names match."""
    schema = {"patternProperties": {"^tag_": {"bsonType": "string"}}}
    assert _matches(schema, {"tag_a": "x", "other": 1})
    assert not _matches(schema, {"tag_a": 5})


def test_min_max_properties():
    """Manual, "$jsonSchema" > minProperties/maxProperties: field counts (including _id)."""
    schema = {"minProperties": 2, "maxProperties": 3}
    assert _matches(schema, {"_id": 1, "a": 1})
    assert not _matches(schema, {"_id": 1})
    assert not _matches(schema, {"_id": 1, "a": 1, "b": 1, "c": 1})


def test_items_schema_and_tuple_form():
    """Manual, "$jsonSchema" > items/additionalItems: one schema for every element, or a
    per-position array plus additionalItems."""
    tags = {"properties": {"tags": {"bsonType": "array", "items": {"bsonType": "string"}}}}
    assert _matches(tags, {"tags": ["a", "b"]})
    assert not _matches(tags, {"tags": ["a", 2]})
    pair = {"properties": {"p": {"items": [{"bsonType": "string"}, {"bsonType": "int"}],
                                 "additionalItems": False}}}
    assert _matches(pair, {"p": ["a", 1]})
    assert _matches(pair, {"p": ["a"]})
    assert not _matches(pair, {"p": ["a", 1, 2]})


def test_min_max_unique_items():
    """Manual, "$jsonSchema" > minItems/maxItems/uniqueItems."""
    schema = {"properties": {"a": {"minItems": 1, "maxItems": 2, "uniqueItems": True}}}
    assert _matches(schema, {"a": [1, 2]})
    assert not _matches(schema, {"a": []})
    assert not _matches(schema, {"a": [1, 2, 3]})
    assert not _matches(schema, {"a": [1, 1.0]})


def test_logical_keywords():
    """Manual, "$jsonSchema" > allOf/anyOf/oneOf/not."""
    any_of = {"properties": {"v": {"anyOf": [{"bsonType": "string"}, {"bsonType": "int"}]}}}
    assert _matches(any_of, {"v": 1}) and not _matches(any_of, {"v": 1.5})
    one_of = {"properties": {"v": {"oneOf": [{"bsonType": "number"}, {"bsonType": "int"}]}}}
    assert _matches(one_of, {"v": 1.5}) and not _matches(one_of, {"v": 1})
    all_of = {"properties": {"v": {"allOf": [{"minimum": 1}, {"maximum": 2}]}}}
    assert _matches(all_of, {"v": 2}) and not _matches(all_of, {"v": 3})
    not_ = {"properties": {"v": {"not": {"bsonType": "null"}}}}
    assert _matches(not_, {"v": 0}) and not _matches(not_, {"v": None})


def test_dependencies():
    """Manual, "$jsonSchema" > dependencies: property and schema dependencies."""
    prop = {"dependencies": {"credit_card": ["billing_address"]}}
    assert _matches(prop, {"name": "x"})
    assert not _matches(prop, {"credit_card": 1})
    sch = {"dependencies": {"credit_card": {"required": ["billing_address"]}}}
    assert _matches(sch, {"credit_card": 1, "billing_address": "a"})
    assert not _matches(sch, {"credit_card": 1})


# ---------------------------------------------------------------------------------------
# errInfo
# ---------------------------------------------------------------------------------------

def test_students_errinfo_matches_manual():
    """Manual, "Specify JSON Schema Validation": the exact errInfo of the failed insert."""
    doc = _alice(3)
    assert v.validation_error_info(STUDENTS, doc) == {
        "failingDocumentId": doc["_id"],
        "details": {
            "operatorName": "$jsonSchema",
            "title": "Student Object Validation",
            "schemaRulesNotSatisfied": [{
                "operatorName": "properties",
                "propertiesNotSatisfied": [{
                    "propertyName": "gpa",
                    "description": "'gpa' must be a double if the field exists",
                    "details": [{
                        "operatorName": "bsonType",
                        "specifiedAs": {"bsonType": ["double"]},
                        "reason": "type did not match",
                        "consideredValue": 3,
                        "consideredType": "int",
                    }],
                }],
            }],
        },
    }
    assert list(v.validation_error_info(STUDENTS, doc)["details"]) == [
        "operatorName", "title", "schemaRulesNotSatisfied"]


def test_errinfo_required_lists_missing_properties_sorted():
    """Manual, "View Validation Error Details"-style output: required reports
    missingProperties (server sorts them)."""
    info = v.validation_error_info(CONTACTS, {"_id": 3, "city": "Rome"})
    assert info["details"]["schemaRulesNotSatisfied"] == [{
        "operatorName": "required", "specifiedAs": {"required": ["phone", "name"]},
        "missingProperties": ["name", "phone"]}]


def test_errinfo_minimum_reports_comparison():
    """Server doc_validation_error.cpp: minimum fails with "comparison failed" and the
    considered value; exclusive bounds appear in specifiedAs."""
    details = v.validation_error_info(STUDENTS, {**_alice(3.0), "year": 2016})["details"]
    [year] = details["schemaRulesNotSatisfied"][0]["propertiesNotSatisfied"]
    assert year["details"] == [{"operatorName": "minimum", "specifiedAs": {"minimum": 2017},
                                "reason": "comparison failed", "consideredValue": 2016}]
    excl = {"$jsonSchema": {"properties": {"n": {"minimum": 0, "exclusiveMinimum": True}}}}
    [[entry]] = [p["details"] for p in v.validation_error_info(excl, {"n": 0})["details"][
        "schemaRulesNotSatisfied"][0]["propertiesNotSatisfied"]]
    assert entry["specifiedAs"] == {"minimum": 0, "exclusiveMinimum": True}


def test_errinfo_additional_properties_false():
    """Server doc_validation_error.cpp: additionalProperties: false lists the extra fields."""
    validator = {"$jsonSchema": {"properties": {"_id": {}}, "additionalProperties": False}}
    info = v.validation_error_info(validator, {"_id": 1, "x": 1, "y": 2})
    assert info["details"]["schemaRulesNotSatisfied"] == [{
        "operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": False},
        "additionalProperties": ["x", "y"]}]


def test_errinfo_items_reports_first_failing_index():
    """Server doc_validation_error.cpp: items reports the first failing itemIndex and why."""
    validator = {"$jsonSchema": {"properties": {"tags": {"items": {"bsonType": "string"}}}}}
    info = v.validation_error_info(validator, {"tags": ["a", 2, 3]})
    [prop] = info["details"]["schemaRulesNotSatisfied"][0]["propertiesNotSatisfied"]
    assert prop["details"] == [{
        "operatorName": "items", "reason": "At least one item did not match the sub-schema",
        "itemIndex": 1, "details": [{"operatorName": "bsonType", "specifiedAs": {"bsonType": "string"},
                                     "reason": "type did not match", "consideredValue": 2,
                                     "consideredType": "int"}]}]


def test_errinfo_enum_and_nested_object():
    """Server doc_validation_error.cpp: enum reports "value was not found in enum"; a nested
    object's own rules nest under its property."""
    validator = {"$jsonSchema": {"properties": {
        "status": {"enum": ["A", "B"]},
        "address": {"bsonType": "object", "required": ["city"]}}}}
    rules = v.validation_error_info(validator, {"status": "C", "address": {}})["details"][
        "schemaRulesNotSatisfied"]
    props = rules[0]["propertiesNotSatisfied"]
    assert props[0]["details"][0]["reason"] == "value was not found in enum"
    assert props[1]["details"] == [{"operatorName": "required", "specifiedAs": {"required": ["city"]},
                                    "missingProperties": ["city"]}]


def test_errinfo_one_of_and_not():
    """Server doc_validation_error.cpp: oneOf with several matches reports
    matchingSchemaIndexes; not reports "child expression matched"."""
    validator = {"$jsonSchema": {"properties": {
        "v": {"oneOf": [{"bsonType": "number"}, {"bsonType": "int"}]},
        "w": {"not": {"bsonType": "null"}}}}}
    props = v.validation_error_info(validator, {"v": 1, "w": None})["details"][
        "schemaRulesNotSatisfied"][0]["propertiesNotSatisfied"]
    assert props[0]["details"] == [{"operatorName": "oneOf",
                                    "reason": "more than one subschema matched",
                                    "matchingSchemaIndexes": [0, 1]}]
    assert props[1]["details"] == [{"operatorName": "not", "reason": "child expression matched"}]


def test_errinfo_query_operator_or():
    """Manual, "Specify Validation With Query Operators" (contacts, $or of $type/$regex/$in):
    every clause of a failed $or is listed in clausesNotSatisfied."""
    validator = {"$or": [{"phone": {"$type": "string"}},
                         {"email": {"$regex": "@mongodb\\.com$"}},
                         {"status": {"$in": ["Unknown", "Incomplete"]}}]}
    doc = {"_id": 2, "name": "Amanda", "status": "Updated"}
    assert not v.document_matches(validator, doc)
    details = v.validation_error_info(validator, doc)["details"]
    assert details["operatorName"] == "$or"
    assert [c["index"] for c in details["clausesNotSatisfied"]] == [0, 1, 2]
    assert details["clausesNotSatisfied"][0]["details"] == {
        "operatorName": "$type", "specifiedAs": {"phone": {"$type": "string"}},
        "reason": "field was missing"}
    assert details["clausesNotSatisfied"][2]["details"]["reason"] == "no matching value found in array"


def test_errinfo_expr():
    """Manual, "Specify Validation With Query Operators" (orders, $expr totalWithVAT):
    $expr reports "expression did not match" and expressionResult false."""
    validator = {"$expr": {"$eq": ["$totalWithVAT",
                                   {"$multiply": ["$total", {"$sum": [1, "$VAT"]}]}]}}
    good = {"_id": 1, "total": 100, "VAT": 0.2, "totalWithVAT": 120}
    bad = {"_id": 2, "total": 100, "VAT": 0.2, "totalWithVAT": 122}
    assert v.document_matches(validator, good)
    assert not v.document_matches(validator, bad)
    assert v.validation_error_info(validator, bad)["details"] == {
        "operatorName": "$expr", "specifiedAs": validator,
        "reason": "expression did not match", "expressionResult": False}


def test_errinfo_field_operators_are_separate_and_clauses():
    """Server expression_parser.cpp (parseSub): each operator of {qty: {$gt, $lt}} is its
    own child of the implicit top-level $and, so clause indexes count operators."""
    validator = {"qty": {"$gt": 1, "$lt": 5}, "status": "A"}
    details = v.validation_error_info(validator, {"_id": 1, "qty": 7, "status": "B"})["details"]
    assert details["operatorName"] == "$and"
    assert [c["index"] for c in details["clausesNotSatisfied"]] == [1, 2]
    assert details["clausesNotSatisfied"][0]["details"] == {
        "operatorName": "$lt", "specifiedAs": {"qty": {"$lt": 5}},
        "reason": "comparison failed", "consideredValue": 7}
    assert details["clausesNotSatisfied"][1]["details"]["operatorName"] == "$eq"


def test_errinfo_schema_and_query_combined_is_and():
    """Manual, "Schema Validation": $jsonSchema may be combined with query operators; the
    implicit top-level $and reports which clause failed."""
    validator = {**CONTACTS, "status": {"$in": ["A", "B"]}}
    details = v.validation_error_info(validator, {**ANNE, "status": "A", "phone": 5})["details"]
    assert details["operatorName"] == "$and"
    [clause] = details["clausesNotSatisfied"]
    assert clause["index"] == 0 and clause["details"]["operatorName"] == "$jsonSchema"
    assert v.document_matches(validator, {**ANNE, "status": "A"})
    assert not v.document_matches(validator, ANNE)


# ---------------------------------------------------------------------------------------
# $jsonSchema as a query operator
# ---------------------------------------------------------------------------------------

def test_find_with_jsonschema_and_nor():
    """Manual, "Query for and Modify Valid or Invalid Documents": find(myschema) returns the
    valid inventory items and find({$nor: [myschema]}) the invalid ones."""
    applies = v.make_filter_applies()
    myschema = {"$jsonSchema": INVENTORY_SCHEMA}
    valid = [d["item"] for d in INVENTORY if applies(myschema, d)]
    invalid = [d["item"] for d in INVENTORY if applies({"$nor": [myschema]}, d)]
    assert valid == ["journal", "notebook", "postcard", "apple", "pears"]
    assert invalid == ["paper", "planner"]


def test_jsonschema_inside_and_or_with_other_predicates():
    """Manual, "$jsonSchema" query operator: it combines with other predicates and logical
    operators; non-schema parts are delegated to the base matcher."""
    applies = v.make_filter_applies()
    myschema = {"$jsonSchema": INVENTORY_SCHEMA}
    found = [d["item"] for d in INVENTORY
             if applies({"$and": [myschema, {"$or": [{"status": "A"}, {"qty": {"$gt": 45}}]}]}, d)]
    assert found == ["notebook", "apple", "pears"]
    assert applies({"qty": {"$lt": 30}}, INVENTORY[0])
    assert v.jsonschema_filter_applies(INVENTORY_SCHEMA, INVENTORY[0])


def test_invalid_query_schema_and_top_level_not_raise():
    """Manual, "$not": $not is a field-level operator, so {$not: {$jsonSchema}} is an unknown
    top-level operator; a bad $jsonSchema in a query fails like in a validator."""
    applies = v.make_filter_applies()
    with pytest.raises(OperationFailure) as info:
        applies({"$not": {"$jsonSchema": INVENTORY_SCHEMA}}, INVENTORY[0])
    assert info.value.code == 2
    assert info.value.details["errmsg"] == ("unknown top level operator: $not. If you are trying"
                                            " to negate an entire expression, use $nor.")
    with pytest.raises(OperationFailure):
        applies({"$jsonSchema": {"format": "email"}}, INVENTORY[0])


def test_custom_base_matcher_is_used():
    """Engine seam: make_filter_applies(base) delegates non-$jsonSchema parts to ``base``."""
    calls = []

    def base(flt, doc):
        calls.append(flt)
        return True

    applies = v.make_filter_applies(base)
    assert applies({"$jsonSchema": {"required": ["a"]}, "b": 1}, {"a": 1})
    assert calls == [{"b": 1}]
    assert v.document_matches({"$jsonSchema": {"required": ["a"]}, "b": 2}, {"a": 1}, match=base)


# ---------------------------------------------------------------------------------------
# validation options and write enforcement
# ---------------------------------------------------------------------------------------

def test_validation_options_defaults_and_values():
    """Manual, "Specify Validation Level" / "Choose How to Handle Invalid Documents":
    levels off|strict|moderate (default strict), actions error|warn (default error);
    errorAndLog is "New in version 8.1", so the 8.0 model refuses it unless asked."""
    assert v.validation_options() == {"validator": {}, "validationLevel": "strict",
                                      "validationAction": "error"}
    assert v.validation_options(CONTACTS, "moderate", "warn")["validationAction"] == "warn"
    with pytest.raises(OperationFailure) as info:
        v.validation_options(CONTACTS, "moderate", "errorAndLog")
    assert "8.1" in info.value.details["errmsg"]
    assert v.validation_options(CONTACTS, "moderate", "errorAndLog",
                                allow_error_and_log=True)["validationAction"] == "errorAndLog"
    with pytest.raises(OperationFailure) as info:
        v.validation_options(validationLevel="lenient")
    assert info.value.code == 2 and "'validationLevel'" in str(info.value)
    with pytest.raises(OperationFailure) as info:
        v.validation_options(validationAction="ignore")
    assert "'validationAction'" in str(info.value)
    with pytest.raises(OperationFailure):
        v.validation_options({"$jsonSchema": {"format": "date"}})


def test_insert_invalid_raises_write_error_121():
    """Manual, "Specify JSON Schema Validation": inserting the int-gpa student raises
    "Document failed validation" (code 121) with errInfo."""
    options = v.validation_options(STUDENTS)
    with pytest.raises(WriteError) as info:
        v.check_write(options, _alice(3), None)
    err = info.value
    assert err.code == 121
    assert err.details["errmsg"] == "Document failed validation"
    assert err.details["errInfo"]["details"]["operatorName"] == "$jsonSchema"
    assert str(err).startswith("Document failed validation")
    v.check_write(options, _alice(3.0), None)


def test_bypass_document_validation():
    """Manual, "Bypass Schema Validation": bypassDocumentValidation skips the validator."""
    v.check_write(v.validation_options(STUDENTS), _alice(3), None, bypass=True)


def test_level_off_disables_validation():
    """Manual, "Specify Validation Level": validationLevel "off" disables validation."""
    v.check_write(v.validation_options(STUDENTS, "off"), _alice(3), None)


def test_moderate_level_skips_updates_to_invalid_documents():
    """Manual, "Specify Validation Level for Existing Documents" (contacts, moderate):
    updating invalid Ivan (_id 2) with name 20 succeeds; updating valid Anne (_id 1) with
    name 10 fails. Under strict both fail."""
    moderate = v.validation_options(CONTACTS, "moderate")
    with pytest.raises(WriteError):
        v.check_write(moderate, {**ANNE, "name": 10}, ANNE)
    v.check_write(moderate, {**IVAN, "name": 20}, IVAN)
    strict = v.validation_options(CONTACTS, "strict")
    with pytest.raises(WriteError):
        v.check_write(strict, {**IVAN, "name": 20}, IVAN)
    with pytest.raises(WriteError):  # inserts are always checked
        v.check_write(moderate, {"_id": 3, "name": 30}, None)


CONTACTS2 = {"$jsonSchema": {
    "bsonType": "object",
    "required": ["phone"],
    "properties": {
        "phone": {"bsonType": "string", "description": "must be a string and is required"},
        "email": {"bsonType": "string", "pattern": "@mongodb\\.com$",
                  "description": "must be a string and end with '@mongodb.com'"},
    },
}}
AMANDA = {"_id": ObjectId("6377cca4aac957f2b77ea955"), "name": "Amanda", "email": "amanda@xyz.com"}
AMANDA_DETAILS = {
    "operatorName": "$jsonSchema",
    "schemaRulesNotSatisfied": [
        {"operatorName": "properties", "propertiesNotSatisfied": [{
            "propertyName": "email",
            "description": "must be a string and end with '@mongodb.com'",
            "details": [{"operatorName": "pattern", "specifiedAs": {"pattern": "@mongodb\\.com$"},
                         "reason": "regular expression did not match",
                         "consideredValue": "amanda@xyz.com"}]}]},
        {"operatorName": "required", "specifiedAs": {"required": ["phone"]},
         "missingProperties": ["phone"]},
    ],
}


def test_reject_invalid_contact_errinfo_matches_manual():
    """Manual, "Choose How to Handle Invalid Documents" > Option 1 (contacts, action
    "error"): Amanda's insert fails with the pattern and required details shown there."""
    options = v.validation_options(CONTACTS2, validationAction="error")
    with pytest.raises(WriteError) as info:
        v.check_write(options, AMANDA, None)
    assert info.value.details["errInfo"] == {"failingDocumentId": AMANDA["_id"],
                                             "details": AMANDA_DETAILS}


def test_warn_action_logs_and_accepts(caplog):
    """Manual, "Choose How to Handle Invalid Documents" > Option 2 (contacts2, action
    "warn"): the insert succeeds and the log gets id 20294 "Document would fail validation"
    with namespace, document and errInfo."""
    options = v.validation_options(CONTACTS2, validationAction="warn")
    with caplog.at_level(logging.WARNING, logger="labkit.engine"):
        v.check_write(options, AMANDA, None, namespace="test.contacts2")
    [record] = caplog.records
    assert record.getMessage() == "Document would fail validation"
    assert record.logId == 20294 and record.namespace == "test.contacts2"
    assert record.document == AMANDA
    assert record.errInfo == {"failingDocumentId": AMANDA["_id"], "details": AMANDA_DETAILS}


def test_error_and_log_action_logs_and_raises(caplog):
    """Manual (8.1), validationAction "errorAndLog": reject like "error" and also log."""
    options = v.validation_options(CONTACTS, validationAction="errorAndLog",
                                   allow_error_and_log=True)
    with caplog.at_level(logging.WARNING, logger="labkit.engine"):
        with pytest.raises(WriteError):
            v.check_write(options, {"_id": 3, "name": "x"}, None)
    assert caplog.records



# ---------------------------------------------------------------------------------------
# Property: every rejected document is explained
# ---------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5000), st.floats(-10, 10),
                     st.text(max_size=4))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["city", "uom", "x"]), inner,
                                                 max_size=3)), max_leaves=6)
RICH = {"$jsonSchema": {
    "required": ["name"],
    "properties": {
        "name": {"bsonType": "string", "minLength": 1},
        "year": {"bsonType": "int", "minimum": 2017, "maximum": 3017},
        "tags": {"bsonType": "array", "items": {"bsonType": "string"}, "uniqueItems": True},
        "address": {"bsonType": "object", "required": ["city"],
                    "additionalProperties": False, "properties": {"city": {"bsonType": "string"}}},
        "score": {"anyOf": [{"bsonType": "null"}, {"bsonType": "number", "multipleOf": 0.5}]},
        "status": {"enum": ["A", "B", None]},
    },
    "dependencies": {"score": ["year"]},
}}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["name", "year", "tags", "address", "score", "status",
                                        "extra"]), _VALUES, max_size=6))
def test_every_rejected_document_is_explained(doc):
    """Manual, "Schema Validation" (errInfo since 5.0): a document that fails validation
    always comes with at least one unsatisfied rule, and a valid one with none."""
    details = v.validation_error_info(RICH, doc)["details"]
    if v.document_matches(RICH, doc):
        assert details["schemaRulesNotSatisfied"] == []
    else:
        assert details["schemaRulesNotSatisfied"]
        for rule in details["schemaRulesNotSatisfied"]:
            assert rule["operatorName"] in ("properties", "required", "dependencies")
