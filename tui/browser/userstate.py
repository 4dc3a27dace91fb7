"""What the browser keeps per store between runs: query history, saved cases
and judgments. No Textual here.

Files live in the store's data folder (:mod:`engine.store.userdata`):
``history.json``, ``cases.json`` and ``qrels.json`` (or the ``--qrels`` file).
An in-memory store keeps them in memory only. A file that cannot be read is
reported once (``problem``) and treated as empty; it is not overwritten
until something new is saved, so nothing is lost by just browsing.
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.lab.compare import ENTRY_KEYS
from engine.pipeline.variants import variant_spec
from engine.pipeline.params import SearchParams
from engine.lab.qrels import Qrels, QrelsError, read_qrels, write_qrels
from typing_extensions import NotRequired, TypedDict

from engine.files.reading import check_shape, dataclass_shape, json_shape
from engine.files.writing import write_text_file
from engine.store.userdata import CASES_FILE, HISTORY_FILE, read_json_file, remember_store, store_file

#: Queries kept in the history (oldest dropped first).
HISTORY_MAX = 1000


class _SavedFile(ABC):
    """A file the browser saves after every change, or memory only.

    Attributes:
        path: the file, or ``None`` (memory only).
        problem: why the file could not be read at start, or ``None``.
    """

    path: Path | None
    problem: str | None

    def save(self) -> None:
        """Write the file (nothing when memory only). Never over a file that
        could not be read: it may hold work.

        Raises:
            ValueError: the file could not be read at start (it is kept as is).
            OSError: the file cannot be written.
        """
        if self.problem is not None:
            raise ValueError(f"not saved: {self.path} could not be read ({self.problem}); fix or move it first")
        if self.path is not None:
            self._write(self.path)

    @abstractmethod
    def _write(self, path: Path) -> None:
        """Write the whole file at ``path``."""


@json_shape(extra="ignore")
class HistoryShape(TypedDict):
    """``history.json``: ``{"version": 1, "queries": [query, ...]}`` (oldest first)."""

    version: NotRequired[int]
    queries: list[str]


@json_shape(extra="ignore")
class CasesShape(TypedDict):
    """``cases.json``: ``{"version": 1, "cases": [case, ...]}``; each case has
    the fields of :class:`Case` (checked with :data:`CASE_SHAPE`)."""

    version: NotRequired[int]
    cases: list[dict[str, object]]


def _dump(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


class QueryHistory(_SavedFile):
    """Queries searched in this store, oldest first, each once (a repeat
    moves to the end).

    Attributes:
        path: the ``history.json`` file, or ``None`` (memory only).
        entries: the queries, oldest first.
        problem: why the file could not be read, or ``None``.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: list[str] = []
        self.problem: str | None = None
        if path is not None:
            try:
                data = read_json_file(path, "query history", HistoryShape)
            except ValueError as exc:
                self.problem = str(exc)
                data = None
            if data is not None:
                self.entries = [q for q in data["queries"] if q.strip()][-HISTORY_MAX:]

    def add(self, query: str) -> bool:
        """Record ``query`` (blank ones are ignored) and save. Returns
        whether the history changed.

        Raises:
            OSError: the file cannot be written.
        """
        if not query.strip() or (self.entries and self.entries[-1] == query):
            return False
        if query in self.entries:
            self.entries.remove(query)
        self.entries.append(query)
        del self.entries[:-HISTORY_MAX]
        self.save()
        return True

    def _write(self, path: Path) -> None:
        write_text_file(path, _dump({"version": 1, "queries": self.entries}), True, make_folder=True)

    def search(self, text: str, limit: int = 200) -> list[str]:
        """fzf-style: queries matching ``text`` (every character in order,
        case-insensitive), best first (rapidfuzz ``WRatio``, newer first on
        ties); all of them, newest first, for an empty ``text``."""
        newest = list(reversed(self.entries))
        if not text.strip():
            return newest[:limit]
        needle = text.lower()

        def subsequence(q: str) -> bool:
            it = iter(q.lower())
            return all(ch in it for ch in needle)

        from rapidfuzz import fuzz

        found = [q for q in newest if subsequence(q)]
        found.sort(key=lambda q: -fuzz.WRatio(text, q))  # stable: newer first on ties
        return found[:limit]


class HistoryCursor:
    """Up/Down through a :class:`QueryHistory` from the query box, like a
    shell: Up goes to older entries, Down to newer ones and finally back to
    the text that was being typed. Stepping walks the history as it was when
    stepping began (:attr:`entries`): queries recorded meanwhile (each query
    stepped to is searched) neither move nor add a step."""

    def __init__(self) -> None:
        self.index: int | None = None  # 0-based position in entries while browsing
        self.entries: list[str] = []  # the history when stepping began, oldest first
        self.draft = ""

    @property
    def browsing(self) -> bool:
        return self.index is not None

    def older(self, history: QueryHistory, current: str) -> str | None:
        """The entry before the current one, skipping one equal to
        ``current`` (the box's text); ``None`` at the oldest."""
        if self.index is None:
            if not history.entries:
                return None
            self.entries = list(history.entries)
            self.draft = current
            self.index = len(self.entries)
        while self.index > 0:
            self.index -= 1
            if self.entries[self.index] != current:  # skip what the box already shows
                return self.entries[self.index]
        return None

    def newer(self) -> str | None:
        """The entry after the current one, the draft after the newest, or
        ``None`` when not browsing."""
        if self.index is None:
            return None
        self.index += 1
        if self.index >= len(self.entries):
            self.reset()
            return self.draft
        return self.entries[self.index]

    def stepped_to(self, query: str) -> bool:
        """Whether ``query`` is one of the entries being stepped through."""
        return self.index is not None and query in self.entries

    def reset(self) -> None:
        self.index = None
        self.entries = []


def query_slug(query: str) -> str:
    """A readable query id for ``query``: lower-case words joined by ``-``
    (at most 40 characters; ``query`` when nothing is left)."""
    slug = re.sub(r"[^\w]+", "-", query.lower()).strip("-")[:40].strip("-")
    return slug or "query"


class Judgments(_SavedFile):
    """The browser's judgments: a :class:`~engine.lab.qrels.Qrels` saved to the
    store's ``qrels.json`` (or ``--qrels`` file) after every change.

    Attributes:
        path: where they are saved, or ``None`` (memory only).
        qrels: the judgments.
        problem: why the file could not be read, or ``None``.
    """

    def __init__(self, path: Path | None, query_ids: dict[str, str] | None = None) -> None:
        self.path = path
        self.problem: str | None = None
        self.qrels = Qrels()
        #: ``{query text: id}`` of the store's query file: such a query is graded under that id.
        self.query_ids: dict[str, str] = dict(query_ids or {})
        if path is not None:
            try:
                self.qrels = read_qrels(path)
            except FileNotFoundError:
                pass
            except QrelsError as exc:
                self.problem = str(exc)

    def qid_for(self, query: str, create: bool = False) -> str | None:
        """The query id judgments of ``query`` use: its id in the store's
        query file (:attr:`query_ids`), else the id whose recorded text is
        ``query``, else (with ``create``) a new :func:`query_slug` (``-2``,
        ``-3`` ... when taken); ``None`` for a blank query or, without
        ``create``, an unknown one."""
        if not query.strip():
            return None
        if query in self.query_ids:
            return self.query_ids[query]
        qid = self.qrels.qid_for_text(query)
        if qid is not None or not create:
            return qid
        base = query_slug(query)
        qid, n = base, 1
        while qid in self.qrels.queries or qid in self.qrels.judgments:
            n += 1
            qid = f"{base}-{n}"
        return qid

    def for_query(self, query: str) -> dict[str, int]:
        """``{chunk id: grade}`` of ``query`` (empty when unjudged)."""
        qid = self.qid_for(query)
        return self.qrels.for_query(qid) if qid is not None else {}

    def grade(self, query: str, chunk_id: str, grade: int | None) -> str | None:
        """Judge ``chunk_id`` for ``query`` (``None`` clears) and save.
        Returns the query id, or ``None`` when clearing a chunk ``query``
        has no grade for (nothing changes and nothing is written).

        Raises:
            ValueError: a blank query or a grade outside 0-3.
            OSError: the file cannot be written.
        """
        if not query.strip():
            raise ValueError("type a query first: judgments belong to a query")
        if grade is None:
            qid = self.qid_for(query)
            if qid is None or self.qrels.grade(qid, chunk_id) is None:
                return None
        else:
            qid = self.qid_for(query, create=True)
        assert qid is not None
        self.qrels.set_grade(qid, chunk_id, grade, query=query)
        self.save()
        return qid

    def _write(self, path: Path) -> None:
        write_qrels(self.qrels, path)


@dataclass
class Case:
    """A saved case: a query, its parameters, a pinned chunk and its judgments.

    Attributes:
        id: the case's query id (the id its judgments use).
        query, limit, source, source_match, content_type, sessions: the search.
        variant: the variant spec (``reference`` for the reference pipeline).
        pinned: the case's chunk id: the chunk pinned with p when it was
            saved, else the selected one (``None``: neither). Reopening the
            case pins and selects it.
        judgments: ``{chunk id: grade}`` when saved.
        saved_at: ISO 8601 UTC time of saving.
    """

    id: str
    query: str
    limit: int = 3
    source: str | None = None
    source_match: str = "like"
    content_type: str | None = None
    sessions: list[str] | None = None
    variant: str = "reference"
    pinned: str | None = None
    judgments: dict[str, int] = field(default_factory=dict)
    saved_at: str = ""

    @classmethod
    def from_search(cls, qid: str, params: SearchParams, pinned: str | None, judgments: dict[str, int]) -> "Case":
        now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return cls(
            qid,
            params.query,
            params.limit,
            params.source,
            params.source_match,
            params.content_type,
            list(params.sessions) if params.sessions is not None else None,
            variant_spec(params.variant),
            pinned,
            dict(judgments),
            now,
        )

    def params(self) -> SearchParams:
        """The :class:`SearchParams` to reopen it with.

        Raises:
            ValueError: a field no longer valid (the message names it).
        """
        from engine.pipeline.variants import parse_variant

        return SearchParams(
            self.query,
            self.limit,
            self.source,
            self.source_match,
            self.content_type,
            tuple(self.sessions) if self.sessions is not None else None,
            parse_variant(self.variant),
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def query_entry(self) -> dict[str, Any]:
        """The case as a ``queries.json`` entry (what ``rankscope batch`` and
        ``eval`` read): ``id``, ``query`` and the parameters that differ from
        the defaults."""
        entry: dict[str, Any] = {"id": self.id, "query": self.query}
        if self.limit != 3:
            entry["limit"] = self.limit
        for key in ("source", "content_type", "sessions"):
            if getattr(self, key) is not None:
                entry[key] = getattr(self, key)
        if self.source_match != "like":
            entry["source_match"] = self.source_match
        assert set(entry) <= set(ENTRY_KEYS)
        return entry


#: The JSON shape of one saved case: :class:`Case`'s fields and types.
CASE_SHAPE = dataclass_shape(Case)


class CaseBook(_SavedFile):
    """The saved cases of a store (``cases.json``), in saving order; saving a
    case with the id of an earlier one replaces it."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.cases: list[Case] = []
        self.problem: str | None = None
        if path is None:
            return
        what = "saved cases"
        try:
            data = read_json_file(path, what, CasesShape)
            items = [] if data is None else data["cases"]
            where = f"cannot read {what} {path}"
            self.cases = [Case(**check_shape(item, CASE_SHAPE, where, ("cases", i))) for i, item in enumerate(items)]
        except ValueError as exc:
            self.problem = str(exc)
            self.cases = []

    def save_case(self, case: Case) -> None:
        """Add (or replace by id) ``case`` and write the file.

        Raises:
            OSError: the file cannot be written.
        """
        self.cases = [c for c in self.cases if c.id != case.id] + [case]
        self.save()

    def remove(self, case_id: str) -> None:
        """Delete a case by id and write the file."""
        self.cases = [c for c in self.cases if c.id != case_id]
        self.save()

    def _write(self, path: Path) -> None:
        write_text_file(path, _dump({"version": 1, "cases": [c.to_dict() for c in self.cases]}), True, make_folder=True)

    def export_texts(self) -> tuple[str, str]:
        """The two files of an export: the cases as a ``queries.json`` list
        (:meth:`Case.query_entry`) and their judgments as JSON qrels."""
        from engine.lab.qrels import qrels_text

        qrels = Qrels({c.id: c.judgments for c in self.cases if c.judgments}, {c.id: c.query for c in self.cases})
        return _dump([c.query_entry() for c in self.cases]), qrels_text(qrels, "json")

    def export(self, path: Path) -> tuple[Path, Path]:
        """Write the cases as a ``queries.json`` file at ``path`` and their
        judgments as qrels (JSON form) beside it (:func:`qrels_beside`), so
        ``rankscope eval PATH --qrels <stem>.qrels.json`` runs them
        (:meth:`export_texts`). Returns both paths. Never overwrites: both are
        new files (:func:`engine.files.writing.write_text_file`).

        Raises:
            FileExistsError: either name is taken (by anything, a dangling
                symbolic link included); nothing is left written.
            OSError: a file cannot be written.
        """
        qrels_path = qrels_beside(path)
        if os.path.lexists(qrels_path):
            raise FileExistsError(errno.EEXIST, "File exists", str(qrels_path))
        queries_text, qrels_text = self.export_texts()
        write_text_file(path, queries_text)
        try:
            write_text_file(qrels_path, qrels_text)
        except OSError:
            path.unlink(missing_ok=True)  # the pair or nothing (the queries file is ours: just written)
            raise
        return path, qrels_path


def qrels_beside(path: Path) -> Path:
    """The judgments file an export at ``path`` writes: ``<stem>.qrels.json`` beside it."""
    return path.with_name(path.stem + ".qrels.json")


def free_export_path(folder: Path, name: str) -> Path:
    """``folder/name`` (``rankscope-cases.json``), or ``<stem>-2.json``,
    ``-3`` ... : the first whose export pair (it and :func:`qrels_beside`)
    are both free names (not even a dangling symbolic link)."""
    stem, suffix = Path(name).stem, Path(name).suffix
    path, n = folder / name, 2
    while os.path.lexists(path) or os.path.lexists(qrels_beside(path)):
        path = folder / f"{stem}-{n}{suffix}"
        n += 1
    return path


@dataclass
class StoreState:
    """History, cases and judgments of one store, loaded together, and why
    the store's query file could not be read (``None``: read, or none named)."""

    history: QueryHistory
    cases: CaseBook
    judgments: Judgments
    query_file_problem: str | None = None

    @classmethod
    def load(cls, store_path: str | None, qrels_path: Path | None = None) -> "StoreState":
        """Read the store's files (missing ones are empty). ``qrels_path``
        overrides the store's own ``qrels.json`` (``rankscope PATH --qrels FILE``)."""
        from engine.lab.qrels import default_qrels_path

        if store_path is not None and store_path != ":memory:":
            try:
                remember_store(store_path)
            except OSError:
                pass  # the note is for people; failing to write it changes nothing
        query_ids, problem = _query_file_ids(store_path)
        return cls(
            QueryHistory(store_file(store_path, HISTORY_FILE)),
            CaseBook(store_file(store_path, CASES_FILE)),
            Judgments(qrels_path if qrels_path is not None else default_qrels_path(store_path), query_ids),
            problem,
        )

    def problems(self) -> list[str]:
        """Files that could not be read (each is left as it is until saved over)."""
        return [
            p for p in (self.history.problem, self.cases.problem, self.judgments.problem, self.query_file_problem) if p
        ]


def _query_file_ids(store_path: str | None) -> tuple[dict[str, str], str | None]:
    """``({query text: id}, problem)`` of the store's query file
    (:func:`engine.store.userdata.query_file_of`); empty when it names none,
    and a problem when the file it names cannot be read."""
    from engine.files.reading import InputFileError, load_json_input
    from engine.lab.qrels import query_file_ids
    from engine.store.userdata import query_file_of

    path = query_file_of(store_path)
    if path is None:
        return {}, None
    try:
        data = load_json_input(path, "query file")
    except InputFileError as exc:
        return {}, f"{exc} (the store's query file: its queries are graded under new ids)"
    return (query_file_ids(data) if isinstance(data, list) else {}), None
