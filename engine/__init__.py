"""rankscope's engine: context-mode's lexical retrieval pipeline, traced.

Pure Python (no Textual). Public API::

    from engine import Store, SearchParams, search
    store = Store.create(":memory:")
    index_corpus(store, "sample_corpus")
    trace = search(store, SearchParams("install", limit=3))
"""

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
