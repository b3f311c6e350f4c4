"""Lesson 07 (Enforce the shape with schema validation): its exercises and their checkers.

Notebook: ``notebooks/07_validation.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, DesignQuestion, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(DesignQuestion, "07-post-validator", takes=steps.VALIDATOR)
def _check_post_validator(validator: Any) -> str:
    import datetime as dt

    from pymongo.errors import OperationFailure

    schema = validator.get("$jsonSchema")
    used = _schema_keywords(schema) if isinstance(schema, dict) else set()
    if "type" in used and "bsonType" not in used:
        raise NotYet("MongoDB's `$jsonSchema` names BSON types with `bsonType` (\"string\", \"date\", \"int\"); "
                     "JSON Schema's `type: 'integer'` and friends are not BSON types, and there is no JSON "
                     "`date` type at all. Use `bsonType`.")
    if "format" in used:
        raise NotYet("MongoDB's `$jsonSchema` does not support the `format` keyword (the server refuses it); use "
                     "`bsonType: \"date\"` for dates and `pattern` for string shapes.")
    coll = steps.validated_collection(validator, "exercise_07", "posts")
    when = dt.datetime(2026, 10, 2, 12)
    good = [{"_id": "p1", "authorId": "user:112", "title": "favorite pizza", "createdAt": when},
            {"_id": "p2", "authorId": "user:234", "title": "x" * 200, "createdAt": when, "location": "Sacramento"}]
    bad = [
        ({"_id": "b1", "authorId": 112, "title": "t", "createdAt": when}, "a numeric authorId"),
        ({"_id": "b2", "authorId": "112", "title": "t", "createdAt": when}, "an authorId without the 'user:' prefix"),
        ({"_id": "b8", "authorId": "guest-user:9", "title": "t", "createdAt": when},
         "an authorId that contains 'user:' but does not start with it ('guest-user:9'; anchor the pattern: '^user:')"),
        ({"_id": "b9", "authorId": "user9", "title": "t", "createdAt": when},
         "an authorId 'user9' without the colon (the prefix is 'user:', colon included)"),
        ({"_id": "b10", "authorId": "user:1", "title": 42, "createdAt": when},
         "a numeric title (minLength/maxLength apply to strings only: add `bsonType: \"string\"`)"),
        ({"_id": "b3", "authorId": "user:1", "title": "", "createdAt": when}, "an empty title"),
        ({"_id": "b4", "authorId": "user:1", "title": "x" * 201, "createdAt": when}, "a 201-character title"),
        ({"_id": "b5", "authorId": "user:1", "title": "t", "createdAt": "2026-10-02"}, "createdAt given as a string"),
        ({"_id": "b6", "authorId": "user:1", "title": "t"}, "a post without createdAt"),
        ({"_id": "b7", "title": "t", "createdAt": when}, "a post without authorId"),
    ]
    try:
        return _try_post_validator(coll, good, bad)
    except (NotImplementedError, OperationFailure) as exc:  # an expression the embedded engine cannot evaluate
        if isinstance(exc, OperationFailure) and getattr(exc, "code", None) not in (115, 1):
            raise
        reason = str(exc).split(", full error:")[0]
        raise NotYet(f"the embedded engine cannot evaluate part of this validator ({reason}). The task asks for "
                     "`$jsonSchema` rules (`bsonType`, `pattern`, `minLength`/`maxLength`), which it checks "
                     "fully; try that form.") from None


def _failed_rules(info: Any) -> list[str]:
    """The property and operator names an errInfo (``details.schemaRulesNotSatisfied``) says failed."""
    out: list[str] = []
    todo = [info]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for key in ("propertyName", "operatorName"):
                name = node.get(key)
                if isinstance(name, str) and name not in out and name not in ("properties", "$jsonSchema"):
                    out.append(node[key])
            todo += list(node.values())
        elif isinstance(node, list):
            todo += node
    return out[:4]


def _try_post_validator(coll: Any, good: list, bad: list) -> str:
    from pymongo.errors import WriteError

    for doc in good:
        try:
            coll.insert_one(doc)
        except WriteError as exc:
            rules = _failed_rules((exc.details or {}).get("errInfo"))
            why = f" The server's errInfo names {', '.join(rules)}." if rules else ""
            raise NotYet(f"a valid post was rejected: {doc['_id']} ({doc}) with title of {len(doc['title'])} "
                         f"characters (extra fields such as `location` must stay allowed).{why}") from None
    steps.refuses_each(coll, bad, "tighten the rules.")
    return f"valid posts pass and each of the {len(bad)} bad ones is rejected with code 121."


LESSON.add(Prediction, "07-predict-strict-repair")


PRODUCTS_SCHEMA = {
    "bsonType": "object",
    "required": ["sku", "name", "tags"],
    "properties": {
        "sku": {"bsonType": "string", "pattern": "^SKU-"},
        "name": {"bsonType": "string", "minLength": 1},
        "tags": {"bsonType": "array", "maxItems": 5, "items": {"bsonType": "string"}},
    },
}


def legacy_products() -> list[dict]:
    """Products as an old import wrote them (a few break ``PRODUCTS_SCHEMA``), for lesson 07's exercise."""
    return [
        {"_id": 1, "sku": "SKU-1", "name": "Kettle", "tags": ["kitchen", "steel"]},
        {"_id": 2, "sku": "SKU-2", "name": "Lamp", "tags": "desk, led,white"},
        {"_id": 3, "sku": "SKU-3", "name": "Chair", "tags": ["oak", "dining", "set", "brown", "solid", "wax",
                                                            "nordic"]},
        {"_id": 4, "sku": "SKU-4", "name": "", "tags": ["garden"]},
        {"_id": 5, "sku": "SKU-5", "name": "Mug"},
        {"_id": 6, "sku": "SKU-6", "name": "Rug", "tags": ["wool", "blue", "hand-made", "large", "round", "soft",
                                                          "washable", "sale"]},
    ]


def _tag_list(doc: dict) -> list:
    tags = doc.get("tags")
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    return list(tags or [])


@LESSON.exercise(BehaviourCheck, "07-migrate-products",
                 takes=steps.db_and_function("migrate", db="practice"))
def _check_migrate_products(lab: Lab, like: Any, migrate: Callable) -> str:
    from pymongo.errors import WriteError

    with lab.sandbox() as box:
        db = box.db
        before = legacy_products()
        db.products.insert_many([dict(d) for d in before])
        db.command("collMod", "products", validator={"$jsonSchema": PRODUCTS_SCHEMA},
                   validationLevel="strict", validationAction="error")
        box.recorder.clear()
        lab.call(migrate, db, raises={WriteError: lambda exc: (
            f"the server refused one of your updates (code {exc.code}): under `strict` the document an update "
            "produces must be valid; fix the whole document in one update.")})
        commands = box.recorder.commands
        statements = box.recorder.write_statements()
        after = {d["_id"]: d for d in db.products.find()}
        failing = sorted(d["_id"] for d in db.products.find({"$nor": [{"$jsonSchema": PRODUCTS_SCHEMA}]}))
        options = db.products.options()
    if options.get("validationLevel") != "strict" or options.get("validationAction") != "error":
        raise NotYet("leave the rules as they are (strict, error): the migration repairs documents; it must not "
                     "loosen the validator.")
    missing = [d["_id"] for d in before if d["_id"] not in after]
    if missing:
        raise NotYet(f"product(s) {missing} were deleted: repair them instead; a migration loses nothing.")
    if failing:
        raise NotYet(f"product(s) {failing} still break the rules (find them with `$nor: [{{$jsonSchema: ...}}]`).")
    if any(c.get("bypassDocumentValidation") for c in commands):
        raise NotYet("your migration sends writes with `bypass_document_validation=True`: it is not needed (under "
                     "strict, an update whose result is valid passes) and it would let a wrong repair in "
                     "unchecked. Leave it out.")
    if any("collMod" in c for c in commands):
        raise NotYet("your migration changes the collection's rules (collMod) while it runs: for that time every "
                     "other writer may store invalid products. Keep strict/error on; a valid repair passes.")
    for d in before:
        got = after[d["_id"]]
        want = _tag_list(d)
        kept = list(got.get("tags") or []) + list(got.get("moreTags") or [])
        if kept != want:
            lost = [t for t in want if t not in kept]
            if not isinstance(d.get("tags"), list) and [str(t).strip() for t in kept] == want:
                raise NotYet(f"{d['sku']}'s tags {kept} keep the spaces around the commas: strip each tag "
                             "after splitting the string.")
            if lost:
                raise NotYet(f"{d['sku']} lost tag(s) {lost}: tags beyond the fifth go to `moreTags`, in order; "
                             "the bound must not silently drop data.")
            raise NotYet(f"{d['sku']} has tags {got.get('tags')} + moreTags {got.get('moreTags')}, expected "
                         f"{want} in that order (split a comma string and strip the spaces).")
        if not d.get("name") and got.get("name") != d["sku"]:
            raise NotYet(f"{d['sku']} has no usable name; the task says to use its sku ({d['sku']!r}).")
        if d.get("name") and got.get("name") != d["name"]:
            raise NotYet(f"{d['sku']}'s name {d['name']!r} became {got.get('name')!r}: only an empty name is "
                         "replaced by the sku; a migration keeps the data it can.")
        if d["_id"] == 1 and got != d:
            raise NotYet("SKU-1 was already valid but was rewritten: touch only the documents the audit finds.")
    invalid = sum(1 for d in before if d["_id"] != 1)
    if statements > invalid:
        raise NotYet(f"your migration sent {statements} write statements for {invalid} invalid products: it writes "
                     "the valid ones too. Audit first (`$nor: [{$jsonSchema: ...}]`) and repair only what it finds.")
    return ("every product passes the strict rules, no tag was lost (the overflow sits in `moreTags`), and the "
            "valid product was left alone: no bypass needed.")


def _schema_keywords(schema: Any) -> set:
    """Every keyword used anywhere in a ``$jsonSchema`` document."""
    out: set = set()
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k != "properties":
                    out.add(k)
                todo.append(v if k != "properties" or not isinstance(v, dict) else list(v.values()))
        elif isinstance(node, list):
            todo.extend(node)
    return out
