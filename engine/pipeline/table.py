"""Every pipeline stage, declared once.

:data:`STAGES` is the one table of stage ids, display titles, two-line
explanations, order and pass membership. The pipeline runs the pass stages
in this order (:func:`engine.pipeline.run.pass_plan` applies the variant's
reordering); the paths, the stage summaries, the inspector, the journey,
why-not, the F1 help, the JSON export, the CLI and the benchmark read names
and order from here and nowhere else.

Stage ids (a contract between front-ends): ``refresh``, ``porter``,
``trigram``, ``retrieve``, ``fusion``, ``pool``, ``filter``, ``trim``,
``rerank``, ``fuzzy``, ``final``, ``agent``. Pass stages run in the first pass and
again in the fuzzy re-run, where their ids are prefixed ``fuzzy:``
(``fuzzy:trim``).

Kinds:

* ``trace``: runs once per search, has no candidate list (``refresh``,
  ``fuzzy``);
* ``retriever``: a pass's parallel entries; their lists hold retriever rows
  (:class:`~engine.pipeline.trace.Hit`) (``porter``, ``trigram``);
* ``group``: the retrievers taken together, with the SQL filters: where a
  chunk no retriever returned is said to have left (``retrieve``); no list;
* ``list``: a chain stage with a ranked candidate list (``fusion``,
  ``pool``, ``filter``, ``trim``, ``rerank``);
* ``answer``: a pass's final list (``final``: what the pass hands on; the
  trace's answer is the answering pass's);
* ``view``: what a consumer of the answer receives, computed on demand from
  a search by a front-end, not by the pipeline (``agent``: what context-mode's
  ``ctx_search`` tool hands a coding agent, :func:`engine.agent.ctx_search`,
  the browser's agent view); no list, no exits.

Pure Python; no Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from engine.pipeline.stages import fusion, pool, rerank, retrieve, session_filter, trim
from engine.pipeline.stages.fuzzy import FUZZY_EXIT_DATA, FUZZY_EXIT_SENTENCES
from engine.pipeline.trace import FUZZY_PREFIX, Candidate, Hit, Run
from engine.pipeline.hooks import Sentence, StageHooks

if TYPE_CHECKING:
    from engine.pipeline.trace import Trace

KINDS = ("trace", "retriever", "group", "list", "answer", "view")
SCOPES = ("trace", "pass")


@dataclass(frozen=True)
class Stage:
    """One stage.

    Attributes:
        id: stable id (unprefixed).
        title: display title (``"Fusion (RRF)"``).
        about: two lines explaining it (F1 help, ``rankscope stages``).
        order: position in the pipeline (ascending; gaps leave room).
        scope: ``"pass"`` (runs in the first pass and in the fuzzy re-run,
            ids then prefixed ``fuzzy:``) or ``"trace"`` (once per search; a
            ``view`` stage each time a front-end asks for it).
        kind: see the module docstring.
        hooks: a pass stage's behaviour (``retriever`` and ``list`` kinds).
        ends_pass_when_empty: when its output is empty the pass stops here
            (later stages do not run).
        sentences: exit codes of a stage without hooks (``retrieve``,
            ``fuzzy``) and their sentences.
        data_names: the names in those codes' exit data.
    """

    id: str
    title: str
    about: tuple[str, str]
    order: int
    scope: str
    kind: str
    hooks: StageHooks | None = None
    ends_pass_when_empty: bool = False
    sentences: Mapping[str, Sentence] = field(default_factory=dict)
    data_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def exit_sentences(self) -> Mapping[str, Sentence]:
        """Every exit code this stage can give, with its sentence."""
        return self.hooks.sentences if self.hooks is not None else self.sentences

    @property
    def exit_data_names(self) -> Mapping[str, tuple[str, ...]]:
        """For each exit code, the names in its data."""
        return self.hooks.data_names if self.hooks is not None else self.data_names


#: The table, in pipeline order.
STAGES: tuple[Stage, ...] = (
    Stage(
        "refresh",
        "Stale refresh",
        (
            "File-backed sources whose file changed since indexing are re-indexed before searching;",
            "a read-only store is never written: the stale sources are only listed.",
        ),
        0,
        "trace",
        "trace",
    ),
    Stage(
        "porter",
        "Porter",
        (
            "FTS5 with the Porter stemmer: words are reduced to stems (install, installing → instal).",
            "Ranked by bm25 with the title weighted 5x; fetches max(2 × pool, 10) rows.",
        ),
        10,
        "pass",
        "retriever",
        retrieve.PORTER_HOOKS,
    ),
    Stage(
        "trigram",
        "Trigram",
        (
            "FTS5 over 3-character slices: finds substrings (CacheMiss inside onCacheMiss) and CJK.",
            "Same ranking and row count; words under 3 characters are skipped.",
        ),
        11,
        "pass",
        "retriever",
        retrieve.TRIGRAM_HOOKS,
    ),
    Stage(
        "retrieve",
        "Retrieve",
        (
            "Both retrievers together, with the source and content-type filters in their SQL:",
            "a chunk neither returns within its row count never enters the pass.",
        ),
        12,
        "pass",
        "group",
        sentences=retrieve.RETRIEVE_SENTENCES,
        data_names=retrieve.RETRIEVE_DATA,
    ),
    Stage(
        "fusion",
        "Fusion (RRF)",
        (
            "Reciprocal rank fusion: a row at position p in a list adds 1/(60 + p) to its key.",
            "Keys are source::title, so chunks sharing a heading merge (⚠ collision): the first row wins.",
        ),
        20,
        "pass",
        "list",
        fusion.HOOKS,
    ),
    Stage(
        "pool",
        "Candidate pool",
        (
            "Fusion keeps the best pool-size keys: the limit, or max(8 × limit, 40)",
            "when a session filter is on, so the filter has enough to choose from.",
        ),
        30,
        "pass",
        "list",
        pool.HOOKS,
    ),
    Stage(
        "filter",
        "Session filter",
        (
            "With an allow-set, only chunks of the chosen sessions (or none) pass;",
            "the others are shown struck through as 'removed'.",
        ),
        40,
        "pass",
        "list",
        session_filter.HOOKS,
        ends_pass_when_empty=True,
    ),
    Stage(
        "trim",
        "Trim",
        ("The survivors are cut to the limit; what falls below the cut line is 'cut'", "and never reaches the rerank."),
        50,
        "pass",
        "list",
        trim.HOOKS,
    ),
    Stage(
        "rerank",
        "Rerank",
        (
            "Title hits (0.6 for code, 0.3 for prose), term proximity and adjacent phrases add a boost;",
            "results are re-sorted by it (↑ moved up, ↓ down, = stayed).",
        ),
        60,
        "pass",
        "list",
        rerank.HOOKS,
    ),
    Stage(
        "fuzzy",
        "Fuzzy",
        (
            "Only when nothing survived the filter: each word is corrected against the vocabulary",
            "(1-3 edits by length) and, if anything changed, the whole pipeline re-runs (layer rrf-fuzzy).",
        ),
        70,
        "trace",
        "trace",
        sentences=FUZZY_EXIT_SENTENCES,
        data_names=FUZZY_EXIT_DATA,
    ),
    Stage(
        "final",
        "Final",
        (
            "The answer and its layer: rrf (first pass), rrf-fuzzy (typo re-run) or none,",
            "with the reason when it is empty.",
        ),
        80,
        "pass",
        "answer",
    ),
    Stage(
        "agent",
        "Agent view",
        (
            "What ctx_search hands the agent: at most 2 results per query (1 after call #3), each cut",
            "to 1,500-unit windows around the matches, a 40 KiB cap and a throttle footer",
        ),
        90,
        "trace",
        "view",
    ),
)

BY_ID: dict[str, Stage] = {s.id: s for s in STAGES}
#: The stages a pass runs (retrievers, then the chain), in table order.
PASS_STAGES: tuple[Stage, ...] = tuple(s for s in STAGES if s.hooks is not None)
#: The retriever stage ids, in table order (Porter first: fusion's order).
RETRIEVERS: tuple[str, ...] = tuple(s.id for s in STAGES if s.kind == "retriever")
#: Every stage id that can have a ranked list, in table order: the first
#: pass's (``porter`` … ``rerank``, ``final``), then the fuzzy re-run's
#: (``fuzzy:porter`` … ``fuzzy:final``). The keys of :func:`stage_lists`
#: and :func:`ranked_lists` come from here, in this order.
_PASS_LISTS = tuple(s.id for s in STAGES if s.scope == "pass" and s.kind in ("retriever", "list", "answer"))
RANKED_IDS: tuple[str, ...] = _PASS_LISTS + tuple(FUZZY_PREFIX + sid for sid in _PASS_LISTS)


def _check_table() -> None:
    ids = [s.id for s in STAGES]
    assert len(set(ids)) == len(ids), "duplicate stage id"
    assert [s.order for s in STAGES] == sorted({s.order for s in STAGES}), "orders must ascend"
    for s in STAGES:
        assert s.kind in KINDS and s.scope in SCOPES, s.id
        assert (s.hooks is not None) == (s.kind in ("retriever", "list")), s.id


_check_table()


def base_id(stage_id: str) -> str:
    """``"fuzzy:trim"`` → ``"trim"``; an unprefixed id is returned as is."""
    return stage_id[len(FUZZY_PREFIX) :] if stage_id.startswith(FUZZY_PREFIX) else stage_id


def in_rerun(stage_id: str) -> bool:
    """True for a fuzzy re-run stage id (``fuzzy:…``)."""
    return stage_id.startswith(FUZZY_PREFIX)


def stage(stage_id: str) -> Stage:
    """The table row of ``stage_id`` (prefixed or not).

    Raises:
        KeyError: no such stage (the message lists the ids).
    """
    try:
        return BY_ID[base_id(stage_id)]
    except KeyError:
        raise KeyError(f"unknown stage {stage_id!r}; stages are {', '.join(BY_ID)}") from None


def title(stage_id: str) -> str:
    """The display title of ``stage_id`` (prefix ignored; front-ends mark the re-run)."""
    return stage(stage_id).title


def depth(stage_id: str) -> int:
    """How far into the pipeline ``stage_id`` is (its table ``order``)."""
    return stage(stage_id).order


def ranked(run: Run, stage_id: str) -> tuple[Hit | Candidate, ...]:
    """The ranked list of ``stage_id`` in ``run``, best first.

    Retriever stages give their rows (:class:`~engine.pipeline.trace.Hit`), the
    chain stages their candidates (:class:`~engine.pipeline.trace.Candidate`),
    ``final`` the pass's results. A stage that did not run in this pass
    gives ``()``. Positions in these lists are what the paths record.

    Args:
        stage_id: a pass stage id, prefixed (``fuzzy:pool``) or not.

    Raises:
        KeyError: unknown id.
        ValueError: a stage without a list (``refresh``, ``fuzzy``,
            ``retrieve``), or a ``fuzzy:`` id given with the first pass
            (with the re-run the prefix is optional).
    """
    s = stage(stage_id)
    if in_rerun(stage_id) and run.pass_name != "fuzzy":
        raise ValueError(f"{stage_id!r} names a fuzzy re-run stage, but this run is the first pass")
    if s.kind == "answer":
        return run.results
    if s.hooks is None:
        raise ValueError(f"stage {s.id!r} has no ranked list")
    record = run.record(s.id)
    return () if record is None else tuple(s.hooks.ranked(record))


def run_stage_ids(run: Run) -> tuple[str, ...]:
    """Full ids of the stages that ran in ``run``, in execution order, then
    the pass's ``final`` (``fuzzy:final`` in the re-run)."""
    return tuple(run.prefix + sid for sid in run.order) + (run.prefix + "final",)


def stage_lists(trace: "Trace") -> dict[str, tuple[Hit | Candidate, ...]]:
    """``{stage id: ranked list}`` for every list stage that ran: the first
    pass (``porter`` … ``rerank``, ``final``), then the fuzzy re-run when
    there is one (``fuzzy:porter`` … ``fuzzy:final``). Execution order.

    ``final`` is the first pass's results and ``fuzzy:final`` the re-run's;
    ``trace.final`` is the answering pass's (``trace.answering_run``).
    """
    out: dict[str, tuple[Hit | Candidate, ...]] = {}
    runs = [trace.first] + ([trace.fuzzy.rerun] if trace.fuzzy.rerun is not None else [])
    for run in runs:
        for sid in run_stage_ids(run):
            out[sid] = ranked(run, sid)
    return out


def ranked_lists(trace: "Trace") -> dict[str, tuple[Hit | Candidate, ...]]:
    """The lists the evaluation scores: :func:`stage_lists` in table order
    (:data:`RANKED_IDS`: with ``rerank=before-trim`` the rerank still comes
    before the trim here), except that ``final`` is the trace's answer
    (``trace.final``), as the stage summaries and the journey show Final.

    The two differ only when the fuzzy re-run answered (layer ``rrf-fuzzy``):
    the first pass's final list is then empty and ``final`` is the re-run's
    (equal to ``fuzzy:final``). With a shadow re-run (policy ``always``) the
    answer is the first pass's. Stages that did not run are absent.
    """
    lists = stage_lists(trace)
    lists["final"] = tuple(r.candidate for r in trace.final)
    return {sid: lists[sid] for sid in RANKED_IDS if sid in lists}
