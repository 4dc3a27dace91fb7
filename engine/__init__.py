"""rankscope's engine: context-mode's lexical retrieval pipeline, traced.

Pure Python (no Textual). Public API::

    from engine import Store, SearchParams, search
    store = Store.create(":memory:")
    index_corpus(store, "sample_corpus")
    trace = search(store, SearchParams("install", limit=3))
"""

from .corpus import IndexReport, index_corpus, index_paths, load_sessions_map
from .empty_reasons import EmptyPart
from .export import trace_to_dict
from .model import (
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
from .pipeline import search
from .store import (
    CorruptStoreError,
    NotADatabaseError,
    NotOurStoreError,
    ReadOnlyStoreError,
    SchemaError,
    Store,
    StoreError,
    StoreNotFoundError,
)

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
