"""MongoDB schema validation (``$jsonSchema`` and query-operator validators), engine-free.

The ``$jsonSchema`` dialect MongoDB implements is JSON Schema draft 4 with changes:

* an extra ``bsonType`` keyword (BSON type aliases, plus ``"number"``);
* ``type`` accepts only the JSON aliases ``object``, ``array``, ``string``, ``boolean``,
  ``null`` and ``number``; ``"integer"`` is rejected;
* ``$ref``, ``$schema``, ``default``, ``definitions``, ``format`` and ``id`` are rejected,
  and so is any keyword MongoDB does not know;
* ``exclusiveMinimum``/``exclusiveMaximum`` are draft-4 booleans and need
  ``minimum``/``maximum``.

Validation itself runs on the ``jsonschema`` library: ``MongoSchemaValidator`` is
``jsonschema.validators.create``-d from draft 4's keyword functions with a MongoDB type
checker, the ``bsonType`` keyword, and BSON-aware ``enum``/``uniqueItems``/numeric
keywords. ``check_validator`` reproduces the server's parse-time errors (codes and
messages taken from ``src/mongo/db/matcher/schema/json_schema_parser.cpp``), and
``validation_error_info`` builds the ``errInfo`` document that MongoDB 5.0+ attaches to
a "Document failed validation" write error (shapes taken from
``src/mongo/db/matcher/doc_validation_error.cpp`` and the manual's examples).

Approximations (documented, deliberate):

* ``pattern``/``patternProperties`` use Python's ``re``, not PCRE.
* Property names containing dots are treated as plain names (the server treats them as
  paths).
* ``errInfo`` for query operators other than ``$jsonSchema`` covers the common operators
  (comparisons, ``$in``/``$nin``, ``$exists``, ``$type``, ``$regex``, ``$size``,
  ``$all``, ``$elemMatch``, ``$mod``, ``$not``, ``$and``/``$or``/``$nor``, ``$expr``);
  ``consideredValue(s)`` follow the server only for simple (non-array) paths, and
  ``$expr``'s ``expressionResult`` is evaluated with the engine's expression evaluator
  (``match_expr``), else reported as ``False``.
* Encryption keywords (``encrypt``, ``encryptMetadata``) are refused: the embedded engine
  has no client-side field level encryption.
"""
from __future__ import annotations

import decimal
import functools
import logging
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from bson.code import Code
from bson.decimal128 import Decimal128
from pymongo.errors import OperationFailure, WriteError

from ..base import hooks
from ..bson.values import pcre_to_python, type_name


def _import_jsonschema():
    """Import jsonschema without its optional ``rfc3987_syntax`` dependency.

    That package only serves the draft-7+ ``iri`` *format* checker (MongoDB rejects
    ``format``), yet building its grammar costs ~2 s at import. When jsonschema is not
    imported yet, it is imported with that module masked; ``sys.modules`` is restored
    afterwards, so an explicit ``import rfc3987_syntax`` still works later.
    """
    import sys

    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        import jsonschema as module

        return module
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]
    try:
        import jsonschema as module
    finally:
        del sys.modules["rfc3987_syntax"]
    return module


def __getattr__(name: str) -> Any:
    """``jsonschema`` and ``MongoSchemaValidator`` are made on first use: importing jsonschema costs about
    0.2 s of CPU, paid only by a process that validates a ``$jsonSchema`` (most lessons never do)."""
    if name == "jsonschema":
        return _import_jsonschema()
    if name == "MongoSchemaValidator":
        return _validator_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _error(message: str) -> Any:
    """A jsonschema ``ValidationError`` (a keyword function's verdict; jsonschema is imported by then)."""
    from jsonschema.exceptions import ValidationError
    return ValidationError(message)

__all__ = [
    "VALIDATION_LEVELS",
    "VALIDATION_ACTIONS",
    "BSON_TYPE_ALIASES",
    "JSON_TYPE_ALIASES",
    "MongoSchemaValidator",
    "bson_type_name",
    "check_schema",
    "check_validator",
    "schema_matches",
    "jsonschema_filter_applies",
    "make_filter_applies",
    "document_matches",
    "validation_error_info",
    "validation_options",
    "check_write",
]

logger = logging.getLogger("labkit.engine")

VALIDATION_LEVELS = ("off", "strict", "moderate")
VALIDATION_ACTIONS = ("error", "warn", "errorAndLog")  # errorAndLog: MongoDB 8.1+

# Server error codes (src/mongo/base/error_codes.yml).
BAD_VALUE = 2
FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14
DOCUMENT_VALIDATION_FAILURE = 121
_CODE_NAMES = {BAD_VALUE: "BadValue", FAILED_TO_PARSE: "FailedToParse", TYPE_MISMATCH: "TypeMismatch"}

# BSON type aliases ($type / bsonType), as MongoDB's typeName() spells them.
BSON_TYPE_ALIASES = (
    "double", "string", "object", "array", "binData", "undefined", "objectId", "bool",
    "date", "null", "regex", "dbPointer", "javascript", "symbol", "javascriptWithScope",
    "int", "timestamp", "long", "decimal", "minKey", "maxKey",
)
# JSON Schema `type` aliases MongoDB accepts (MatcherTypeSet::kJsonSchemaTypeAliasMap).
JSON_TYPE_ALIASES = {"array": "array", "boolean": "bool", "null": "null", "object": "object",
                     "string": "string"}
_NUMBER_TYPES = frozenset({"int", "long", "double", "decimal"})

# json_schema_parser.cpp: the keyword map and the explicitly unsupported keywords.
_SUPPORTED_KEYWORDS = frozenset({
    "additionalItems", "additionalProperties", "allOf", "anyOf", "bsonType", "dependencies",
    "description", "encrypt", "encryptMetadata", "enum", "exclusiveMaximum",
    "exclusiveMinimum", "items", "maxItems", "maxLength", "maxProperties", "maximum",
    "minItems", "minLength", "minProperties", "minimum", "multipleOf", "not", "oneOf",
    "pattern", "patternProperties", "properties", "required", "title", "type", "uniqueItems",
})
_UNSUPPORTED_KEYWORDS = frozenset({"$ref", "$schema", "default", "definitions", "format", "id"})

_TOP_LEVEL_OPERATORS = frozenset({"$and", "$or", "$nor", "$expr", "$jsonSchema", "$comment",
                                  "$alwaysTrue", "$alwaysFalse", "$where", "$text",
                                  "$sampleRate"})


# ---------------------------------------------------------------------------------------
# BSON types of Python values
# ---------------------------------------------------------------------------------------

def bson_type_name(value: Any) -> str:
    """Return the BSON type alias MongoDB would report for ``value`` (``"int"``, ...): ``values.type_name``."""
    return type_name(value)


def _matches_type_set(value: Any, aliases: list[str]) -> bool:
    name = bson_type_name(value)
    for alias in aliases:
        if alias == name or (alias == "number" and name in _NUMBER_TYPES):
            return True
    return False


def _is_number(value: Any) -> bool:
    return bson_type_name(value) in _NUMBER_TYPES


def _to_decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, Decimal128):
        return value.to_decimal()
    if isinstance(value, float):
        return decimal.Decimal(repr(value)) if math.isfinite(value) else decimal.Decimal(value)
    return decimal.Decimal(int(value))


def _num(value: Any) -> Any:
    """Return a Python number comparable with other numbers (Decimal128 -> Decimal)."""
    if isinstance(value, Decimal128):
        return value.to_decimal()
    return value


def _bson_equal(a: Any, b: Any) -> bool:
    """BSON value equality: numbers compare by value across types, bool is not a number,
    embedded documents compare field-order-insensitively."""
    a_num, b_num = _is_number(a), _is_number(b)
    if a_num or b_num:
        if not (a_num and b_num):
            return False
        try:
            return _to_decimal(a) == _to_decimal(b)
        except (decimal.InvalidOperation, ValueError):  # NaN and friends
            return False
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)) or len(a) != len(b):
            return False
        return all(k in b and _bson_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
            return False
        return len(a) == len(b) and all(_bson_equal(x, y) for x, y in zip(a, b))
    if bson_type_name(a) != bson_type_name(b):
        return False
    return bool(a == b)


# ---------------------------------------------------------------------------------------
# The jsonschema-based validator
# ---------------------------------------------------------------------------------------

def _json_type(alias: str) -> Callable[[Any, Any], bool]:
    if alias == "number":
        return lambda _checker, value: _is_number(value)
    bson_alias = JSON_TYPE_ALIASES[alias]
    return lambda _checker, value: bson_type_name(value) == bson_alias




def _kw_bson_type(validator, types, instance, schema):
    aliases = [types] if isinstance(types, str) else list(types)
    if not _matches_type_set(instance, aliases):
        yield _error(f"{instance!r} is not of BSON type {types!r}")


def _kw_type(validator, types, instance, schema):
    aliases = [types] if isinstance(types, str) else list(types)
    if not any(validator.is_type(instance, alias) for alias in aliases):
        yield _error(f"{instance!r} is not of type {types!r}")


def _kw_enum(validator, enums, instance, schema):
    if not any(_bson_equal(instance, item) for item in enums):
        yield _error(f"{instance!r} is not one of {enums!r}")


def _first_duplicate(items: list) -> tuple[bool, Any]:
    for i, item in enumerate(items):
        for other in items[:i]:
            if _bson_equal(item, other):
                return True, item
    return False, None


def _kw_unique_items(validator, unique, instance, schema):
    if unique and validator.is_type(instance, "array") and _first_duplicate(list(instance))[0]:
        yield _error(f"{instance!r} has non-unique elements")


def _kw_minimum(validator, minimum, instance, schema):
    if not _is_number(instance):
        return
    value, bound = _num(instance), _num(minimum)
    failed = value <= bound if schema.get("exclusiveMinimum", False) else value < bound
    if failed:
        yield _error(f"{instance!r} is less than the minimum of {minimum!r}")


def _kw_maximum(validator, maximum, instance, schema):
    if not _is_number(instance):
        return
    value, bound = _num(instance), _num(maximum)
    failed = value >= bound if schema.get("exclusiveMaximum", False) else value > bound
    if failed:
        yield _error(f"{instance!r} is greater than the maximum of {maximum!r}")


def _kw_multiple_of(validator, divisor, instance, schema):
    if not _is_number(instance):
        return
    try:
        failed = _to_decimal(instance) % _to_decimal(divisor) != 0
    except (decimal.InvalidOperation, ValueError):
        failed = True  # NaN/infinity are multiples of nothing (fmod yields NaN)
    if failed:
        yield _error(f"{instance!r} is not a multiple of {divisor!r}")


_KEYWORDS = {
    "bsonType": _kw_bson_type,
    "type": _kw_type,
    "enum": _kw_enum,
    "uniqueItems": _kw_unique_items,
    "minimum": _kw_minimum,
    "maximum": _kw_maximum,
    "multipleOf": _kw_multiple_of,
}


@functools.lru_cache(maxsize=None)
def _validator_class() -> Any:
    """``MongoSchemaValidator``: a jsonschema validator class for MongoDB's ``$jsonSchema`` dialect (draft 4
    based: its keyword functions without ``$ref`` and ``format``, MongoDB's own for the keywords above, and
    the JSON type names checked on BSON types), made once, on first use."""
    jsonschema = _import_jsonschema()
    validators = {k: v for k, v in jsonschema.Draft4Validator.VALIDATORS.items() if k not in ("$ref", "format")}
    validators.update(_KEYWORDS)
    type_checker = jsonschema.TypeChecker().redefine_many(
        {alias: _json_type(alias) for alias in (*JSON_TYPE_ALIASES, "number")})
    return jsonschema.validators.create(meta_schema=jsonschema.Draft4Validator.META_SCHEMA, validators=validators,
                                        type_checker=type_checker, version="mongodb-jsonschema")


def _prepare(schema: Mapping[str, Any]) -> dict:
    """Copy ``schema`` into what jsonschema expects: annotations inside ``dependencies``
    (which MongoDB tolerates) are dropped, the encryption keywords are removed."""
    out: dict = {}
    for key, value in schema.items():
        if key in ("encrypt", "encryptMetadata"):
            continue
        if key in ("properties", "patternProperties") and isinstance(value, Mapping):
            value = {k: _prepare(v) for k, v in value.items()}
        elif key == "dependencies" and isinstance(value, Mapping):
            value = {k: (_prepare(v) if isinstance(v, Mapping) else list(v))
                     for k, v in value.items() if isinstance(v, (Mapping, list, tuple))}
        elif key in ("additionalProperties", "additionalItems", "not") and isinstance(value, Mapping):
            value = _prepare(value)
        elif key == "items":
            value = _prepare(value) if isinstance(value, Mapping) else [_prepare(v) for v in value]
        elif key in ("allOf", "anyOf", "oneOf"):
            value = [_prepare(v) for v in value]
        elif key in ("type", "bsonType", "required", "enum") and isinstance(value, tuple):
            value = list(value)
        out[key] = value
    return out


def _validator(schema: Mapping[str, Any]):
    return _validator_class()(_prepare(schema))


def _is_valid(schema: Mapping[str, Any], value: Any) -> bool:
    return _validator(schema).is_valid(value)


# ---------------------------------------------------------------------------------------
# Parse-time checks (createCollection / collMod / find with $jsonSchema)
# ---------------------------------------------------------------------------------------

def _fail(code: int, message: str) -> OperationFailure:
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code,
                                            "codeName": _CODE_NAMES.get(code, "")})


def _elem(name: str, value: Any) -> str:
    """Render an element the way the server prints a BSONElement in messages."""
    if isinstance(value, str):
        return f'{name}: "{value}"'
    if isinstance(value, bool):
        return f"{name}: {'true' if value else 'false'}"
    return f"{name}: {value!r}"


def _named_schemas(stack: list, keyword: str, value: Any, not_object: Callable[[str], str],
                   check_name: Callable[[str], None] | None = None) -> None:
    """properties / patternProperties: an object of nested schemas (parsed next, in order); each entry is checked
    in turn (its schema, then ``check_name`` on its name), the first wrong one raising."""
    if not isinstance(value, Mapping):
        raise _fail(TYPE_MISMATCH, f"$jsonSchema keyword '{keyword}' must be an object")
    for name, sub in value.items():
        if not isinstance(sub, Mapping):
            raise _fail(TYPE_MISMATCH, not_object(name))
        if check_name is not None:
            check_name(name)
    stack.extend(reversed(list(value.values())))


def _schema_or_bool(stack: list, value: Any, message: str) -> None:
    """additionalItems / additionalProperties: a nested schema (parsed next) or a boolean; else ``message``."""
    if isinstance(value, Mapping):
        stack.append(value)
    elif not isinstance(value, bool):
        raise _fail(TYPE_MISMATCH, message)


def _check_length(name: str, value: Any) -> None:
    """MatchExpressionParser::parseIntegerElementToNonNegativeLong."""
    if not _is_number(value):
        raise _fail(FAILED_TO_PARSE, f"Expected a number in: {_elem(name, value)}")
    number = _num(value)
    if isinstance(number, (float, decimal.Decimal)) and (not math.isfinite(number)
                                                         or number != int(number)):
        raise _fail(FAILED_TO_PARSE, f"Expected an integer: {_elem(name, value)}")
    if number < 0:
        raise _fail(FAILED_TO_PARSE, f"Expected a positive number in: {_elem(name, value)}")


def _check_regex(pattern: str) -> None:
    try:
        re.compile(pcre_to_python(pattern))
    except re.error as exc:
        raise _fail(51091, f"Regular expression is invalid: {exc}") from None


def _check_type_set(keyword: str, value: Any) -> None:
    """JSONSchemaParser::parseTypeSet + MatcherTypeSet::fromStringAliases."""
    if isinstance(value, str):
        aliases = [value]
    elif isinstance(value, (list, tuple)):
        aliases = list(value)
        seen: set[str] = set()
        for alias in aliases:
            if not isinstance(alias, str):
                raise _fail(TYPE_MISMATCH,
                            f"$jsonSchema keyword '{keyword}' array elements must be strings")
            if alias == "integer":
                raise _fail(FAILED_TO_PARSE,
                            "$jsonSchema type 'integer' is not currently supported.")
            if alias in seen:
                raise _fail(FAILED_TO_PARSE,
                            f"$jsonSchema keyword '{keyword}' has duplicate value: {alias}")
            seen.add(alias)
    else:
        raise _fail(TYPE_MISMATCH, f"$jsonSchema keyword '{keyword}' must be either a string"
                                   " or an array of strings")
    if "integer" in aliases:
        raise _fail(FAILED_TO_PARSE, "$jsonSchema type 'integer' is not currently supported.")
    known = set(JSON_TYPE_ALIASES) if keyword == "type" else set(BSON_TYPE_ALIASES)
    known.add("number")
    for alias in sorted(aliases):
        if alias not in known:
            raise _fail(BAD_VALUE, f"Unknown type name alias: {alias}")
    if not aliases:
        raise _fail(FAILED_TO_PARSE, f"$jsonSchema keyword '{keyword}' must name at least one type")


def _check_logical(keyword: str, value: Any, stack: list) -> None:
    if not isinstance(value, (list, tuple)):
        raise _fail(TYPE_MISMATCH, f"$jsonSchema keyword '{keyword}' must be an array")
    if not value:
        raise _fail(BAD_VALUE, f"$jsonSchema keyword '{keyword}' must be a non-empty array")
    for item in value:
        if not isinstance(item, Mapping):
            raise _fail(TYPE_MISMATCH, f"$jsonSchema keyword '{keyword}' must be an array of"
                                       f" objects, but found an element of type {bson_type_name(item)}")
    stack.extend(reversed(list(value)))


def _check_one_schema(schema: Mapping[str, Any], stack: list) -> None:
    for key in schema:
        if key not in _SUPPORTED_KEYWORDS:
            if key in _UNSUPPORTED_KEYWORDS:
                raise _fail(FAILED_TO_PARSE, f"$jsonSchema keyword '{key}' is not currently supported")
            raise _fail(FAILED_TO_PARSE, f"Unknown $jsonSchema keyword: {key}")
    for key in ("description", "title"):
        if key in schema and not isinstance(schema[key], str):
            raise _fail(TYPE_MISMATCH, f"$jsonSchema keyword '{key}' must be of type string")
    if "type" in schema and "bsonType" in schema:
        raise _fail(FAILED_TO_PARSE, "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
    for key in ("encrypt", "encryptMetadata"):
        if key in schema:
            raise _fail(FAILED_TO_PARSE, f"$jsonSchema keyword '{key}' is not supported by the"
                                         " embedded engine (no client-side field level encryption)")
    for key in ("type", "bsonType"):
        if key in schema:
            _check_type_set(key, schema[key])

    # Scalar keywords (translateScalarKeywords).
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'pattern' must be a string")
        _check_regex(schema["pattern"])
    for key in ("maxLength", "minLength"):
        if key in schema:
            _check_length(key, schema[key])
    if "multipleOf" in schema:
        divisor = schema["multipleOf"]
        if not _is_number(divisor):
            raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'multipleOf' must be a number")
        if not _num(divisor) > 0:
            raise _fail(FAILED_TO_PARSE, "$jsonSchema keyword 'multipleOf' must have a positive value")
    for bound, exclusive in (("maximum", "exclusiveMaximum"), ("minimum", "exclusiveMinimum")):
        if bound in schema:
            if exclusive in schema and not isinstance(schema[exclusive], bool):
                raise _fail(TYPE_MISMATCH, f"$jsonSchema keyword '{exclusive}' must be a boolean")
            if not _is_number(schema[bound]):
                raise _fail(TYPE_MISMATCH, f"$jsonSchema keyword '{bound}' must be a number")
        elif exclusive in schema:
            raise _fail(FAILED_TO_PARSE, f"$jsonSchema keyword '{bound}' must be a present if"
                                         f" {exclusive} is present")

    # Array keywords (translateArrayKeywords).
    for key in ("minItems", "maxItems"):
        if key in schema:
            _check_length(key, schema[key])
    if "uniqueItems" in schema and not isinstance(schema["uniqueItems"], bool):
        raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'uniqueItems' must be a boolean")
    if "items" in schema:
        items = schema["items"]
        if isinstance(items, Mapping):
            stack.append(items)
        elif isinstance(items, (list, tuple)):
            for sub in items:
                if not isinstance(sub, Mapping):
                    raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'items' requires that each"
                                               " element of the array is an object, but found a "
                                               + bson_type_name(sub))
            stack.extend(reversed(list(items)))
        else:
            raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'items' must be an array or an"
                                       f" object, not {bson_type_name(items)}")
    if "additionalItems" in schema:
        extra = schema["additionalItems"]
        _schema_or_bool(stack, extra, "$jsonSchema keyword 'additionalItems' must be either an object or a "
                                      f"boolean, but got a {bson_type_name(extra)}")

    # Object keywords (translateObjectKeywords).
    if "required" in schema:
        required = schema["required"]
        if not isinstance(required, (list, tuple)):
            raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'required' must be an array, but"
                                       f" found an element of type {bson_type_name(required)}")
        seen: set[str] = set()
        for name in required:
            if not isinstance(name, str):
                raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'required' must be an array of"
                                           " strings, but found an element of type: "
                                           + bson_type_name(name))
            if name in seen:
                raise _fail(FAILED_TO_PARSE,
                            "$jsonSchema keyword 'required' array cannot contain duplicate values")
            seen.add(name)
        if not required:
            raise _fail(FAILED_TO_PARSE, "$jsonSchema keyword 'required' cannot be an empty array")
    if "properties" in schema:
        _named_schemas(stack, "properties", schema["properties"],
                       lambda name: f"Nested schema for $jsonSchema property '{name}' must be an object")
    if "patternProperties" in schema:
        _named_schemas(stack, "patternProperties", schema["patternProperties"],
                       lambda regex: f"$jsonSchema keyword 'patternProperties' has property '{regex}' which is not "
                                     "an object", check_name=_check_regex)
    if "additionalProperties" in schema:
        _schema_or_bool(stack, schema["additionalProperties"],
                        "$jsonSchema keyword 'additionalProperties' must be an object or a boolean")
    for key in ("minProperties", "maxProperties"):
        if key in schema:
            _check_length(key, schema[key])
    if "dependencies" in schema:
        dependencies = schema["dependencies"]
        if not isinstance(dependencies, Mapping):
            raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'dependencies' must be an object")
        for name, dep in dependencies.items():
            if isinstance(dep, Mapping):
                stack.append(dep)
            elif isinstance(dep, (list, tuple)):
                if not dep:
                    raise _fail(FAILED_TO_PARSE, f"property '{name}' in $jsonSchema keyword"
                                                 " 'dependencies' cannot be an empty array")
                seen = set()
                for item in dep:
                    if not isinstance(item, str):
                        raise _fail(TYPE_MISMATCH, f"array '{name}' in $jsonSchema keyword"
                                                   " 'dependencies' can only contain strings, but"
                                                   f" found element of type: {bson_type_name(item)}")
                    if item in seen:
                        raise _fail(FAILED_TO_PARSE, f"array '{name}' in $jsonSchema keyword"
                                                     f" 'dependencies' contains duplicate element: {item}")
                    seen.add(item)
            elif not (name in ("title", "description") and isinstance(dep, str)):
                raise _fail(TYPE_MISMATCH, f"property '{name}' in $jsonSchema keyword"
                                           " 'dependencies' must be either an object or an array")

    # Logical keywords (translateLogicalKeywords).
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            _check_logical(key, schema[key], stack)
    if "not" in schema:
        if not isinstance(schema["not"], Mapping):
            raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'not' must be an object, but found"
                                       f" an element of type {bson_type_name(schema['not'])}")
        stack.append(schema["not"])
    if "enum" in schema:
        enum = schema["enum"]
        if not isinstance(enum, (list, tuple)):
            raise _fail(TYPE_MISMATCH, "$jsonSchema keyword 'enum' must be an array, but found"
                                       f" an element of type {bson_type_name(enum)}")
        if not enum:
            raise _fail(FAILED_TO_PARSE, "$jsonSchema keyword 'enum' cannot be an empty array")
        if _first_duplicate(list(enum))[0]:
            raise _fail(FAILED_TO_PARSE,
                        "$jsonSchema keyword 'enum' array cannot contain duplicate values.")


def check_schema(schema: Any, collection_validator: bool = False) -> None:
    """Raise OperationFailure (server code and message) if ``schema`` is not a valid
    MongoDB ``$jsonSchema``. Nested schemas are checked without recursion.

    With ``collection_validator`` (a top-level validator schema) the server's warning about
    ``additionalProperties: false`` without ``_id`` is logged, as mongod does."""
    if not isinstance(schema, Mapping):
        raise _fail(TYPE_MISMATCH, "$jsonSchema must be an object")
    stack: list = [schema]
    while stack:
        _check_one_schema(stack.pop(), stack)
    if not collection_validator:
        return
    extra = schema.get("additionalProperties")
    if extra is False and "_id" not in schema.get("properties", {}) and not any(
            re.search(p, "_id") for p in schema.get("patternProperties", {})):
        # The server logs this warning (id 3216000) at collection-validator parse time.
        logger.warning("$jsonSchema validator does not allow '_id' field. This validator will"
                       " reject all documents, consider adding '_id' to the allowed fields.")


def _unknown_top_level(key: str) -> str:
    """The server's message (expression_parser.cpp), hint included."""
    hint = (". If you are trying to negate an entire expression, use $nor." if key == "$not" else
            ". If you have a field name that starts with a '$' symbol, consider using"
            " $getField or $setField.")
    return f"unknown top level operator: {key}{hint}"


_FIELD_OPERATORS = frozenset({
    "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$type", "$regex",
    "$options", "$size", "$all", "$elemMatch", "$mod", "$not", "$bitsAllSet", "$bitsAllClear",
    "$bitsAnySet", "$bitsAnyClear", "$geoWithin", "$geoIntersects", "$within",
    "$near", "$nearSphere", "$maxDistance", "$minDistance",
})
_GEO_NEAR = frozenset({"$near", "$nearSphere"})


def _check_field_condition(condition: Any) -> None:
    """Field-level operators (parseSub): unknown ones and $near are refused in validators."""
    if not (isinstance(condition, Mapping) and condition
            and all(isinstance(k, str) and k.startswith("$") for k in condition)):
        return
    for op, arg in condition.items():
        if op not in _FIELD_OPERATORS:
            raise _fail(BAD_VALUE, f"unknown operator: {op}")
        if op in _GEO_NEAR:
            raise _fail(BAD_VALUE, "$geoNear, $near, and $nearSphere are not allowed in this"
                                   " context")
        if op == "$not":
            _check_field_condition(arg)


def _check_query(query: Any) -> None:
    if not isinstance(query, Mapping):
        raise _fail(BAD_VALUE, "the match filter must be an expression in an object")
    stack = [query]
    while stack:
        current = stack.pop()
        for key, value in current.items():
            if not key.startswith("$"):
                _check_field_condition(value)
                continue
            if key not in _TOP_LEVEL_OPERATORS:
                raise _fail(BAD_VALUE, _unknown_top_level(key))
            if key in ("$where", "$text"):
                raise _fail(BAD_VALUE, f"{key} is not allowed in this context")
            if key == "$jsonSchema":
                check_schema(value, collection_validator=current is query)
            elif key in ("$and", "$or", "$nor"):
                if not isinstance(value, (list, tuple)):
                    raise _fail(BAD_VALUE, f"{key} must be an array")
                if not value:
                    raise _fail(BAD_VALUE, "$and/$or/$nor must be a nonempty array")
                for clause in value:
                    if not isinstance(clause, Mapping):
                        raise _fail(BAD_VALUE, f"{key} argument's entries must be objects")
                    stack.append(clause)


def check_validator(validator: Any) -> None:
    """Raise OperationFailure as the server does when ``validator`` cannot be used as a
    collection validator (bad ``$jsonSchema``, unknown or forbidden top-level operator)."""
    if validator is None:
        return
    if not isinstance(validator, Mapping):
        raise _fail(TYPE_MISMATCH, "'validator' must be an object")
    try:
        _check_query(validator)
    except OperationFailure as exc:
        # CollectionImpl::parseValidator adds this context to every parse error.
        message = f"Parsing of collection validator failed :: caused by :: {exc.details['errmsg']}"
        raise _fail(exc.code, message) from None


# ---------------------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------------------

def _non_object_root_type(schema: Mapping[str, Any]) -> bool:
    """A top-level schema whose type excludes "object" matches nothing (server rule)."""
    for key in ("type", "bsonType"):
        if key in schema:
            aliases = [schema[key]] if isinstance(schema[key], str) else list(schema[key])
            return "object" not in aliases
    return False


def schema_matches(schema: Mapping[str, Any], doc: Mapping[str, Any]) -> bool:
    """True if ``doc`` satisfies the MongoDB ``$jsonSchema`` ``schema`` (not re-checked)."""
    if _non_object_root_type(schema):
        return False
    return _is_valid(schema, doc)


def jsonschema_filter_applies(schema: Mapping[str, Any], doc: Mapping[str, Any]) -> bool:
    """Evaluate the query operator ``{"$jsonSchema": schema}`` against ``doc``.

    Raises OperationFailure for an invalid schema, like the server's query parser."""
    check_schema(schema)
    return schema_matches(schema, doc)


def _mentions_jsonschema(query: Any) -> bool:
    stack = [query]
    while stack:
        current = stack.pop()
        if not isinstance(current, Mapping):
            continue
        for key, value in current.items():
            if key == "$jsonSchema":
                return True
            if key in ("$and", "$or", "$nor", "$not") and isinstance(value, (list, tuple, Mapping)):
                stack.extend(value if isinstance(value, (list, tuple)) else [value])
    return False


def _default_base() -> Callable[[Mapping, Mapping], bool]:
    # the engine's matcher (match.py, the server's rules): match.py uses this module's $jsonSchema matcher, so
    # it registers its filter_applies in the engine's registry (hooks.py) instead of being imported here
    return hooks.get("filter_applies")


def make_filter_applies(base: Callable[[Mapping, Mapping], bool] | None = None
                        ) -> Callable[[Mapping, Mapping], bool]:
    """Wrap a ``filter_applies(filter, doc)`` function so it understands ``$jsonSchema``.

    ``$jsonSchema`` is handled at the top level and inside ``$and``/``$or``/``$nor``;
    everything else is delegated to ``base`` (default ``labkit.engine.matcher.match.filter_applies``).
    A top-level ``$not`` is not MQL: it raises "unknown top level operator: $not..." (code
    2), as the server does.
    """
    base_fn = base or _default_base()
    checked: dict[int, Any] = {}  # schemas already checked, by identity (kept alive here)

    def applies(search_filter: Mapping, document: Mapping) -> bool:
        if not isinstance(search_filter, Mapping) or not _mentions_jsonschema(search_filter):
            return base_fn(search_filter, document)
        rest: dict = {}
        for key, value in search_filter.items():
            if key == "$jsonSchema":
                if checked.get(id(value)) is not value:
                    check_schema(value)
                    if len(checked) > 256:
                        checked.clear()
                    checked[id(value)] = value
                if not schema_matches(value, document):
                    return False
            elif key in ("$and", "$or", "$nor"):
                if not isinstance(value, (list, tuple)) or not value:
                    raise _fail(BAD_VALUE, "$and/$or/$nor must be a nonempty array")
                results = (applies(clause, document) for clause in value)
                ok = (all(results) if key == "$and" else any(results) if key == "$or"
                      else not any(results))
                if not ok:
                    return False
            elif key == "$not":
                raise _fail(BAD_VALUE, _unknown_top_level("$not"))
            else:
                rest[key] = value
        return base_fn(rest, document) if rest else True

    return applies


def _split_validator(validator: Mapping[str, Any]) -> tuple[Any, dict]:
    schema = validator.get("$jsonSchema")
    rest = {k: v for k, v in validator.items() if k != "$jsonSchema"}
    return schema, rest


def document_matches(validator: Mapping[str, Any] | None, doc: Mapping[str, Any],
                     match: Callable[[Mapping, Mapping], bool] | None = None) -> bool:
    """True if ``doc`` passes ``validator`` (``$jsonSchema`` and/or query operators).

    Query-operator parts are evaluated by ``match(filter, doc)``; the default is
    ``make_filter_applies()`` (the engine's matcher plus nested ``$jsonSchema`` support)."""
    if not validator:
        return True
    schema, rest = _split_validator(validator)
    if schema is not None and not schema_matches(schema, doc):
        return False
    if rest:
        matcher = make_filter_applies(match) if match is not None else make_filter_applies()
        return bool(matcher(rest, doc))
    return True


# ---------------------------------------------------------------------------------------
# errInfo for $jsonSchema (doc_validation_error.cpp)
# ---------------------------------------------------------------------------------------

def _annotations(schema: Mapping[str, Any]) -> dict:
    return {k: v for k, v in schema.items() if k in ("title", "description")}


def _restriction_applies(keyword: str, value: Any) -> bool:
    if keyword in ("pattern", "maxLength", "minLength"):
        return isinstance(value, str) and not isinstance(value, Code)
    if keyword in ("multipleOf", "maximum", "minimum"):
        return _is_number(value)
    if keyword in ("minItems", "maxItems", "uniqueItems", "items", "additionalItems"):
        return isinstance(value, (list, tuple))
    return isinstance(value, Mapping)


_STRING_REASON = "specified string length was not satisfied"


def _leaf(keyword: str, specified: dict, reason: str, value: Any, **extra: Any) -> dict:
    entry = {"operatorName": keyword, "specifiedAs": specified, "reason": reason,
             "consideredValue": value}
    entry.update(extra)
    return entry


def _explain_schema(schema: Mapping[str, Any], value: Any, root: bool = False) -> list[dict]:
    """The list of errors a (sub)schema produces for ``value`` (server keyword order)."""
    validator = _validator(schema)
    failing = {error.relative_schema_path[0] for error in validator.iter_errors(value)
               if error.relative_schema_path}
    if not failing:
        return []
    out: list[dict] = []

    def fails(keyword: str) -> bool:
        return keyword in failing and _restriction_applies(keyword, value)

    # Scalar keywords.
    if fails("pattern"):
        out.append(_leaf("pattern", {"pattern": schema["pattern"]},
                         "regular expression did not match", value))
    for key in ("maxLength", "minLength"):
        if fails(key):
            out.append(_leaf(key, {key: schema[key]}, _STRING_REASON, value))
    if fails("multipleOf"):
        out.append(_leaf("multipleOf", {"multipleOf": schema["multipleOf"]},
                         "considered value is not a multiple of the specified value", value))
    for key, exclusive in (("maximum", "exclusiveMaximum"), ("minimum", "exclusiveMinimum")):
        if fails(key):
            specified = {key: schema[key]}
            if schema.get(exclusive) is True:
                specified[exclusive] = True
            out.append(_leaf(key, specified, "comparison failed", value))

    # Array keywords.
    for key in ("minItems", "maxItems"):
        if fails(key):
            out.append(_leaf(key, {key: schema[key]}, "array did not match specified length",
                             list(value), numberOfItems=len(value)))
    if fails("uniqueItems"):
        duplicate = _first_duplicate(list(value))[1]
        out.append(_leaf("uniqueItems", {"uniqueItems": True}, "found a duplicate item",
                         list(value), duplicatedValue=duplicate))
    if fails("items"):
        items = schema["items"]
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                if not _is_valid(items, item):
                    out.append({"operatorName": "items", **_annotations(items),
                                "reason": "At least one item did not match the sub-schema",
                                "itemIndex": index, "details": _explain_schema(items, item)})
                    break
        else:
            details = [{"itemIndex": i, "details": _explain_schema(sub, value[i])}
                       for i, sub in enumerate(items)
                       if i < len(value) and not _is_valid(sub, value[i])]
            out.append({"operatorName": "items", "details": details})
    if fails("additionalItems") and isinstance(schema.get("items"), (list, tuple)):
        start = len(schema["items"])
        extra = schema["additionalItems"]
        if extra is False:
            out.append({"operatorName": "additionalItems",
                        "specifiedAs": {"additionalItems": False},
                        "reason": "found additional items",
                        "additionalItems": list(value[start:])})
        elif isinstance(extra, Mapping):
            for index in range(start, len(value)):
                if not _is_valid(extra, value[index]):
                    out.append({"operatorName": "additionalItems", **_annotations(extra),
                                "reason": "At least one additional item did not match the"
                                          " sub-schema",
                                "itemIndex": index, "details": _explain_schema(extra, value[index])})
                    break

    # Object keywords.
    if fails("properties"):
        not_satisfied = []
        for name, sub in schema["properties"].items():
            if name in value and not _is_valid(sub, value[name]):
                details = _explain_schema(sub, value[name])
                if details:
                    not_satisfied.append({"propertyName": name, **_annotations(sub),
                                          "details": details})
        if not_satisfied:
            out.append({"operatorName": "properties", "propertiesNotSatisfied": not_satisfied})
    if fails("additionalProperties") or fails("patternProperties"):
        out.extend(_explain_allowed_properties(schema, value))
    if fails("required"):
        missing = sorted(name for name in schema["required"] if name not in value)
        out.append({"operatorName": "required", "specifiedAs": {"required": list(schema["required"])},
                    "missingProperties": missing})
    for key in ("minProperties", "maxProperties"):
        if fails(key):
            out.append({"operatorName": key, "specifiedAs": {key: schema[key]},
                        "reason": "specified number of properties was not satisfied",
                        "numberOfProperties": len(value)})
    if fails("dependencies"):
        failing_deps = []
        for name, dep in schema["dependencies"].items():
            if name not in value:
                continue
            if isinstance(dep, Mapping):
                if not _is_valid(dep, value):
                    failing_deps.append({"conditionalProperty": name,
                                         "details": _explain_schema(dep, value, root=root)})
            elif isinstance(dep, (list, tuple)):
                missing = [d for d in dep if d not in value]
                if missing:
                    failing_deps.append({"conditionalProperty": name, "missingProperties": missing})
        out.append({"operatorName": "dependencies", "failingDependencies": failing_deps})

    # Logical keywords (not restricted by type).
    for key in ("allOf", "anyOf"):
        if key in failing:
            out.append({"operatorName": key, "schemasNotSatisfied": [
                {"index": i, **_annotations(sub), "details": _explain_schema(sub, value, root=root)}
                for i, sub in enumerate(schema[key]) if not _is_valid(sub, value)]})
    if "oneOf" in failing:
        matching = [i for i, sub in enumerate(schema["oneOf"]) if _is_valid(sub, value)]
        if matching:
            out.append({"operatorName": "oneOf", "reason": "more than one subschema matched",
                        "matchingSchemaIndexes": matching})
        else:
            out.append({"operatorName": "oneOf", "schemasNotSatisfied": [
                {"index": i, **_annotations(sub), "details": _explain_schema(sub, value, root=root)}
                for i, sub in enumerate(schema["oneOf"])]})
    if "not" in failing:
        out.append({"operatorName": "not", "reason": "child expression matched"})
    if "enum" in failing:
        out.append(_leaf("enum", {"enum": list(schema["enum"])}, "value was not found in enum",
                         value))

    # The type keyword comes last (it is appended after the other keywords).
    if not root:
        for key in ("type", "bsonType"):
            if key in failing:
                out.append(_leaf(key, {key: schema[key]}, "type did not match", value,
                                 consideredType=bson_type_name(value)))
    return out


def _explain_allowed_properties(schema: Mapping[str, Any], value: Mapping) -> list[dict]:
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extra = schema.get("additionalProperties", True)
    additional = [name for name in value
                  if name not in properties and not any(re.search(p, name) for p in patterns)]
    out: list[dict] = []
    if extra is False and additional:
        out.append({"operatorName": "additionalProperties",
                    "specifiedAs": {"additionalProperties": False},
                    "additionalProperties": additional})
    elif isinstance(extra, Mapping):
        for name in additional:
            if not _is_valid(extra, value[name]):
                out.append({"operatorName": "additionalProperties", **_annotations(extra),
                            "reason": "at least one additional property did not match the"
                                      " subschema",
                            "failingProperty": name,
                            "details": _explain_schema(extra, value[name])})
                break
    pattern_details = []
    for regex, sub in patterns.items():
        for name, item in value.items():
            if re.search(regex, name) and not _is_valid(sub, item):
                pattern_details.append({"propertyName": name, **_annotations(sub),
                                        "regexMatched": regex,
                                        "details": _explain_schema(sub, item)})
                break
    if pattern_details:
        out.append({"operatorName": "patternProperties", "details": pattern_details})
    return out


def _jsonschema_details(schema: Mapping[str, Any], doc: Mapping[str, Any]) -> dict:
    if _non_object_root_type(schema):
        return {"operatorName": "$jsonSchema", "specifiedAs": {"$jsonSchema": dict(schema)},
                "reason": "expression always evaluates to false"}
    return {"operatorName": "$jsonSchema", **_annotations(schema),
            "schemaRulesNotSatisfied": _explain_schema(schema, doc, root=True)}


# ---------------------------------------------------------------------------------------
# errInfo for query operators (best effort, see module docstring)
# ---------------------------------------------------------------------------------------

_COMPARED = ("comparison failed", "comparison succeeded")
_BITWISE = ("bitwise operator failed to match", "bitwise operator matched successfully")
_IN_ARRAY = ("no matching value found in array", "matching value found in array")
_REASONS = {  # operator -> (why it failed, why its negation failed); a negated operator's pair is swapped
    **dict.fromkeys(("$eq", "$gt", "$gte", "$lt", "$lte"), _COMPARED),
    "$ne": _COMPARED[::-1],
    "$in": _IN_ARRAY,
    "$nin": _IN_ARRAY[::-1],
    **dict.fromkeys(("$bitsAllSet", "$bitsAllClear", "$bitsAnySet", "$bitsAnyClear"), _BITWISE),
    "$exists": ("path does not exist", "path does exist"),
    "$type": ("type did not match", "type did match"),
    "$regex": ("regular expression did not match", "regular expression did match"),
    "$size": ("array length was not equal to given size", "array length was equal to given size"),
    "$all": ("array did not contain all specified values", "array did contain all specified values"),
    "$elemMatch": ("array did not satisfy the child predicate", "array did satisfy the child predicate"),
    "$mod": ("$mod did not evaluate to expected remainder", "$mod did evaluate to expected remainder"),
}
_MISSING = object()


def _lookup(doc: Any, path: str) -> Any:
    current = doc
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, (list, tuple)) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        elif isinstance(current, (list, tuple)):
            values = [v[part] for v in current if isinstance(v, Mapping) and part in v]
            if not values:
                return _MISSING
            current = values
        else:
            return _MISSING
    return current


def _field_error(path: str, operator: str, argument: Any, doc: Mapping, inverted: bool,
                 specified: dict) -> dict:
    entry: dict = {"operatorName": operator, "specifiedAs": specified}
    if operator == "$not":
        matcher = make_filter_applies()
        inner = _field_details(path, argument, doc, not inverted, matcher)
        entry = {"operatorName": "$not", "details": inner}
        return entry
    value = _lookup(doc, path)
    normal, flipped = _REASONS.get(operator, ("expression did not match", "expression did match"))
    if operator == "$exists":
        entry["reason"] = flipped if (inverted != bool(argument is False or argument == 0)) else normal
        return entry
    if value is _MISSING:
        entry["reason"] = "field was missing"
        return entry
    entry["reason"] = flipped if inverted else normal
    if isinstance(value, (list, tuple)) and operator not in ("$size", "$all", "$elemMatch"):
        entry["consideredValues"] = list(value)
    else:
        entry["consideredValue"] = value
    if operator == "$type":
        types = sorted({bson_type_name(v) for v in
                        (value if isinstance(value, (list, tuple)) else [value])})
        if len(types) == 1:
            entry["consideredType"] = types[0]
        else:
            entry["consideredTypes"] = types
    return entry


def _is_operator_doc(condition: Any) -> bool:
    return isinstance(condition, Mapping) and bool(condition) and all(
        isinstance(k, str) and k.startswith("$") for k in condition)


def _leaf_clauses(query: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Split a filter into the children of the server's implicit top-level $and: each
    field operator is its own clause (``parseSub`` adds them to the same AND)."""
    clauses: list[tuple[str, Any]] = []
    for key, value in query.items():
        if key == "$comment":
            continue
        if key.startswith("$") or not _is_operator_doc(value):
            clauses.append((key, value))
            continue
        for op, arg in value.items():
            if op == "$options":
                continue
            if op == "$regex" and "$options" in value:
                clauses.append((key, {"$regex": arg, "$options": value["$options"]}))
            else:
                clauses.append((key, {op: arg}))
    return clauses


def _field_details(path: str, condition: Any, doc: Mapping, inverted: bool,
                   matcher: Callable) -> dict:
    if _is_operator_doc(condition):
        clauses = _leaf_clauses({path: condition})
        if len(clauses) == 1:
            _, spec = clauses[0]
            op = next(iter(spec))
            return _field_error(path, op, spec[op], doc, inverted, {path: spec})
        return _query_details({path: condition}, doc, inverted, matcher)
    return _field_error(path, "$eq", condition, doc, inverted, {path: condition})


def _expr_result(expression: Any, doc: Mapping) -> Any:
    from ..pipeline.expression.match_expr import MISSING, evaluate

    try:
        value = evaluate(expression, doc)
    except Exception:  # pragma: no cover - errInfo is best effort; the match itself raised already
        return False
    return None if value is MISSING else value


def _query_details(query: Mapping[str, Any], doc: Mapping, inverted: bool,
                   matcher: Callable) -> dict:
    clauses = _leaf_clauses(query)
    if len(clauses) != 1:
        failing = [{"index": i, "details": _clause_details(k, v, doc, inverted, matcher)}
                   for i, (k, v) in enumerate(clauses)
                   if bool(matcher({k: v}, doc)) == inverted]
        return {"operatorName": "$and",
                ("clausesSatisfied" if inverted else "clausesNotSatisfied"): failing}
    key, value = clauses[0]
    return _clause_details(key, value, doc, inverted, matcher)


def _clause_details(key: str, value: Any, doc: Mapping, inverted: bool,
                    matcher: Callable) -> dict:
    if key == "$jsonSchema":
        if inverted:
            return {"operatorName": "$jsonSchema", "specifiedAs": {"$jsonSchema": value},
                    "reason": "schema matched"}
        return _jsonschema_details(value, doc)
    if key in ("$and", "$or", "$nor"):
        child_inverted = (not inverted) if key == "$nor" else inverted
        entries = []
        for index, clause in enumerate(value):
            matched = bool(matcher(clause, doc))
            if matched == child_inverted:
                entries.append({"index": index,
                                "details": _query_details(clause, doc, child_inverted, matcher)})
        label = "clausesSatisfied" if inverted else "clausesNotSatisfied"
        return {"operatorName": key, label: entries}
    if key == "$expr":
        return {"operatorName": "$expr", "specifiedAs": {"$expr": value},
                "reason": "expression did match" if inverted else "expression did not match",
                "expressionResult": _expr_result(value, doc)}
    if key in ("$alwaysFalse", "$alwaysTrue"):
        return {"operatorName": key, "specifiedAs": {key: value},
                "reason": "expression always evaluates to true" if inverted
                else "expression always evaluates to false"}
    return _field_details(key, value, doc, inverted, matcher)


def validation_error_info(validator: Mapping[str, Any], doc: Mapping[str, Any],
                          match: Callable[[Mapping, Mapping], bool] | None = None) -> dict:
    """Build the ``errInfo`` of a "Document failed validation" error for ``doc``.

    ``{"failingDocumentId": <_id>, "details": {...}}`` with ``details`` shaped like MongoDB
    5.0+ (``operatorName``, ``schemaRulesNotSatisfied``, ``clausesNotSatisfied``...)."""
    matcher = make_filter_applies(match) if match is not None else make_filter_applies()
    info: dict = {}
    if "_id" in doc:
        info["failingDocumentId"] = doc["_id"]
    info["details"] = _query_details(validator, doc, False, matcher)
    return info


# ---------------------------------------------------------------------------------------
# Collection options and write-time enforcement
# ---------------------------------------------------------------------------------------

def validation_options(validator: Mapping[str, Any] | None = None,
                       validationLevel: str = "strict",
                       validationAction: str = "error",
                       allow_error_and_log: bool = False) -> dict:
    """Check and normalise a collection's validation options (createCollection/collMod).

    Returns ``{"validator": ..., "validationLevel": ..., "validationAction": ...}``; bad
    values raise OperationFailure (BadValue) naming the argument. ``"errorAndLog"`` is
    "New in version 8.1" (manual, *Choose How to Handle Invalid Documents*), so a modelled
    8.0 server refuses it unless ``allow_error_and_log`` is set."""
    if validationLevel not in VALIDATION_LEVELS:
        raise _fail(BAD_VALUE, f"Enumeration value '{validationLevel}' for field"
                               " 'validationLevel' is not a valid value.")
    if validationAction not in VALIDATION_ACTIONS or (
            validationAction == "errorAndLog" and not allow_error_and_log):
        message = (f"Enumeration value '{validationAction}' for field 'validationAction' is"
                   " not a valid value.")
        if validationAction == "errorAndLog":
            message += (" (validationAction 'errorAndLog' is new in MongoDB 8.1; the embedded"
                        " engine models MongoDB 8.0)")
        raise _fail(BAD_VALUE, message)
    check_validator(validator)
    return {"validator": dict(validator) if validator else {},
            "validationLevel": validationLevel, "validationAction": validationAction}


def check_write(options: Mapping[str, Any], new_doc: Mapping[str, Any],
                old_doc: Mapping[str, Any] | None = None, bypass: bool = False,
                match: Callable[[Mapping, Mapping], bool] | None = None,
                namespace: str | None = None) -> None:
    """Enforce validation for one insert (``old_doc is None``) or update.

    * ``bypass`` (bypassDocumentValidation), level ``"off"`` or no validator: no check.
    * level ``"moderate"``: updates to documents that already failed are not checked.
    * action ``"error"``: raise WriteError 121 with ``errInfo``; ``"warn"``: log a warning
      on the ``labkit.engine`` logger and accept (the server's log id 20294, "Document
      would fail validation", with ``namespace``/``document``/``errInfo`` attributes as
      record extras); ``"errorAndLog"`` (8.1+): log and raise.
    """
    validator = options.get("validator")
    level = options.get("validationLevel", "strict")
    action = options.get("validationAction", "error")
    if bypass or not validator or level == "off":
        return
    if old_doc is not None and level == "moderate" and not document_matches(validator, old_doc, match):
        return
    if document_matches(validator, new_doc, match):
        return
    err_info = validation_error_info(validator, new_doc, match)
    if action in ("warn", "errorAndLog"):
        logger.warning("Document would fail validation" if action == "warn"
                       else "Document failed validation",
                       extra={"logId": 20294 if action == "warn" else None,
                              "namespace": namespace, "document": dict(new_doc),
                              "errInfo": err_info, "validationAction": action})
        if action == "warn":
            return
    message = "Document failed validation"
    raise WriteError(message, DOCUMENT_VALIDATION_FAILURE,
                     {"index": 0, "code": DOCUMENT_VALIDATION_FAILURE, "errmsg": message,
                      "errInfo": err_info})
