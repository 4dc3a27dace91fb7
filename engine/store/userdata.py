"""Where rankscope keeps what a user makes per store: judgments (qrels),
query history and saved cases.

* The data folder is ``platformdirs.user_data_dir("rankscope")``, or
  ``$RANKSCOPE_DATA_DIR`` when that is set (tests, sandboxes).
* Each store gets a folder of its own: ``<data folder>/stores/<first 16 hex
  digits of sha256(resolved store path)>/``, holding ``qrels.json``,
  ``history.json`` and ``cases.json`` and a ``store.txt`` naming the store
  (for people browsing the folder).

Nothing here touches a store: these files live beside the user's other
application data, never next to a context-mode database.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

#: File names inside a store's data folder.
QRELS_FILE = "qrels.json"
HISTORY_FILE = "history.json"
CASES_FILE = "cases.json"


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


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same
    folder and ``os.replace``: a crash leaves the old file or the new one,
    never half of one. Creates the folder.

    Raises:
        OSError: the folder or file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remember_store(store_path: str | os.PathLike[str]) -> None:
    """Write ``store.txt`` (the resolved store path) in the store's data
    folder, creating it. Errors are the caller's (``OSError``)."""
    folder = store_dir(store_path)
    if folder is None:
        return
    note = folder / "store.txt"
    text = str(Path(store_path).resolve()) + "\n"
    if not note.exists():
        write_text_atomic(note, text)


def read_json_file(path: Path, what: str) -> object | None:
    """The JSON in ``path``, or ``None`` when the file does not exist.

    Raises:
        ValueError: the file cannot be read or is not JSON; the message names
            ``what`` and the path.
    """
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {what} {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} {path} is not valid JSON: {exc}") from None
    return data
