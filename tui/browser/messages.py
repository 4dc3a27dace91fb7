"""App-wide messages (a widget's or screen's own messages are nested classes on it)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from engine import Store

from tui.browser.corpus_cache import SkipList
from tui.browser.facts import StoreFacts


@dataclass
class StoreReady(Message):
    """A store is open and its counts are read: the app browses it (posted
    by the loading screen after indexing and by the store picker).

    Attributes:
        store: the open store (the app owns it from now on).
        label: how to name it in the interface.
        facts: its counts, sessions and labels (:func:`tui.browser.facts.read_facts`).
        skipped: the files its indexing skipped (empty for a store rankscope did not index).
    """

    store: Store
    label: str
    facts: StoreFacts
    skipped: SkipList
