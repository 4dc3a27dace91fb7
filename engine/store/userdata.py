"""Where rankscope keeps what a user makes per store: judgments (qrels),
query history and saved cases.

* The data folder is ``platformdirs.user_data_dir("rankscope")``, or
  ``$RANKSCOPE_DATA_DIR`` when that is set (tests, sandboxes).
* Each store gets a folder of its own: ``<data folder>/stores/<first 16 hex
  digits of sha256(resolved store path)>/``, holding ``qrels.json``,
  ``history.json`` and ``cases.json``, a ``store.txt`` naming the store
  (for people browsing the folder) and ``query-file.txt`` naming the store's
  query file (named by ``rankscope qrels query-file``: the browser grades a
  query of that file under its id).

Nothing here touches a store: these files live beside the user's other
application data, never next to a context-mode database.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from engine.files.reading import load_json_input, read_input_text
from engine.files.writing import write_text_file

#: File names inside a store's data folder.
QRELS_FILE = "qrels.json"
HISTORY_FILE = "history.json"
CASES_FILE = "cases.json"
#: Names the store's query file (``rankscope qrels query-file``).
QUERY_FILE_NOTE = "query-file.txt"


def data_dir() -> Path:
    """The user's rankscope data folder (not created here)."""
    override = os.environ.get("RANKSCOPE_DATA_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_data_dir("rankscope"))


def store_key(store_path: str | os.PathLike[str]) -> str:
    """First 16 hex digits of the SHA-256 of the resolved store path (UTF-8,
    undecodable bytes kept by ``surrogateescape``)."""
    resolved = str(Path(store_path).resolve())
    return hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def store_dir(store_path: str | os.PathLike[str] | None) -> Path | None:
    """The data folder of the store at ``store_path`` (not created here), or
    ``None`` for an in-memory store (``None`` or ``":memory:"``)."""
    if store_path is None or str(store_path) == ":memory:":
        return None
    return data_dir() / "stores" / store_key(store_path)


def store_file(store_path: str | os.PathLike[str] | None, name: str) -> Path | None:
    """``store_dir(store_path) / name``, or ``None`` for an in-memory store."""
    folder = store_dir(store_path)
    return None if folder is None else folder / name


def remember_store(store_path: str | os.PathLike[str]) -> None:
    """Write ``store.txt`` (the resolved store path) in the store's data
    folder, creating it. Errors are the caller's (``OSError``)."""
    folder = store_dir(store_path)
    if folder is None:
        return
    note = folder / "store.txt"
    text = str(Path(store_path).resolve()) + "\n"
    if not note.exists():
        write_text_file(note, text, overwrite=True, make_folder=True)


def read_json_file(path: Path, what: str, shape: Any = None) -> Any:
    """The JSON in ``path`` (read by :func:`engine.files.reading.load_json_input`:
    a regular file, size, depth and numbers bounded, validated against
    ``shape`` when given), or ``None`` when the file does not exist.

    Raises:
        ValueError: (:class:`~engine.files.reading.InputFileError`) the file
            cannot be read, is not JSON or has the wrong shape; the message
            names ``what``, the path and the field.
    """
    if not os.path.lexists(path):
        return None
    return load_json_input(path, what, shape)


def remember_query_file(store_path: str | os.PathLike[str] | None, query_file: str | os.PathLike[str]) -> None:
    """Name ``query_file`` (resolved) as the store's query file. Errors are
    the caller's (``OSError``); nothing for an in-memory store."""
    note = store_file(store_path, QUERY_FILE_NOTE)
    if note is None:
        return
    text = str(Path(query_file).resolve()) + "\n"
    try:
        if read_input_text(note, "the store's query-file note") == text:
            return
    except ValueError:
        pass
    write_text_file(note, text, overwrite=True, make_folder=True)


def query_file_of(store_path: str | os.PathLike[str] | None) -> Path | None:
    """The store's query file (:func:`remember_query_file`), or ``None``
    when none is named (or the note cannot be read)."""
    note = store_file(store_path, QUERY_FILE_NOTE)
    if note is None:
        return None
    try:
        text = read_input_text(note, "the store's query-file note").strip()
    except ValueError:
        return None
    return Path(text) if text else None
