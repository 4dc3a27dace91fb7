"""rankscope's engine: context-mode's lexical retrieval pipeline, traced.

Pure Python (no Textual). Public API::

    from engine import Store, SearchParams, search
    store = Store.create(":memory:")
    index_corpus(store, "sample_corpus")
    trace = search(store, SearchParams("install", limit=3))

Each name is imported from its module when first used (:func:`__getattr__`),
so ``from engine import SearchParams`` loads the pipeline's records, not the
indexer or the JSON export: ``rankscope search`` starts faster.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.store.corpus import IndexReport, index_corpus, index_paths, load_sessions_map
    from engine.pipeline.empty_reasons import EmptyPart
    from engine.pipeline.export import trace_to_dict
    from engine.pipeline.trace import (
        Candidate,
        CandidatePath,
        Correction,
        Exit,
        FinalResult,
        FusionStage,
        FuzzyStage,
        Hit,
        PoolStage,
        RerankEntry,
        RerankStage,
        RetrieverRun,
        Run,
        SearchParams,
        Trace,
        Variant,
    )
    from engine.pipeline.run import search
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
    "EmptyPart": "engine.pipeline.empty_reasons",
    "trace_to_dict": "engine.pipeline.export",
    "Candidate": "engine.pipeline.trace",
    "CandidatePath": "engine.pipeline.trace",
    "Correction": "engine.pipeline.trace",
    "Exit": "engine.pipeline.trace",
    "FinalResult": "engine.pipeline.trace",
    "FusionStage": "engine.pipeline.trace",
    "FuzzyStage": "engine.pipeline.trace",
    "Hit": "engine.pipeline.trace",
    "PoolStage": "engine.pipeline.trace",
    "RerankEntry": "engine.pipeline.trace",
    "RerankStage": "engine.pipeline.trace",
    "RetrieverRun": "engine.pipeline.trace",
    "Run": "engine.pipeline.trace",
    "SearchParams": "engine.pipeline.trace",
    "Trace": "engine.pipeline.trace",
    "Variant": "engine.pipeline.trace",
    "search": "engine.pipeline.run",
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
