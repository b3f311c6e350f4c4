"""The embedded in-process engine behind ``labkit.connect()``: a MongoDB 8.0 look-alike for teaching.

The seam: ``EmbeddedClient`` is a pymongo-compatible client class. Notebooks never import it directly.
The server's semantics are this package's own: matching, projection, sort keys, update operators, aggregation
expressions and stages, indexes, the planner, explain, statistics and errors (docs/embedded-engine.md says where
each rule comes from); mongomock provides only the client/database/collection shell it subclasses.

The package's modules are layered, imports going one way from higher layers to lower ones: the table of which
module sits in which layer is this folder's README.md (and docs/embedded-engine.md, "Layers of the engine";
tests/test_engine_layers.py checks both). Higher modules plug into lower ones through the registry in ``hooks.py``; this module imports them all.
"""
from __future__ import annotations

import mongomock

from .service.boundary import CLIENT_OPERATIONS, guard, lock_for_store
from .catalog.store import EngineServerStore
from .commands.database import EmbeddedDatabase
from .catalog.collection import EmbeddedCollection, Cursor
# modules that plug into lower layers through the engine's registry (hooks.py): importing the engine registers them
from .stats import monitoring  # noqa: F401,E402
from .pipeline import extra_stages
from .catalog import views, timeseries
from . import change_streams  # noqa: F401 - registers watch() (hooks.py)

MODELED_SERVER_VERSION = "8.0"
MAX_DB_NAME_BYTES = 63


def check_database_name(name: str, existing: list[str], as_server: bool = False) -> None:
    """Refuse a database name as pymongo and a MongoDB 8.0 server on Linux do.

    pymongo itself raises ``InvalidName`` for ``""`` and names with space, ``.``, ``$``, ``/``, ``\\``, NUL or
    ``"`` (``pymongo/database_shared.py``); with ``as_server`` (a command arriving over the wire, where no driver
    checked the name) those are the server's InvalidNamespace 73 "Invalid database name: '<name>'". The server
    refuses names over 63 bytes (InvalidNamespace 73, "db name must be at most 63 characters, found: N") and a
    name that differs only in case from an existing database (DatabaseDifferCase 13297). Manual: "Naming
    Restrictions" (Restrictions on Database Names).
    """
    from pymongo.database_shared import _check_name
    from pymongo.errors import InvalidName, OperationFailure
    if not isinstance(name, str):
        raise TypeError("name must be an instance of str, not %s" % type(name))
    if name != "$external":
        try:
            _check_name(name)
        except InvalidName:
            if not as_server:
                raise
            msg = "Invalid database name: '%s'" % name
            raise OperationFailure(msg, 73, {"ok": 0.0, "errmsg": msg, "code": 73,
                                             "codeName": "InvalidNamespace"}) from None
    size = len(name.encode("utf-8"))
    if size > MAX_DB_NAME_BYTES:
        raise OperationFailure("db name must be at most %d characters, found: %d" % (MAX_DB_NAME_BYTES, size),
                               73, {"ok": 0.0, "errmsg": "db name must be at most %d characters, found: %d"
                                    % (MAX_DB_NAME_BYTES, size), "code": 73, "codeName": "InvalidNamespace"})
    low = name.lower()
    for other in existing:
        if other != name and other.lower() == low:
            msg = "db already exists with different case already have: [%s] trying to create [%s]" % (other, name)
            raise OperationFailure(msg, 13297, {"ok": 0.0, "errmsg": msg, "code": 13297,
                                                "codeName": "DatabaseDifferCase"})


def _concerns(kwargs: dict) -> tuple:
    """The write and read concern of ``MongoClient(w=..., wTimeoutMS=..., journal=..., readConcernLevel=...)``
    (pymongo's URI options), removed from ``kwargs``; ``None`` where not given."""
    from pymongo.read_concern import ReadConcern
    from pymongo.write_concern import WriteConcern
    wc = {}
    for k, name in (("w", "w"), ("wTimeoutMS", "wtimeout"), ("wtimeoutms", "wtimeout"), ("journal", "j"),
                    ("j", "j")):
        if k in kwargs:
            wc[name] = kwargs.pop(k)
    level = kwargs.pop("readConcernLevel", kwargs.pop("readconcernlevel", None))
    return (WriteConcern(**wc) if wc else None), (ReadConcern(level) if level is not None else None)


def _check_client_options(kwargs: dict) -> None:
    """MongoClient's keyword options as pymongo checks them (unknown names: ConfigurationError; bad values:
    ValueError/TypeError, pymongo's own messages); ``document_class`` other than dict is refused, not ignored."""
    from pymongo import common
    from pymongo.errors import ConfigurationError
    for k, v in kwargs.items():
        if not k.startswith("_"):  # mongomock's own (_store)
            common.validate(k, v)
    dc = kwargs.get("document_class")
    if dc is not None and dc is not dict:
        from .base.errors import not_modelled
        raise ConfigurationError(not_modelled("MongoClient(document_class=%s)" % getattr(dc, "__name__", dc),
                                              "documents come back as dict"))


@guard(CLIENT_OPERATIONS)  # the operation boundary: lock, server errors, command monitoring (boundary.py)
class EmbeddedClient(mongomock.MongoClient):
    """A private, in-process MongoDB look-alike (one store per instance, unless ``_store`` shares one).

    Thread safe: every operation holds the store's re-entrant lock (labkit/engine/service/boundary.py).
    ``event_listeners=[...]`` (pymongo ``CommandListener`` objects) receive the command events a driver
    would publish (labkit/engine/stats/monitoring.py); ``appname`` is shown in profiler entries."""

    def __init__(self, *args, event_listeners=None, appname=None, **kwargs) -> None:
        from .stats.monitoring import init_client
        _check_client_options(kwargs)
        self._lab_write_concern, self._lab_read_concern = _concerns(kwargs)
        kwargs.setdefault("_store", EngineServerStore())
        super().__init__(*args, **kwargs)
        self._server_version = "8.0.0"
        lock_for_store(self._store)
        init_client(self, event_listeners)
        self._lab_appname = appname

    def get_database(self, name=None, codec_options=None, read_preference=None, write_concern=None,
                     read_concern=None):
        if name is None:
            return super().get_database(name, codec_options, read_preference, write_concern, read_concern)
        db = self._database_accesses.get(name)
        if db is None:
            check_database_name(name, self._store.list_created_database_names())
            db = self._database_accesses[name] = EmbeddedDatabase(
                self, name, read_preference=read_preference or self.read_preference,
                codec_options=codec_options or self._codec_options, _store=self._store[name],
                read_concern=read_concern)
            db._lab_write_concern = write_concern or self._lab_write_concern
            return db
        if any(o is not None for o in (codec_options, read_preference, write_concern, read_concern)):
            return db.with_options(codec_options, read_preference, write_concern, read_concern)
        return db

    def watch(self, *args, **kwargs):
        """pymongo's ``MongoClient.watch``: a change stream on the whole cluster (labkit/engine/change_streams.py)."""
        from .change_streams import watch
        return watch(self, "cluster", args, kwargs)

    # -- the rest of pymongo's MongoClient surface, as for a one-member replica set ----------------------
    @property
    def write_concern(self):
        """The client's write concern (``w=``, ``wTimeoutMS=``, ``journal=`` keyword arguments)."""
        from pymongo.write_concern import WriteConcern
        return self._lab_write_concern or WriteConcern()

    @property
    def read_concern(self):
        """The client's read concern (``readConcernLevel=``)."""
        from pymongo.read_concern import ReadConcern
        return self._lab_read_concern or ReadConcern()

    @property
    def primary(self) -> tuple[str, int]:
        """The primary's address: the one member of the set."""
        return (self.host, self.port)

    @property
    def secondaries(self) -> set:
        """A one-member replica set has no secondaries."""
        return set()

    @property
    def arbiters(self) -> set:
        """A one-member replica set has no arbiters."""
        return set()

    @property
    def nodes(self) -> frozenset:
        """The members' addresses."""
        return frozenset({(self.host, self.port)})

    @property
    def options(self):
        """pymongo's ClientOptions are not modelled (there is no connection to configure)."""
        from .query.planner import unsupported
        raise unsupported("MongoClient.options")

    @property
    def topology_description(self):
        """pymongo's TopologyDescription is not modelled (there is no server monitoring)."""
        from .query.planner import unsupported
        raise unsupported("MongoClient.topology_description")

    def eq_props(self):
        """pymongo's equality properties: the seed addresses and the set's name."""
        return (tuple(sorted(self.nodes)), None, None, None)

    def append_metadata(self, driver_info) -> None:
        """Driver metadata goes into the connection handshake; with no connection it is only kept."""
        from pymongo.driver_info import DriverInfo
        if not isinstance(driver_info, DriverInfo):
            raise TypeError("driver_info must be an instance of DriverInfo, not %s" % type(driver_info))
        self._lab_driver_info = driver_info

    def list_databases(self, session=None, comment=None, **kwargs):
        """pymongo's ``list_databases``: the ``listDatabases`` command's cursor (``filter``, ``nameOnly``)."""
        from .catalog.collection import CommandCursor
        from pymongo.errors import OperationFailure
        from collections.abc import Mapping
        from .matcher.match import fast_matcher
        from .bson.values import type_name as _bson_type
        from .stats import storage_stats as stats
        for k in kwargs:
            if k not in ("filter", "nameOnly", "authorizedDatabases"):
                raise OperationFailure("BSON field 'listDatabases.%s' is an unknown field." % k, 40415)
        flt = kwargs.get("filter")
        if flt is not None and not isinstance(flt, Mapping):
            msg = "BSON field 'listDatabases.filter' is the wrong type '%s', expected type 'object'" % _bson_type(flt)
            raise OperationFailure(msg, 14, {"ok": 0.0, "errmsg": msg, "code": 14, "codeName": "TypeMismatch"})
        name_only = bool(kwargs.get("nameOnly"))
        rows = []
        for n in sorted(self.list_database_names()):
            if name_only:
                rows.append({"name": n})
                continue
            st = stats.db_stats(self.get_database(n))
            rows.append({"name": n, "sizeOnDisk": int(st["totalSize"]), "empty": st["objects"] == 0})
        if flt:
            m = fast_matcher(dict(flt))
            rows = [r for r in rows if m(r)]
        return CommandCursor(rows)

    def __next__(self):
        raise TypeError("'MongoClient' object is not iterable")

    next = __next__

    def list_database_names(self, session=None, comment=None) -> list:
        """pymongo's ``list_database_names``: with ``admin``, ``config`` and ``local``, as on a replica set
        (labkit/engine/catalog/system_dbs.py)."""
        from .catalog import system_dbs
        system_dbs.ensure(self)
        return super().list_database_names()

    def drop_database(self, name_or_database, session=None, comment=None):
        """Drop a database; its incarnation changes, so marks tied to the old one (``fresh_db``) vanish."""
        name = getattr(name_or_database, "name", name_or_database)
        if not isinstance(name, str):
            raise TypeError("name_or_database must be an instance of str or a Database")
        from .catalog import system_dbs
        system_dbs.check_drop(name)
        if name in self._store:  # the database's exclusive lock: wait for transactions that wrote to it
            for st in list(self._store[name]._collections.values()):
                st.wait_for_writers()
        self._store[name].incarnation += 1
        if name in self._store:  # the change streams' drop events, then dropDatabase (repl/oplog.py)
            from .repl.oplog import record_command
            dbs = self._store[name]
            for cname in [n for n, st in dbs._collections.items() if st.is_created and not n.startswith("system.")]:
                record_command(dbs, name, cname, {"drop": cname})
            if dbs.oplog is not None and dbs.oplog.recording():
                record_command(dbs, name, None, {"dropDatabase": 1})
        return super().drop_database(name_or_database)

    def bulk_write(self, models, session=None, ordered=True, verbose_results=False,
                   bypass_document_validation=None, comment=None, let=None, write_concern=None):
        """MongoDB 8.0's client-level bulkWrite (pymongo >= 4.9), see labkit/engine/commands/client_bulk.py."""
        from .commands.client_bulk import client_bulk_write
        return client_bulk_write(self, models, session=session, ordered=ordered, verbose_results=verbose_results,
                                 bypass_document_validation=bypass_document_validation, comment=comment, let=let,
                                 write_concern=write_concern)

    def start_session(self, causal_consistency=None, default_transaction_options=None, snapshot=False):
        """A session with transactions (see labkit/engine/session/sessions.py and docs/embedded-engine.md)."""
        from .session.sessions import start_session
        if snapshot:  # pymongo's SessionOptions: snapshot sessions are not causally consistent
            if causal_consistency:
                from pymongo.errors import ConfigurationError
                raise ConfigurationError("snapshot reads do not support causal_consistency=True")
            causal_consistency = False
        return start_session(self, causal_consistency, default_transaction_options, snapshot)

    def __repr__(self) -> str:
        return "EmbeddedClient(engine='labkit-embedded', models='MongoDB %s')" % MODELED_SERVER_VERSION


# ttl.ttl_pass (a lower layer) tells an embedded client apart through the engine's registry (hooks.py)
from .base import hooks  # noqa: E402

hooks.register("client_class", EmbeddedClient)

__all__ = ["EmbeddedClient", "check_database_name", "EmbeddedDatabase", "EmbeddedCollection", "Cursor", "MODELED_SERVER_VERSION"]
