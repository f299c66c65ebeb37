"""Exceptions the workbench raises. Everything a user can cause is a :class:`WorkbenchError`.

The CLI turns any ``WorkbenchError`` into one line on stderr and exit code 2; a traceback
means a bug in the workbench, never bad input.
"""

from __future__ import annotations


def _visible(path: str) -> str:
    """A path as it can be printed: control characters and undecodable bytes shown escaped."""
    from workbench.common.text import safe

    return safe(path)


class WorkbenchError(Exception):
    """Base class: an error the user can act on (bad input, bad config, bad usage)."""


class InputError(WorkbenchError):
    """An input file cannot be used at all (missing, empty, unreadable, no valid row).

    A damaged *line* is never an exception: it lands in the ledger's ``malformed`` bucket.
    """

    def __init__(self, path: str, reason: str, line: int | None = None, field: str | None = None):
        self.path = path
        self.reason = reason
        self.line = line
        self.field = field
        shown = _visible(path)
        where = shown if line is None else f"{shown}:{line}"
        what = f"field '{field}': {reason}" if field else reason
        super().__init__(f"{where}: {what}")


class ConfigError(WorkbenchError):
    """A config file, preset or parameter is invalid; the message names the file and the key."""
