"""Replication's record of writes (``oplog``): the cluster clock and the write-event log that change streams
read. Server: ``src/mongo/db/repl/oplog.cpp`` (the oplog), ``src/mongo/db/op_observer/`` (the observers every
catalog write notifies), ``src/mongo/db/vector_clock.cpp`` (the cluster time).

May import: ``base``, ``bson``.
"""
