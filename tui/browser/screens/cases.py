"""Saved cases (palette "Saved cases…"): a query with its parameters, a
pinned chunk and its judgments. Enter reopens one in the browser (its
chunk pinned and selected); ``e`` exports every case as a ``queries.json``
file (and its judgments as ``.qrels.json``) into new files in the current
folder; ``delete`` removes one.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from engine.pipeline.words import plural

from tui.present import safe
from tui.browser.actions import bindings, close_keys
from tui.browser.cmdline import eval_command
from tui.browser.delivery import REFUSED_OVER_SSH, TEMPORARY_NOTE, ExportRoute, send_download, zip_bytes
from tui.browser.userstate import Case, CaseBook, free_export_path, qrels_beside
from tui.browser.widgets.footer import KeyFooter

#: File name of an export (in the current folder; ``rankscope-cases-2.json`` ... when taken).
EXPORT_NAME = "rankscope-cases.json"
#: File name of the zip a web page downloads (it holds the two files of an export).
DOWNLOAD_NAME = "rankscope-cases.zip"


def case_text(case: Case) -> Text:
    """Two lines: the query and id, then parameters, pin and judgment count."""
    t = Text(safe.line(case.query), style="bold")
    t.append(f"  ({safe.line(case.id)})", style="dim")
    bits = [f"limit {case.limit}"]
    if case.source:
        bits.append(f"source {'=' if case.source_match == 'exact' else '~'} {case.source}")
    if case.content_type:
        bits.append(case.content_type)
    if case.sessions is not None:
        bits.append("sessions " + (",".join(case.sessions) or "(unattributed only)"))
    if case.variant != "reference":
        bits.append(f"variant {case.variant}")
    bits.append(f"{len(case.judgments)} judged")
    if case.pinned:
        bits.append(f"pinned {case.pinned}")
    if case.saved_at:
        bits.append(case.saved_at)
    t.append("\n  " + safe.line(" · ".join(bits)), style="dim")
    return t


class CasesScreen(ModalScreen[Case | None]):
    """The store's saved cases; dismisses with the one to reopen (or ``None``)."""

    BINDINGS = [
        *close_keys("cases", "the list", escape_tooltip="Close the list"),
        *bindings("cases"),  # e, Delete (tui.browser.actions)
    ]

    def __init__(
        self, book: CaseBook, folder: Path | None = None, db: str | None = None, route: ExportRoute | None = None
    ) -> None:
        """``folder``: where exports go (default: the current folder); ``db``:
        the store's path, named in the export notice's ``rankscope eval``
        command; ``route``: where an export goes (:mod:`tui.browser.delivery`;
        default: files in ``folder``)."""
        super().__init__()
        self.book = book
        self.folder = folder
        self.db = db
        self.route = route

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(Text("Saved cases", style="bold"), classes="dialog-title")
            yield OptionList(id="cases-list")
            yield Static("Enter reopens · e exports as queries.json · Delete removes · Esc closes", classes="hint")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.refill()
        self.query_one("#cases-list", OptionList).focus()

    def refill(self) -> None:
        """List the cases, newest first."""
        options = self.query_one("#cases-list", OptionList)
        cases = list(reversed(self.book.cases))
        if cases:
            options.set_options([Option(case_text(c), id=f"case{i}") for i, c in enumerate(cases)])
            options.highlighted = 0
        else:
            options.set_options(
                [
                    Option(
                        Text("No saved case yet: ctrl+p 'Save this case' saves the current search.", style="italic"),
                        disabled=True,
                    )
                ]
            )

    def _case_at(self, index: int | None) -> Case | None:
        cases = list(reversed(self.book.cases))
        return cases[index] if index is not None and 0 <= index < len(cases) else None

    @on(OptionList.OptionSelected, "#cases-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        case = self._case_at(event.option_index)
        if case is not None:
            self.dismiss(case)

    def action_export(self) -> Path | None:
        """Export every case (:mod:`tui.browser.delivery`): into new files in
        the folder (the current one; a demo's visitor folder):
        ``rankscope-cases.json`` and ``rankscope-cases.qrels.json``, or the
        next free pair (``rankscope-cases-2.json`` ...), never over an
        existing file; in a web page, both in one zip download; refused in a
        demo over SSH. The notification names what was written or sent.
        Returns the queries file written (``None``: none)."""
        if not self.book.cases:
            self.app.notify("No saved case to export.", severity="warning")
            return None
        route = self.route or ExportRoute("folder", self.folder or Path.cwd())
        if route.kind == "refused":
            self.app.notify(REFUSED_OVER_SSH, title="Export refused", severity="error", markup=False)
            return None
        if route.kind == "download":
            queries_text, qrels_text = self.book.export_texts()
            names = (EXPORT_NAME, qrels_beside(Path(EXPORT_NAME)).name)
            send_download(
                self.app, DOWNLOAD_NAME, zip_bytes(list(zip(names, (queries_text, qrels_text)))), "application/zip"
            )
            self.app.notify(
                safe.line(f"{DOWNLOAD_NAME} ({names[0]} and {names[1]}): sent to your web browser as a download"),
                title=f"Exported {plural(len(self.book.cases), 'case')}",
                markup=False,
            )
            return None
        try:
            folder = route.ready_folder()
        except OSError as exc:
            self._export_failed(f"Cannot write there: {exc.strerror or exc}")
            return None
        for _ in range(100):  # a name taken meanwhile moves on to the next one
            path = free_export_path(folder, EXPORT_NAME)
            try:
                queries, qrels = self.book.export(path)
            except FileExistsError:
                continue
            except OSError as exc:
                self._export_failed(f"Cannot write {path}: {exc.strerror or exc}")
                return None
            break
        else:
            self._export_failed(f"Cannot write {path}: every name is taken")
            return None
        note = f" ({TEMPORARY_NOTE})" if route.temporary else ""
        self.app.notify(
            safe.line(
                f"wrote {queries.absolute()} and {qrels.absolute()}{note} · {eval_command(queries, qrels, self.db)}"
            ),
            title=f"Exported {plural(len(self.book.cases), 'case')}",
            markup=False,
        )
        return queries

    def _export_failed(self, message: str) -> None:
        self.app.notify(safe.line(message), title="Export failed", severity="error", markup=False)

    def action_remove(self) -> None:
        """Delete the highlighted case."""
        case = self._case_at(self.query_one("#cases-list", OptionList).highlighted)
        if case is None:
            return
        try:
            self.book.remove(case.id)
        except (OSError, ValueError) as exc:
            self.app.notify(safe.line(str(exc)), title="Not deleted", severity="error", markup=False)
            return
        self.refill()

    def action_close(self) -> None:
        """Close without reopening."""
        self.dismiss(None)
