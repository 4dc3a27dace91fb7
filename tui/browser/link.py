"""What a lab screen gets from the browser it opens over (:class:`BrowserLink`):
the store it searches in its own workers, the search function, the chunk
list the why-not finder reads once per store, and the way back (pinning a
chunk in the browser). No Textual here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from engine import Store

from tui.browser.options import SearchFn


@dataclass(frozen=True)
class ChunkEntry:
    """One chunk as the finder lists it.

    Attributes:
        rowid, source, title, content_type, session_id: the chunk
            (``source`` is ``""`` for an orphan chunk).
    """

    rowid: int
    source: str
    title: str
    content_type: str
    session_id: str

    @property
    def key(self) -> str:
        """``source::title`` (what the finder matches)."""
        return f"{self.source}::{self.title}"


@dataclass
class ChunkList:
    """The store's chunk list for the why-not finder, read once per store
    (a worker of the first finder fills it; later finders find it here).

    Attributes:
        entries: the chunks in row id order, or ``None`` before it is read.
        keys: the text the finder matches for each entry (``source::title``, normalised).
    """

    entries: list[ChunkEntry] | None = None
    keys: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BrowserLink:
    """The browser a lab screen (compare, why not?, the rank flow) works for.

    Attributes:
        store: the browser's store (the lab screens search it in their own workers).
        search_fn: the pipeline entry point (:class:`tui.browser.options.SearchFn`).
        chunk_list: the store's chunk list, shared by every finder over this browser.
        pin: pins a chunk (its row id) in the browser, ``None`` unpins: the
            line under the query box then follows its fate.
        cursor_blink: blink the cursor of the screen's inputs.
    """

    store: Store
    search_fn: SearchFn
    chunk_list: ChunkList
    pin: Callable[[int | None], None]
    cursor_blink: bool = True
