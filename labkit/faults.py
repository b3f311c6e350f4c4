"""Explicit fault injection for consistency lessons (introduced in ``notebooks/05_two_way.ipynb``).

Learner code marks the points between its writes with ``checkpoint("name")``; a lesson then runs that code
under ``crash_at("name")`` to simulate the process dying right there. Nothing is patched or hidden: the crash
is an ordinary exception raised at a point the code itself names, so it works the same on the embedded engine
and on a real server.

    def follow(db, a, b):
        db.follows.insert_one(...)
        labkit.faults.checkpoint("after follows insert")
        db.users.update_one(...)

    with labkit.faults.crash_at("after follows insert"):
        follow(db, "user:234", "user:112")      # raises SimulatedCrash after the first write
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator

_state = threading.local()


class SimulatedCrash(RuntimeError):
    """The process 'died' at a checkpoint (raised by :func:`checkpoint` under :func:`crash_at`)."""


def _plan() -> dict:
    if not hasattr(_state, "plan"):
        _state.plan = {}
    return _state.plan


def checkpoint(name: str) -> None:
    """Mark a point between writes; raises :class:`SimulatedCrash` when a crash is planned here."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"checkpoint(name={name!r}): name must be a non-empty string")
    plan = _plan()
    if name not in plan:
        return
    plan[name]["seen"] += 1
    if plan[name]["seen"] in plan[name]["on"]:
        raise SimulatedCrash(f"simulated crash at checkpoint {name!r} (call {plan[name]['seen']})")


@contextlib.contextmanager
def crash_at(name: str, *, on: int | list[int] = 1) -> Iterator[None]:
    """Within the block, crash at checkpoint ``name`` on its ``on``-th pass (1 = first; a list for several).

    The :class:`SimulatedCrash` propagates out of the block, as a real failure would.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"crash_at(name={name!r}): name must be a non-empty string naming a checkpoint")
    passes = [on] if isinstance(on, int) and not isinstance(on, bool) else on
    if not isinstance(passes, list) or not passes or not all(isinstance(p, int) and p >= 1 for p in passes):
        raise ValueError(f"crash_at(on={on!r}): on must be an int >= 1 or a non-empty list of them")
    plan = _plan()
    previous = plan.get(name)
    plan[name] = {"on": set(passes), "seen": 0}
    try:
        yield
    finally:
        if previous is None:
            plan.pop(name, None)
        else:
            plan[name] = previous
