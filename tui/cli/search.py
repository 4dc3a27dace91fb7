"""``rankscope index``, ``search`` and ``batch``: build a store, search it,
run a query file. Plain functions; :mod:`tui.cli.main` registers them."""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any, Callable, List, Optional, Union

import typer
from typing_extensions import NotRequired, TypedDict

from engine import SearchParams, Store, StoreError, Variant, search
from engine.pipeline.words import plural
from engine.files.reading import InputFileError, json_shape, load_json_input
from engine.js.strings import undecodable

from tui.present import safe
from engine.files.writing import OutputRefused, built_aside, check_distinct, write_text_file
from tui.present.fmt import json_text
from .base import (
    CREATES_STORE,
    INDEXES_CORPUS,
    READS_QUERIES,
    READS_SESSIONS_MAP,
    WRITES_TRACES,
    WRITES_TREC_RUN,
    ContentTypeFilter,
    StorePath,
    Limit,
    search_db_option,
    SessionFilter,
    SourceExact,
    SourceFilter,
    check_command_output,
    console,
    err_console,
    fail,
    make_params,
    open_store,
    warn_unknown_sessions,
    write_json,
    warn_query_file_sessions,
)

# ─── index ───────────────────────────────────────────────────────────────


def index(
    paths: Annotated[List[Path], INDEXES_CORPUS] = typer.Argument(
        ..., help="Files and folders to index (folder contents are labelled relative to the folder)."
    ),
    db: Annotated[Path, CREATES_STORE] = typer.Option(
        ..., "--db", help="Store to create or update (rankscope's own; never a context-mode store)."
    ),
    session: str = typer.Option("", "--session", help="Session id recorded on every chunk."),
    sessions_map: Annotated[Optional[Path], READS_SESSIONS_MAP] = typer.Option(
        None, "--sessions-map", help="JSON object of label → session id."
    ),
    max_file_bytes: int = typer.Option(
        10 * 1024 * 1024, "--max-file-bytes", help="Skip files larger than this (bytes)."
    ),
    full: bool = typer.Option(False, "--full", help="Re-index every file even when its SHA-256 is unchanged."),
    no_gitignore: bool = typer.Option(False, "--no-gitignore", help="Do not honour .gitignore files."),
) -> None:
    """Index files and folders into a store: .md markdown, .json JSON, else plain text."""
    sessions = None
    folders = [p for p in paths if p.is_dir()]
    if sessions_map is None and len(folders) == 1 and (folders[0] / "_sessions.json").is_file():
        sessions_map = folders[0] / "_sessions.json"
        console.print(safe.line(f"using sessions map {sessions_map}"), markup=False, highlight=False)
    if sessions_map is not None:
        try:
            from engine.store.corpus import load_sessions_map

            sessions = load_sessions_map(sessions_map)
        except ValueError as exc:
            fail(str(exc))
    problem = undecodable(session)
    if problem:
        fail(f"--session {problem}; is the terminal's encoding UTF-8?")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        fail(f"no such file or folder: {', '.join(missing)}")
    if max_file_bytes < 0:
        fail(f"--max-file-bytes must be 0 or more; got {max_file_bytes}")
    from engine.store.discovery import context_mode_store_reason

    owner = context_mode_store_reason(db)
    if owner:
        fail(
            f"refusing to write to {db}: {owner}. rankscope never writes to stores it did not create; "
            f"open it read-only with: rankscope {db}"
        )
    # A store that does not exist yet is built under a temporary name beside
    # it and put in place when indexing ends (an interrupt or a failure
    # leaves nothing at db); an existing store of ours is updated in place,
    # one transaction per file.
    existed = os.path.lexists(db)
    if not existed:
        from engine.store.opening import check_new_store

        try:
            check_new_store(str(db))  # its errors name db, not the temporary name
        except StoreError as exc:
            fail(str(exc))
    try:
        with ExitStack() as building:
            target = db if existed else building.enter_context(built_aside(db))
            report = _index_into(target, db, existed, paths, sessions, session, max_file_bytes, full, no_gitignore)
    except FileExistsError:
        # Another run put its store there first: index into that one (what it
        # has already is unchanged), so two runs on a new path share one store;
        # anything else that appeared there is refused as usual.
        report = _index_into(db, db, True, paths, sessions, session, max_file_bytes, full, no_gitignore)
    except OutputRefused as exc:
        fail(f"cannot put the new store at {db}: {exc}")
    _print_index_report(report, db)


def _index_into(
    target: Path,
    db: Path,
    existed: bool,
    paths: List[Path],
    sessions: Optional[dict[str, str]],
    session: str,
    max_file_bytes: int,
    full: bool,
    no_gitignore: bool,
) -> Any:
    """:func:`index`'s work: index ``paths`` into the store at ``target``
    (``db`` itself when it ``existed``, else its temporary name), with a
    progress bar; the store is closed when this returns. Ctrl+C: a line
    saying what is kept, exit 130. Returns the
    :class:`~engine.store.corpus.IndexReport`."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    try:
        store = Store.create(target)
    except StoreError as exc:
        fail(str(exc))
    from engine.store.gitignore import gitignore_matcher

    ignore_factory = None if no_gitignore else gitignore_matcher
    stats = {"files": 0, "bytes": 0}
    with Progress(
        TextColumn("{task.description}", style="progress.description", markup=False),
        BarColumn(),
        TextColumn("{task.completed} files"),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
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
                task,
                advance=1,
                description=safe.line(label[-40:]),
                rate=f"{stats['files'] / secs:.0f} files/s, {stats['bytes'] / secs / 1e6:.2f} MB/s",
            )

        def plan(files: int) -> None:
            progress.update(task, total=files)

        try:
            from engine.store.corpus import index_paths

            report = index_paths(
                store,
                paths,
                sessions=sessions,
                default_session=session,
                max_file_bytes=max_file_bytes,
                incremental=not full,
                progress=tick,
                ignore_factory=ignore_factory,
                on_plan=plan,
            )
        except KeyboardInterrupt as exc:
            store.close()
            done = getattr(exc, "report", None)
            so_far = f" after {len(done.results)} indexed and {len(done.unchanged)} unchanged files" if done else ""
            if existed:
                err_console.print(
                    f"interrupted{so_far}: each file is stored in one transaction, so the store is consistent "
                    "(the file in progress keeps its previous content)"
                )
            else:
                err_console.print(
                    safe.line(f"interrupted{so_far}: the new store {db} was not created (nothing is left)"),
                    markup=False,
                    highlight=False,
                )
            raise typer.Exit(130) from exc
        except BaseException:
            store.close()  # before its files are removed (a new store) or the process ends
            raise
    store.close()
    return report


def _print_index_report(report, db: Path) -> None:
    """The index summary: totals, then skipped files grouped by reason."""
    console.print(
        safe.line(
            f"indexed {plural(len(report.results), 'file')}, {plural(report.chunks, 'chunk')}, "
            f"{plural(report.bytes, 'byte')} into {db}"
        )
        + (f"; {len(report.unchanged)} unchanged" if report.unchanged else "")
        + (f"; {len(report.removed)} removed" if report.removed else ""),
        markup=False,
        highlight=False,
    )
    if report.merge is not None and report.merge.merged:
        done = ", ".join(f"{t.table} {t.before} → {t.after}" for t in report.merge.tables if t.merged)
        console.print(
            f"merged the FTS5 index segments ({done}) in {report.merge.elapsed_ms / 1000:.2f} s",
            markup=False,
            highlight=False,
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
        console.print(
            f"kept the previous content of {len(report.kept)} unreadable file(s)", markup=False, highlight=False
        )
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
            markup=False,
            highlight=False,
            style="yellow",
        )


#: Replaced labels named in the index summary (the rest are counted).
REPLACED_SHOWN = 10


# ─── search ──────────────────────────────────────────────────────────────


def search_cmd(
    query: str = typer.Argument(
        ...,
        help="Query text (any characters; FTS5 syntax is neutralised). A query that begins with '-' goes after '--'.",
    ),
    db: StorePath = search_db_option(),
    limit: Limit = 3,
    source: SourceFilter = None,
    source_exact: SourceExact = False,
    content_type: ContentTypeFilter = None,
    session: SessionFilter = None,
    flow: bool = typer.Option(
        False, "--flow", help="Show the rank flow: each candidate's position at every stage, and where it left."
    ),
    pin: Optional[List[str]] = typer.Option(
        None,
        "--pin",
        metavar="SOURCE::TITLE|ROWID",
        help="Follow a chunk: its fate, and the smallest single change that would return it (found by re-running; repeatable).",
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print the whole trace as JSON (schema: engine/pipeline/export.py); with --flow the flow rows.",
    ),
    explain: bool = typer.Option(
        False,
        "--explain",
        help="Add each result's score anatomy: its bm25 in each retriever phrase by phrase "
        "(with --json, the trace's 'anatomy'; see 'rankscope explain').",
    ),
) -> None:
    """Search a store and show what each pipeline stage did."""
    if explain and flow:
        fail("--explain adds to the results or the JSON trace, not to --flow")
    params = make_params(query, limit, source, source_exact, content_type, session)
    with open_store(db) as store:
        warn_unknown_sessions(store, session)
        trace = search(store, params)
        anatomies = []
        if explain:
            from engine.lab.explain import explain_chunks

            anatomies = explain_chunks(store, trace, [r.candidate.rowid for r in trace.final])
        pins = _pins(store, trace, pin or [])
        if flow:
            from engine.lab.terms import porter_stems

            stems = porter_stems(store, params.query)
    if flow:
        _print_flow(trace, pins, stems, as_json)
        return
    if as_json:
        from engine import trace_to_dict

        data = trace_to_dict(trace, anatomy=[a.to_dict() for a in anatomies] if explain else None)
        if pin:
            data["pinned"] = [p.to_dict() for p in pins]
        write_json(data)
        return
    from tui.present.render import trace_renderable

    console.print(trace_renderable(trace, str(db)))
    _print_pins(pins)
    if anatomies:
        from tui.present.anatomy import describe_anatomy
        from tui.present.describe import to_rich

        for a in anatomies:
            console.print()
            console.print(to_rich(describe_anatomy(a), fit=True))


def _pins(store: Store, trace, specs: list[str]) -> list:
    """The :class:`tui.present.pinning.PinOutcome` of every ``--pin`` (a key shared
    by several chunks pins each), in the order given, each chunk once (a
    chunk pinned twice, by the same spec or by its row id and its key, is
    followed once)."""
    if not specs:
        return []
    from engine.pipeline.runcache import RunCache
    from engine.lab.why import ChunkNotFoundError

    from tui.present.pinning import pin_outcome, resolve_pin

    out = []
    seen: set[int] = set()
    runs = RunCache(store)
    for spec in dict.fromkeys(specs):
        try:
            chunks = resolve_pin(store, spec)
        except (ValueError, ChunkNotFoundError) as exc:
            fail(f"--pin: {exc}")
        for c in chunks:
            if c.rowid not in seen:
                seen.add(c.rowid)
                out.append(pin_outcome(store, trace, c.rowid, runs=runs))
    return out


def _print_pins(pins: list) -> None:
    if not pins:
        return
    from tui.present.pinning import pin_lines

    for p in pins:
        first, second = pin_lines(p)
        console.print(first, markup=False, highlight=False, style="bold")
        if second:
            console.print("  " + second, markup=False, highlight=False)


def _print_flow(trace, pins: list, stems: tuple, as_json: bool) -> None:
    """``--flow``: the flow of the answering pass (and the other pass when
    the fuzzy fallback re-ran), with rows for pinned chunks no retriever
    returned, and why nothing answered when nothing did; ``--json`` the
    same rows."""
    from engine.lab.flow import trace_flows

    flows = trace_flows(trace, [p.absent for p in pins if p.absent is not None])
    if as_json:
        write_json(
            {
                "query": trace.params.query,
                "layer": trace.layer,
                "stems": [s.to_dict() for s in stems],
                "flows": [f.to_dict() for f in flows],
                "pinned": [p.to_dict() for p in pins],
            }
        )
        return
    from tui.present.flowtext import LEGEND, fits, flow_table, stems_text

    width = console.width
    compact = any(not fits(f, width) for f in flows)
    console.print(stems_text(trace, stems), markup=False, highlight=False, style="dim")
    for i, f in enumerate(flows):
        if i:
            console.print()
        console.print(flow_table(f, width, compact=compact, pinned={p.chunk.rowid for p in pins}))
    if compact:
        console.print(LEGEND, markup=False, highlight=False, style="dim")
    if not trace.final:  # why nothing answered, as `rankscope search` says it
        from tui.present.render import REASON_SHOWN
        from tui.present.cut import clip

        console.print(
            safe.line(f"No results: {clip(trace.empty_reason or '', REASON_SHOWN)}"),
            markup=False,
            highlight=False,
            style="bold",
        )
    _print_pins(pins)


# ─── batch ───────────────────────────────────────────────────────────────


@json_shape(extra="allow")
class QueryEntryShape(TypedDict):
    """One entry of a query file (``../shared/parity/*/queries.json``); its
    other keys are checked by :func:`engine.lab.compare.params_for_entry`."""

    query: str
    id: NotRequired[Union[str, int]]


#: The JSON shape of a query file: a list of entries.
QUERY_FILE_SHAPE = list[QueryEntryShape]


def load_queries(path: Path) -> list[dict]:
    """Read a query file (:data:`QUERY_FILE_SHAPE`) through
    :func:`engine.files.reading.load_json_input`: a regular file only (never
    a FIFO or a device), size and nesting bounded, a BOM dropped.

    Raises:
        CliError: unreadable, not a regular file, too large or too deep,
            not of the shape (the message names the entry and field), empty,
            or two entries with one id (:func:`engine.lab.qrels.check_query_ids`).
    """
    try:
        data: list[dict] = load_json_input(path, "query file", QUERY_FILE_SHAPE)
    except InputFileError as exc:
        fail(str(exc))
    if not data:
        fail(f'query file {path} has no queries (a JSON list of {{"id", "query"}} objects)')
    from engine.lab.qrels import check_query_ids

    try:
        check_query_ids(data)
    except ValueError as exc:
        fail(f"query file {path}: {exc}")
    return data


def params_from_entry(entry: dict, index: int) -> SearchParams:
    """SearchParams from one query-file entry (defaults: limit 3, like; see
    :func:`engine.lab.compare.params_for_entry`), turning ValueError into CliError."""
    try:
        from engine.lab.compare import params_for_entry  # batch only: search does not load the lab

        return params_for_entry(entry, Variant(), index)
    except ValueError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


def batch(
    queries: Annotated[Path, READS_QUERIES] = typer.Argument(
        ...,
        help="JSON list of {id, query, why?, limit?, source?, source_match?, content_type?, sessions?}; other keys are an error.",
    ),
    db: StorePath = search_db_option(),
    out: Annotated[Optional[Path], WRITES_TRACES] = typer.Option(
        None,
        "--out",
        help="Write the traces to this new file instead of stdout (never a database; an existing file only with --force).",
    ),
    force: bool = typer.Option(
        False, "--force", help="Let --out and --trec-run replace an existing file (never a database)."
    ),
    trec_run: Annotated[Optional[Path], WRITES_TREC_RUN] = typer.Option(
        None,
        "--trec-run",
        help="Also write a TREC run ('qid Q0 docid rank score tag'; docid = chunk id, score = n - rank + 1) "
        "of --stage; the traces then go only to --out.",
    ),
    stage: str = typer.Option(
        "final", "--stage", help="Stage id written by --trec-run (final, rerank, porter, fuzzy:rerank, ...)."
    ),
) -> None:
    """Run a query file and write a JSON list of traces, one per query, in
    order; with --trec-run, a TREC run of one stage's ranked chunk ids."""
    if out is not None:
        check_command_output(batch, locals(), out, "--out", force)
    if out is not None and trec_run is not None:
        try:
            check_distinct([("--out", out), ("--trec-run", trec_run)])
        except OutputRefused as exc:
            fail(str(exc))
    if trec_run is not None:
        check_command_output(batch, locals(), trec_run, "--trec-run", force)
        from engine.pipeline.table import RANKED_IDS

        if stage not in RANKED_IDS:
            fail(f"--stage: unknown stage {stage!r}; stages are {', '.join(RANKED_IDS)}")
    elif stage != "final":
        fail("--stage applies to --trec-run; give --trec-run FILE")
    entries = load_queries(queries)
    params = [params_from_entry(e, i) for i, e in enumerate(entries)]
    from tui.present.render import retriever_failures

    with open_store(db) as store:
        warn_query_file_sessions(store, entries)
        results = [(e.get("id", str(i + 1)), search(store, p)) for i, (e, p) in enumerate(zip(entries, params))]
        failed = [str(qid) for qid, t in results if retriever_failures(t)]
        if trec_run is not None:
            _write_trec_run(store, results, trec_run, stage, force)
    from engine import trace_to_dict

    traces = [trace_to_dict(t, query_id=qid) for qid, t in results]
    if failed:
        shown = ", ".join(failed[:5]) + (f", … ({len(failed) - 5} more)" if len(failed) > 5 else "")
        err_console.print(
            safe.line(
                f"warning: a retriever failed in {len(failed)} of {len(traces)} queries ({shown}; see "
                f"retriever_errors in the traces): the store's FTS index is probably damaged; check it with: "
                f"rankscope doctor --db {db}"
            ),
            markup=False,
            highlight=False,
            style="bold red",
        )
    if trec_run is not None and out is None:
        return
    if out:
        check_command_output(batch, locals(), out, "--out", force)  # again: it may have appeared meanwhile
        write_output(
            out,
            "--out",
            lambda: write_text_file(out, json_text(traces), overwrite=force),
            f"wrote {len(traces)} traces",
        )
    else:
        write_json(traces)


def _write_trec_run(store: Store, results: list, path: Path, stage: str, force: bool) -> None:
    """Write the TREC run of ``stage`` (see :func:`engine.lab.evaluation.trec_run_text`)."""
    from engine.store.chunkids import chunk_ids
    from engine.lab.evaluation import trec_run_text

    text, lines = trec_run_text(results, chunk_ids(store), stage)
    write_output(
        path,
        "--trec-run",
        lambda: write_text_file(path, text, overwrite=force),
        f"wrote {lines} run lines for {len(results)} queries (stage {stage})",
    )


def write_output(
    path: Path, option: str, write: Callable[[], None], done: str, meanwhile: str = "while the queries ran"
) -> None:
    """Run ``write`` (which writes ``path``, named by ``option``, at the end
    of a command) and print ``{done} to {path}``; a file that appeared since
    :func:`check_output_file` (``FileExistsError``) or any other ``OSError``
    is one ``fail`` line and nothing written."""
    try:
        write()
    except FileExistsError:
        fail(f"{option} {path} appeared {meanwhile}; nothing was written (give another name or --force)")
    except OSError as exc:
        fail(f"cannot write {option} {path}: {exc.strerror or exc}")
    console.print(safe.line(f"{done} to {path}"), markup=False, highlight=False, soft_wrap=True)
