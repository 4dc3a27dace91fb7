"""JSON form of a :class:`~engine.pipeline.trace.Trace` (``TRACE_SCHEMA_VERSION`` 6).

Field names match ``../shared/parity/*/expected.json`` wherever the two
overlap, so a trace can be diffed against the reference directly. The
shape, key by key in this order:

* ``id`` (batch only), ``schema_version``, ``query``, ``params`` {limit,
  source, content_type, source_match, sessions}, ``variant`` (its spec,
  :func:`engine.pipeline.variants.variant_spec`), ``pool_size``, ``fts_limit``;
* each stage's own keys, in table order (each stage module's ``to_json``
  documents them): ``refresh``; the first pass (``porter_query`` …
  ``rerank``), then ``candidates``: every chunk a retriever returned in
  the pass, deepest first (:func:`engine.pipeline.paths.path_to_dict`:
  ``positions`` {stage id: 1-based position or null} for every stage that
  ran, ``exit`` null or {stage, reason, ...data} with a code of
  :data:`engine.pipeline.paths.REASONS`); ``fuzzy``, holding the re-run's
  pass keys when it re-ran (stage ids prefixed ``fuzzy:``);
* ``layer``, ``final`` [{source, title, content_type, rank, session_id,
  rowid, boost}] (``rank`` is minus the fused score, the reference's
  meaning, never the boost), ``empty_reason`` (why ``final`` is empty, in
  words, or null), ``empty`` ([{code, ...facts}] of
  :mod:`engine.pipeline.empty_reasons`, ``[]`` with results; tuples become
  lists), ``timings_ms`` {stage id: ms} in execution order.
* ``anatomy`` (new in version 5): ``null``, or with ``rankscope search
  --json --explain`` one object per ``final`` chunk, in order: ``{"chunk":
  {"rowid", "id"}, "retrievers": {"porter"|"trigram": {"rank", "bm25",
  "rows", "avg_tokens", "row_tokens", "k1", "b", "weights", "phrases",
  "match", "unsupported"}}, "stages": [{"stage", "position"}]}``, each
  retriever's bm25 phrase by phrase in the answering pass
  (:meth:`engine.lab.explain.ChunkAnatomy.to_dict`; the README's "Explain
  a score" has the schema). The pipeline never computes it: the caller
  passes it in.

Version history: 2 added ``candidates``, ``fuzzy.candidates``,
``fuzzy.reason_code`` and ``fuzzy.trigger``; 3 added ``empty``; 4 added
``ranking``; 5 added ``anatomy``; 6 added the ``kept_rows`` fact of
``ranking`` (a filtered run ranked over the rows its filters keep).
"""

from __future__ import annotations

from engine.pipeline.empty_reasons import EmptyPart
from engine.pipeline.passes import Run
from engine.pipeline.paths import path_to_dict
from engine.pipeline.table import STAGES
from engine.pipeline.trace import Trace
from engine.pipeline.variants import variant_spec

#: Version of the JSON trace's shape; bumped on any change a reader may notice.
TRACE_SCHEMA_VERSION = 6


def run_to_dict(run: Run) -> dict[str, object]:
    """The keys of one pass: each pass stage's, in table order, then ``candidates``."""
    out: dict[str, object] = {}
    for s in STAGES:
        if s.scope == "pass" and s.to_json is not None:
            out.update(s.to_json(run))
    out["candidates"] = [path_to_dict(p) for p in run.paths]
    return out


def empty_part_to_dict(part: EmptyPart) -> dict[str, object]:
    """``{"code": ..., **facts}`` for one part of ``Trace.empty`` (a tuple of names becomes a list)."""
    out: dict[str, object] = {"code": part.code}
    for name, value in part.facts:
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def trace_to_dict(
    trace: Trace, query_id: str | None = None, anatomy: list[dict[str, object]] | None = None
) -> dict[str, object]:
    """The whole trace as JSON-ready dicts and lists (see the module
    docstring); ``anatomy`` is the ``anatomy`` key's value (``None``: null)."""
    p = trace.params
    out: dict[str, object] = {} if query_id is None else {"id": query_id}
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
            "variant": variant_spec(p.variant),
            "pool_size": trace.pool_size,
            "fts_limit": trace.fts_limit,
        }
    )
    first_pass = True
    for s in STAGES:
        if s.scope == "pass" and first_pass:
            out.update(run_to_dict(trace.first))
            first_pass = False
        elif s.scope == "trace" and s.to_json is not None:
            out.update(s.to_json(trace))
    fuzzy = out["fuzzy"]
    if trace.fuzzy.rerun is not None and isinstance(fuzzy, dict):
        fuzzy.update(run_to_dict(trace.fuzzy.rerun))
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
