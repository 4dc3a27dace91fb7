"""JSON form of a :class:`~engine.pipeline.trace.Trace`.

Field names match ``../shared/parity/*/expected.json`` wherever the two
overlap, so a trace can be diffed against the reference directly. The
schema (``TRACE_SCHEMA_VERSION`` 5):

* ``id`` (batch only), ``schema_version``, ``query``, ``params`` {limit,
  source, content_type, source_match, sessions}, ``variant``
  (``"reference"`` or ``key=value,...``);
* ``pool_size``, ``fts_limit``, ``refresh`` {checked, stale, refreshed,
  method, age_ms} (``method`` and ``age_ms``: how the stale-source answer
  was found and how old it is, :class:`~engine.pipeline.trace.RefreshReport`);
* the first pass: ``porter_query``, ``trigram_query``, ``porter`` / ``trigram``
  [{rank, rowid, source, title, bm25, content_type, session_id}],
  ``retriever_errors`` {retriever: message}, ``ranking`` (new in version
  4) {retriever: {by, ...facts}}: ``by`` is ``"fts5"`` or ``"top-k"``
  (:attr:`~engine.pipeline.trace.RetrieverRun.ranked_by`; the rows are the same
  either way), the facts those of
  :attr:`~engine.pipeline.trace.RetrieverRun.ranking` (``phrase_rows``,
  ``ranked_phrases``, ``rows_read``, ``texts_tokenized``, or
  ``declined``), ``fused`` [{source, title,
  score, porter_rank, trigram_rank, key_collision, rowid, merged_rowids,
  contributions[{retriever, rank, rowid, value}]}], ``pool`` [{source,
  title, score}], ``filtered`` [{source, title, session_id}], ``removed``
  (same shape), ``filter_note``, ``trimmed`` [{source, title}], ``cut``,
  ``rerank`` {terms, results[{source, title, content_type, title_hits,
  title_boost, proximity_boost, phrase_boost, boost, min_span,
  adjacent_pairs, old_position, new_position}]} or null;
* ``candidates`` (new in version 2): every chunk a retriever returned in
  the first pass, deepest first (see :func:`engine.pipeline.paths.run_paths`), each
  ``{"rowid", "source", "title", "positions": {stage id: int | null},
  "exit": null | {"stage", "reason", ...data}}``. ``positions`` has one
  entry per stage that ran, in execution order (``porter``, ``trigram``,
  ``fusion``, ``pool``, ``filter``, ``trim``, ``rerank``, ``final``; a
  stage that did not run is absent), each the **1-based** position in that
  stage's list or null. ``exit`` is null for a chunk in the pass's final
  list; otherwise ``stage`` is where it left, ``reason`` a code from
  :data:`engine.pipeline.paths.REASONS` and the other keys its data:
  ``merged`` {into_rowid, into_position, key}, ``beyond-pool`` {position,
  pool_size}, ``session-filter`` {position, session_id, allow_set},
  ``trimmed`` {position, limit} (positions 1-based, in the list the stage
  received);
* ``fuzzy`` {ran, reason, reason_code, trigger, words, corrections[{word,
  corrected, max_distance, candidates_within, distance}], corrected_query,
  shadow} plus, when it re-ran, the same first-pass keys inside it,
  ``candidates`` included (there the stage ids are prefixed ``fuzzy:``:
  ``fuzzy:porter`` … ``fuzzy:final``). ``reason_code`` is the
  :class:`~engine.pipeline.trace.FuzzyStage` code (``policy-never``,
  ``first-pass-found``, ``no-vocabulary``, ``no-word``, ``no-correction``,
  ``corrected``), ``trigger`` why it ran (``shadow``, ``fusion-empty``,
  ``pool-empty``, ``all-removed``) or null; ``reason`` is both in words;
* ``layer``, ``final`` [{source, title, content_type, rank, session_id,
  rowid, boost}], ``empty_reason`` (why ``final`` is empty, in words, or
  null), ``empty`` (new in version 3: the same as data, ``[]`` when there
  are results: ``[{"code", ...facts}]``, one object per part in order, the
  codes and facts of :mod:`engine.pipeline.empty_reasons`, e.g. ``{"code":
  "no-match", "retrievers": ["porter", "trigram"], "variant_retrievers":
  "both", "source": null, "source_match": "like", "content_type": null}``,
  ``{"code": "pool-empty", "pool_size": 0}``, ``{"code": "fuzzy",
  "fuzzy_code": "no-correction"}`` (``fuzzy_code`` is ``fuzzy.reason_code``);
  lists of names are arrays), ``timings_ms`` {stage id: ms}, in execution
  order.

* ``anatomy`` (new in version 5): ``null``, or with ``rankscope search
  --json --explain`` one object per ``final`` chunk, in order: ``{"chunk":
  {"rowid", "id"}, "retrievers": {"porter"|"trigram": {"rank", "bm25",
  "rows", "avg_tokens", "row_tokens", "k1", "b", "weights", "phrases",
  "match", "unsupported"}}, "stages": [{"stage", "position"}]}``, each
  retriever's bm25 phrase by phrase in the answering pass
  (:meth:`engine.lab.explain.ChunkAnatomy.to_dict`; the README's "Explain
  a score" has the schema). The pipeline never computes it: the caller
  passes it in.

``rank`` in ``final`` is minus the fused score (reference meaning), never the boost.

Version history: 2 added ``candidates``, ``fuzzy.candidates``,
``fuzzy.reason_code`` and ``fuzzy.trigger``; 3 added ``empty``; 4 added
``ranking``; 5 added ``anatomy``.
"""

from __future__ import annotations

from engine.pipeline.empty_reasons import EmptyPart
from engine.pipeline.trace import Candidate, Run, Trace
from engine.pipeline.paths import path_to_dict

#: Version of the JSON trace's shape; bumped on any change a reader may notice.
TRACE_SCHEMA_VERSION = 5


def _st(c: Candidate) -> dict:
    return {"source": c.source, "title": c.title}


def run_to_dict(run: Run) -> dict:
    """The stage keys of one pass."""

    def hits(r):
        return [
            {
                "rank": h.rank,
                "rowid": h.rowid,
                "source": h.source,
                "title": h.title,
                "bm25": h.bm25,
                "content_type": h.content_type,
                "session_id": h.session_id,
            }
            for h in r.hits
        ]

    out = {
        "porter_query": run.porter.query if not run.porter.skipped else "",
        "trigram_query": run.trigram.query,
        "porter": hits(run.porter),
        "trigram": hits(run.trigram),
        "retriever_errors": {r.name: r.error for r in (run.porter, run.trigram) if r.error},
        "ranking": {
            r.name: {"by": r.ranked_by, **{k: list(v) if isinstance(v, tuple) else v for k, v in r.ranking}}
            for r in (run.porter, run.trigram)
            if not r.skipped
        },
        "fused": [
            {
                **_st(c),
                "score": c.score,
                "porter_rank": c.porter_rank,
                "trigram_rank": c.trigram_rank,
                "key_collision": c.key_collision,
                "rowid": c.rowid,
                "merged_rowids": list(c.merged_rowids),
                "contributions": [
                    {"retriever": x.retriever, "rank": x.rank, "rowid": x.rowid, "value": x.value}
                    for x in c.contributions
                ],
            }
            for c in run.fusion.candidates
        ],
        "pool": [{**_st(c), "score": c.score} for c in run.pool.kept],
        "filtered": [{**_st(c), "session_id": c.session_id} for c in run.filter.kept],
        "removed": [{**_st(c), "session_id": c.session_id} for c in run.filter.removed],
        "filter_note": run.filter.note,
        "trimmed": [_st(c) for c in run.trim.kept] if run.trim else [],
        "cut": [_st(c) for c in run.trim.cut] if run.trim else [],
        "rerank": None,
        "candidates": [path_to_dict(p) for p in run.paths],
    }
    if run.rerank is not None:
        out["rerank"] = {
            "terms": list(run.rerank.terms),
            "results": [
                {
                    **_st(e.candidate),
                    "content_type": e.candidate.content_type,
                    "title_hits": e.title_hits,
                    "title_boost": e.title_boost,
                    "proximity_boost": e.proximity_boost,
                    "phrase_boost": e.phrase_boost,
                    "boost": e.boost,
                    "min_span": e.min_span,
                    "adjacent_pairs": e.adjacent_pairs,
                    "old_position": e.old_position,
                    "new_position": e.new_position,
                }
                for e in run.rerank.entries
            ],
        }
    return out


def empty_part_to_dict(part: EmptyPart) -> dict:
    """``{"code": ..., **facts}`` for one part of ``Trace.empty`` (a tuple
    of names becomes a list)."""
    out: dict = {"code": part.code}
    for name, value in part.facts:
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def trace_to_dict(trace: Trace, query_id: str | None = None, anatomy: list[dict] | None = None) -> dict:
    """The whole trace as JSON-ready dicts and lists (see the module
    docstring); ``anatomy`` is the ``anatomy`` key's value (``None``: null)."""
    p = trace.params
    out: dict = {}
    if query_id is not None:
        out["id"] = query_id
    out.update(
        {
            "schema_version": TRACE_SCHEMA_VERSION,
            "query": p.query,
            "params": {
                "limit": p.limit,
                "source": p.source,
                "content_type": p.content_type,
                "source_match": p.source_match,
                "sessions": list(p.sessions) if p.sessions is not None else None,
            },
            "variant": p.variant.describe(),
            "pool_size": trace.pool_size,
            "fts_limit": trace.fts_limit,
            "refresh": {
                "checked": trace.refresh.checked,
                "stale": list(trace.refresh.stale),
                "refreshed": trace.refresh.refreshed,
                "method": trace.refresh.method,
                "age_ms": trace.refresh.age_ms,
            },
        }
    )
    out.update(run_to_dict(trace.first))
    fz = trace.fuzzy
    fuzzy = {
        "ran": fz.ran,
        "reason": fz.reason,
        "reason_code": fz.code,
        "trigger": fz.trigger,
        "shadow": fz.shadow,
        "words": list(fz.words),
        "corrections": [
            {
                "word": c.word,
                "corrected": c.corrected,
                "max_distance": c.max_distance,
                "candidates_within": c.candidates_within,
                "distance": c.distance,
            }
            for c in fz.corrections
        ],
        "corrected_query": fz.corrected_query,
    }
    if fz.rerun is not None:
        fuzzy.update(run_to_dict(fz.rerun))
    out["fuzzy"] = fuzzy
    out["layer"] = trace.layer
    out["final"] = [
        {
            "source": r.candidate.source,
            "title": r.candidate.title,
            "content_type": r.candidate.content_type,
            "rank": r.rank,
            "session_id": r.candidate.session_id,
            "rowid": r.candidate.rowid,
            "boost": r.boost,
        }
        for r in trace.final
    ]
    out["empty_reason"] = trace.empty_reason
    out["empty"] = [empty_part_to_dict(part) for part in trace.empty]
    timings: dict[str, float] = {}
    for name, ms in trace.timings_ms:
        timings[name] = timings.get(name, 0.0) + ms
    out["timings_ms"] = timings
    out["anatomy"] = anatomy
    return out
