"""The session filter (reference: the allow-set of ``searchWithFallback``).

With an allow-set, a pooled candidate passes when its session id is ``""``
(unattributed) or in the set; without one (``None``) everything passes. An
empty allow-set ``()`` lets only unattributed chunks through.

As the ``filter`` pass stage (:data:`HOOKS`), a removed candidate leaves with
reason ``session-filter``. When nothing passes, the pass ends here (the
table marks the stage ``ends_pass_when_empty``) and the fuzzy fallback may run.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Sequence

from engine.pipeline.trace import Candidate, Exit, FilterStage, SearchParams
from engine.pipeline.hooks import PassContext, StageHooks

#: The filter's note on a store whose schema has no session column.
NO_SESSION_COLUMN = "this store has no session column (older schema): every chunk is unattributed and passes"


def session_filter(pool: tuple[Candidate, ...], allow_set: tuple[str, ...] | None) -> FilterStage:
    """Keep candidates whose session id is ``""`` or in ``allow_set``;
    ``None`` means no filter (everything kept)."""
    if allow_set is None:
        return FilterStage(None, pool, ())
    allowed = set(allow_set) | {""}
    kept: list[Candidate] = []
    removed: list[Candidate] = []
    for c in pool:
        (kept if c.session_id in allowed else removed).append(c)
    return FilterStage(tuple(allow_set), tuple(kept), tuple(removed))


#: How many of the store's session ids :func:`unknown_sessions` names per unknown id.
CLOSEST_SHOWN = 6


@dataclass(frozen=True)
class UnknownSession:
    """An allow-set session id that no chunk of the store has (a valid
    filter that can only let unattributed chunks through, most likely a typo).

    Attributes:
        session: the id as given.
        closest: up to :data:`CLOSEST_SHOWN` of the store's session ids,
            closest first (:func:`unknown_sessions`).
        store_session_count: how many session ids the store has (the
            unattributed ``""`` not counted); ``len(closest)`` of them are named.
    """

    session: str
    closest: tuple[str, ...]
    store_session_count: int


def unknown_sessions(
    allow_set: Sequence[str], store_sessions: Sequence[str], shown: int = CLOSEST_SHOWN
) -> tuple[UnknownSession, ...]:
    """The ids of ``allow_set`` that are not in ``store_sessions`` (the
    store's session ids, e.g. from :meth:`engine.Store.session_counts`), in
    the order given, each once; ``""`` (unattributed, always let through) is
    never unknown. Each names the ``shown`` store ids closest to it: highest
    :meth:`difflib.SequenceMatcher.ratio` first (case-sensitive, as the
    filter compares), equal ratios in id order. ``()`` when every id is known.
    """
    known = sorted({s for s in store_sessions if s})
    present = set(known)
    out = []
    for given in dict.fromkeys(allow_set):
        if not given or given in present:
            continue
        matcher = difflib.SequenceMatcher(b=given, autojunk=False)  # b is the one difflib caches
        scored = []
        for sid in known:
            matcher.set_seq1(sid)
            scored.append((-matcher.ratio(), sid))
        closest = tuple(sid for _, sid in sorted(scored)[: max(shown, 0)])
        out.append(UnknownSession(given, closest, len(known)))
    return tuple(out)


# ─── as a pass stage ─────────────────────────────────────────────────────


def step(ctx: PassContext, items: tuple) -> FilterStage:
    """Filter the pool by ``ctx.params.sessions`` (with a note when the store
    has no session column)."""
    out = session_filter(tuple(items), ctx.params.sessions)
    if ctx.params.sessions is not None and not ctx.store.schema.has_session:
        out = FilterStage(out.allow_set, out.kept, out.removed, out.elapsed_ms, NO_SESSION_COLUMN)
    return out


def ranked(stage: FilterStage) -> tuple[Candidate, ...]:
    """The candidates that passed, in pool order."""
    return stage.kept


def headline(stage: FilterStage, params: SearchParams) -> str:
    """``allow s1, s2: kept 3, removed 2`` or ``no session allow-set: everything passes``."""
    if stage.allow_set is None:
        return "no session allow-set: everything passes"
    allowed = ", ".join(stage.allow_set) or "(only unattributed)"
    head = f"allow {allowed}: kept {len(stage.kept)}, removed {len(stage.removed)}"
    return head + (f" ({stage.note})" if stage.note else "")


def exit_of(stage: FilterStage, item: Candidate, position: int | None) -> tuple[str, tuple[tuple[str, object], ...]]:
    """``session-filter`` with ``position`` (1-based, in the pool),
    ``session_id`` and ``allow_set`` (a tuple of ids)."""
    return "session-filter", (
        ("position", position),
        ("session_id", item.session_id),
        ("allow_set", tuple(stage.allow_set or ())),
    )


def _session_filter(e: Exit) -> str:
    return f"removed by the session filter (session {e.get('session_id')!r})"


HOOKS = StageHooks(
    step=step,
    ranked=ranked,
    headline=headline,
    exit=exit_of,
    sentences={"session-filter": _session_filter},
    data_names={"session-filter": ("position", "session_id", "allow_set")},
)
