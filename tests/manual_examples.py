"""Examples from MongoDB's manual that several test modules use.

STUDENTS_SCHEMA: the students collection's validator in the manual's "Specify JSON Schema Validation":
https://www.mongodb.com/docs/manual/core/schema-validation/specify-json-schema/

INVENTORY_SCHEMA, INVENTORY: ``myschema`` and the inventory of the manual's "$jsonSchema" query operator page
and "Query for and Modify Valid or Invalid Documents":
https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/
"""
from __future__ import annotations

STUDENTS_SCHEMA = {
    "bsonType": "object",
    "title": "Student Object Validation",
    "required": ["address", "major", "name", "year"],
    "properties": {
        "name": {"bsonType": "string", "description": "'name' must be a string and is required"},
        "year": {"bsonType": "int", "minimum": 2017, "maximum": 3017,
                 "description": "'year' must be an integer in [ 2017, 3017 ] and is required"},
        "gpa": {"bsonType": ["double"], "description": "'gpa' must be a double if the field exists"},
    },
}

INVENTORY_SCHEMA = {
    "required": ["item", "qty", "instock"],
    "properties": {
        "item": {"bsonType": "string"},
        "qty": {"bsonType": "int"},
        "size": {"bsonType": "object", "required": ["uom"],
                 "properties": {"uom": {"bsonType": "string"}, "h": {"bsonType": "double"},
                                "w": {"bsonType": "double"}}},
        "instock": {"bsonType": "bool"},
    },
}
# mongosh numbers are doubles: 14 -> 14.0, instock: 1 -> 1.0
INVENTORY = [
    {"item": "journal", "qty": 25, "size": {"h": 14.0, "w": 21.0, "uom": "cm"}, "instock": True},
    {"item": "notebook", "qty": 50, "size": {"h": 8.5, "w": 11.0, "uom": "in"}, "instock": True},
    {"item": "paper", "qty": 100, "size": {"h": 8.5, "w": 11.0, "uom": "in"}, "instock": 1.0},
    {"item": "planner", "qty": 75, "size": {"h": 22.85, "w": 30.0, "uom": "cm"}, "instock": 1.0},
    {"item": "postcard", "qty": 45, "size": {"h": 10.0, "w": 15.25, "uom": "cm"}, "instock": True},
    {"item": "apple", "qty": 45, "status": "A", "instock": True},
    {"item": "pears", "qty": 50, "status": "A", "instock": True},
]
