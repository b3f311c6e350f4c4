"""Lesson 13, Schema versioning: v1 `name`, v2 `firstName`/`lastName`, no downtime:
its exercises and their checkers.

Notebook: ``notebooks/13_schema_versioning.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


_MIGRATE_ADDRESSES = ["12 High Street, York", "Flat 2, 5 Mill Lane, New York", "1 Quay Road, Cork",
                      "Unit 7, Dock Street, Yorkshire, Leeds", "9 Rue Haute, Liège"]


def _migration_customers() -> tuple[list[dict], list[dict]]:
    """The checker's pristine customers: 237 still v1 (the address as one string, the city after the last
    ', '), 22 already v2 (address: {street, city})."""
    v1 = [{"_id": f"c:{i:04d}", "schemaVersion": 1, "name": f"Customer {i}",
           "address": _MIGRATE_ADDRESSES[i % len(_MIGRATE_ADDRESSES)]} for i in range(1, 238)]
    v2 = [{"_id": f"c:{i:04d}", "schemaVersion": 2, "name": f"Customer {i}",
           "address": {"street": "3 Bridge Street", "city": "Bath"}} for i in range(238, 260)]
    return v1, v2


def _upgraded_address(text: str) -> dict:
    street, _, city = text.rpartition(", ")
    return {"street": street, "city": city}


def _half_migrated(docs: Any) -> str | None:
    """A customer left between the two shapes (what a crash between two writes of one customer leaves)."""
    for d in docs:
        v, a = d.get("schemaVersion"), d.get("address")
        if (v == 1 and not isinstance(a, str)) or (v == 2 and not isinstance(a, dict)):
            return d["_id"]
    return None


@LESSON.exercise(BehaviourCheck, "13-migrate-batches",
                 takes=steps.db_and_function("migrate_batch"))
def _check_migrate_batches(lab: Lab, db: Any, migrate_batch: Callable) -> str:
    """A transfer of the lesson's background migration: customers' address string -> {street, city}."""
    v1, v2 = _migration_customers()
    batch_size, calls, sizes = 50, 0, []
    with lab.sandbox() as box:
        coll = box.db["customers"]
        coll.insert_many([dict(d) for d in v1 + v2])
        coll.create_index([("schemaVersion", 1), ("_id", 1)])
        rec = box.recorder
        # 1. one call at a time, watching the writes each call sends
        while calls < 20:
            left = coll.count_documents({"schemaVersion": 1})
            rec.clear()
            returned = lab.call(migrate_batch, coll, batch_size)
            statements = rec.write_statements()
            calls += 1
            moved = left - coll.count_documents({"schemaVersion": 1})
            sizes.append(moved)
            if not isinstance(returned, int) or isinstance(returned, bool):
                raise NotYet(f"migrate_batch returned {returned!r}; return the number of customers it upgraded "
                             "(an int).")
            if returned and not moved:
                raise NotYet(f"a call returned {returned} but every customer is still v1: set `schemaVersion: 2` "
                             "in the update, or the same documents are found again.")
            if moved > batch_size:
                raise NotYet(f"one call upgraded {moved} customers with batch_size={batch_size}: limit the find to "
                             "`batch_size` documents (`.limit(batch_size)`).")
            if returned != moved:
                raise NotYet(f"a call returned {returned} but upgraded {moved} customers; return how many it "
                             "upgraded.")
            if moved and statements > moved:
                raise NotYet(f"a call sent {statements} write statements to upgrade {moved} customers: one update "
                             "per customer must do the whole change (`$set` the new address and schemaVersion "
                             "together). Two writes per customer leave a half-migrated one when the process stops "
                             "between them.")
            if returned == 0:
                break
        docs = {d["_id"]: d for d in coll.find()}
        if any(d.get("schemaVersion") == 1 for d in docs.values()):
            raise NotYet(f"after {calls} calls some customers are still v1 (upgraded per call: {sizes[:6]}): set "
                         "`schemaVersion: 2` in the update, or the same documents are found again.")
        for orig in v1:
            d, want = docs[orig["_id"]], _upgraded_address(orig["address"])
            if d.get("schemaVersion") != 2 or isinstance(d.get("schemaVersion"), (bool, str)):
                raise NotYet(f"{d['_id']} has schemaVersion {d.get('schemaVersion')!r}: the readers (and the next "
                             "batch, and the dual query) look for the number 2, not a string.")
            if d.get("address") != want:
                raise NotYet(f"{orig['address']!r} became address={d.get('address')!r}; expected {want}: the city "
                             "is what follows the LAST ', ' (streets may contain commas), the street all before "
                             "it: `text.rpartition(\", \")`.")
            if d.get("name") != orig["name"]:
                raise NotYet(f"{d['_id']} lost or changed its name: update only the address and the version.")
        for orig in v2:
            if docs[orig["_id"]] != orig:
                raise NotYet(f"the v2 customer {orig['_id']} was changed; select only `schemaVersion: 1` "
                             "documents.")

        # 2. resumability: the process dies in the middle of a batch, then the migration is started again
        coll.delete_many({})
        coll.insert_many([dict(d) for d in v1 + v2])
        with lab.until_crash():
            migrate_batch(steps.CrashingDb(box.db, 7)["customers"], batch_size)
        stuck = _half_migrated(coll.find())
        if stuck:
            raise NotYet(f"the process stopped in the middle of a batch and left {stuck} half-migrated (neither "
                         "the v1 nor the v2 shape): one update per customer must make the whole change.")
        resumed = 0
        for _ in range(20):
            n = lab.call(migrate_batch, coll, batch_size)
            resumed += 1
            if not n:
                break
        originals = {o["_id"]: o for o in v1}
        wrong = [d["_id"] for d in coll.find() if d.get("schemaVersion") != 2
                 or (d["_id"] in originals and d.get("address") != _upgraded_address(originals[d["_id"]]["address"]))]
        if wrong:
            raise NotYet(f"after a crash in the middle of a batch and {resumed} more calls, {len(wrong)} customers "
                         f"are not migrated right (e.g. {wrong[0]}): the next run must pick up exactly the "
                         "customers still at schemaVersion 1 (find them by their version, not by a position or a "
                         "counter kept in Python).")
    return (f"237 customers upgraded in batches of {[s for s in sizes if s]}, one write per customer, v2 customers "
            "untouched, streets and cities split at the last comma; after a crash in the middle of a batch the "
            "next runs finished the job.")


LESSON.add(Prediction, "13-predict-dual-query-after-migration")


# Customers of the changed scenario: v1 keeps the address as one string (city after the last ", "), v2 as a
# subdocument. Cities are chosen so that some are the end of others (York / New York) and some hold regex
# characters (St. Albans, where "." would also match "StX Albans").
_CITY_CUSTOMERS = [
    (1, "1 High Street, York"), (1, "2 Broadway, New York"), (1, "3 Abbey Mill, St. Albans"),
    (1, "4 Main Road, StX Albans"), (1, "5 York Road, Leeds"), (1, "6 Dock Street, Leeds"),
    (2, ("7 Castle Way", "York")), (2, ("8 Fifth Avenue", "New York")), (2, ("9 Market Place", "St. Albans")),
    (2, ("10 Quay Side", "Leeds")), (2, ("11 York Street", "Hull")), (1, "12 Station Road, Hull"),
]


def _city_docs() -> list[dict]:
    out = []
    for i, (version, address) in enumerate(_CITY_CUSTOMERS, start=1):
        if version == 1:
            out.append({"_id": f"customer:{i}", "schemaVersion": 1, "address": address})
        else:
            out.append({"_id": f"customer:{i}", "schemaVersion": 2,
                        "address": {"street": address[0], "city": address[1]}})
    return out


def _city_of(doc: dict) -> str:
    a = doc["address"]
    return a["city"] if isinstance(a, dict) else a.rsplit(", ", 1)[-1]


def _city_filter_call(args: Any) -> tuple:
    """``ex.check(city_filter)`` (the first function, when several things were passed)."""
    city_filter = args[0] if isinstance(args, tuple) and len(args) == 1 else args
    if isinstance(args, tuple) and len(args) > 1:
        city_filter = next((a for a in args if callable(a)), None)
    if not callable(city_filter):
        raise NotYet("pass your function: `ex.check(city_filter)` (it takes a city and returns one filter dict).")
    return (city_filter,)


@LESSON.exercise(BehaviourCheck, "13-dual-query-city", takes=_city_filter_call)
def _check_city_filter(lab: Lab, city_filter: Callable) -> str:
    from pymongo.errors import OperationFailure

    docs = _city_docs()
    with lab.sandbox() as box:
        coll = box.db["customers"]
        coll.insert_many(docs)
        for city in ("York", "New York", "St. Albans", "Leeds", "Hull"):
            query = city_filter(city)
            if not isinstance(query, dict):
                raise NotYet(f"city_filter({city!r}) returned {type(query).__name__}; return one filter dict "
                             "such as {\"$or\": [...]}, used by one find().")
            try:
                got = sorted(d["_id"] for d in coll.find(query, {"_id": 1}))
            except OperationFailure as exc:
                raise NotYet(f"the server rejects the filter for {city!r}: {exc}") from None
            want = sorted(d["_id"] for d in docs if _city_of(d) == city)
            extra = [d for d in docs if d["_id"] in set(got) - set(want)]
            missing = [d for d in docs if d["_id"] in set(want) - set(got)]
            if missing and all(d["schemaVersion"] == 1 for d in missing):
                raise NotYet(f"for {city!r} your filter misses the v1 customers {[d['_id'] for d in missing]}: "
                             "during the migration half the data still has the address as one string; add a "
                             "branch for schemaVersion 1 that matches the end of that string.")
            if missing and all(d["schemaVersion"] == 2 for d in missing):
                raise NotYet(f"for {city!r} your filter misses the v2 customers {[d['_id'] for d in missing]}: "
                             "their city is in `address.city`; add a branch for schemaVersion 2.")
            if missing:
                raise NotYet(f"for {city!r} your filter misses {[d['_id'] for d in missing]}.")
            if extra:
                wrong_cities = sorted({_city_of(d) for d in extra})
                if all(d["schemaVersion"] == 2 for d in extra):
                    raise NotYet(f"for {city!r} your filter also finds the v2 customers in {wrong_cities}: in v2 "
                                 "the city is a field of its own, so compare `address.city` by equality (a regex "
                                 "there matches any city containing the name).")
                if any(c.endswith(city) and c != city for c in wrong_cities):
                    raise NotYet(f"for {city!r} your filter also finds customers in {wrong_cities}: the pattern is "
                                 "not anchored at the start of the city. Match ', ' + city at the end of the "
                                 "string (\", York$\").")
                if any(c.replace("X", ".") == city for c in wrong_cities):
                    raise NotYet(f"for {city!r} your filter also finds customers in {wrong_cities}: '.' in a "
                                 "regular expression matches any character; escape the city with `re.escape`.")
                if any(city in d["address"] if isinstance(d["address"], str) else False for d in extra):
                    raise NotYet(f"for {city!r} your filter also finds {[d['_id'] for d in extra]}, whose street "
                                 "contains the name: the city is what follows the LAST ', ', so anchor the "
                                 "pattern at the end ($).")
                raise NotYet(f"for {city!r} your filter also finds {[d['_id'] for d in extra]} (in {wrong_cities}).")
    return ("every city's customers found in both versions with one query, and no customer of a city whose name "
            "merely ends the same way.")


