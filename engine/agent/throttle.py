"""``ctx_search``'s progressive throttle (context-mode 1.0.169 ``FloodGuard``).

Source: ``src/server.ts`` ``readPositiveEnv`` / ``searchFloodGuard`` and the
throttle run T01 of ``shared/agent-view`` (calls t01-t15):

* settings: ``CONTEXT_MODE_SEARCH_WINDOW_MS`` (default 60000 ms),
  ``CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER`` (soft cap, default 3) and
  ``CONTEXT_MODE_SEARCH_BLOCK_AFTER`` (default 8). A value is read with
  ``Number()``; unset, empty, NaN, infinite, zero or negative values fall
  back to the default (``readPositiveEnv``). Fractions are kept.
* one bucket per key (``currentAttribution()?.sessionId ?? "__default__"``);
  the window is **fixed** from its first counted call: a call more than
  ``window_ms`` after the window start opens a new window at count 0;
* every call that reaches the guard counts, blocked ones included; calls
  rejected before it (schema errors, no queries, an empty index) do not;
* ``soft_capped = count > soft_after`` (1 result per query),
  ``blocked = count > block_after``; the warning footer already shows from
  ``count >= soft_after``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

import math

from engine.js.numbers import math_round, to_number

ENV_WINDOW = "CONTEXT_MODE_SEARCH_WINDOW_MS"
ENV_SOFT = "CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER"
ENV_BLOCK = "CONTEXT_MODE_SEARCH_BLOCK_AFTER"
DEFAULT_WINDOW_MS = 60_000
DEFAULT_SOFT_AFTER = 3
DEFAULT_BLOCK_AFTER = 8
DEFAULT_KEY = "__default__"


def read_positive_env(env: Mapping[str, str], name: str, default: float) -> tuple[float, str | None]:
    """``readPositiveEnv``: ``(value, note)``; ``note`` explains a fallback
    or an override (``None`` when the variable is unset)."""
    raw = env.get(name)
    if not raw:
        return default, None
    parsed = to_number(raw)
    if math.isfinite(parsed) and parsed > 0:
        return parsed, f"{name}={raw!r}"
    return default, f"{name}={raw!r} is not a positive number: default {default:g} used"


@dataclass(frozen=True)
class ThrottleConfig:
    """The three thresholds (numbers as JavaScript keeps them).

    Attributes:
        window_ms: window length in milliseconds.
        soft_after: calls served ``min(limit, 2)`` before the soft cap.
        block_after: calls answered at all before the block.
        notes: where each non-default value came from, or why an env value
            was ignored.
    """

    window_ms: float = DEFAULT_WINDOW_MS
    soft_after: float = DEFAULT_SOFT_AFTER
    block_after: float = DEFAULT_BLOCK_AFTER
    notes: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "ThrottleConfig":
        """Read the three variables like the server does at start-up."""
        env = os.environ if env is None else env
        w, nw = read_positive_env(env, ENV_WINDOW, DEFAULT_WINDOW_MS)
        s, ns = read_positive_env(env, ENV_SOFT, DEFAULT_SOFT_AFTER)
        b, nb = read_positive_env(env, ENV_BLOCK, DEFAULT_BLOCK_AFTER)
        return cls(w, s, b, tuple(n for n in (nw, ns, nb) if n))


@dataclass(frozen=True)
class ThrottlePosition:
    """Where a call falls in its throttle window.

    Attributes:
        count: call number in the window (1-based), this call included.
        window_start_ms, now_ms: epoch milliseconds (the BLOCKED text shows
            ``round((now - start) / 1000)`` seconds).
        key: the guard bucket.
        how: ``"given"`` (a call number was supplied) or ``"counted"`` (a
            :class:`FloodGuard` counted the calls of a session).
    """

    count: int
    window_start_ms: float = 0.0
    now_ms: float = 0.0
    key: str = DEFAULT_KEY
    how: str = "given"

    @property
    def elapsed_s(self) -> float:
        """``Math.round((now - windowStart) / 1000)`` (a JavaScript number)."""
        return math_round((self.now_ms - self.window_start_ms) / 1000)


@dataclass(frozen=True)
class ThrottleDecision:
    """What the guard decided for one call.

    Attributes:
        position: the call's place in its window.
        config: the thresholds.
        soft_capped: ``count > soft_after``: 1 result per query.
        blocked: ``count > block_after``: BLOCKED, nothing searched.
        warning: ``count >= soft_after``: the ⚠ footer instead of the
            informational one.
    """

    position: ThrottlePosition
    config: ThrottleConfig

    @property
    def count(self) -> int:
        return self.position.count

    @property
    def soft_capped(self) -> bool:
        return self.count > self.config.soft_after

    @property
    def blocked(self) -> bool:
        return self.count > self.config.block_after

    @property
    def warning(self) -> bool:
        return self.count >= self.config.soft_after


class FloodGuard:
    """Per-key fixed windows, counted like the server's ``FloodGuard``.

    Not thread-safe; one guard stands for one server process.
    """

    def __init__(self, config: ThrottleConfig | None = None):
        self.config = config or ThrottleConfig()
        self._buckets: dict[str, tuple[float, int]] = {}

    def record(self, key: str, now_ms: float) -> ThrottlePosition:
        """Count one call at ``now_ms`` (epoch ms) for ``key``."""
        start, count = self._buckets.get(key, (0.0, 0))
        if key not in self._buckets or now_ms - start > self.config.window_ms:
            start, count = now_ms, 0
        count += 1
        self._buckets[key] = (start, count)
        return ThrottlePosition(count, start, now_ms, key, "counted")
