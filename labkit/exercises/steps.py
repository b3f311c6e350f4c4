"""Shared steps of the checkers: the shape of a call, the learner's data against the remembered setup,
stand-ins that stop or count what the learner's code does.

Every helper here either returns what it found or raises :class:`NotYet` with the learner-facing message.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises.outcomes import NotYet
from labkit.exercises.problem import remembered

# --- the shape of the call -------------------------------------------------------------------------------


def db_and_function(args: Any, name: str, db: str = "db") -> tuple[Any, Callable]:
    """Unpack ``ex.check(db, function)``; explain the call when the learner passed something else."""
    if not (isinstance(args, tuple) and len(args) == 2 and callable(args[1])):
        raise NotYet(f"call it with the database and your function: `ex.check({db}, {name})`.")
    return args


def pair(args: Any, what: str) -> tuple:
    """Unpack a call with two arguments; ``what`` is the call the task names."""
    if not (isinstance(args, tuple) and len(args) == 2):
        raise NotYet(f"call it with two arguments: {what}.")
    return args


def is_collection(x: Any) -> bool:
    """A collection (pymongo, embedded or mongomock): what has find, index_information and insert_one."""
    return all(callable(getattr(type(x), m, None)) for m in ("find", "index_information", "insert_one"))


def is_database(x: Any) -> bool:
    """A database (it lists its collections)."""
    return callable(getattr(type(x), "list_collection_names", None))


def is_function(x: Any) -> bool:
    """A function the learner wrote (a collection or database is callable too, but only to raise TypeError)."""
    return callable(x) and not is_collection(x) and not is_database(x)


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


def gone_or_added(setup: dict, now: dict, what: str, where: str, why: str) -> str | None:
    """A message when documents of the setup are missing from ``now`` or ``now`` has documents it never had."""
    gone = [i for i in setup if i not in now]
    if gone:
        return (f"{len(gone)} of the {len(setup)} {what} of the setup are gone from {where} (e.g. {gone[0]!r}); "
                f"{why} Re-run the practice setup cell and try again.")
    extra = [i for i in now if i not in setup]
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
