"""Ranking regression snapshots: record every stage's ranked chunk ids for a
query file, and later tell what moved, entered or left.

A snapshot is a JSON document (self-contained: ``check`` needs no query file)::

    {"format": "rankscope-snapshot", "version": 1,
     "variant": "reference",
     "stage_ids": ["porter", ..., "final", "fuzzy:porter", ..., "fuzzy:final"],
     "queries": [{"id": "rerank", "entry": {"id": "rerank", "query": "write quorum"},
                  "layer": "rrf",
                  "stages": {"porter": [chunk id, ...], ..., "final": [...]}}]}

``entry`` is the query-file entry as given (re-run as is); stage ids and
lists are those of :func:`engine.lab.evaluation.ranked_ids` (chunk ids of
:mod:`engine.store.chunkids`, best first). Positions in diffs are **1-based**.

``stage_ids`` lists the ranked stages rankscope had when the snapshot was
saved. A check compares only those: a stage added to the stage table later
is reported as not recorded (save the snapshot again to include it), not as
a change. Snapshots saved before ``stage_ids`` was written recorded every
stage but ``fuzzy:final`` (:data:`UNRECORDED_BEFORE_STAGE_IDS`).
Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence, Union

from typing_extensions import NotRequired, TypedDict

from engine.files.reading import check_shape, json_shape
from engine.store.chunkids import chunk_ids
from engine.pipeline.variants import parse_variant, variant_spec
from engine.lab.evaluation import ranked_ids, run_entries
from engine.lab.qrels import entry_id
from engine.pipeline.variants import Variant
from engine.pipeline.table import RANKED_IDS
from engine.store.store import Store

FORMAT = "rankscope-snapshot"
VERSION = 1
#: The ranked stages a snapshot without ``stage_ids`` did not record: they
#: joined the stage table after such snapshots were written.
UNRECORDED_BEFORE_STAGE_IDS = ("fuzzy:final",)


@json_shape(extra="ignore")
class SnapshotQueryShape(TypedDict):
    """One query of a snapshot."""

    id: NotRequired[Union[str, int]]
    entry: dict[str, Any]
    layer: str
    stages: dict[str, list[str]]


@json_shape(extra="ignore")
class SnapshotShape(TypedDict):
    """A snapshot document (see the module docstring)."""

    format: Literal["rankscope-snapshot"]
    version: int
    variant: NotRequired[str]
    stage_ids: NotRequired[list[str]]
    queries: list[SnapshotQueryShape]


def recorded_stage_ids(snapshot: Mapping[str, Any]) -> tuple[str, ...]:
    """The ranked stage ids a (validated) snapshot recorded: its
    ``stage_ids``, or for an older snapshot every stage of the table but
    :data:`UNRECORDED_BEFORE_STAGE_IDS`."""
    ids = snapshot.get("stage_ids")
    if isinstance(ids, list):
        return tuple(ids)
    return tuple(s for s in RANKED_IDS if s not in UNRECORDED_BEFORE_STAGE_IDS)


def take_snapshot(store: Store, entries: Sequence[Mapping[str, Any]], variant: Variant | None = None) -> dict[str, Any]:
    """Search every entry and record its layer and each stage's chunk ids.

    Raises:
        ValueError: a bad query-file entry (checked before any search).
        StoreError: the store cannot be read.
    """
    v = variant or Variant()
    traces = run_entries(store, entries, v)
    ids = chunk_ids(store)
    return {
        "format": FORMAT,
        "version": VERSION,
        "variant": variant_spec(v),
        "stage_ids": list(RANKED_IDS),
        "queries": [
            {"id": qid, "entry": dict(e), "layer": t.layer, "stages": ranked_ids(t, ids)}
            for (qid, t), e in zip(traces, entries)
        ],
    }


@dataclass(frozen=True)
class StageDiff:
    """How one stage's list changed.

    Attributes:
        stage: stage id.
        moved: ``(chunk id, old position, new position)`` for chunks in both
            lists at different positions, in new order.
        entered: ``(chunk id, new position)``: only in the new list.
        left: ``(chunk id, old position)``: only in the old list.
    """

    stage: str
    moved: tuple[tuple[str, int, int], ...] = ()
    entered: tuple[tuple[str, int], ...] = ()
    left: tuple[tuple[str, int], ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.moved or self.entered or self.left)


def diff_lists(stage: str, old: Sequence[str], new: Sequence[str]) -> StageDiff:
    """Compare two ranked lists of chunk ids (see :class:`StageDiff`)."""
    old_pos = {d: i for i, d in enumerate(old, 1)}
    new_pos = {d: i for i, d in enumerate(new, 1)}
    moved = tuple((d, old_pos[d], p) for d, p in new_pos.items() if d in old_pos and old_pos[d] != p)
    entered = tuple((d, p) for d, p in new_pos.items() if d not in old_pos)
    left = tuple((d, p) for d, p in old_pos.items() if d not in new_pos)
    return StageDiff(stage, moved, entered, left)


@dataclass(frozen=True)
class QueryDiff:
    """One query whose recorded ranking changed.

    Attributes:
        id, query: the query id and text.
        layer_old, layer_new: the layers (``rrf``, ``rrf-fuzzy``, ``none``).
        stages: the changed stages, in pipeline order.
    """

    id: str
    query: str
    layer_old: str
    layer_new: str
    stages: tuple[StageDiff, ...]


@dataclass(frozen=True)
class SnapshotCheck:
    """Outcome of :func:`check_snapshot`.

    Attributes:
        checked: queries re-run.
        stages: the stage ids compared (``None`` = every stage).
        changed: the queries with a difference (empty = unchanged).
        unrecorded: stage ids of today's stage table (among those asked
            for) that the snapshot did not record, so were not compared.
    """

    checked: int
    stages: tuple[str, ...] | None
    changed: tuple[QueryDiff, ...]
    unrecorded: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.changed

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"ok", "checked", "stages", "unrecorded", "changed": [{"id", "query",
        "layer": [old, new], "stages": {stage: {"moved": [[id, old, new]],
        "entered": [[id, new]], "left": [[id, old]]}}}]}``."""
        return {
            "ok": self.ok,
            "checked": self.checked,
            "stages": list(self.stages) if self.stages is not None else None,
            "unrecorded": list(self.unrecorded),
            "changed": [
                {
                    "id": q.id,
                    "query": q.query,
                    "layer": [q.layer_old, q.layer_new],
                    "stages": {
                        s.stage: {
                            "moved": [list(m) for m in s.moved],
                            "entered": [list(e) for e in s.entered],
                            "left": [list(x) for x in s.left],
                        }
                        for s in q.stages
                    },
                }
                for q in self.changed
            ],
        }


def parse_stage_list(spec: str | None) -> tuple[str, ...] | None:
    """``"final,rerank"`` → ``("final", "rerank")``; ``None`` (no list
    given) = every stage.

    Raises:
        ValueError: an empty list (``""``, ``","``: it would silently mean
            every stage), or an unknown stage id (the message lists the
            known ones).
    """
    if spec is None:
        return None
    names = tuple(dict.fromkeys(s.strip() for s in spec.split(",") if s.strip()))
    if not names:
        raise ValueError("no stage given; e.g. final or final,rerank (leave the list out to compare every stage)")
    bad = [s for s in names if s not in RANKED_IDS]
    if bad:
        raise ValueError(f"unknown stage {', '.join(map(repr, bad))}; stages are {', '.join(RANKED_IDS)}")
    return names


def validate_snapshot(data: object, name: str = "snapshot") -> dict[str, Any]:
    """Check a snapshot document (:class:`SnapshotShape`) and return it.

    A check must be able to fail: ``stage_ids``, when present, names at
    least one stage, and only stages of today's stage table.

    Raises:
        ValueError: not a rankscope snapshot, another version, a field of
            the wrong type (the message names it), an empty ``stage_ids`` or
            one naming an unknown stage.
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f'{name} is not a rankscope snapshot (no "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise ValueError(
            f"{name}: unsupported snapshot version {data.get('version')!r} (this rankscope reads {VERSION})"
        )
    snap: dict[str, Any] = check_shape(data, SnapshotShape, name)
    stage_ids = snap.get("stage_ids")
    if stage_ids is not None and not stage_ids:
        raise ValueError(
            f"{name}: 'stage_ids' is empty: the snapshot recorded no stage, so a check would compare nothing"
        )
    unknown = [s for s in stage_ids or () if s not in RANKED_IDS]
    if unknown:
        raise ValueError(
            f"{name}: 'stage_ids' names {'an unknown stage' if len(unknown) == 1 else 'unknown stages'} "
            f"{', '.join(map(repr, unknown))}; stages are {', '.join(RANKED_IDS)}"
        )
    return data


def check_snapshot(store: Store, snapshot: Mapping[str, Any], stages: Sequence[str] | None = None) -> SnapshotCheck:
    """Re-run every query of ``snapshot`` (same entry, same variant) and
    compare each stage (only ``stages`` when given) and the layer.

    Raises:
        ValueError: a malformed snapshot, a bad variant or entry, or nothing
            to compare (no query, or none of ``stages`` recorded): a check
            that compares nothing must not pass.
        StoreError: the store cannot be read.
    """
    snap = validate_snapshot(snapshot)
    variant = parse_variant(snap.get("variant", "reference"))
    recorded = snap["queries"]
    wanted = tuple(stages) if stages else None
    known = recorded_stage_ids(snap)
    if not recorded:
        raise ValueError("the snapshot holds no query: a check would compare nothing")
    if wanted is not None and not any(s in known for s in wanted):
        raise ValueError(
            f"the snapshot recorded none of the stages asked for ({', '.join(wanted)}); it recorded {', '.join(known)}"
        )
    entries = [q["entry"] for q in recorded]
    traces = run_entries(store, entries, variant)
    ids = chunk_ids(store)
    unrecorded = tuple(s for s in RANKED_IDS if s not in known and (wanted is None or s in wanted))
    changed: list[QueryDiff] = []
    for i, (rec, (_, trace)) in enumerate(zip(recorded, traces)):
        now = ranked_ids(trace, ids)
        old = rec["stages"]
        names = [s for s in RANKED_IDS if (s in old or s in now) and s in known and (wanted is None or s in wanted)]
        names += [s for s in old if s not in RANKED_IDS and (wanted is None or s in wanted)]
        diffs = tuple(d for d in (diff_lists(s, old.get(s, []), now.get(s, [])) for s in names) if d.changed)
        if diffs or rec["layer"] != trace.layer:
            qid = str(rec.get("id", entry_id(rec["entry"], i)))
            changed.append(QueryDiff(qid, trace.params.query, rec["layer"], trace.layer, diffs))
    return SnapshotCheck(len(recorded), wanted, tuple(changed), unrecorded)
