"""The ``rankscope`` command.

``rankscope`` with no argument opens the browser on the bundled
``sample_corpus/``; ``rankscope PATH`` opens a store (``.db``, read-only) or
indexes a folder first. Subcommands (each has ``--help``): ``index``,
``search``, ``batch``, ``serve`` and the others listed by ``rankscope --help``.

Errors are printed as one line (``rankscope: error: ...``) with exit status 2;
never a traceback: :func:`main` turns :class:`CliError`, any
:class:`~engine.StoreError` (a damaged store is a
:class:`~engine.CorruptStoreError`), a stray SQLite error (``engine.sql.Error``) and
``OSError`` into that line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, List, Optional

import typer
from rich.console import Console

from engine import SearchParams, Store, StoreError, Variant, search, trace_to_dict
from engine.compare import params_for_entry
from engine.corpus import index_paths, load_sessions_map
from engine import sql

from . import safe
from .fmt import json_text

#: ``rankscope --help``. (``\\[`` keeps Rich from reading ``[PATH]`` as markup.)
APP_HELP = (
    "Watch context-mode's lexical retrieval pipeline work, stage by stage.\n\n"
    "The browser: rankscope \\[PATH] \\[--stores]. Without PATH it opens the bundled sample corpus; PATH is a "
    ".db store (opened read-only) or a folder (indexed into a cached store first); --stores picks one of your "
    "context-mode content stores.\n\n"
    "The commands below work without the browser; each has --help."
)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help=APP_HELP,
    context_settings={"help_option_names": ["-h", "--help"]},
)
console = Console()
err_console = Console(stderr=True)


def package_version() -> str:
    """The installed rankscope version (``unknown`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rankscope")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"rankscope {package_version()}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print rankscope's version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Options before the command (``--version``)."""


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def fail(message: str) -> None:
    """Raise a :class:`CliError` with ``message``."""
    raise CliError(message)


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


# ─── search options (shared by search, batch, compare and why) ──────────

#: ``--db`` of a command that only searches the store (required: write ``db: SearchDb = ...``).
SearchDb = Annotated[Path, typer.Option("--db", help="Store to search (opened read-only).")]
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


# ─── index ───────────────────────────────────────────────────────────────


@app.command()
def index(
    paths: List[Path] = typer.Argument(..., help="Files and folders to index (folder contents are labelled relative to the folder)."),
    db: Path = typer.Option(..., "--db", help="Store to create or update (rankscope's own; never a context-mode store)."),
    session: str = typer.Option("", "--session", help="Session id recorded on every chunk."),
    sessions_map: Optional[Path] = typer.Option(None, "--sessions-map", help="JSON object of label → session id."),
    max_file_bytes: int = typer.Option(10 * 1024 * 1024, "--max-file-bytes", help="Skip files larger than this (bytes)."),
    full: bool = typer.Option(False, "--full", help="Re-index every file even when its SHA-256 is unchanged."),
    no_gitignore: bool = typer.Option(False, "--no-gitignore", help="Do not honour .gitignore files."),
) -> None:
    """Index files and folders into a store: .md markdown, .json JSON, else plain text."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    sessions = None
    folders = [p for p in paths if p.is_dir()]
    if sessions_map is None and len(folders) == 1 and (folders[0] / "_sessions.json").is_file():
        sessions_map = folders[0] / "_sessions.json"
        console.print(safe.line(f"using sessions map {sessions_map}"), markup=False, highlight=False)
    if sessions_map is not None:
        try:
            sessions = load_sessions_map(sessions_map)
        except ValueError as exc:
            fail(str(exc))
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        fail(f"no such file or folder: {', '.join(missing)}")
    if max_file_bytes < 0:
        fail(f"--max-file-bytes must be 0 or more; got {max_file_bytes}")
    from engine.discovery import context_mode_store_reason

    owner = context_mode_store_reason(db)
    if owner:
        fail(f"refusing to write to {db}: {owner}. rankscope never writes to stores it did not create; "
             f"open it read-only with: rankscope {db}")
    if db.exists():
        store = open_store(db, writable=True)
        if store.schema.fts_columns < 8:
            store.close()
            fail(f"{db} has the older 4-column schema (not written by rankscope); rankscope will not write to it")
    else:
        try:
            store = Store.create(db)
        except StoreError as exc:
            fail(str(exc))
    from engine.walk import gitignore_matcher

    ignore_factory = None if no_gitignore else gitignore_matcher
    stats = {"files": 0, "bytes": 0}
    with Progress(
        TextColumn("{task.description}", style="progress.description", markup=False), BarColumn(),
        TextColumn("{task.completed} files"),
        TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=err_console, transient=True,
        disable=not err_console.is_terminal,
    ) as progress:
        task = progress.add_task("indexing", total=None, rate="")
        import time

        start = time.perf_counter()

        def tick(label: str, nbytes: int) -> None:
            stats["files"] += 1
            stats["bytes"] += nbytes
            secs = max(time.perf_counter() - start, 1e-6)
            progress.update(
                task, advance=1, description=safe.line(label[-40:]),
                rate=f"{stats['files'] / secs:.0f} files/s, {stats['bytes'] / secs / 1e6:.2f} MB/s",
            )

        def plan(files: int) -> None:
            progress.update(task, total=files)

        try:
            report = index_paths(
                store, paths, sessions=sessions, default_session=session, max_file_bytes=max_file_bytes,
                incremental=not full, progress=tick, ignore_factory=ignore_factory, on_plan=plan,
            )
        except KeyboardInterrupt as exc:
            store.close()
            done = getattr(exc, "report", None)
            so_far = f" after {len(done.results)} indexed and {len(done.unchanged)} unchanged files" if done else ""
            err_console.print(
                f"interrupted{so_far}: each file is stored in one transaction, so the store is consistent "
                "(the file in progress keeps its previous content)"
            )
            raise typer.Exit(130)
    store.close()
    _print_index_report(report, db)


def _print_index_report(report, db: Path) -> None:
    """The index summary: totals, then skipped files grouped by reason."""
    console.print(
        safe.line(f"indexed {len(report.results)} files, {report.chunks} chunks, {report.bytes} bytes into {db}")
        + (f"; {len(report.unchanged)} unchanged" if report.unchanged else "")
        + (f"; {len(report.removed)} removed" if report.removed else ""),
        markup=False, highlight=False,
    )
    skipped = report.not_indexed
    if skipped:
        kinds = {"too-large": f"over {report.max_file_bytes} bytes"}
        summary = ", ".join(f"{n} {kinds.get(k, k)}" for k, n in report.skip_counts().items())
        console.print(f"skipped {len(skipped)} ({summary}):", markup=False, highlight=False)
        for item in skipped:
            console.print(safe.line(f"  {item.path}: {item.reason}"), markup=False, highlight=False)
    for item in report.warnings:
        console.print(safe.line(f"note: {item.path}: {item.reason}"), markup=False, highlight=False)
    if report.kept:
        console.print(f"kept the previous content of {len(report.kept)} unreadable file(s)", markup=False, highlight=False)
    if report.replaced:
        n = len(report.replaced)
        shown = [label for label, _ in report.replaced[:REPLACED_SHOWN]]
        more = f", … ({n - len(shown)} more)" if n > len(shown) else ""
        noun = "label" if n == 1 else "labels"
        folders = sorted({root for _, root in report.replaced})
        console.print(
            safe.line(
                f"warning: replaced {n} {noun} that another folder had indexed: {', '.join(shown)}{more} "
                f"(previously from {', '.join(folders)}; labels are paths relative to the folder given, "
                "so index each folder into its own --db to keep both)"
            ),
            markup=False, highlight=False, style="yellow",
        )


#: Replaced labels named in the index summary (the rest are counted).
REPLACED_SHOWN = 10


# ─── search ──────────────────────────────────────────────────────────────


@app.command("search")
def search_cmd(
    query: str = typer.Argument(..., help="Query text (any characters; FTS5 syntax is neutralised)."),
    db: SearchDb = ...,
    limit: Limit = 3,
    source: SourceFilter = None,
    source_exact: SourceExact = False,
    content_type: ContentTypeFilter = None,
    session: SessionFilter = None,
    as_json: bool = typer.Option(False, "--json", help="Print the whole trace as JSON (schema: engine/export.py)."),
) -> None:
    """Search a store and show what each pipeline stage did."""
    params = make_params(query, limit, source, source_exact, content_type, session)
    with open_store(db) as store:
        trace = search(store, params)
    if as_json:
        write_json(trace_to_dict(trace))
        return
    from .render import trace_renderable

    console.print(trace_renderable(trace))


# ─── batch ───────────────────────────────────────────────────────────────


def load_queries(path: Path) -> list[dict]:
    """Read a query file (format of ``../shared/parity/*/queries.json``).

    Raises:
        CliError: unreadable, not a JSON list, or an entry without ``query``.
    """
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"cannot read query file {path}: {exc}")
    if not isinstance(data, list) or not all(isinstance(q, dict) and isinstance(q.get("query"), str) for q in data):
        fail(f"query file {path} must be a JSON list of objects with a string 'query'")
    return data


def params_from_entry(entry: dict, index: int) -> SearchParams:
    """SearchParams from one query-file entry (defaults: limit 3, like; see
    :func:`engine.compare.params_for_entry`), turning ValueError into CliError."""
    try:
        return params_for_entry(entry, Variant(), index)
    except ValueError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


@app.command()
def batch(
    queries: Path = typer.Argument(..., help="JSON list of {id, query, why?, limit?, source?, source_match?, content_type?, sessions?}; other keys are an error."),
    db: SearchDb = ...,
    out: Optional[Path] = typer.Option(None, "--out", help="Write the traces here instead of stdout."),
) -> None:
    """Run a query file and write a JSON list of traces, one per query, in order."""
    if out is not None:
        check_output_file(out, "--out")
    entries = load_queries(queries)
    params = [params_from_entry(e, i) for i, e in enumerate(entries)]
    with open_store(db) as store:
        traces = [trace_to_dict(search(store, p), query_id=e.get("id", str(i + 1)))
                  for i, (e, p) in enumerate(zip(entries, params))]
    if out:
        try:
            out.write_text(json_text(traces), "utf-8")
        except OSError as exc:
            fail(f"cannot write --out {out}: {exc.strerror or exc}")
        console.print(safe.line(f"wrote {len(traces)} traces to {out}"), markup=False, highlight=False)
    else:
        write_json(traces)


def check_output_file(path: Path, option: str) -> None:
    """Fail early (before any work) when ``path`` cannot be an output file:
    a folder, or in a folder that does not exist."""
    if path.is_dir():
        fail(f"{option} {path} is a folder; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        fail(f"{option} {path}: folder {parent} does not exist")


# ─── browser entry ───────────────────────────────────────────────────────

SUBCOMMANDS_HELP = "Run 'rankscope --help' for the subcommands."


def browse(path: Optional[str], stores: bool = False) -> None:
    """Open the browser (imported lazily so the CLI stays Textual-free)."""
    if path is not None and not Path(path).exists():
        fail(f"no such file or folder: {path} (give a .db store or a folder to index)")
    from .launch import launch_browser

    launch_browser(path, stores=stores)


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point."""
    args = list(sys.argv[1:] if argv is None else argv)
    commands = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    try:
        if not args or (args[0] not in commands and args[0] not in ("-h", "--help", "--version")):
            stores = "--stores" in args
            rest = [a for a in args if a != "--stores"]
            if len(rest) > 1 or any(a.startswith("-") for a in rest):
                fail(f"unexpected arguments {' '.join(rest)!r}. Usage: rankscope [PATH] [--stores]. {SUBCOMMANDS_HELP}")
            browse(rest[0] if rest else None, stores=stores)
            return
        app(args=args, prog_name="rankscope", standalone_mode=True)
    except (CliError, StoreError) as exc:
        error_exit(str(exc))
    except sql.Error as exc:  # last resort: the engine names the store in a StoreError
        error_exit(f"SQLite error: {exc}")
    except BrokenPipeError:
        # `rankscope ... | head`: the reader left; nothing more to say.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        raise SystemExit(1)
    except OSError as exc:  # last resort: an output file, a port, a folder
        error_exit(os_error_text(exc))
    except KeyboardInterrupt:
        raise SystemExit(130)


def os_error_text(exc: OSError) -> str:
    """One line for an OSError: ``strerror: filename`` (or its message)."""
    if exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename}"
    return exc.strerror or str(exc) or type(exc).__name__


def error_exit(message: str) -> None:
    """Print ``rankscope: error: message`` (one line, terminal-safe) and exit 2."""
    err_console.print(f"rankscope: error: {safe.line(message)}", markup=False, highlight=False, soft_wrap=True)
    raise SystemExit(2)


def unwrap(text: Optional[str]) -> Optional[str]:
    """Help text with each paragraph on one line: docstrings are wrapped for
    the source, and Typer keeps single line breaks, which would break the
    rendered help mid-sentence. Paragraphs stay separated by a blank line."""
    if text is None:
        return None
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def _register_command_modules() -> None:
    """Import the modules that add subcommands to :data:`app` (each owns one
    area: ``cli_serve`` serve, ``cli_stores`` stores/sessions, ``cli_lab``
    compare/why/doctor), then give every command its docstring as unwrapped
    help (:func:`unwrap`). A module that does not exist yet is skipped."""
    import importlib

    for name in ("tui.cli_serve", "tui.cli_stores", "tui.cli_lab"):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    for info in app.registered_commands:
        info.help = unwrap(info.help if info.help is not None else (info.callback.__doc__ if info.callback else None))


_register_command_modules()

if __name__ == "__main__":  # pragma: no cover
    main()
