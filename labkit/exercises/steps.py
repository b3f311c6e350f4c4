"""The steps checkers share, so that a lesson's checker holds only its own logic and messages:

- the shape of a call (``Exercise.takes``): ``call``, ``db_and_function``, ``function``, ``only_function``,
  ``one``, ``collection``, ``database``, ``VALIDATOR``; and what an argument is (``is_collection``...);
- what the learner's writes said (``CommandRecorder.update_specs()``): a ``replacement``, ``fixed_positions``,
  a value ``computed_in_python``; a pipeline run on the checker's data (``aggregate``);
- a capped array (``capped_array``), a validator tried on documents (``validated_collection``,
  ``refuses_each``), index key patterns (``index_keys``);
- the learner's data against the setup copy ``ex.remember`` kept (``setup_of``, ``same_ids``, ``gone_or_added``,
  ``changed_field``, ``added_fields``);
- a shard key measured on a cluster: the call (``client_and``), the key's shape (``shard_key_fields``; with the
  checker's sandbox: ``key_sandbox``),
  sharding and spreading the checker's data (``shard``, ``spread_on_first``), what the key did
  (``key_on_cluster``; all three in order: ``measure_key``) and the mistakes it shows (``shard_key_mistakes``);
- a database that crashes between two writes (``CrashingDb``, ``SimulatedCrash``).

A step that judges raises :class:`NotYet` with the learner-facing message it is given (or its own, for a call's
shape); the others return what they found.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from labkit.exercises.outcomes import NotYet
from labkit.exercises.problem import Takes, remembered

# --- the shape of the call -------------------------------------------------------------------------------


def call(say: str, *tests: Callable[[Any], bool] | None) -> Takes:
    """The shape of ``ex.check(...)`` with one argument per test (None: anything goes), for ``Exercise.takes``.

    When the arguments do not pass, NotYet says ``say``, where ``{type}`` is the type of what was passed."""
    def takes(args: Any) -> tuple:
        if len(tests) == 1:
            ok, parts = tests[0] is None or tests[0](args), (args,)
        else:
            ok = (isinstance(args, tuple) and len(args) == len(tests)
                  and all(test is None or test(a) for test, a in zip(tests, args)))
            parts = args
        if not ok:
            raise NotYet(say.replace("{type}", type(args).__name__))
        return parts
    return takes


def db_and_function(name: str, db: str = "db") -> Takes:
    """``ex.check(db, function)``: the database (or ``db``, as the task names it) and the learner's function."""
    return call(f"call it with the database and your function: `ex.check({db}, {name})`.", None, callable)


def one(say: str, then: Takes | None = None) -> Takes:
    """``ex.check(x)`` with one argument (``say`` for several), then the shape ``then`` of that argument."""
    single = call(say, lambda a: not isinstance(a, tuple))
    return single if then is None else (lambda args: then(single(args)[0]))


def function(name: str) -> Takes:
    """``ex.check(function)``: the learner's function itself, not its result."""
    return call(f"pass your function `{name}` itself (no parentheses), not {{type}}.", is_function)


def only_function(name: str, ex: str = "ex") -> Takes:
    """``ex.check(function)``: one function, not a tuple of things."""
    return one(f"call it with your function only: `{ex}.check({name})`.",
               call(f"pass your function `{name}` itself, not {{type}}.", callable))


#: ``ex.check(validator)``: a non-empty dict
VALIDATOR = call('`validator` must be a dict such as {"$jsonSchema": {...}}.',
                 lambda v: isinstance(v, dict) and bool(v))


def collection(name: str, test: Callable[[Any], bool] | None = None) -> Takes:
    """``ex.check(collection)``; ``name`` is how the task names it (``practice.orders``)."""
    return call(f"pass the collection (`{name}`), not {{type}}.", test or is_collection)


def database(test: Callable[[Any], bool] | None = None) -> Takes:
    """``ex.check(practice)``: the practice database."""
    return call("pass the practice database (`practice`), not {type}.", test or is_database)


def is_collection(x: Any) -> bool:
    """A collection (pymongo, embedded or mongomock): what has find, index_information and insert_one."""
    return all(callable(getattr(type(x), m, None)) for m in ("find", "index_information", "insert_one"))


def is_database(x: Any) -> bool:
    """A database (it lists its collections)."""
    return callable(getattr(type(x), "list_collection_names", None))


def is_function(x: Any) -> bool:
    """A function the learner wrote (a collection or database is callable too, but only to raise TypeError)."""
    return callable(x) and not is_collection(x) and not is_database(x)


# --- what the learner's writes said (``CommandRecorder.update_specs()``) ------------------------------------


def replacement(u: Any) -> bool:
    """Is update ``u`` a replacement (a document without operators: the whole document rewritten)?"""
    return isinstance(u, dict) and bool(u) and not any(str(k).startswith("$") for k in u)


def fixed_positions(specs: list[dict]) -> list[str]:
    """The paths of the updates ``specs`` that name an array position (``roles.2.canEdit``), sorted."""
    return sorted(k for s in specs for op in (s.get("u") or {}).values() if isinstance(op, dict) for k in op
                  if any(part.isdigit() for part in str(k).split(".")))


def computed_in_python(spec: dict, *fields: str) -> bool:
    """Does update ``spec`` write one of ``fields`` with a value computed in Python (a pipeline update, or
    ``$set`` of the field: the read-modify-write that loses a concurrent change)?"""
    u = spec.get("u")
    return isinstance(u, list) or (isinstance(u, dict) and any(f in (u.get("$set") or {}) for f in fields))


def aggregate(coll: Any, pipeline: list) -> list:
    """Run the learner's pipeline on the checker's data; the server's refusal becomes NotYet quoting it."""
    try:
        return list(coll.aggregate(pipeline))
    except Exception as exc:  # noqa: BLE001 - the server's error, explained
        raise NotYet(f"the pipeline fails on the server: {exc}") from None


def is_pipeline(x: Any) -> bool:
    """A list of stage documents."""
    return isinstance(x, list) and all(isinstance(s, dict) for s in x)


def capped_array(doc: dict, field: str, limit: int, *, missing: str, too_long: str) -> list:
    """The array ``field`` of ``doc``, at most ``limit`` long: else NotYet with ``missing`` (not an array) or
    ``too_long`` (formatted with ``n``, its length)."""
    array = doc.get(field)
    if not isinstance(array, list):
        raise NotYet(missing)
    if len(array) > limit:
        raise NotYet(too_long.format(n=len(array)))
    return array


# --- validators -------------------------------------------------------------------------------------------


def validated_collection(validator: dict, db: str, name: str) -> Any:
    """Collection ``name`` created with the learner's ``validator`` on a private embedded engine; the server's
    refusal of the rules becomes NotYet quoting it."""
    from pymongo.errors import OperationFailure

    from labkit.engine import EmbeddedClient

    try:
        return EmbeddedClient()[db].create_collection(name, validator=validator)
    except OperationFailure as exc:
        raise NotYet(f"the server refuses these rules: {exc}") from None


def refuses_each(coll: Any, bad: list[tuple[dict, str]], tighten: str) -> None:
    """Each invalid document of ``bad`` (document, what it is) must fail validation (code 121); ``tighten`` is
    the advice when one is accepted."""
    from pymongo.errors import WriteError

    for doc, what in bad:
        try:
            coll.insert_one(doc)
        except WriteError as exc:
            if exc.code != 121:
                raise NotYet(f"{what} failed with code {exc.code}, not validation (121).") from None
            continue
        raise NotYet(f"{what} was accepted; {tighten}")


# --- indexes ---------------------------------------------------------------------------------------------


def index_keys(coll: Any) -> list[list[tuple[str, Any]]]:
    """Key patterns of a collection's secondary indexes, as lists of (field, direction)."""
    return [[(f, d) for f, d in spec["key"]] for name, spec in sorted(coll.index_information().items())
            if name != "_id_"]


# --- the learner's data against the setup copy (``ex.remember(practice, ...)``) ------------------------------


def setup_of(name: str) -> dict:
    """The setup copy of collection ``name`` kept by ``ex.remember`` ({_id: document}); {} when none was kept."""
    setup = remembered(name)
    return setup if isinstance(setup, dict) else {}


def gone_and_extra(setup: dict, now: dict, *, ordered: bool = True) -> tuple[list, list]:
    """The ids of the setup missing from ``now``, and the ids of ``now`` the setup did not have: sorted (by
    str), or in the order of ``setup`` and ``now`` (``ordered=False``)."""
    gone, extra = [i for i in setup if i not in now], [i for i in now if i not in setup]
    return (sorted(gone, key=str), sorted(extra, key=str)) if ordered else (gone, extra)


def same_ids(setup: dict, now: dict, *, gone: str, extra: str) -> None:
    """Nothing of the setup gone from ``now`` and nothing added: else NotYet with ``gone`` or ``extra``, formatted
    with ``n`` (how many), ``total`` (the setup's size) and ``first`` (the first id, sorted by str)."""
    missing, added = gone_and_extra(setup, now)
    for ids, say in ((missing, gone), (added, extra)):
        if ids:
            raise NotYet(say.format(n=len(ids), total=len(setup), first=ids[0]))


def gone_or_added(setup: dict, now: dict, what: str, where: str, why: str) -> str | None:
    """A message when documents of the setup are missing from ``now`` or ``now`` has documents it never had."""
    gone, extra = gone_and_extra(setup, now, ordered=False)
    if gone:
        return (f"{len(gone)} of the {len(setup)} {what} of the setup are gone from {where} (e.g. {gone[0]!r}); "
                f"{why} Re-run the practice setup cell and try again.")
    if extra:
        return (f"{where} has {len(extra)} {what} the setup did not have (e.g. {extra[0]!r}); re-run the practice "
                "setup cell and try again.")
    return None


_MISSING = object()


def changed_field(setup: dict, now: dict, where: str, skip: tuple[str, ...] = ()) -> str | None:
    """A message naming the first document of ``now`` whose field differs from the setup (fields in ``skip``,
    the ones the task reshapes, are left out)."""
    for i, orig in setup.items():
        doc = now.get(i)
        if doc is None:
            continue
        for f, v in orig.items():
            if f == "_id" or f in skip:
                continue
            if doc.get(f, _MISSING) != v:
                state = "is missing" if f not in doc else f"is {doc.get(f)!r}, not the setup's {v!r}"
                return (f"{where} {i!r}: `{f}` {state}; the task changes the shape, not the data (re-run the "
                        "practice setup cell if it was changed by accident).")
    return None


def added_fields(setup: dict, now: dict, allowed: tuple[str, ...]) -> tuple[Any, list[str]] | None:
    """The first document of ``now`` with fields neither the setup had nor the task adds (``allowed``)."""
    for i, orig in setup.items():
        doc = now.get(i)
        if doc is None:
            continue
        extra = sorted(set(doc) - set(orig) - set(allowed))
        if extra:
            return i, extra
    return None


def hashable(x: Any) -> Any:
    """``x`` itself when it can go into a set, else its repr (a learner's variant may hold a list or a dict)."""
    try:
        hash(x)
    except TypeError:
        return repr(x)
    return x


# --- a shard key measured on a cluster (lessons 40-42) -------------------------------------------------------


def is_client(x: Any) -> bool:
    """A client (it lists its databases; a database or collection does not)."""
    return callable(getattr(type(x), "list_database_names", None))


def client_and(what: str, example: str, then: Callable[[Any], bool] | None = None, say: str = "") -> Takes:
    """``ex.check(client, answer)``: the learner's client of a sharded cluster (``labkit.connect(shards=N)``, or a
    real mongos) and their ``what``; ``then`` tests the answer (NotYet ``say`` when it fails)."""
    both = call(f"call it with the client and your {what}: `{example}`.", None, None)

    def takes(args: Any) -> tuple:
        client, answer = both(args)
        if not is_client(client):
            raise NotYet(f"the first argument must be the client (`client = labkit.connect(shards=3)`), not "
                         f"{type(client).__name__}: `{example}`.")
        from labkit.connection import is_mongos
        if not is_mongos(client):
            raise NotYet("this client is not connected to a sharded cluster (a mongos): use the lesson's "
                         f"`client = labkit.connect(shards=3)`, then `{example}`.")
        if then is not None and not then(answer):
            raise NotYet(say)
        return client, answer
    return takes


def shard_key_fields(key: Any, fields: tuple[str, ...]) -> list[str]:
    """The fields of the shard key a learner proposed for documents with ``fields``; NotYet for a key that is not
    a dict of 1 (ranged) or "hashed" per field, or names a field the documents lack."""
    if not isinstance(key, dict) or not key:
        raise NotYet("give the shard key as a dict of fields, e.g. `{\"field\": 1}` (ranged) or "
                     "`{\"field\": \"hashed\"}`.")
    for f, v in key.items():
        if f not in fields:
            raise NotYet(f"the documents have the fields {', '.join(fields)}; {f!r} is not one of them.")
        if isinstance(v, bool) or (v != 1 and v != "hashed"):
            raise NotYet(f"a shard key field is 1 (ranged) or \"hashed\", not {v!r} (a shard key has no "
                         "descending fields).")
    return list(key)


@contextmanager
def key_sandbox(exercise_id: str, client: Any, key: Any, fields: tuple[str, ...]) -> Iterator[Any]:
    """A shard-key question's checker: the key's shape against the documents' ``fields`` (``shard_key_fields``),
    then a pristine sandbox database on the learner's cluster (``observe.sandbox``), dropped afterwards."""
    from labkit.exercises.observe import sandbox

    shard_key_fields(key, fields)
    with sandbox(exercise_id, client) as box:
        yield box


def shard(coll: Any, key: dict, refusals: dict[str, str] | None = None) -> None:
    """Shard ``coll`` on ``key``. The cluster's refusal becomes NotYet: the message of ``refusals`` whose phrase
    the server's message contains (``{errmsg}`` in it quotes the server), else the server's message and code."""
    from pymongo.errors import OperationFailure

    try:
        coll.database.client.admin.command("shardCollection", coll.full_name, key=key)
    except OperationFailure as exc:
        errmsg = (exc.details or {}).get("errmsg", str(exc))
        say = next((m for phrase, m in (refusals or {}).items() if phrase in errmsg), None)
        raise NotYet(say.format(errmsg=errmsg) if say else
                     f"the cluster refused this key: {errmsg} (code {exc.code}).") from None


def spread_on_first(coll: Any, key: dict, values: list[Any]) -> None:
    """Spread a collection sharded on a ranged ``key`` over the shards: split at the quantiles of the distinct
    ``values`` of its first field (one range per shard) and move the ranges. A hashed first field is left as
    it is: sharded while empty, it already has one range per shard."""
    from bson.min_key import MinKey

    from labkit import sharding

    first = next(iter(key))
    if key[first] == "hashed":
        return
    distinct = sorted(set(values))
    n = len(sharding.shard_names(coll.database.client))
    if len(distinct) < n:
        return
    points = [distinct[len(distinct) * i // n] for i in range(1, n)]
    sharding.spread(coll, [{f: (p if f == first else MinKey()) for f in key} for p in points])


@dataclass
class KeyOnCluster:
    """What a proposed shard key did on the checker's data: the key, the hot read's targeting
    (``labkit.sharding.targeting``), the key's distinct values, and, when new documents were inserted, where
    they landed (documents per shard) and whether the key's first field only increased."""

    key: dict
    read: dict
    distinct: int
    landed: dict | None = None
    increases: bool = False
    docs: int = 0

    @property
    def busiest(self) -> float:
        """The busiest shard's share of the new documents (0 without new documents)."""
        if not self.landed or not sum(self.landed.values()):
            return 0.0
        return max(self.landed.values()) / sum(self.landed.values())


def key_on_cluster(coll: Any, key: dict, old: list[dict], read: Callable[[], Any],
                   new: list[dict] | None = None) -> KeyOnCluster:
    """Measure ``key`` on ``coll`` (sharded on it and holding ``old``): insert ``new`` counting where each lands,
    explain the hot read (``read()`` returns its cursor) through the router, count the key's distinct values."""
    from labkit import sharding

    fields = list(key)
    landed = sharding.inserts_per_shard(coll, new) if new else None
    targeting = sharding.targeting(read().explain())
    distinct = len({tuple(hashable(d.get(f)) for f in fields) for d in old + (new or [])})
    increases = False
    if new:
        try:
            increases = min(d[fields[0]] for d in new) > max(d[fields[0]] for d in old)
        except (KeyError, TypeError, ValueError):
            pass
    return KeyOnCluster(dict(key), targeting, distinct, landed, increases, len(old) + len(new or []))



def measure_key(coll: Any, key: dict, docs: list[dict], read: Callable[[], Any], *,
                new: list[dict] | None = None, refusals: dict[str, str] | None = None) -> KeyOnCluster:
    """A learner's shard key measured on the checker's data: shard the empty ``coll`` on ``key`` (``shard``,
    with its ``refusals``), load ``docs``, spread them over the shards on the key's first field
    (``spread_on_first``), then measure what the key does (``key_on_cluster`` with ``read`` and ``new``)."""
    shard(coll, key, refusals)
    coll.insert_many(docs, ordered=False)
    first = next(iter(key))
    spread_on_first(coll, key, [d[first] for d in docs])
    return key_on_cluster(coll, key, docs, read, new=new)

#: documents per shard-key value (on average) from which a key's values are said to be shared by too many documents
_SHARED_VALUE = 5


def shard_key_mistakes(m: KeyOnCluster, *, docs: str, series: str, series_count: int, lead: str, then: str,
                       read: str) -> None:
    """The shard-key mistakes of the Scale out lessons, in the order a learner meets them, each with its own
    message in the lesson's words (``docs``: what the documents are; ``series``: what one key value of too few
    stands for, ``series_count`` of them; ``lead``: the field to lead with; ``then``: what to add after it;
    ``read``: the hot read): new documents all on one shard (a monotonically increasing key, or values in one
    range), too few distinct values (ranges that can never split), the hot read broadcast, values shared by many
    documents (a suffix that repeats: the manual's "frequency"), inserts not spread."""
    first = next(iter(m.key))
    if m.landed is not None and m.key[first] == 1 and m.busiest == 1.0:
        n = sum(m.landed.values())
        if m.increases:
            raise NotYet(f"`{first}` first is a monotonically increasing key (every new value is larger): all {n} "
                         f"new {docs} landed on one shard, in the range after the last split point. Lead with a "
                         "field whose new values are spread.")
        raise NotYet(f"all {n} new {docs} landed on one shard: their `{first}` values fall in one range. Lead with "
                     "a field whose new values are spread over the ranges.")
    if m.distinct <= series_count:
        raise NotYet(f"the key {m.key} has only {m.distinct} distinct values (one per {series}): at most "
                     f"{m.distinct} ranges, and all of one {series}'s {docs} stay in one range that can never be "
                     f"split, however large it grows (a jumbo range). Add {then} after {lead}.")
    if m.read["shards contacted"] > 1:
        raise NotYet(f"the hot read ({read}) contacted {m.read['shards contacted']} shards ({m.read['stage']}): the "
                     f"router cannot target it. Lead with {lead}, the field it filters on by equality (ranged or "
                     "hashed).")
    if m.distinct and m.docs / m.distinct >= _SHARED_VALUE:
        raise NotYet(f"the key {m.key} takes only {m.distinct:,} distinct values over {m.docs:,} {docs}: about "
                     f"{m.docs / m.distinct:.0f} {docs} share each value, and the {docs} of one value stay in one "
                     "range that can never be split, however large it grows (a jumbo range). Keep "
                     f"{lead} first and add {then} after it, a field that keeps changing.")
    if m.busiest > 0.7:
        raise NotYet(f"{m.busiest:.0%} of the new {docs} landed on one shard: the inserts are not spread.")


# --- stand-ins: a process that dies between two writes -------------------------------------------------------


class SimulatedCrash(Exception):
    """Raised by the checker's database wrapper to stop a learner's function between two writes."""


_WRITES = ("insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
           "find_one_and_update", "find_one_and_replace", "find_one_and_delete", "bulk_write")


class CrashingDb:
    """A database stand-in that lets the first ``allowed`` writes through and then 'crashes'."""

    def __init__(self, db: Any, allowed: int) -> None:
        self._db, self._left = db, allowed

    def __getitem__(self, name: str) -> "CrashingCollection":
        return CrashingCollection(self._db[name], self)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]


class CrashingCollection:
    def __init__(self, coll: Any, owner: CrashingDb) -> None:
        self._coll, self._owner = coll, owner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._coll, name)
        if name not in _WRITES:
            return attr

        def write(*a: Any, **kw: Any) -> Any:
            if self._owner._left <= 0:
                raise SimulatedCrash("the process died here")
            self._owner._left -= 1
            return attr(*a, **kw)
        return write
