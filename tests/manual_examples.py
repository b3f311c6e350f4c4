"""Examples from MongoDB's manual that several test modules use.

STUDENTS_SCHEMA: the students collection's validator in the manual's "Specify JSON Schema Validation":
https://www.mongodb.com/docs/manual/core/schema-validation/specify-json-schema/
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
