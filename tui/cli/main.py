"""The ``rankscope`` command: the Typer application and its entry point.

``rankscope`` with no argument opens the browser on the bundled
``sample_corpus/``; ``rankscope PATH`` opens a store (``.db``, read-only) or
indexes a folder first. Every subcommand is registered here, explicitly, from
:data:`SUBCOMMANDS` and :data:`SUBGROUPS` (no import side effects): ``python -m
tui.cli`` and ``python -m tui`` run exactly what ``rankscope`` runs. A run of
one subcommand imports that subcommand's module only (:func:`build_app`), so
``rankscope search`` never loads the agent layer, the evaluation code or
Textual; ``app``, ``COMMANDS`` and ``GROUPS`` (every subcommand) are built on
first use.

Errors are printed as one line (``rankscope: error: ...``) with exit status 2;
never a traceback: :func:`main` runs the Typer application with
``standalone_mode=False`` so that Click's usage errors (a bad option value, an
unknown or missing option, an option without its value) come back to it and
are printed the same way, with one hint line (:func:`usage_error_exit`); and
everything a command raises goes through one error path, :func:`exit_for`:
running out of memory anywhere (:func:`out_of_memory`) is the one
:data:`OUT_OF_MEMORY` line; :class:`CliError`, any :class:`~engine.StoreError`
(a damaged store is a :class:`~engine.CorruptStoreError`), a stray SQLite
error (``engine.store.sql.Error``) and ``OSError`` are that one line.

The commands' file parameters are declared on the parameters themselves
(:class:`~tui.cli.base.FileRole`); :func:`file_parameters` lists them.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, NoReturn, Optional

import typer
from typer.exceptions import TyperException
from typer.core import TyperCommand, TyperGroup, TyperOption

from engine import StoreError
from engine.store import sql

from .base import (
    OPENS_STORE_OR_FOLDER,
    READS_QRELS,
    CliError,
    FileRole,
    check_output_file,
    error_exit,
    fail,
    os_error_text,
    parameter_label,
    parse_idle_timeout,
    file_roles,
    grade_conflicts_text,
    unwrap,
)

#: ``rankscope --help``. (``\\[`` keeps Rich from reading ``[PATH]`` as markup.)
APP_HELP = (
    "Watch context-mode's lexical retrieval pipeline work, stage by stage.\n\n"
    "The browser: rankscope \\[PATH] \\[--stores] \\[--qrels FILE]. Without PATH it opens the bundled sample "
    "corpus; PATH is a .db store (opened read-only) or a folder (indexed into a cached store first); --stores picks "
    "one of your context-mode content stores; --qrels is the judgments file the browser grades into (default: the "
    "store's own, see 'rankscope qrels path').\n\n"
    "rankscope --demo \\[PATH] \\[--idle-timeout SECONDS] shows it to a visitor (a terminal, SSH, or "
    "'rankscope serve --demo'): the store read-only, no store picker, their grades, history and saved cases in a "
    "temporary folder removed when they leave, exports delivered to them (refused when SSH gives them no shell); --idle-timeout "
    "quits after that many seconds without a key.\n\n"
    "The commands below work without the browser; each has --help."
)


class RankscopeGroup(TyperGroup):
    """The command group, with help fixes made in one place:

    * options show plain metavars: a flag shows none (Typer prints
      ``<bool>``), a repeatable option its element type (not ``<list[str]>``);
    * an unknown option that is really a query beginning with ``-``
      (``rankscope search --save-dev``) gets a hint to put it after ``--``;
    * extra arguments after a query (``rankscope search replicaton quorom``)
      get a hint to quote it;
    * a usage error Click's parser raised without a context (an option
      without its value) is given the subcommand's path for its hint line
      (:func:`usage_hint`).
    """

    def get_params(self, ctx: Any) -> Any:
        return _plain_metavars(super().get_params(ctx))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:  # Typer vendors Click: its NoSuchOption class is private
            sub = getattr(exc, "ctx", None)
            if (
                sub is None
                and isinstance(exc, TyperException)
                and ctx.invoked_subcommand
                and not hasattr(exc, "command_path")  # the innermost group names it
            ):
                # Click's parser raises "option X requires an argument" without a context: name the
                # subcommand for the hint line (usage_hint)
                exc.command_path = f"{ctx.command_path} {ctx.invoked_subcommand}"  # type: ignore[attr-defined]
            name = sub.command.name if sub is not None else None
            message = getattr(exc, "message", "")
            if name in QUERY_COMMANDS and isinstance(message, str) and message.startswith("Got unexpected extra"):
                # `rankscope search replicaton quorom`: a query of several words is one argument
                exc.message = f"{message}. {SPLIT_QUERY_HINT} (rankscope {name} 'several words' --db DB)"  # type: ignore[attr-defined]
                raise
            option = getattr(exc, "option_name", None)
            if type(exc).__name__ != "NoSuchOption" or name not in QUERY_COMMANDS or not option:
                raise
            # Click shows a UsageError's .message; the class is private in Typer's vendored Click, so
            # mypy sees a plain Exception here (the type check above is by name).
            exc.message = f"No such option: {option}. {DASH_QUERY_HINT} (rankscope {name} --db DB -- {option})"  # type: ignore[attr-defined]
            raise


class RankscopeCommand(TyperCommand):
    """A subcommand whose help shows plain metavars (see :class:`RankscopeGroup`)."""

    def get_params(self, ctx: Any) -> Any:
        return _plain_metavars(super().get_params(ctx))


#: Subcommands whose first argument is a query text.
QUERY_COMMANDS = ("search", "compare", "why", "explain")
#: Why a query of several words unquoted is an error.
SPLIT_QUERY_HINT = "A query of several words goes in quotes"
#: How to search for a text that begins with ``-`` (help texts and errors).
DASH_QUERY_HINT = "A query that begins with '-' goes after '--'"


def _plain_metavars(params: list) -> list:
    """Set a flag's metavar to nothing and a repeatable option's to its
    element type (``<str>``); other parameters keep Typer's (a variadic
    argument shows ``{paths}...`` in the usage line)."""
    for param in params:
        if param.metavar is not None or not isinstance(param, TyperOption):
            continue
        if param.is_flag:
            param.metavar = ""
        elif param.multiple:
            param.metavar = "<str>"
    return params


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


def _root(
    version: bool = typer.Option(
        False, "--version", help="Print rankscope's version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Options before the command (``--version``)."""


#: Every subcommand, in ``rankscope --help`` order: (name, module of
#: :mod:`tui.cli`, function).
SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    ("index", "search", "index"),
    ("search", "search", "search_cmd"),
    ("batch", "search", "batch"),
    ("compare", "lab", "compare_cmd"),
    ("why", "lab", "why_cmd"),
    ("explain", "lab", "explain_cmd"),
    ("doctor", "lab", "doctor_cmd"),
    ("stores", "stores", "stores_cmd"),
    ("sessions", "stores", "sessions_cmd"),
    ("ctx-search", "agent", "ctx_search_cmd"),
    ("agent-log", "agent", "agent_log_cmd"),
    ("serve", "serve", "serve"),
    ("eval", "eval", "eval_cmd"),
)
#: Subcommand groups (``rankscope snapshot save|check``, ``rankscope qrels
#: ...``): (name, module of :mod:`tui.cli`, Typer app).
SUBGROUPS: tuple[tuple[str, str, str], ...] = (
    ("snapshot", "eval", "snapshot_app"),
    ("qrels", "eval", "qrels_app"),
)


def _load(module: str, attr: str) -> Any:
    return getattr(importlib.import_module(f"tui.cli.{module}"), attr)


def build_app(only: Optional[str] = None) -> typer.Typer:
    """The Typer application with every subcommand and group, or only the
    one named ``only`` (only its module is imported)."""
    application = typer.Typer(
        cls=RankscopeGroup,
        add_completion=False,
        no_args_is_help=False,
        help=APP_HELP,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    application.callback()(_root)
    for name, module, attr in SUBCOMMANDS:
        if only in (None, name):
            fn = _load(module, attr)
            application.command(name, cls=RankscopeCommand, help=unwrap(fn.__doc__))(fn)
    for name, module, attr in SUBGROUPS:
        if only in (None, name):
            group: typer.Typer = _load(module, attr)
            for info in group.registered_commands:
                info.cls = RankscopeCommand
                if info.help is None and info.callback is not None:  # as for the commands above: one line a paragraph
                    info.help = unwrap(info.callback.__doc__)
            # no_args_is_help=False: a group given no subcommand is a usage error like any other (Click's
            # "missing command": one line, exit 2, the hint listing the subcommands), not its help printed
            # as an error
            application.add_typer(group, name=name, cls=RankscopeGroup, no_args_is_help=False)
    return application


_BUILT: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    """``app`` (the application with every subcommand), ``COMMANDS``
    (``(name, function)`` pairs) and ``GROUPS`` (``(name, Typer app)``),
    built on first use: each imports every subcommand's module."""
    if name not in ("app", "COMMANDS", "GROUPS"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _BUILT:
        if name == "app":
            _BUILT[name] = build_app()
        elif name == "COMMANDS":
            commands: tuple[tuple[str, Callable[..., None]], ...] = tuple((n, _load(m, a)) for n, m, a in SUBCOMMANDS)
            _BUILT[name] = commands
        else:
            groups: tuple[tuple[str, typer.Typer], ...] = tuple((n, _load(m, a)) for n, m, a in SUBGROUPS)
            _BUILT[name] = groups
    return _BUILT[name]


# ─── file parameters ─────────────────────────────────────────────────────


@dataclass(frozen=True)
class FileParameter:
    """A parameter that names a file (or is JSON text), with its declared
    :class:`~tui.cli.base.FileRole`.

    Attributes:
        command: the command's words (``("snapshot", "check")``; ``()`` for
            the browser, ``rankscope [PATH] [--qrels FILE]``).
        name: the parameter's name in the command's function.
        flag: its longest option name (``--qrels``), or ``None`` for an argument.
        role: what the command does with it.
    """

    command: tuple[str, ...]
    name: str
    flag: Optional[str]
    role: FileRole

    @property
    def label(self) -> str:
        """How messages name it (:func:`~tui.cli.base.parameter_label`): ``--qrels``, ``PATH``."""
        return parameter_label(self.name, self.flag)


#: The browser's store or folder, ``rankscope [PATH]``.
BROWSER_PATH = FileParameter((), "path", None, OPENS_STORE_OR_FOLDER)
#: The browser's own file parameters (parsed by :func:`main`, not by Typer).
BROWSER_FILES = (
    BROWSER_PATH,
    FileParameter((), "qrels", "--qrels", READS_QRELS),
)


def command_functions() -> tuple[tuple[tuple[str, ...], Callable[..., None]], ...]:
    """Every command as (its words, its function): :data:`COMMANDS`, then
    each group's subcommands."""
    out: list[tuple[tuple[str, ...], Callable[..., None]]] = [((name,), fn) for name, fn in __getattr__("COMMANDS")]
    for group_name, group in __getattr__("GROUPS"):
        for info in group.registered_commands:
            assert info.name is not None and info.callback is not None  # every subcommand is registered named
            out.append(((group_name, info.name), info.callback))
    return tuple(out)


def file_parameters() -> tuple[FileParameter, ...]:
    """Every parameter of every command declared with a
    :class:`~tui.cli.base.FileRole` (``Annotated[Path, READS_QRELS]``), and
    :data:`BROWSER_FILES`: what the tests feed FIFOs, devices, folders,
    deep JSON, BOMs and wrong shapes."""

    from typer.main import get_command

    root = get_command(__getattr__("app"))
    out = list(BROWSER_FILES)
    for words, fn in command_functions():
        command: Any = root
        for word in words:
            command = command.commands[word]
        params = {p.name: p for p in command.params}
        for name, role in file_roles(fn).items():
            param = params[name]
            flag = max(param.opts, key=len) if param.param_type_name == "option" else None
            out.append(FileParameter(words, name, flag, role))
    return tuple(out)


# ─── browser entry ───────────────────────────────────────────────────────

SUBCOMMANDS_HELP = "Run 'rankscope --help' for the subcommands."


#: ``rankscope``'s own usage line (the browser).
BROWSER_USAGE = "rankscope [PATH] [--stores] [--qrels FILE] [--demo] [--idle-timeout SECONDS]"


def _take_value(args: List[str], option: str, usage: str) -> tuple[List[str], Optional[str]]:
    """Split ``option VALUE`` (or ``option=VALUE``) off the browser's
    arguments; the last one given wins. Fails (one line) when the value is
    missing, naming ``usage``."""
    rest: List[str] = []
    value: Optional[str] = None
    it = iter(args)
    for a in it:
        if a == option or a.startswith(option + "="):
            value = a.partition("=")[2] if "=" in a else next(it, None)
            if not value:
                fail(f"{option} needs a value: {usage}")
        else:
            rest.append(a)
    return rest, value


def _take_qrels(args: List[str]) -> tuple[List[str], Optional[Path]]:
    """Split ``--qrels FILE`` (or ``--qrels=FILE``) off the browser's arguments."""
    rest, value = _take_value(args, "--qrels", "rankscope [PATH] --qrels FILE")
    return rest, None if value is None else Path(value)


def browse(
    path: Optional[str],
    stores: bool = False,
    qrels: Optional[Path] = None,
    demo: bool = False,
    idle_timeout: Optional[float] = None,
) -> None:
    """Open the browser (imported lazily so the CLI stays Textual-free);
    ``qrels`` is the judgments file to grade into (default: the store's own);
    ``demo``: a visitor's session (:mod:`tui.cli.demo`); ``idle_timeout``:
    seconds without input before the browser quits (``None``: never)."""
    if path is not None and not Path(path).exists():
        fail(f"no such file or folder: {path} (give a .db store or a folder to index)")
    if demo and stores:
        fail("--demo and --stores: a demo never lists this machine's stores; give the store or folder to show")
    if demo and qrels is not None:
        fail("--demo and --qrels: a demo keeps the visitor's grades in its temporary folder, never in a file here")
    notice = None  # shown by the browser once it starts (a line on stderr would hide under its screen)
    if qrels is not None and not os.path.lexists(qrels):  # created when you grade: where it may be written
        store = Path(path) if path is not None and Path(path).is_file() else None
        check_output_file(qrels, "--qrels", store=None if store is None else (BROWSER_PATH.label, store))
    elif qrels is not None:
        from engine.lab.qrels import QrelsError, read_qrels

        try:
            judged = read_qrels(qrels)  # before the screen is taken: a FIFO, a device or a bad file says so here
        except QrelsError as exc:
            fail(f"--qrels: {exc}")
        if judged.conflicts:
            notice = grade_conflicts_text(judged.conflicts, str(qrels))
    if demo:
        from tui.cli.demo import run_demo

        run_demo(path, idle_timeout=idle_timeout)
        return
    from tui.cli.launch import launch_browser

    launch_browser(path, stores=stores, qrels=qrels, idle_timeout=idle_timeout, notice=notice)


def usage_hint(exc: Exception) -> Optional[str]:
    """The hint under a usage error: where the options (or, for a group,
    the subcommands, named) are listed, e.g. ``(rankscope search --help
    shows the options)``, ``(rankscope snapshot --help shows the
    subcommands: save, check)``; ``None`` when the error names no command."""
    ctx = getattr(exc, "ctx", None)
    if ctx is None:  # set by RankscopeGroup.invoke when Click's parser gave no context
        path = getattr(exc, "command_path", None)
        return f"({path} --help shows the options)" if path else None
    if not isinstance(ctx.command, TyperGroup):
        return f"({ctx.command_path} --help shows the options)"
    names = [n for n in ctx.command.list_commands(ctx) if not getattr(ctx.command.get_command(ctx, n), "hidden", False)]
    listed = f": {', '.join(names)}" if names else ""
    return f"({ctx.command_path} --help shows the subcommands{listed})"


def usage_message(exc: TyperException) -> str:
    """Click's message for ``exc``, as the rest of a ``rankscope: error:``
    line: no final full stop and a lower-case first word (``invalid value
    for '--limit' / '-n': 'abc' is not a valid int``)."""
    message = exc.format_message().rstrip(".")
    return message[:1].lower() + message[1:] if message[1:2].islower() else message


def usage_error_exit(exc: TyperException) -> NoReturn:
    """Print one of Click's errors the house way and exit with its status
    (2 for a usage error): ``rankscope: error: <message>`` and the
    :func:`usage_hint` line, instead of Click's usage block and boxed panel.
    A group called without a subcommand is one of them (``missing command``:
    the groups are registered with ``no_args_is_help=False``)."""
    error_exit(usage_message(exc), usage_hint(exc), getattr(exc, "exit_code", 2))


def mistyped_command(word: str) -> bool:
    """True when ``word`` (the first argument) is no file or folder but close
    to a subcommand's name (``serch``): Click then says no such command, and
    which one was meant (``difflib``'s close matches, as for the groups'
    subcommands)."""
    import difflib

    names = [name for name, _, _ in SUBCOMMANDS] + [name for name, _, _ in SUBGROUPS]
    if word.startswith("-") or os.path.lexists(word):
        return False
    return bool(difflib.get_close_matches(word, names))


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point."""
    # numpy's OpenBLAS (eval's statistics, on a handful of numbers) starts a thread and a buffer per core when
    # loaded, and exits the process itself when that memory is refused; one thread is all it needs here.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = list(sys.argv[1:] if argv is None else argv)
    sys.unraisablehook = _quiet_when_out_of_memory  # a finalizer's MemoryError: the one line says it
    commands = {name for name, _, _ in SUBCOMMANDS} | {name for name, _, _ in SUBGROUPS}
    try:
        if not args or (
            args[0] not in commands and args[0] not in ("-h", "--help", "--version") and not mistyped_command(args[0])
        ):
            stores, demo = "--stores" in args, "--demo" in args
            rest = [a for a in args if a not in ("--stores", "--demo")]
            rest, qrels = _take_qrels(rest)
            rest, idle = _take_value(rest, "--idle-timeout", "rankscope [PATH] --idle-timeout SECONDS")
            if len(rest) > 1 or any(a.startswith("-") for a in rest):
                fail(f"unexpected arguments {' '.join(rest)!r}. Usage: {BROWSER_USAGE}. {SUBCOMMANDS_HELP}")
            idle_timeout = parse_idle_timeout(idle) if idle is not None else None
            browse(rest[0] if rest else None, stores=stores, qrels=qrels, demo=demo, idle_timeout=idle_timeout)
            return
        if sys.stdout is None:  # started with its standard output closed (`>&-`): an answer would vanish
            fail(
                "standard output is closed: the command's output has nowhere to go (redirect it to a file or /dev/null)"
            )
        application = build_app(args[0]) if args[0] in commands else __getattr__("app")
        status = application(args=args, prog_name="rankscope", standalone_mode=False)
        # as Click's standalone mode does: always exit, with typer.Exit(n)'s n (snapshot check's 1,
        # --help's 0) or 0 after a command that returned
        raise SystemExit(status if isinstance(status, int) else 0)
    except BaseException as exc:  # noqa: B036 - every outcome goes through the one error path
        try:
            exit_for(exc)
        except MemoryError:  # while saying what went wrong
            _say_out_of_memory()


#: SQLite's primary result code for a failed allocation (``SQLITE_NOMEM``).
SQLITE_NOMEM = 7
#: What the dynamic loader says when it cannot map a library for want of memory (glibc's words).
DLOPEN_NO_MEMORY = ("failed to map segment from shared object", "cannot map zero-fill pages", "cannot allocate memory")
#: The line printed when memory ran out, wherever it did.
OUT_OF_MEMORY = "rankscope: error: out of memory (the command needed more memory than this process may use)\n"


def out_of_memory(exc: BaseException) -> bool:
    """True when ``exc`` is, or was raised while handling or because of, a
    failed allocation: Python's ``MemoryError``, SQLite's ``SQLITE_NOMEM``,
    an ``OSError`` with ``ENOMEM``, a thread that could not be started (its
    stack is memory too) or a compiled module the loader could not map
    (:data:`DLOPEN_NO_MEMORY`: numpy's, when eval first needs it). A
    library may turn one into its own error (ir-measures reports a provider
    whose import hit ``MemoryError`` as "not available"): the whole chain of
    causes and contexts is looked at."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError) or sql.primary_code(current) == SQLITE_NOMEM:
            return True
        if isinstance(current, RuntimeError) and "can't start new thread" in str(current):
            return True
        if isinstance(current, OSError) and current.errno == errno.ENOMEM:
            return True
        if isinstance(current, ImportError) and any(m in str(current) for m in DLOPEN_NO_MEMORY):
            return True
        current = current.__cause__ or current.__context__
    return False


def _quiet_when_out_of_memory(unraisable: Any) -> None:
    """``sys.unraisablehook`` of a CLI run: an exception no code can catch (a
    finalizer's, a library callback's) that is :func:`out_of_memory` is not
    printed (Python's default prints a traceback, or dumps the object when
    even ``sys.stderr`` cannot be looked up); the command's own failure
    says :data:`OUT_OF_MEMORY`. Anything else goes to Python's default hook."""
    if unraisable.exc_value is not None and out_of_memory(unraisable.exc_value):
        return
    sys.__unraisablehook__(unraisable)


_OUT_OF_MEMORY_BYTES = OUT_OF_MEMORY.encode("ascii")
#: Made at import, like the bytes: creating the exit when memory is gone
#: failed with a MemoryError, which came back here and said it twice.
_OUT_OF_MEMORY_EXIT = SystemExit(2)
#: Whether :data:`OUT_OF_MEMORY` was written (once per process).
_OUT_OF_MEMORY_SAID = [False]


def _say_out_of_memory() -> NoReturn:
    """Write :data:`OUT_OF_MEMORY` with one system call (bytes made at import:
    nothing is allocated), once per process, and exit with status 2."""
    if not _OUT_OF_MEMORY_SAID[0]:
        _OUT_OF_MEMORY_SAID[0] = True
        try:
            os.write(2, _OUT_OF_MEMORY_BYTES)
        except OSError:
            pass
    raise _OUT_OF_MEMORY_EXIT from None


def exit_for(exc: BaseException) -> NoReturn:
    """The CLI's one error path: turn what a command raised into its exit.

    Out of memory, anywhere (:func:`out_of_memory`): the :data:`OUT_OF_MEMORY`
    line, written with one system call (printing through Rich could need the
    memory that ran out), exit status 2. Click's errors: :func:`usage_error_exit`.
    :class:`CliError`, any :class:`~engine.StoreError` and a stray SQLite or
    ``OSError``: one ``rankscope: error:`` line, exit 2. A reader that left
    (``| head``): exit 1, silently. Ctrl+C: exit 130. ``SystemExit`` passes.
    Anything else is out of memory when the process has used up its address
    space (:func:`at_memory_limit`), else a bug: one line naming it
    (:func:`internal_error_exit`), never a traceback."""
    if isinstance(exc, SystemExit):
        raise exc
    if out_of_memory(exc):
        _say_out_of_memory()
    if isinstance(exc, TyperException):  # Click's errors: Typer vendors Click, whose classes derive from this
        usage_error_exit(exc)
    if isinstance(exc, typer.Abort):
        raise SystemExit(1) from None
    if isinstance(exc, (CliError, StoreError)):
        error_exit(str(exc))
    if isinstance(exc, sql.Error):  # last resort: the engine names the store in a StoreError
        error_exit(f"SQLite error: {exc}")
    if isinstance(exc, BrokenPipeError):
        # `rankscope ... | head`: the reader left; nothing more to say.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        raise SystemExit(1) from None
    if isinstance(exc, OSError):  # last resort: an output file, a port, a folder
        error_exit(os_error_text(exc))
    if isinstance(exc, KeyboardInterrupt):
        raise SystemExit(130) from None
    if at_memory_limit():
        # a compiled module that failed to allocate may report it as anything ("error return without
        # exception set"): with the address space used up, that is what happened
        _say_out_of_memory()
    if not isinstance(exc, Exception):  # GeneratorExit and the like: not an error of the command
        raise exc
    internal_error_exit(exc)


#: Exit status of a bug (an exception no handler knew): sysexits' ``EX_SOFTWARE``.
INTERNAL_ERROR_EXIT = 70


def internal_error_exit(exc: Exception) -> NoReturn:
    """The last resort: an exception no other rule of :func:`exit_for`
    knows is a bug in rankscope. One line, ``rankscope: internal error:
    TYPE: MESSAGE (...)``, no traceback; exit :data:`INTERNAL_ERROR_EXIT`."""
    from tui.present import safe

    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    line = f"rankscope: internal error: {safe.line(text)} (a bug in rankscope; please report it with the command line)"
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    raise SystemExit(INTERNAL_ERROR_EXIT) from None


#: Address space left under ``RLIMIT_AS`` below which a process is out of memory (bytes).
MEMORY_LIMIT_SLACK = 16 * 1024 * 1024


def at_memory_limit() -> bool:
    """True when the process has an address-space limit (``RLIMIT_AS``) and
    uses all but :data:`MEMORY_LIMIT_SLACK` of it (``VmSize`` of
    ``/proc/self/status``; False where either cannot be read)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return False
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024 > soft - MEMORY_LIMIT_SLACK
    except (ImportError, OSError, ValueError, MemoryError):
        pass
    return False
