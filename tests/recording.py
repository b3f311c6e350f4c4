"""A command listener for tests that compare what two paths publish (pymongo's monitoring API)."""
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
