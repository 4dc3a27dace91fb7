"""The session filter (reference: the allow-set of ``searchWithFallback``).

With an allow-set, a pooled candidate passes when its session id is ``""``
(unattributed) or in the set; without one (``None``) everything passes. An
empty allow-set ``()`` lets only unattributed chunks through.

As the ``filter`` stage (:data:`STAGE`), a removed candidate leaves with
reason ``session-filter``. When nothing passes, the pass ends here
(``ends_pass_when_empty``) and the fuzzy fallback may run.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from engine.pipeline.candidates import Candidate, ChunkRef, Data, Exit
from engine.pipeline.hooks import Asking, Explanation, Item, Items, PassContext, PassView, Reason, Records, RecordStage
from engine.pipeline.hooks import candidates as _candidates
from engine.pipeline.params import SearchParams


@dataclass(frozen=True)
class FilterStage:
    """The record.

    Attributes:
        allow_set: the allowed session ids, or ``None`` (no filter ran).
        kept: received candidates whose session id is ``""`` or allowed, in order.
        removed: the others, in order.
        note: a caveat about the filter on this store (an older schema
            without a session column, where every chunk passes), or ``None``.
    """

    allow_set: tuple[str, ...] | None
    kept: tuple[Candidate, ...]
    removed: tuple[Candidate, ...]
    elapsed_ms: float = 0.0
    note: str | None = None


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
        closest: tuple[str, ...] = ()
        if shown > 0:
            matcher = difflib.SequenceMatcher(b=given, autojunk=False)  # b is the one difflib caches
            scored = []
            for sid in known:
                matcher.set_seq1(sid)
                scored.append((-matcher.ratio(), sid))
            closest = tuple(sid for _, sid in sorted(scored)[:shown])
        out.append(UnknownSession(given, closest, len(known)))
    return tuple(out)


# ─── as a stage ──────────────────────────────────────────────────────────


def _step(ctx: PassContext, items: Items) -> FilterStage:
    """Filter by ``ctx.params.sessions`` (with a note when the store has no session column)."""
    out = session_filter(_candidates(items), ctx.params.sessions)
    if ctx.params.sessions is not None and not ctx.store.schema.has_session:
        out = replace(out, note=NO_SESSION_COLUMN)
    return out


def _headline(stage: FilterStage, params: SearchParams) -> str:
    """``allow s1, s2: kept 3, removed 2`` or ``no session allow-set: everything passes``."""
    if stage.allow_set is None:
        return "no session allow-set: everything passes"
    allowed = ", ".join(stage.allow_set) or "(only unattributed)"
    head = f"allow {allowed}: kept {len(stage.kept)}, removed {len(stage.removed)}"
    return head + (f" ({stage.note})" if stage.note else "")


def _exit(stage: FilterStage, item: Item, position: int | None) -> tuple[str, Data]:
    return "session-filter", (
        ("position", position),
        ("session_id", item.session_id),
        ("allow_set", tuple(stage.allow_set or ())),
    )


def _explain(ask: Asking, run: PassView, exit: Exit, chunk: ChunkRef) -> Explanation:
    at, allow = exit.get("position"), exit.get("allow_set") or ()
    assert isinstance(allow, tuple) and (at is None or isinstance(at, int)), exit
    allowed = ", ".join(repr(s) for s in allow) or "(empty: only unattributed chunks)"
    sid = exit.get("session_id")
    return Explanation(
        chunk,
        exit.stage,
        "session-filter",
        f"Pooled at #{at}, then removed by the session filter: its session id {sid!r} is not "
        f"in the allow-set {allowed} (only '' and allowed ids pass).",
        run.pass_name,
        at,
        {"session_id": sid, "allow_set": list(allow), "pool_position": at},
    )


def _marker(e: Exit) -> str:
    sid = e.get("session_id")
    return f"session {sid}" if sid else "session ''"


def _compact(e: Exit, cut: Callable[[str], str]) -> str:
    return "✗" + cut(str(e.get("session_id") or "''"))


def _to_json(run: Records) -> dict[str, object]:
    """``filtered`` and ``removed`` [{source, title, session_id}], ``filter_note``."""
    f = STAGE.get(run)

    def rows(cs: tuple[Candidate, ...]) -> list[dict[str, object]]:
        return [{"source": c.source, "title": c.title, "session_id": c.session_id} for c in cs]

    return {"filtered": rows(f.kept), "removed": rows(f.removed), "filter_note": f.note}


STAGE = RecordStage(
    id="filter",
    title="Session filter",
    short="Filter",
    compact="Filt",
    about=(
        "With an allow-set, only chunks of the chosen sessions (or none) pass;",
        "the others are shown struck through as 'removed'.",
    ),
    scope="pass",
    kind="list",
    record=FilterStage,
    step=_step,
    ranked=lambda s: s.kept,
    headline=_headline,
    exit=_exit,
    note=lambda s, pos: "passed",
    reasons={
        "session-filter": Reason(
            lambda e: f"removed by the session filter (session {e.get('session_id')!r})",
            ("position", "session_id", "allow_set"),
            _marker,
            _compact,
        )
    },
    ends_pass_when_empty=True,
    emptied="nothing survived the session filter",
    to_json=_to_json,
    explain=_explain,
)
