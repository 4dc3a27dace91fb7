"""What every subcommand module shares: the error type, store opening,
parameter building, JSON output and the common option types.

No Typer application lives here (see :mod:`tui.cli.main`), so command
modules import this one and nothing imports them back: no cycle.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, List, Mapping, NoReturn, Optional, Sequence

import typer
from rich.console import Console

from engine import SearchParams, Store, StoreError, Variant
from engine.pipeline.stages.session_filter import UnknownSession, unknown_sessions

from tui.present import safe
from tui.present.fmt import json_text

if TYPE_CHECKING:
    from engine.lab.qrels import GradeConflict, Qrels

console = Console()
err_console = Console(stderr=True)


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def fail(message: str) -> NoReturn:
    """Raise a :class:`CliError` with ``message``."""
    raise CliError(message)


#: ``rankscope serve``'s sessions at once when ``--max-sessions`` is not
#: given (each is one process of about 60 MB; issue 26: 30 websockets once
#: started 60 processes).
DEFAULT_MAX_SESSIONS = 8
#: The longest ``--idle-timeout`` (seconds: 30 days).
IDLE_TIMEOUT_MAX = 30 * 86400


def parse_idle_timeout(value: str, option: str = "--idle-timeout") -> Optional[float]:
    """Seconds from ``value``: ASCII digits with an optional fraction, at most
    :data:`IDLE_TIMEOUT_MAX`; ``0`` means never (``None``).

    Raises:
        CliError: anything else (one line naming ``option``).
    """
    text = value.strip()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", text) or float(text) > IDLE_TIMEOUT_MAX:
        raise CliError(
            f"{option} takes seconds, from 0 (never) to {IDLE_TIMEOUT_MAX} (ASCII digits, e.g. 600); got {value!r}"
        )
    seconds = float(text)
    return seconds if seconds > 0 else None


def open_store(db: Path, writable: bool = False) -> Store:
    """Open ``db`` read-only (default) or writable, turning errors into
    CliError. Use as ``with open_store(db) as store:`` to close it."""
    try:
        return Store.open_writable(db) if writable else Store.open_readonly(db)
    except StoreError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


def write_json(data: object, indent: Optional[int] = 2) -> None:
    """Print ``data`` as JSON on stdout, exactly (no Rich, no sanitising)."""
    sys.stdout.write(json_text(data, indent))


def make_params(
    query: str,
    limit: int = 3,
    source: Optional[str] = None,
    source_exact: bool = False,
    content_type: Optional[str] = None,
    sessions: Optional[List[str]] = None,
    variant=None,
) -> SearchParams:
    """Build validated :class:`SearchParams`, turning ValueError into CliError."""
    if content_type is not None and content_type not in ("code", "prose"):
        fail(f"--content-type must be code or prose; got {content_type!r}")
    try:
        return SearchParams(
            query=query,
            limit=limit,
            source=source,
            source_match="exact" if source_exact else "like",
            content_type=content_type,
            sessions=tuple(sessions) if sessions else None,
            variant=variant or Variant(),
        )
    except ValueError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


# ─── file parameters ─────────────────────────────────────────────────────


@dataclass(frozen=True)
class FileRole:
    """What a command does with the path (or text) a parameter names: the one
    declaration of the CLI's file parameters, written on the parameter as
    ``Annotated[Path, READS_QUERIES]`` (Typer ignores it). The tests of the
    reader and the writer derive their cases from it
    (:func:`tui.cli.main.file_parameters`): a parameter declared here is fed
    FIFOs, devices, folders, deep JSON, ... without anyone listing it again.

    Attributes:
        use: ``"reads"`` (a file parsed through :mod:`engine.files.reading`),
            ``"text"`` (the value itself is JSON text, parsed the same way),
            ``"writes"`` (an output, through :mod:`engine.files.writing`),
            ``"opens"`` (a store or session DB SQLite opens read-only),
            ``"creates"`` (a store written), ``"indexes"`` (files and folders
            to index), ``"names"`` (a path only named, never opened).
        form: what is in it: ``queries``, ``qrels``, ``snapshot``,
            ``sessions-map``, ``arguments``, ``traces``, ``trec-run``,
            ``store``, ``session-db``, ``store-or-folder``, ``corpus``,
            ``folder``.
    """

    use: str
    form: str

    @property
    def is_input(self) -> bool:
        """True when the command reads the path (or only names it): an output
        of the same command must never be that file."""
        return self.use in ("reads", "opens", "indexes", "names")

    @property
    def noun(self) -> str:
        """What the path is, for a message: ``"the query file"``."""
        return FORM_NOUNS[self.form]


#: What a path of each :attr:`FileRole.form` is, as a message names it.
FORM_NOUNS = {
    "queries": "the query file",
    "qrels": "the qrels file",
    "snapshot": "the snapshot file",
    "sessions-map": "the sessions map",
    "arguments": "the arguments",
    "traces": "the traces file",
    "trec-run": "the TREC run",
    "store": "the store",
    "session-db": "the session database",
    "store-or-folder": "the store",
    "corpus": "a file indexed",
    "folder": "the folder",
}


def file_roles(command: Any) -> dict[str, FileRole]:
    """``{parameter name: FileRole}`` of a command's function: the parameters
    declared ``Annotated[Path, READS_QRELS]`` (the first role of each)."""
    import typing

    out: dict[str, FileRole] = {}
    for name, hint in typing.get_type_hints(command, include_extras=True).items():
        roles = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, FileRole)]
        if roles:
            out[name] = roles[0]
    return out


def declared_inputs(command: Any, values: Mapping[str, Any]) -> list[tuple[str, Path]]:
    """The files ``command`` (a command's function) reads, from its
    :class:`FileRole` declarations (:func:`file_roles`): ``(what it is,
    path)`` for each input parameter whose value in ``values`` (the
    function's ``locals()``) is a path (or a list of paths), for
    :func:`check_output_file`."""
    out: list[tuple[str, Path]] = []
    for name, role in file_roles(command).items():
        if not role.is_input:
            continue
        value = values.get(name)
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, Path):
                out.append((role.noun, item))
    return out


def parameter_label(name: str, flag: Optional[str]) -> str:
    """How a message names the parameter ``name`` (a function's parameter
    name): its option name ``flag`` (``--db``) or, for an argument
    (``flag`` ``None``), the name in upper case, as the usage line shows it
    (``PATH``, ``QUERIES``)."""
    return flag or name.upper()


def declared_label(command: Any, name: str) -> str:
    """:func:`parameter_label` of parameter ``name`` of ``command`` (a
    command's function), from its Typer declaration: an option's longest
    name (``--out`` of ``-o/--out``; Typer's ``--NAME-WITH-DASHES`` when it
    declares none), an argument's upper-case name."""
    from typer.models import OptionInfo
    from typer.utils import get_params_from_function

    info = get_params_from_function(command)[name].default
    if not isinstance(info, OptionInfo):
        return parameter_label(name, None)
    flags = [d for d in info.param_decls or () if d.startswith("-")] or ["--" + name.replace("_", "-")]
    return parameter_label(name, max(flags, key=len))


#: The :attr:`FileRole.form` of a parameter that gives a command its store.
STORE_FORMS = ("store", "store-or-folder")


def declared_store(command: Any, values: Mapping[str, Any]) -> Optional[tuple[str, Path]]:
    """The store ``command`` (a command's function) was given, from its
    :class:`FileRole` declarations: ``(how it was given, path)`` with the
    parameter's :func:`declared_label` (``"--db"``), for
    :func:`check_output_file`; ``None`` when it takes no store (or none was
    given in ``values``, the function's ``locals()``)."""
    for name, role in file_roles(command).items():
        value = values.get(name)
        if role.form in STORE_FORMS and isinstance(value, Path):
            return declared_label(command, name), value
    return None


def check_output_file(
    path: Path,
    option: str,
    store: Optional[tuple[str, Path]] = None,
    force: bool = False,
    inputs: Sequence[tuple[str, Path]] = (),
) -> None:
    """Fail early (before any work) when ``path`` must not be written: a
    folder, a missing folder, the command's ``store`` (``(how it was given,
    path)``: :func:`declared_store`) or its side files, one of the command's
    ``inputs`` (:func:`declared_inputs`) or any SQLite database, or an
    existing file without ``force`` (:func:`engine.files.writing.check_output`)."""
    from engine.files.writing import OutputRefused, check_output

    try:
        check_output(path, option, store=store, force=force, inputs=inputs)
    except OutputRefused as exc:
        fail(str(exc))


def check_command_output(command: Any, values: Mapping[str, Any], path: Path, option: str, force: bool) -> None:
    """:func:`check_output_file` for ``path`` (given as ``option``), an output
    of ``command`` called with ``values`` (its ``locals()``): against the
    store and the inputs it declares."""
    check_output_file(
        path, option, store=declared_store(command, values), force=force, inputs=declared_inputs(command, values)
    )


READS_QUERIES = FileRole("reads", "queries")
READS_QRELS = FileRole("reads", "qrels")
READS_SNAPSHOT = FileRole("reads", "snapshot")
READS_SESSIONS_MAP = FileRole("reads", "sessions-map")
TEXT_ARGUMENTS = FileRole("text", "arguments")
WRITES_TRACES = FileRole("writes", "traces")
WRITES_TREC_RUN = FileRole("writes", "trec-run")
WRITES_SNAPSHOT = FileRole("writes", "snapshot")
WRITES_QRELS = FileRole("writes", "qrels")
OPENS_STORE = FileRole("opens", "store")
OPENS_SESSION_DB = FileRole("opens", "session-db")
OPENS_STORE_OR_FOLDER = FileRole("opens", "store-or-folder")
CREATES_STORE = FileRole("creates", "store")
INDEXES_CORPUS = FileRole("indexes", "corpus")
NAMES_STORE = FileRole("names", "store")
NAMES_FOLDER = FileRole("names", "folder")


# ─── search options (shared by search, batch, compare and why) ──────────

#: ``--db`` of a command that only searches the store, for a parameter
#: before the first defaulted one (``db: SearchDb``); after one, write
#: ``db: StorePath = search_db_option()`` (``db: SearchDb = ...`` works in Typer
#: but does not type-check: ``...`` is not a Path).
SearchDb = Annotated[Path, typer.Option("--db", help="Store to search (opened read-only)."), OPENS_STORE]


#: A path to a store opened read-only, declared (:class:`FileRole`).
StorePath = Annotated[Path, OPENS_STORE]


def search_db_option() -> Any:
    """A fresh required ``--db`` option (Typer's ``OptionInfo``, typed ``Any``
    by Typer), the same option as :data:`SearchDb`, as a parameter default."""
    return typer.Option(..., "--db", help="Store to search (opened read-only).")


_LIMIT = typer.Option("--limit", "-n", help="Results wanted (reference default 3).")
#: ``--limit`` / ``-n`` (give the default, 3, with ``=``).
Limit = Annotated[int, _LIMIT]
#: ``--limit`` / ``-n`` that can be left unset (default ``None``).
OptionalLimit = Annotated[Optional[int], _LIMIT]
#: The filters :func:`make_params` takes after the limit.
SourceFilter = Annotated[
    Optional[str], typer.Option("--source", help="Source label filter (substring unless --source-exact).")
]
SourceExact = Annotated[bool, typer.Option("--source-exact", help="Match --source exactly.")]
ContentTypeFilter = Annotated[Optional[str], typer.Option("--content-type", help="code or prose.")]
SessionFilter = Annotated[Optional[List[str]], typer.Option("--session", help="Allow-set session id (repeatable).")]


def unknown_session_text(u: UnknownSession, option: str = "--session") -> str:
    """The warning about one :class:`~engine.pipeline.stages.session_filter.UnknownSession`
    (without the ``rankscope: warning:`` prefix): the id, and the store's
    closest ids with how many more there are."""
    head = f"{option} {u.session!r}: no chunk in this store has this session id (it lets no chunk through)"
    if not u.store_session_count:
        return f"{head}; no chunk in it has a session id"
    more = u.store_session_count - len(u.closest)
    listed = ", ".join(u.closest) + (f" and {more} more" if more > 0 else "")
    noun = "session" if u.store_session_count == 1 else "sessions"
    return f"{head}; its {u.store_session_count} {noun}, closest first: {listed}"


#: Unknown session ids warned about one line each (with the store's closest
#: ids); more than this many are summarised in one line.
UNKNOWN_SESSIONS_LISTED = 3


def unknown_sessions_summary(missing: List[str], given: int, store_sessions: int, db: str, option: str) -> str:
    """The one warning line about many unknown session ids (without the
    ``rankscope: warning:`` prefix): how many, the first
    :data:`UNKNOWN_SESSIONS_LISTED`, and where the store's ids are listed."""
    shown = ", ".join(repr(s) for s in missing[:UNKNOWN_SESSIONS_LISTED])
    return (
        f"{option}: {len(missing)} of the {given} session ids given are on no chunk of this store "
        f"(they let no chunk through): {shown} and {len(missing) - UNKNOWN_SESSIONS_LISTED} more; "
        f"its {store_sessions} session{'' if store_sessions == 1 else 's'} are listed by: rankscope sessions --db {shlex.quote(db)}"
    )


def warn_unknown_sessions(store: Store, sessions: Optional[List[str]], option: str = "--session") -> None:
    """Warn on stderr about the session ids of ``sessions`` (the ``option``
    given) that no chunk of ``store`` has: a ``rankscope: warning:`` line
    each with the store's closest ids
    (:func:`engine.pipeline.stages.session_filter.unknown_sessions`) for up
    to :data:`UNKNOWN_SESSIONS_LISTED` of them, one summary line for more
    (:func:`unknown_sessions_summary`). Nothing is changed: the filter
    still applies. A store without a session column gets no warning: its
    filter lets every chunk through (the search's filter stage says so)."""
    if not sessions or not store.schema.has_session:
        return
    known = [sid for sid, _ in store.session_counts()]
    present = set(known)
    given = list(dict.fromkeys(sessions))
    missing = [sid for sid in given if sid and sid not in present]  # "" (unattributed) is never unknown
    if len(missing) <= UNKNOWN_SESSIONS_LISTED:
        lines = [unknown_session_text(u, option) for u in unknown_sessions(missing, known)]
    else:
        lines = [unknown_sessions_summary(missing, len(given), len(present - {""}), str(store.path), option)]
    for text in lines:
        err_console.print(f"rankscope: warning: {safe.line(text)}", markup=False, highlight=False, soft_wrap=True)


def warn_query_file_sessions(store: Store, entries: List[dict]) -> None:
    """:func:`warn_unknown_sessions` for the ``sessions`` of a query file's
    entries, as ``--session`` gets it: every command that runs a query file
    calls this once its store is open."""
    lists = [e.get("sessions") for e in entries]
    given = [
        sid for ids in lists if isinstance(ids, list) for sid in ids if isinstance(sid, str)
    ]  # others: refused later
    warn_unknown_sessions(store, given, 'query file "sessions"')


def grade_conflicts_text(conflicts: Sequence[GradeConflict], name: str) -> str:
    """The warning about the pairs a qrels file judged with different grades
    (:attr:`engine.lab.qrels.Qrels.conflicts`, at least one; without the
    ``rankscope: warning:`` prefix): how many, the grade kept, and the first
    pair's ids, grades and where they are (``qrels q.txt: 2 (query,
    document) pairs are judged with different grades; the last grade is kept:
    query 'q1', document 'a.md::A': 2 on line 1, 0 on line 3 (kept: 0); 1
    more``)."""
    first, rest = conflicts[0], len(conflicts) - 1
    pairs = "1 (query, document) pair is" if not rest else f"{len(conflicts)} (query, document) pairs are"
    grades = ", ".join(f"{grade} on {where}" for where, grade in first.judgments)
    more = f"; {rest} more" if rest else ""
    return (
        f"qrels {name}: {pairs} judged with different grades; the last grade is kept: "
        f"query {first.qid!r}, document {first.chunk_id!r}: {grades} (kept: {first.kept}){more}"
    )


def warn_grade_conflicts(qrels: Qrels, name: str | Path) -> None:
    """A ``rankscope: warning:`` line on stderr (:func:`grade_conflicts_text`)
    when the qrels file ``name`` judged a pair with different grades;
    nothing otherwise (a judgment repeated with its grade changes nothing)."""
    if qrels.conflicts:
        text = grade_conflicts_text(qrels.conflicts, str(name))
        err_console.print(f"rankscope: warning: {safe.line(text)}", markup=False, highlight=False, soft_wrap=True)


def os_error_text(exc: OSError) -> str:
    """One line for an OSError: ``strerror: filename`` (or its message)."""
    if exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename}"
    return exc.strerror or str(exc) or type(exc).__name__


def error_exit(message: str, hint: Optional[str] = None, code: int = 2) -> NoReturn:
    """Print ``rankscope: error: message`` (one line, terminal-safe), then
    ``hint`` on a line of its own when given, and exit with ``code`` (2)."""
    err_console.print(f"rankscope: error: {safe.line(message)}", markup=False, highlight=False, soft_wrap=True)
    if hint:
        err_console.print(safe.line(hint), markup=False, highlight=False, soft_wrap=True)
    raise SystemExit(code)


def unwrap(text: Optional[str]) -> Optional[str]:
    """Help text with each paragraph on one line: docstrings are wrapped for
    the source, and Typer keeps single line breaks, which would break the
    rendered help mid-sentence. Paragraphs stay separated by a blank line."""
    if text is None:
        return None
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)
