"""rankscope's engine: context-mode's lexical retrieval pipeline, traced.

Pure Python (no Textual). Public API::

    from engine import Store, SearchParams, search
    store = Store.create(":memory:")
    index_corpus(store, "sample_corpus")
    trace = search(store, SearchParams("install", limit=3))
"""

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
