"""rankscope's engine: context-mode's lexical retrieval pipeline, traced.

Pure Python (no Textual). Public API::

    from engine import Store, SearchParams, search
    store = Store.create(":memory:")
    index_corpus(store, "sample_corpus")
    trace = search(store, SearchParams("install", limit=3))

Each name is imported from its module when first used (:func:`__getattr__`),
so ``from engine import SearchParams`` loads the search's parameters, not the
indexer or the JSON export: ``rankscope search`` starts faster.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.store.corpus import IndexReport, index_corpus, index_paths, load_sessions_map
    from engine.pipeline.candidates import Candidate, CandidatePath, Exit, FinalResult, Hit
    from engine.pipeline.empty_reasons import EmptyPart
    from engine.pipeline.export import trace_to_dict
    from engine.pipeline.params import SearchParams
    from engine.pipeline.passes import Run
    from engine.pipeline.run import search
    from engine.pipeline.stages.fusion import FusionStage
    from engine.pipeline.stages.fuzzy import Correction, FuzzyStage
    from engine.pipeline.stages.pool import PoolStage
    from engine.pipeline.stages.rerank import RerankEntry, RerankStage
    from engine.pipeline.stages.retrieve import RetrieverRun
    from engine.pipeline.trace import Trace
    from engine.pipeline.variants import Variant
    from engine.store.errors import (
        CorruptStoreError,
        NotADatabaseError,
        NotOurStoreError,
        ReadOnlyStoreError,
        SchemaError,
        StoreError,
        StoreNotFoundError,
    )
    from engine.store.store import Store

#: Where each public name lives.
_MODULES = {
    "IndexReport": "engine.store.corpus",
    "index_corpus": "engine.store.corpus",
    "index_paths": "engine.store.corpus",
    "load_sessions_map": "engine.store.corpus",
    "Candidate": "engine.pipeline.candidates",
    "CandidatePath": "engine.pipeline.candidates",
    "Exit": "engine.pipeline.candidates",
    "FinalResult": "engine.pipeline.candidates",
    "Hit": "engine.pipeline.candidates",
    "EmptyPart": "engine.pipeline.empty_reasons",
    "trace_to_dict": "engine.pipeline.export",
    "SearchParams": "engine.pipeline.params",
    "Run": "engine.pipeline.passes",
    "search": "engine.pipeline.run",
    "FusionStage": "engine.pipeline.stages.fusion",
    "Correction": "engine.pipeline.stages.fuzzy",
    "FuzzyStage": "engine.pipeline.stages.fuzzy",
    "PoolStage": "engine.pipeline.stages.pool",
    "RerankEntry": "engine.pipeline.stages.rerank",
    "RerankStage": "engine.pipeline.stages.rerank",
    "RetrieverRun": "engine.pipeline.stages.retrieve",
    "Trace": "engine.pipeline.trace",
    "Variant": "engine.pipeline.variants",
    "CorruptStoreError": "engine.store.errors",
    "NotADatabaseError": "engine.store.errors",
    "NotOurStoreError": "engine.store.errors",
    "ReadOnlyStoreError": "engine.store.errors",
    "SchemaError": "engine.store.errors",
    "StoreError": "engine.store.errors",
    "StoreNotFoundError": "engine.store.errors",
    "Store": "engine.store.store",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Candidate",
    "CandidatePath",
    "CorruptStoreError",
    "Correction",
    "EmptyPart",
    "Exit",
    "FinalResult",
    "FusionStage",
    "FuzzyStage",
    "Hit",
    "IndexReport",
    "NotADatabaseError",
    "NotOurStoreError",
    "PoolStage",
    "ReadOnlyStoreError",
    "RerankEntry",
    "RerankStage",
    "RetrieverRun",
    "Run",
    "SchemaError",
    "SearchParams",
    "Store",
    "StoreError",
    "StoreNotFoundError",
    "Trace",
    "Variant",
    "index_corpus",
    "index_paths",
    "load_sessions_map",
    "search",
    "trace_to_dict",
]
