"""MongoDB's wire protocol on a loopback port (``wire``: ``python -m labkit serve``), a thin adapter over
``commands``. Server: ``src/mongo/transport/``.

May import: every package above and the client.
"""
