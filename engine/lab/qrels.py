"""Judgments (qrels): which chunks are relevant to which query, graded 0-3.

A judgment is ``(query id, chunk id, grade)``; the chunk id is the stable id
of :mod:`engine.store.chunkids` (``SOURCE::TITLE``, ``SOURCE::TITLE#2``, ...), the
query id is the ``id`` of a ``queries.json`` entry. Grades (the usual TREC
graded scale; binary measures such as ``R@k`` count grade >= 1 as relevant
unless the measure says otherwise, e.g. ``R(rel=2)@10``):

====== ==========================================
grade  meaning
====== ==========================================
0      not relevant (judged)
1      marginally relevant (mentions it)
2      relevant (answers part of the query)
3      highly relevant (the answer)
====== ==========================================

Two file forms, chosen by the file name (``.json`` = JSON, anything else =
TREC) when writing and by content when reading (a file starting with ``{``
is JSON):

* **TREC qrels** (what trec_eval, ranx and ir-measures read): one judgment a
  line, ``qid 0 docid grade``, fields separated by whitespace; ``qid`` and
  ``docid`` are written with :func:`engine.store.chunkids.trec_token` (``%``,
  whitespace and non-printable characters percent-encoded). Blank lines and
  lines starting with ``#`` are skipped when reading.
* **JSON** (rankscope's own, keeps the query texts)::

      {"format": "rankscope-qrels", "version": 1,
       "queries": [{"id": "rerank", "query": "write quorum",
                    "judgments": {"docs/replication.md::Replication > Write quorum": 3}}]}

  The plain ``{"qid": {"docid": grade}}`` mapping (ir-measures' dict form)
  is read too.

A per-store default file (JSON form) lives in the store's data folder
(:func:`default_qrels_path`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence, Union

from typing_extensions import NotRequired, TypedDict

from engine.files.reading import InputFileError, check_shape, json_shape, parse_json_text, read_input_text
from engine.files.writing import write_text_file
from engine.store.chunkids import from_trec_token, trec_token
from engine.store.userdata import QRELS_FILE, store_file

#: Allowed grades.
GRADES = (0, 1, 2, 3)
#: What each grade means, for help texts.
GRADE_NAMES = {0: "not relevant", 1: "marginally relevant", 2: "relevant", 3: "highly relevant"}
JSON_FORMAT = "rankscope-qrels"
JSON_VERSION = 1


class QrelsError(ValueError):
    """A qrels file cannot be read or holds something that is not a
    judgment; the message names the file and the line or entry."""


@json_shape(extra="ignore")
class QrelsQueryShape(TypedDict):
    """One query of the JSON form."""

    id: str
    query: NotRequired[Union[str, None]]
    judgments: NotRequired[dict[str, int]]


@json_shape(extra="ignore")
class QrelsShape(TypedDict):
    """The JSON form (``{"format": "rankscope-qrels", ...}``)."""

    format: Literal["rankscope-qrels"]
    version: int
    queries: list[QrelsQueryShape]


#: ir-measures' dict form: ``{qid: {docid: grade}}``.
PlainQrelsShape = dict[str, dict[str, int]]
#: Fields of a TREC qrels line: separated by ASCII whitespace only, as trec_eval's
#: ``isspace`` in the C locale (a no-break space is part of an id).
_TREC_SPACE = re.compile(r"[ \t\v\f\r]+")
#: A grade as trec_eval reads one (``atol``): an optional sign and ASCII digits;
#: here the whole field must be that (``3x``, ``٣``, ``3.0`` are refused).
_TREC_GRADE = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class GradeConflict:
    """One (query, chunk) judged more than once with different grades in
    one qrels file. The last judgment is the one kept (the file is read in
    order, each judgment replacing the one before, as a ``{qid: {docid:
    grade}}`` mapping built line by line keeps it).

    Attributes:
        qid: the query id (decoded).
        chunk_id: the chunk (document) id (decoded).
        judgments: ``(where, grade)`` of every judgment of the pair, in file
            order: ``where`` is ``"line N"`` (TREC, 1-based) or
            ``"queries[I]"`` (JSON, 0-based entry).
    """

    qid: str
    chunk_id: str
    judgments: tuple[tuple[str, int], ...]

    @property
    def kept(self) -> int:
        """The grade kept: the last one."""
        return self.judgments[-1][1]


class _ConflictLog:
    """Where each (query, chunk) of a file being read was judged, to find
    the pairs judged with different grades (identical repeats are not conflicts)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], list[tuple[str, int]]] = {}

    def add(self, qid: str, chunk_id: str, grade: int, where: str) -> None:
        self._seen.setdefault((qid, chunk_id), []).append((where, grade))

    def conflicts(self) -> list[GradeConflict]:
        return [
            GradeConflict(qid, doc, tuple(judgments))
            for (qid, doc), judgments in self._seen.items()
            if len({grade for _, grade in judgments}) > 1
        ]


def _check_grade(grade: object, where: str) -> int:
    if isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES:
        raise QrelsError(f"{where}: grade must be 0, 1, 2 or 3; got {grade!r}")
    return grade


class Qrels:
    """Judgments of a set of queries (mutable: the browser grades into it).

    Attributes:
        judgments: ``{query id: {chunk id: grade}}``; insertion order kept.
        queries: ``{query id: query text}`` where known (JSON form, browser).
        conflicts: the pairs the file this was read from judged with
            different grades (:class:`GradeConflict`, file order of their
            first judgment; the last grade kept); empty when not read from a
            file. Not compared by ``==``.
    """

    def __init__(
        self,
        judgments: Mapping[str, Mapping[str, int]] | None = None,
        queries: Mapping[str, str] | None = None,
    ) -> None:
        self.judgments: dict[str, dict[str, int]] = {}
        self.queries: dict[str, str] = dict(queries or {})
        self.conflicts: list[GradeConflict] = []
        for qid, docs in (judgments or {}).items():
            for doc, grade in docs.items():
                self.set_grade(qid, doc, grade)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Qrels) and self.judgments == other.judgments and self.queries == other.queries

    def __repr__(self) -> str:
        return f"Qrels({self.count()} judgments for {len(self.judgments)} queries)"

    def count(self) -> int:
        """Number of judgments."""
        return sum(len(d) for d in self.judgments.values())

    def judged(self, qid: str) -> bool:
        """True when ``qid`` has at least one judgment (any grade)."""
        return bool(self.judgments.get(qid))

    def for_query(self, qid: str) -> dict[str, int]:
        """``{chunk id: grade}`` of ``qid`` (empty when unjudged)."""
        return dict(self.judgments.get(qid, {}))

    def grade(self, qid: str, chunk_id: str) -> int | None:
        """The grade of ``chunk_id`` for ``qid``, or ``None`` when not judged."""
        return self.judgments.get(qid, {}).get(chunk_id)

    def set_grade(self, qid: str, chunk_id: str, grade: int | None, query: str | None = None) -> None:
        """Judge ``chunk_id`` for ``qid`` (``None`` removes the judgment);
        ``query`` records the query text (not when there was nothing to
        remove: removing a judgment that does not exist changes nothing).

        Raises:
            QrelsError: a grade outside 0-3, or an empty id.
        """
        if not qid or not chunk_id:
            raise QrelsError(f"query id and chunk id must not be empty; got {qid!r}, {chunk_id!r}")
        if grade is None:
            docs = self.judgments.get(qid)
            if docs is None or chunk_id not in docs:
                return
            del docs[chunk_id]
            if not docs:
                del self.judgments[qid]
        else:
            _check_grade(grade, f"judgment {qid} / {chunk_id}")
            self.judgments.setdefault(qid, {})[chunk_id] = grade
        if query is not None:
            self.queries[qid] = query

    def qid_for_text(self, query: str) -> str | None:
        """The id whose recorded query text is ``query``, or ``None``."""
        for qid, text in self.queries.items():
            if text == query:
                return qid
        return None

    # ── TREC form ──

    def to_trec(self) -> str:
        """TREC qrels text (``qid 0 docid grade`` lines, query then insertion order)."""
        lines = [
            f"{trec_token(qid)} 0 {trec_token(doc)} {grade}"
            for qid, docs in self.judgments.items()
            for doc, grade in docs.items()
        ]
        return "".join(line + "\n" for line in lines)

    @classmethod
    def from_trec(cls, text: str, name: str = "qrels") -> "Qrels":
        """Parse TREC qrels text; ``name`` is used in error messages. A
        (query, chunk) judged again replaces its grade (the last is kept);
        the pairs judged with different grades are listed in
        :attr:`conflicts`.

        Raises:
            QrelsError: a line without exactly four fields, a grade that is
                not 0-3, or an id that is not :func:`~engine.store.chunkids.trec_token`
                text (``%zz``, ``%FF``: refused rather than kept, which would
                write it back as another id); the message names the 1-based
                line number.
        """
        q = cls()
        log = _ConflictLog()
        for n, raw in enumerate(text.split("\n"), 1):
            line = raw.strip(" \t\v\f\r")
            if not line or line.startswith("#"):
                continue
            parts = _TREC_SPACE.split(line)
            if len(parts) != 4:
                raise QrelsError(f"{name} line {n}: expected 'qid 0 docid grade' (4 fields); got {len(parts)}: {raw!r}")
            qid_token, _iteration, doc_token, grade_text = parts
            if not _TREC_GRADE.fullmatch(grade_text) or len(grade_text) > 20:
                raise QrelsError(f"{name} line {n}: grade must be 0, 1, 2 or 3; got {grade_text!r}")
            where = f"{name} line {n}"
            grade = _check_grade(int(grade_text), where)
            qid, doc = _trec_field(qid_token, "qid", where), _trec_field(doc_token, "docid", where)
            q.set_grade(qid, doc, grade)
            log.add(qid, doc, grade, f"line {n}")
        q.conflicts = log.conflicts()
        return q

    # ── JSON form ──

    def to_json(self) -> dict[str, Any]:
        """The JSON form (see the module docstring)."""
        qids = list(self.judgments) + [q for q in self.queries if q not in self.judgments]
        out = []
        for qid in qids:
            entry: dict[str, Any] = {"id": qid}
            if qid in self.queries:
                entry["query"] = self.queries[qid]
            entry["judgments"] = dict(self.judgments.get(qid, {}))
            out.append(entry)
        return {"format": JSON_FORMAT, "version": JSON_VERSION, "queries": out}

    @classmethod
    def from_json(cls, data: object, name: str = "qrels") -> "Qrels":
        """Read the JSON form, or a plain ``{"qid": {"docid": grade}}`` mapping.

        Raises:
            QrelsError: anything else (the message names the entry).
        """
        q = cls()
        if isinstance(data, dict) and data.get("format") == JSON_FORMAT:
            version = data.get("version")
            if version != JSON_VERSION:
                raise QrelsError(f"{name}: unsupported version {version!r} (this rankscope reads {JSON_VERSION})")
            doc = _shaped(data, QrelsShape, name)
            log = _ConflictLog()
            for i, e in enumerate(doc["queries"]):
                if not e["id"]:
                    raise QrelsError(f"{name}: queries[{i}].id must not be empty")
                text = e.get("query")
                if text is not None:
                    q.queries[e["id"]] = text
                for chunk, grade in e.get("judgments", {}).items():
                    _check_grade(grade, f"{name}: query {e['id']}, chunk {chunk!r}")
                    q.set_grade(e["id"], chunk, grade)
                    log.add(e["id"], chunk, grade, f"queries[{i}]")
            q.conflicts = log.conflicts()
            return q
        if isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
            for qid, docs in _shaped(data, PlainQrelsShape, name).items():
                for chunk, grade in docs.items():
                    _check_grade(grade, f"{name}: query {qid}, chunk {chunk!r}")
                    q.set_grade(qid, chunk, grade)
            return q
        raise QrelsError(
            f'{name}: not a qrels file: expected {{"format": "{JSON_FORMAT}", ...}} or {{qid: {{docid: grade}}}}'
        )


def _trec_field(token: str, field: str, where: str) -> str:
    """The id a TREC field holds (:func:`~engine.store.chunkids.from_trec_token`).

    Raises:
        QrelsError: ``WHERE: FIELD 'TOKEN': what is wrong``.
    """
    try:
        return from_trec_token(token)
    except ValueError as exc:
        raise QrelsError(f"{where}: {field} {token!r}: {exc}") from None


def _shaped(data: object, shape: object, name: str) -> Any:
    """:func:`engine.files.reading.check_shape`, its error a :class:`QrelsError`."""
    try:
        return check_shape(data, shape, name)
    except InputFileError as exc:
        raise QrelsError(str(exc)) from None


def is_json_name(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` names a JSON file (``.json``, any case)."""
    return Path(path).suffix.lower() == ".json"


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read a qrels file in either form (JSON when it starts with ``{``),
    through :mod:`engine.files.reading` (a regular file, size and depth
    bounded, a leading BOM dropped, numbers and shapes checked strictly).

    Raises:
        FileNotFoundError: no such file (nothing at all at the path).
        QrelsError: unreadable or malformed (names the file and line/entry).
    """
    p = Path(path)
    if not os.path.lexists(p):
        raise FileNotFoundError(2, "No such file or directory", str(p))
    try:
        text = read_input_text(p, "qrels")
        if text.lstrip().startswith("{"):
            return Qrels.from_json(parse_json_text(text, f"cannot read qrels {p}"), f"qrels {p}")
    except InputFileError as exc:
        raise QrelsError(str(exc)) from None
    return Qrels.from_trec(text, str(p))


def write_qrels(qrels: Qrels, path: str | os.PathLike[str], form: str | None = None, overwrite: bool = True) -> None:
    """Write ``qrels`` through :func:`engine.files.writing.write_text_file`
    (a temporary file renamed into place; the folder is created); ``form``
    is ``"json"`` or ``"trec"`` (default: by the file name,
    :func:`is_json_name`); ``overwrite`` replaces an existing file.

    Raises:
        OSError: the file cannot be written (``FileExistsError`` when it
            exists and ``overwrite`` is false; ``OutputRefused`` for a FIFO,
            device, folder or database).
        ValueError: an unknown ``form``.
    """
    p = Path(path)
    write_text_file(p, qrels_text(qrels, form or ("json" if is_json_name(p) else "trec")), overwrite, make_folder=True)


def qrels_text(qrels: Qrels, form: str) -> str:
    """``qrels`` as the text of a qrels file: ``form`` ``"json"`` (with the
    query texts) or ``"trec"`` (``qid 0 docid grade`` lines).

    Raises:
        ValueError: an unknown ``form``.
    """
    if form == "json":
        return json.dumps(qrels.to_json(), ensure_ascii=False, indent=2) + "\n"
    if form == "trec":
        return qrels.to_trec()
    raise ValueError(f"form must be 'json' or 'trec'; got {form!r}")


def default_qrels_path(store_path: str | os.PathLike[str] | None) -> Path | None:
    """The per-store qrels file (``qrels.json`` in the store's data folder,
    see :mod:`engine.store.userdata`), or ``None`` for an in-memory store."""
    return store_file(store_path, QRELS_FILE)


def merged(items: Iterable[Qrels]) -> Qrels:
    """One :class:`Qrels` holding every judgment of ``items`` (later wins)."""
    out = Qrels()
    for q in items:
        out.queries.update(q.queries)
        for qid, docs in q.judgments.items():
            for doc, grade in docs.items():
                out.set_grade(qid, doc, grade)
    return out


def entry_id(entry: Mapping[str, object], index: int) -> str:
    """The id of a query-file entry: its ``id``, else its 1-based number (``index`` is 0-based)."""
    return str(entry.get("id", index + 1))


def check_query_ids(entries: Sequence[Mapping[str, object]]) -> None:
    """Refuse a query file in which two entries have one id (:func:`entry_id`):
    results, judgments, TREC runs and snapshots are keyed by query id, so
    their queries would be scored and compared as one.

    Raises:
        ValueError: names each duplicated id and its entries (1-based), e.g.
            ``query ids must be unique; 'q1' is the id of entries 1 and 3``.
    """
    seen: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        seen.setdefault(entry_id(e, i), []).append(i + 1)
    dups = [
        f"{qid!r} is the id of entries {', '.join(map(str, n[:-1]))} and {n[-1]}"
        for qid, n in seen.items()
        if len(n) > 1
    ]
    if dups:
        raise ValueError("query ids must be unique (results and judgments are keyed by id); " + "; ".join(dups))


def query_file_ids(entries: Iterable[object]) -> dict[str, str]:
    """``{query text: query id}`` of a query file's entries (:func:`entry_id`);
    the first entry of a text wins; entries without a string ``query`` are skipped."""
    out: dict[str, str] = {}
    for i, e in enumerate(entries):
        if isinstance(e, Mapping) and isinstance(e.get("query"), str):
            out.setdefault(e["query"], entry_id(e, i))
    return out
