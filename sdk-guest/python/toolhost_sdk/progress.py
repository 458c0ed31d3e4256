"""Report how far a long call is::

    from toolhost_sdk import progress

    for i, chunk in enumerate(chunks):
        progress.report(i, len(chunks), f"chunk {i + 1} of {len(chunks)}")

A report reaches whoever waits on the call: an MCP client that asked for
progress, the program running the loop, a terminal. With no one listening it
costs next to nothing. The host drops reports that come too fast (more than
one per 20 ms, except the one that reaches ``total``) or that do not move
forward, so report as often as is natural and let it thin them out.

In a plugin built against contract 0.1 (``wit/``), which has no progress,
and under plain CPython with no listener set, a report goes nowhere.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

from . import _bindings

Listener = Callable[[float, Optional[float], Optional[str]], None]

_LOCAL_LISTENER: Optional[Listener] = None


def report(done: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
    """Report that the call has done ``done`` of ``total`` (when known), in its own units.

    Raises ``TypeError`` for a value that is not a number (or, for
    ``message``, not a string) and ``ValueError`` for inf or NaN: a bug in
    the tool, not something the host should see.
    """
    done = _number(done, "done")
    total = None if total is None else _number(total, "total")
    if message is not None and not isinstance(message, str):
        raise TypeError(f"progress message must be a string, not {type(message).__name__}")
    if _bindings.SERIES == "0.2":
        _bindings.progress.report(done, total, message)
    elif _bindings.SERIES == "local" and _LOCAL_LISTENER is not None:
        _LOCAL_LISTENER(done, total, message)


def set_local_listener(listener: Optional[Listener]) -> None:
    """Under plain CPython (an author's tests), call ``listener(done, total, message)`` for each report."""
    global _LOCAL_LISTENER
    _LOCAL_LISTENER = listener


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"progress {what} must be a number, not {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"progress {what} must be finite, not {number}")
    return number
