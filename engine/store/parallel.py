"""When a pass's two retrievers run at once, on two connections.

A second retriever goes to another thread only when its statements are long
enough to gain from it (:data:`PARALLEL_MIN_BYTES`) and other processes
leave a core free (:func:`core_free`); the second connection itself comes
from :meth:`engine.store.reading.Connections.parallel_reader`.
"""

from __future__ import annotations

import os
import time

from engine.store import sql
from engine.store.opening import file_signature

#: Store files at least this large run a pass's two retrievers at once when
#: a core is free (:attr:`engine.store.store.Store.parallel`): about 1,000 chunks of prose.
#: Measured on the 2-core machine, idle, npm docs, with SQLite's memory
#: statistics off (docs/performance.md): at 1,437 chunks (5 MiB) −14% p50
#: against one after the other, at 10,059 chunks (31 MiB) −8% p50 and −14%
#: p95; smaller statements take well under a millisecond.
PARALLEL_MIN_BYTES = 4 * 2**20
#: The second retriever goes to another thread only while other processes
#: leave a core free: their CPU use, averaged since the last reading, below
#: the core count minus this many cores. On a saturated machine handing a
#: statement over costs 0.5-2 ms and gains nothing (measured at load 5 on 2
#: cores). This process's own threads do not count: a search's second
#: retriever must not switch the next search's off.
PARALLEL_OTHERS_MARGIN = 1.0
#: CPU use is read at most this often (seconds); between readings the last
#: answer stands.
_CPU_TTL_S = 1.0
#: The last reading: (monotonic time, system busy CPU seconds or None, this
#: process's CPU seconds, the answer); time -inf before the first.
_cpu_seen: tuple[float, float | None, float, bool] = (float("-inf"), None, 0.0, True)


def _system_busy_seconds() -> float | None:
    """CPU seconds all cores have spent busy since boot (``/proc/stat``:
    user + nice + system + irq + softirq + steal; idle and iowait are not
    busy), or ``None`` where ``/proc/stat`` cannot be read (not Linux)."""
    try:
        with open("/proc/stat", "rb") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu" or len(fields) < 5:
        return None
    ticks = [int(x) for x in fields[1:9]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


def core_free() -> bool:
    """True when this machine has at least two cores and other processes
    leave one of them free: the CPU seconds the whole machine was busy
    (:func:`_system_busy_seconds`) minus this process's own
    (``time.process_time``, every thread), per second since the previous
    reading, is below ``cores -`` :data:`PARALLEL_OTHERS_MARGIN`. Read at
    most once a second (:data:`_CPU_TTL_S`); the first reading says True.
    Where ``/proc/stat`` is missing, the one-minute load average stands in
    (``os.getloadavg() < cores - 0.5``; False when that is missing too)."""
    global _cpu_seen
    now = time.monotonic()
    seen_at, busy_then, own_then, free = _cpu_seen
    if now - seen_at < _CPU_TTL_S:
        return free
    cores = os.cpu_count() or 1
    busy, own = _system_busy_seconds(), time.process_time()
    if cores < 2:
        free = False
    elif busy is None:
        try:
            free = os.getloadavg()[0] < cores - 0.5
        except OSError:
            free = False
    elif busy_then is None:
        free = True
    else:
        others = max(0.0, (busy - busy_then) - (own - own_then)) / max(now - seen_at, 1e-9)
        free = others < cores - PARALLEL_OTHERS_MARGIN
    _cpu_seen = (now, busy, own, free)
    return free


def can_read_in_parallel(path: str | None, conn: sql.Connection, setting: bool | None) -> bool:
    """True when a second connection can read what ``conn`` reads (a file
    store at ``path``, with ``conn`` inside a read transaction that noted its
    data version) and ``setting`` asks for it: ``True``, ``False``, or
    ``None`` for when the file holds at least :data:`PARALLEL_MIN_BYTES` and
    :func:`core_free`."""
    if path is None or conn.read_version is None or not conn.in_transaction:
        return False
    if setting is None:
        sig = file_signature(path)
        return sig is not None and sig[1] >= PARALLEL_MIN_BYTES and core_free()
    return setting
