"""Where an export (F6's trace, the saved cases, a screenshot) goes: to the
person at the keyboard, wherever they are.

* **In a web page** (``rankscope serve``: Textual's web driver): a download
  in the visitor's browser (Textual's ``App.deliver_binary``, which
  textual-serve turns into a one-time ``/download/<key>`` URL). The page
  opens one download per key press, so an export of several files is sent
  as one zip.
* **In a terminal**, a user's own session: a new file in the current folder
  (or the folder a test gives), its path shown.
* **In a terminal demo the visitor can read files of** (``rankscope --demo``
  at this machine, or from a shell over SSH): a new file in the visitor's
  temporary folder, its path shown with a note that it goes when they leave.
* **In a demo that is the SSH session's command** (the recipe's
  ``ForceCommand``, :attr:`~tui.browser.options.DemoMode.remote`): refused,
  saying why: a file written on the server is out of the visitor's reach (no
  shell, no file transfer), so a path would be a promise rankscope cannot
  keep.

Files on disk are written by the one output writer
(:func:`engine.files.writing.write_text_file`), by the callers.
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from textual.app import App

from tui.browser.options import DemoMode

#: Why an export is refused in a demo over SSH (one line).
REFUSED_OVER_SSH = (
    "Exports are off in this SSH demo: a file written on the server would be out of your reach "
    "(no shell, no file transfer). In a web demo (rankscope serve --demo) they are downloads."
)
#: Said with the path of a file written in a terminal demo's visitor folder.
TEMPORARY_NOTE = "kept until you quit rankscope"
#: The subfolder of the visitor folder that exports go to in a terminal demo.
EXPORTS_SUBFOLDER = "exports"


@dataclass(frozen=True)
class ExportRoute:
    """Where an export goes.

    Attributes:
        kind: ``"download"`` (the visitor's web browser), ``"folder"`` (a
            file in ``folder``) or ``"refused"`` (:data:`REFUSED_OVER_SSH`).
        folder: the folder files are written to (``"folder"`` only).
        temporary: ``folder`` is the visitor's, removed when they leave.
    """

    kind: Literal["download", "folder", "refused"]
    folder: Path | None = None
    temporary: bool = False

    def ready_folder(self) -> Path:
        """``folder``, made (mode 0700) if it is the visitor's and missing.

        Raises:
            OSError: it cannot be made.
        """
        assert self.folder is not None
        if self.temporary:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
        return self.folder


def route_for(web: bool, demo: DemoMode | None, folder: Path | None = None) -> ExportRoute:
    """The route of an export (module docstring): ``web`` is the app running
    in a web page; ``folder`` is where a user's own terminal session writes
    (default: the current folder)."""
    if web:
        return ExportRoute("download")
    if demo is None:
        return ExportRoute("folder", folder or Path.cwd())
    if demo.remote:
        return ExportRoute("refused")
    return ExportRoute("folder", demo.folder / EXPORTS_SUBFOLDER, temporary=True)


def send_download(app: App[Any], name: str, data: bytes, mime_type: str) -> None:
    """Start a download of ``data`` named ``name`` in the visitor's web
    browser (the app must run in a web page: ``app.is_web``)."""
    app.deliver_binary(io.BytesIO(data), save_filename=name, mime_type=mime_type, open_method="download")


def zip_bytes(files: list[tuple[str, str]]) -> bytes:
    """A zip archive (deflated) of ``(name, UTF-8 text)`` pairs, in order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in files:
            archive.writestr(name, text.encode("utf-8"))
    return buffer.getvalue()
