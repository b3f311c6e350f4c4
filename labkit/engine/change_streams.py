"""``watch()`` on the embedded client, a database and a collection: pymongo's ``ChangeStream``, in-process.

pymongo's ``Collection.watch`` / ``Database.watch`` / ``MongoClient.watch`` send ``aggregate`` with a first stage
``$changeStream`` and then ``getMore`` on the tailable, awaitData cursor (the driver specification
``change-streams/change-streams.md``; pymongo's ``change_stream.py``). ``EmbeddedChangeStream`` does the same
against the engine's change stream cursor (``pipeline/change_stream.py``) without a connection: the options go
into the ``$changeStream`` stage as pymongo puts them there, the first batch comes with the aggregate, each
further batch is one getMore that waits up to ``max_await_time_ms`` (the server's default 1 second when it is not
given) for an event written by another thread, and the resume token follows pymongo's rules (the event's
``_id``, or the ``postBatchResumeToken`` after the last event of a batch or an empty batch).

The API is pymongo's: iteration, ``next``, ``try_next``, ``alive``, ``resume_token``, ``close`` and the ``with``
form; the arguments of ``watch()`` are pymongo's. There is no connection to lose, so the driver's automatic resume
after a network error never happens in-process; an error the server raises reaches the caller as pymongo raises
it (``OperationFailure`` with the server's code).
"""
from __future__ import annotations

import copy
from collections import deque
from collections.abc import Mapping
from typing import Any

from bson import Timestamp
from pymongo.errors import InvalidOperation

from .base import hooks
from .pipeline.change_stream import DEFAULT_AWAIT_S, ChangeStreamCursor
from .service.boundary import lock_for_store

DEFAULT_FIRST_BATCH = 101


class EmbeddedChangeStream:
    """pymongo's ``ChangeStream`` over the embedded engine (``CollectionChangeStream``,
    ``DatabaseChangeStream`` and ``ClusterChangeStream`` alike)."""

    def __init__(self, target: Any, kind: str, pipeline: Any = None, full_document: Any = None,
                 resume_after: Any = None, max_await_time_ms: Any = None, batch_size: Any = None,
                 collation: Any = None, start_at_operation_time: Any = None, session: Any = None,
                 start_after: Any = None, comment: Any = None, full_document_before_change: Any = None,
                 show_expanded_events: Any = None, _spec: Any = None) -> None:
        if pipeline is None:
            pipeline = []
        if not isinstance(pipeline, list):  # pymongo's common.validate_list
            raise TypeError("pipeline must be an instance of list")
        if max_await_time_ms is not None and (isinstance(max_await_time_ms, bool)
                                              or not isinstance(max_await_time_ms, int)):
            raise TypeError("max_await_time_ms must be an integer or None")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)):
            raise TypeError("batch_size must be an integer")
        if batch_size is not None and batch_size < 0:
            raise ValueError("batch_size must be >= 0")
        if start_at_operation_time is not None and not isinstance(start_at_operation_time, Timestamp):
            raise TypeError("start_at_operation_time must be an instance of bson.timestamp.Timestamp")
        for name, value in (("resume_after", resume_after), ("start_after", start_after)):
            if value is not None and not isinstance(value, Mapping):
                raise TypeError("%s must be an instance of dict" % name)
        if session is not None and getattr(session, "in_transaction", False):
            from pymongo.errors import OperationFailure
            msg = "Cannot run aggregate with $changeStream in a multi-document transaction."  # (transactions page)
            raise OperationFailure(msg, 263, {"ok": 0.0, "errmsg": msg, "code": 263,
                                              "codeName": "OperationNotSupportedInTransaction"})
        self._target = target
        self._kind = kind
        self._pipeline = copy.deepcopy(pipeline)
        self._full_document = full_document
        self._full_document_before_change = full_document_before_change
        self._uses_start_after = start_after is not None
        self._uses_resume_after = resume_after is not None
        self._resume_token = copy.deepcopy(start_after or resume_after)
        self._start_at_operation_time = start_at_operation_time
        self._show_expanded_events = show_expanded_events
        self._spec = _spec  # aggregate([{"$changeStream": spec}, ...]): the stage's argument as given
        self._max_await_s = DEFAULT_AWAIT_S if max_await_time_ms is None else max_await_time_ms / 1000.0
        self._batch_size = batch_size
        self._collation = collation
        self._comment = comment
        self._client = {"cluster": lambda: target, "database": lambda: target.client,
                        "collection": lambda: target.database.client}[kind]()
        self._buffer: deque = deque()
        self._closed = False
        self._cursor = self._open()

    # -- the aggregate -------------------------------------------------------------------------------------
    def _options(self) -> dict:
        """The ``$changeStream`` document as pymongo builds it (``_change_stream_options``)."""
        if self._spec is not None:
            return self._spec
        options: dict[str, Any] = {}
        if self._full_document is not None:
            options["fullDocument"] = self._full_document
        if self._full_document_before_change is not None:
            options["fullDocumentBeforeChange"] = self._full_document_before_change
        if self._resume_token is not None:
            options["startAfter" if self._uses_start_after else "resumeAfter"] = self._resume_token
        elif self._start_at_operation_time is not None:
            options["startAtOperationTime"] = self._start_at_operation_time
        if self._show_expanded_events:
            options["showExpandedEvents"] = self._show_expanded_events
        if self._kind == "cluster":
            options["allChangesForCluster"] = True
        return options

    def _open(self) -> ChangeStreamCursor:
        from .pipeline.change_stream import split_pipeline
        full = [{"$changeStream": self._options()}] + self._pipeline
        arg, stages = split_pipeline(full)  # $changeStream not first, stages not allowed after it
        if self._kind == "collection":
            db, coll = self._target.database.name, self._target.name
        elif self._kind == "database":
            db, coll = self._target.name, None
        else:
            db, coll = "admin", None
        with lock_for_store(self._client._store):
            cur = ChangeStreamCursor(self._client, db, coll, arg, stages, self._collation)
            try:
                first = DEFAULT_FIRST_BATCH if self._batch_size is None else self._batch_size
                batch = cur.next_batch(first) if first else []
            except BaseException:
                cur.close()
                raise
        self._post_batch(batch, cur)
        return cur

    def _post_batch(self, batch: list, cur: ChangeStreamCursor) -> None:
        self._buffer.extend(batch)
        self._pbrt = cur.pbrt
        if not batch and self._pbrt is not None:  # pymongo's _process_result: an empty first batch
            self._resume_token = copy.deepcopy(self._pbrt)
            self._start_at_operation_time = None

    def _get_more(self) -> None:
        """One getMore: the available events, else wait up to maxAwaitTimeMS for one."""
        cur = self._cursor
        lock = lock_for_store(self._client._store)
        with lock:
            batch = cur.next_batch(self._batch_size or 0)
        if not batch and not cur.invalidated and not cur.closed and self._max_await_s > 0:
            seq = cur.seq
            if cur.log.wait(seq, self._max_await_s):
                with lock:
                    batch = cur.next_batch(self._batch_size or 0)
        self._buffer.extend(batch)
        self._pbrt = cur.pbrt

    def _cursor_alive(self) -> bool:
        return bool(self._buffer) or not (self._cursor.closed or self._cursor.invalidated)

    # -- pymongo's ChangeStream API ------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """Does this cursor have the potential to return more data?"""
        return not self._closed

    @property
    def resume_token(self) -> Any:
        """The cached resume token that will be used to resume after the most recently returned change."""
        return copy.deepcopy(self._resume_token)

    def close(self) -> None:
        """Close this ChangeStream (its cursor on the engine is released)."""
        self._closed = True
        self._cursor.close()
        self._buffer.clear()

    def __iter__(self) -> "EmbeddedChangeStream":
        return self

    def next(self) -> dict:
        """The next change; blocks until one is available (another thread's write), as pymongo does."""
        while self.alive:
            doc = self.try_next()
            if doc is not None:
                return doc
        raise StopIteration

    __next__ = next

    def try_next(self) -> dict | None:
        """The next change if one is available (after at most one getMore), else None."""
        if not self._closed and not self._cursor_alive():
            self._closed = True
        if self._closed:
            raise StopIteration
        if not self._buffer and not (self._cursor.closed or self._cursor.invalidated):
            self._get_more()
        change = self._buffer.popleft() if self._buffer else None
        if not self._cursor_alive():
            self._closed = True
            self._cursor.close()
        if change is None:
            if self._pbrt is not None:
                self._resume_token = copy.deepcopy(self._pbrt)
                self._start_at_operation_time = None
            return None
        try:
            resume_token = change["_id"]
        except KeyError:
            self.close()
            raise InvalidOperation("Cannot provide resume functionality when the resume token is missing.") from None
        if not self._buffer and self._pbrt:
            resume_token = self._pbrt
        self._uses_start_after = False
        self._uses_resume_after = True
        self._resume_token = copy.deepcopy(resume_token)
        self._start_at_operation_time = None
        return change

    def __enter__(self) -> "EmbeddedChangeStream":
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()

    def __del__(self) -> None:
        cur = self.__dict__.get("_cursor")
        if cur is not None:
            cur.close()


def watch(target: Any, kind: str, args: tuple, kwargs: dict) -> EmbeddedChangeStream:
    """``target.watch(*args, **kwargs)`` with pymongo's signature (``kind``: collection, database or cluster)."""
    names = ("pipeline", "full_document", "resume_after", "max_await_time_ms", "batch_size", "collation",
             "start_at_operation_time", "session", "start_after", "comment", "full_document_before_change",
             "show_expanded_events", "_spec")
    if len(args) > len(names):
        raise TypeError("watch() takes at most %d positional arguments" % len(names))
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise TypeError("watch() got an unexpected keyword argument '%s'" % k)
        if k in bound:
            raise TypeError("watch() got multiple values for argument '%s'" % k)
        bound[k] = v
    return EmbeddedChangeStream(target, kind, **bound)


hooks.register("watch", watch)

__all__ = ["EmbeddedChangeStream", "watch"]
