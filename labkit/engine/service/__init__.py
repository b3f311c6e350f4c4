"""The operation boundary every public operation passes through (``boundary``): the per-store lock,
server-shaped errors, maxTimeMS and the current operation. Server: ``service_entry_point_common.cpp``,
``curop.cpp``, ``operation_context.cpp``.

May import: ``base``.
"""
