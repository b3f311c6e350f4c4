"""Update operators with the server's rules (``update_ops``) and the scalar-update shortcut (``update_fast``).
Server: ``src/mongo/db/update/``.

May import: the packages above, up to ``matcher``.
"""
