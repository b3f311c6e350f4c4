"""The databases every replica-set member has: ``admin``, ``config`` and ``local`` (manual "Replica Set Members",
"Local Database", "Config Database"; a fresh MongoDB 8.0 replica set lists them in ``listDatabases``).

They are made, once per store, the first time databases are listed (``list_database_names``, ``listDatabases``),
with the collections a new one-member set has that the engine can hold honestly:

* ``admin.system.version``: the feature compatibility version document ``{_id: "featureCompatibilityVersion",
  version: "8.0"}`` (manual "setFeatureCompatibilityVersion");
* ``config.system.sessions`` with its TTL index ``lsidTTLIndex`` (``{lastUse: 1}``, ``expireAfterSeconds: 1800``,
  manual "config.system.sessions") and ``config.transactions`` (empty: the engine keeps its transaction table in
  memory);
* ``local.startup_log``: a capped collection (10 MiB) with one document for this start (``hostname``,
  ``startTime``, ``pid``, ``buildinfo``), as mongod writes it.

Not modelled: ``local.oplog.rs`` and the other replication collections (``system.replset``, ``replset.*``), the
keys in ``admin.system.keys``, users and roles. Dropping ``admin`` or ``local`` is refused as on a replica set
(IllegalOperation 20; ``drop_database.cpp``).
"""
from __future__ import annotations

import datetime
import os
import socket
import time
from typing import Any

from pymongo.errors import OperationFailure

SYSTEM_DATABASES = ("admin", "config", "local")


def ensure(client: Any) -> None:
    """Create the system databases of ``client``'s store unless they were made already."""
    sd = client._store.__dict__
    if sd.get("_lab_system_dbs"):
        return
    sd["_lab_system_dbs"] = True
    admin, config, local = (client.get_database(n) for n in SYSTEM_DATABASES)
    admin["system.version"].insert_one({"_id": "featureCompatibilityVersion", "version": "8.0"})
    config["system.sessions"].create_index([("lastUse", 1)], name="lsidTTLIndex", expireAfterSeconds=1800)
    config.create_collection("transactions")
    local.create_collection("startup_log", capped=True, size=10 * 1024 * 1024)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    host = socket.gethostname()
    local["startup_log"].insert_one({
        "_id": "%s-%d" % (host, int(time.time() * 1000)), "hostname": host,
        "startTime": now.replace(microsecond=0), "startTimeLocal": now.strftime("%a %b %d %H:%M:%S.%f")[:-3],
        "cmdLine": {"replication": {"replSet": "labkit"}}, "pid": os.getpid(),
        "buildinfo": {"version": "8.0.0", "gitVersion": "labkit-embedded", "versionArray": [8, 0, 0, 0]}})


def check_drop(name: str) -> None:
    """Refuse dropping ``admin`` / ``local`` as a replica-set member does."""
    if name == "admin":
        raise OperationFailure("Dropping the 'admin' database is prohibited.", 20,
                               {"ok": 0.0, "errmsg": "Dropping the 'admin' database is prohibited.", "code": 20,
                                "codeName": "IllegalOperation"})
    if name == "local":
        msg = "Cannot drop 'local' database while replication is active"
        raise OperationFailure(msg, 20, {"ok": 0.0, "errmsg": msg, "code": 20, "codeName": "IllegalOperation"})
