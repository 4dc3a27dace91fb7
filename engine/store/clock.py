"""Time as the store records it: the timestamp stored on every chunk, and
the durations reported in milliseconds."""

from __future__ import annotations

import datetime as _dt
import time


def now_iso() -> str:
    """The current UTC time as JavaScript's ``Date.toISOString()`` writes it
    (``2026-03-01T12:34:56.789Z``, milliseconds): the ``timestamp`` of each
    chunk indexed now."""
    now = _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def elapsed_ms(start: float) -> float:
    """Milliseconds since ``start`` (a ``time.perf_counter()`` value)."""
    return (time.perf_counter() - start) * 1000.0
