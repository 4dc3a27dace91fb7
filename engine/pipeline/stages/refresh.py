"""The stale-source refresh, a trace-level stage: file-backed sources whose
file changed since indexing are re-indexed before the search (a read-only
store only lists them). The work is :meth:`engine.store.store.Store.refresh_for_search`;
its record is :class:`~engine.store.freshness.RefreshReport`."""

from __future__ import annotations

from engine.pipeline.hooks import Records, RecordStage
from engine.pipeline.params import SearchParams
from engine.store.freshness import RefreshReport


def _headline(r: RefreshReport, params: SearchParams) -> str | None:
    """``2 file-backed sources checked; 1 stale, re-indexed: a.md``; ``None`` when none was checked."""
    if not r.checked:
        return None
    head = f"{r.checked} file-backed sources checked; {len(r.stale)} stale"
    if r.stale:
        verb = "re-indexed" if r.refreshed else "would refresh (read-only: not done)"
        head += f", {verb}: " + ", ".join(r.stale)
    return head


def _to_json(trace: Records) -> dict[str, object]:
    """``refresh`` {checked, stale, refreshed, method, age_ms}."""
    r = STAGE.get(trace)
    return {
        "refresh": {
            "checked": r.checked,
            "stale": list(r.stale),
            "refreshed": r.refreshed,
            "method": r.method,
            "age_ms": r.age_ms,
        }
    }


STAGE = RecordStage(
    id="refresh",
    title="Stale refresh",
    about=(
        "File-backed sources whose file changed since indexing are re-indexed before searching;",
        "a read-only store is never written: the stale sources are only listed.",
    ),
    scope="trace",
    kind="trace",
    record=RefreshReport,
    headline=_headline,
    to_json=_to_json,
)
