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
from pathlib import Path
from typing import Iterable, Mapping

from engine.store.chunkids import from_trec_token, trec_token
from engine.store.userdata import QRELS_FILE, store_file, write_text_atomic

#: Allowed grades.
GRADES = (0, 1, 2, 3)
#: What each grade means, for help texts.
GRADE_NAMES = {0: "not relevant", 1: "marginally relevant", 2: "relevant", 3: "highly relevant"}
JSON_FORMAT = "rankscope-qrels"
JSON_VERSION = 1


class QrelsError(ValueError):
    """A qrels file cannot be read or holds something that is not a
    judgment; the message names the file and the line or entry."""


def _check_grade(grade: object, where: str) -> int:
    if isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES:
        raise QrelsError(f"{where}: grade must be 0, 1, 2 or 3; got {grade!r}")
    return grade


class Qrels:
    """Judgments of a set of queries (mutable: the browser grades into it).

    Attributes:
        judgments: ``{query id: {chunk id: grade}}``; insertion order kept.
        queries: ``{query id: query text}`` where known (JSON form, browser).
    """

    def __init__(
        self,
        judgments: Mapping[str, Mapping[str, int]] | None = None,
        queries: Mapping[str, str] | None = None,
    ) -> None:
        self.judgments: dict[str, dict[str, int]] = {}
        self.queries: dict[str, str] = dict(queries or {})
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
        """Parse TREC qrels text; ``name`` is used in error messages.

        Raises:
            QrelsError: a line without exactly four fields, or a grade that is
                not 0-3 (the message names the 1-based line number).
        """
        q = cls()
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 4:
                raise QrelsError(f"{name} line {n}: expected 'qid 0 docid grade' (4 fields); got {len(parts)}: {raw!r}")
            qid, _iteration, doc, grade_text = parts
            try:
                grade = int(grade_text)
            except ValueError:
                raise QrelsError(f"{name} line {n}: grade must be 0, 1, 2 or 3; got {grade_text!r}") from None
            _check_grade(grade, f"{name} line {n}")
            q.set_grade(from_trec_token(qid), from_trec_token(doc), grade)
        return q

    # ── JSON form ──

    def to_json(self) -> dict:
        """The JSON form (see the module docstring)."""
        qids = list(self.judgments) + [q for q in self.queries if q not in self.judgments]
        out = []
        for qid in qids:
            entry: dict = {"id": qid}
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
            entries = data.get("queries")
            if not isinstance(entries, list):
                raise QrelsError(f"{name}: 'queries' must be a list")
            for i, e in enumerate(entries, 1):
                if not isinstance(e, dict) or not isinstance(e.get("id"), str) or not e["id"]:
                    raise QrelsError(f"{name}: query #{i} must be an object with a non-empty string 'id'")
                text, docs = e.get("query"), e.get("judgments", {})
                if text is not None and not isinstance(text, str):
                    raise QrelsError(f"{name}: query #{i} ({e['id']}): 'query' must be a string")
                if not isinstance(docs, dict):
                    raise QrelsError(
                        f"{name}: query #{i} ({e['id']}): 'judgments' must be an object of chunk id → grade"
                    )
                if text is not None:
                    q.queries[e["id"]] = text
                for doc, grade in docs.items():
                    _check_grade(grade, f"{name}: query {e['id']}, chunk {doc!r}")
                    q.set_grade(e["id"], doc, grade)
            return q
        if isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
            for qid, docs in data.items():
                for doc, grade in docs.items():
                    _check_grade(grade, f"{name}: query {qid}, chunk {doc!r}")
                    q.set_grade(qid, doc, grade)
            return q
        raise QrelsError(
            f'{name}: not a qrels file: expected {{"format": "{JSON_FORMAT}", ...}} or {{qid: {{docid: grade}}}}'
        )


def is_json_name(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` names a JSON file (``.json``, any case)."""
    return Path(path).suffix.lower() == ".json"


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read a qrels file in either form (JSON when it starts with ``{``).

    Raises:
        FileNotFoundError: no such file.
        QrelsError: unreadable or malformed (names the file and line/entry).
    """
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise QrelsError(f"cannot read qrels {p}: {getattr(exc, 'strerror', None) or exc}") from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise QrelsError(f"qrels {p} is not valid JSON: {exc}") from None
        return Qrels.from_json(data, str(p))
    return Qrels.from_trec(text, str(p))


def write_qrels(qrels: Qrels, path: str | os.PathLike[str], form: str | None = None) -> None:
    """Write ``qrels`` atomically; ``form`` is ``"json"`` or ``"trec"``
    (default: by the file name, :func:`is_json_name`).

    Raises:
        OSError: the file cannot be written.
        ValueError: an unknown ``form``.
    """
    p = Path(path)
    write_text_atomic(p, qrels_text(qrels, form or ("json" if is_json_name(p) else "trec")))


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
