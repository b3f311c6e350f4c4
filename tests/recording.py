"""What tests record: a command listener for tests that compare what two paths publish (pymongo's monitoring
API), and the change events a change stream delivers."""
from __future__ import annotations

from pymongo import monitoring


class EventRecorder(monitoring.CommandListener):
    """Every started / succeeded / failed event as ``(kind, command name, command-or-reply-or-failure)``;
    the session id (``lsid``) is left out of commands, since each run has its own."""

    def __init__(self) -> None:
        self.events: list = []

    def started(self, e) -> None:
        self.events.append(("started", e.command_name, {k: v for k, v in e.command.items() if k != "lsid"}))

    def succeeded(self, e) -> None:
        self.events.append(("succeeded", e.command_name, e.reply))

    def failed(self, e) -> None:
        self.events.append(("failed", e.command_name, e.failure))


def change_events(stream, n: int, wait: float = 5.0) -> list:
    """The next ``n`` change events of ``stream`` (``try_next`` until there are ``n`` or ``wait`` seconds
    passed: fewer when the stream delivers fewer)."""
    import time

    out: list = []
    deadline = time.monotonic() + wait
    while len(out) < n and time.monotonic() < deadline:
        ev = stream.try_next()
        if ev is not None:
            out.append(ev)
    return out
