"""Start-up: the corpus cache, path handling, the loading screen, the store
picker, the command-line helpers and ``rankscope serve``."""

from __future__ import annotations

from dataclasses import replace

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import SearchParams, Store
from tui.browser.corpus_cache import build_cache, cache_entry, fingerprint, load_cached
from tui.cli import CliError, main
from tui.browser.cmdline import command_line, describe_params, export_path
from tui.cli.launch import SAMPLE_CORPUS, app_arguments

from .conftest import (
    failing_index_app,
    notifications,
    plain,
    press,
    processed,
    run_command,
    settle,
    type_text,
    wait_for,
    wait_screen,
)

#: Indexing the parity corpus on a busy machine: the longest a test waits for it.
INDEXING_TIMEOUT = 60.0


def picker_has_options(app) -> bool:
    """The store picker is on top and lists the stores it found."""
    from tui.browser.screens.stores import StorePickerScreen

    screen = app.screen
    return (
        isinstance(screen, StorePickerScreen)
        and bool(screen.query("#stores-list"))
        and screen.query_one("#stores-list").option_count > 0
    )


# ── cache ────────────────────────────────────────────────────────────────


def test_cache_entry_is_named_by_the_folder_hash(tmp_path):
    a = cache_entry(tmp_path / "a", root=tmp_path / "c")
    b = cache_entry(tmp_path / "b", root=tmp_path / "c")
    assert a.db_path != b.db_path and a.db_path.suffix == ".db"
    assert a.fingerprint_path.with_suffix(".db") == a.db_path
    assert cache_entry(tmp_path / "a", root=tmp_path / "c") == a


def test_fingerprint_follows_size_mtime_and_files(tmp_path):
    (tmp_path / "a.md").write_text("# A\nalpha\n")
    first = fingerprint(tmp_path)
    assert fingerprint(tmp_path) == first
    os.utime(tmp_path / "a.md", ns=(1, 1))
    touched = fingerprint(tmp_path)
    assert touched != first
    (tmp_path / "b.md").write_text("# B\n")
    assert fingerprint(tmp_path) != touched
    (tmp_path / "_sessions.json").write_text('{"a.md": "s1"}')
    assert fingerprint(tmp_path) != touched


def test_build_then_reuse_then_rebuild(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Alpha\nthe alpha chunk\n")
    (corpus / "_sessions.json").write_text('{"a.md": "s1"}')
    entry = cache_entry(corpus, root=tmp_path / "cache")
    assert load_cached(entry) is None
    seen = []
    store = build_cache(entry, progress=lambda label, n: seen.append(label))
    assert seen == ["a.md"]
    assert not store.read_only and store.stats().chunks == 1  # rankscope's own: its stale refresh may write
    assert store.session_counts() == [("s1", 1)]
    store.close()
    assert not Path(str(entry.db_path) + "-wal").exists()
    again = load_cached(entry)
    assert again is not None and again.stats().chunks == 1
    again.close()
    (corpus / "b.md").write_text("# Beta\nbeta\n")
    assert load_cached(entry) is None  # changed corpus: rebuild
    store = build_cache(entry)
    assert store.stats().chunks == 2
    store.close()


def test_the_browser_indexes_a_folder_with_its_gitignore_rules_as_rankscope_index_does(tmp_path):
    """A file a .gitignore excludes (a secret, build output) is not indexed
    into the browser's cache either, the same files as ``rankscope index``;
    editing a .gitignore, or adding one in a folder, rebuilds the cache."""
    from engine import index_paths
    from engine.store.gitignore import gitignore_matcher

    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.md").write_text("# A\nhello quorum world\n")
    (corpus / "secret.md").write_text("# S\nsecret quorum\n")
    (corpus / "sub" / "u.md").write_text("# U\nunder quorum\n")
    (corpus / "sub" / "build.log").write_text("build quorum\n")
    (corpus / ".gitignore").write_text("secret.md\n")
    (corpus / "sub" / ".gitignore").write_text("*.log\n")
    entry = cache_entry(corpus, root=tmp_path / "cache")
    store = build_cache(entry)
    labels = sorted(row.label for row in store.sources())
    store.close()
    assert labels == ["a.md", "sub/u.md"]
    cli = Store.create(tmp_path / "cli.db")
    index_paths(cli, [corpus], ignore_factory=gitignore_matcher)  # what `rankscope index` runs
    assert sorted(row.label for row in cli.sources()) == labels
    cli.close()
    assert load_cached(entry) is not None
    (corpus / "sub" / ".gitignore").write_text("# nothing ignored here\n")
    assert load_cached(entry) is None  # an edited rule file: rebuild
    store = build_cache(entry)
    assert sorted(row.label for row in store.sources()) == ["a.md", "sub/build.log", "sub/u.md"]
    store.close()
    (corpus / "sub" / "deeper").mkdir()
    (corpus / "sub" / "deeper" / "d.md").write_text("# D\ndeep\n")
    store = build_cache(entry)
    store.close()
    (corpus / "sub" / "deeper" / ".gitignore").write_text("d.md\n")
    assert load_cached(entry) is None  # a new rule file: rebuild


def test_cancelled_build_leaves_no_cache(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n")
    entry = cache_entry(corpus, root=tmp_path / "cache")
    with pytest.raises(InterruptedError):
        build_cache(entry, cancelled=lambda: True)
    assert not entry.db_path.exists() and not entry.fingerprint_path.exists()
    assert list((tmp_path / "cache").iterdir()) == []


# ── paths ────────────────────────────────────────────────────────────────


def test_no_path_means_the_sample_corpus():
    if not SAMPLE_CORPUS.is_dir():
        pytest.skip("sample corpus not present")
    args = app_arguments(None)
    assert args.store_label == "sample_corpus"
    assert args.index_job is not None or args.store is not None
    assert "write quorum" in args.suggestions
    if args.store is not None:
        args.store.close()


def test_missing_sample_corpus_is_one_clear_line_and_status_2(tmp_path, monkeypatch, capsys):
    """A non-editable ``pip install .`` has no sample_corpus/ beside the code."""
    import tui.cli.launch
    from tui.cli.launch import launch_browser

    monkeypatch.setattr(tui.cli.launch, "SAMPLE_CORPUS", tmp_path / "site-packages" / "sample_corpus")
    expected = (
        "the sample corpus is not installed; install with `pip install -e .` from a clone, or run `rankscope PATH`"
    )
    with pytest.raises(CliError) as exc:
        launch_browser(None)
    assert str(exc.value) == expected
    with pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == f"rankscope: error: {expected}"


def test_folder_is_indexed_once_then_cached(corpus, tmp_path):
    args = app_arguments(str(corpus))
    assert args.index_job is not None and args.store_label == "corpus"
    build_cache(args.index_job).close()
    args = app_arguments(str(corpus))
    assert isinstance(args.store, Store) and not args.store.read_only
    args.store.close()


def test_db_file_opens_read_only(tmp_path):
    db = tmp_path / "s.db"
    s = Store.create(db)
    s.index_text("a", "# A\nalpha")
    s.close()
    args = app_arguments(str(db))
    assert args.store.read_only and args.store_label == "s.db"
    args.store.close()


async def test_an_edited_file_of_a_browsed_folder_shows_in_the_next_search(tmp_path):
    """A folder's cached store is rankscope's own: a file edited while the
    browser runs is re-indexed by the next search (the stale refresh
    stage), as context-mode does, and its new text is found."""
    from tui.browser.app import RankscopeApp
    from tui.browser.screens.browser import BrowserScreen

    folder = tmp_path / "notes"
    folder.mkdir()
    guide = folder / "guide.md"
    guide.write_text("# Guide\n\nThe airlock opens inward.\n")
    args = app_arguments(str(folder))
    app = RankscopeApp(replace(args, show_timings=False, cursor_blink=False))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_screen(pilot, BrowserScreen, timeout=INDEXING_TIMEOUT)
        await type_text(pilot, "airlock")
        await press(pilot, "enter")
        await settle(pilot)
        assert [h.candidate.title for h in app.browser.trace.final] == ["Guide"]
        guide.write_text("# Guide\n\nThe airlock opens inward.\n\n## Escape hatch\n\nThe escape pod seats four.\n")
        later = guide.stat().st_mtime_ns + 5_000_000_000
        os.utime(guide, ns=(later, later))
        await press(pilot, "ctrl+l")
        await type_text(pilot, "escape pod")
        await press(pilot, "enter")
        await settle(pilot)
        trace = app.browser.trace
        assert trace.refresh.stale == ("guide.md",) and trace.refresh.refreshed
        assert "Guide > Escape hatch" in [h.candidate.title for h in trace.final]


async def test_a_demo_indexes_a_folder_into_a_read_only_store(tmp_path):
    """A demo of a folder the user's cache does not hold indexes it into the
    visitor's cache and browses it read-only, like every demo store."""
    from tui.browser.app import RankscopeApp
    from tui.browser.options import DemoMode
    from tui.browser.screens.browser import BrowserScreen

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nThe airlock opens inward.\n")
    visitor = tmp_path / "visitor"
    visitor.mkdir()
    args = app_arguments(str(folder), demo_cache=visitor / "cache")
    assert args.index_job is not None
    app = RankscopeApp(replace(args, demo=DemoMode(visitor), show_timings=False, cursor_blink=False))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_screen(pilot, BrowserScreen, timeout=INDEXING_TIMEOUT)
        assert app.store.read_only


def test_a_demo_reads_the_users_cached_store_read_only(corpus, tmp_path):
    """A demo visitor never writes to the user's cache: an up-to-date cached
    store is opened read-only for them (the stale refresh only lists)."""
    build_cache(app_arguments(str(corpus)).index_job).close()
    args = app_arguments(str(corpus), demo_cache=tmp_path / "visitor-cache")
    assert isinstance(args.store, Store) and args.store.read_only
    args.store.close()


@pytest.mark.parametrize(
    "make,expected",
    [
        (lambda p: p / "missing", "no such file or folder"),
        (lambda p: (p / "notes.txt").write_text("hello") and p / "notes.txt", "not an SQLite database"),
    ],
)
def test_bad_paths_raise_cli_errors(tmp_path, make, expected):
    with pytest.raises(CliError, match=expected):
        app_arguments(str(make(tmp_path)))


def test_bad_sessions_map_is_a_cli_error(tmp_path):
    (tmp_path / "a.md").write_text("# A\n")
    (tmp_path / "_sessions.json").write_text("[1, 2]")
    with pytest.raises(CliError, match="sessions map"):
        app_arguments(str(tmp_path))


def test_main_reports_a_bad_path_in_one_line_with_status_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "nope")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rankscope: error: no such file or folder") and "\n" not in err


def test_stores_without_discovery_module_notifies(monkeypatch, corpus):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "engine.store.discovery":
            raise ImportError("no discovery")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    args = app_arguments(str(corpus), stores=True)
    assert args.notice == "store discovery not available"


# ── loading screen and picker ────────────────────────────────────────────


async def test_loading_screen_indexes_then_browses(corpus):
    from tui.browser.app import RankscopeApp
    from tui.browser.screens.browser import BrowserScreen

    args = app_arguments(str(corpus))
    app = RankscopeApp(replace(args, show_timings=False, cursor_blink=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, BrowserScreen, timeout=INDEXING_TIMEOUT)
        assert not app.store.read_only
        await wait_for(pilot, lambda: "24 sources, 129 chunks" in plain(app.screen.results.message))
        await type_text(pilot, "cache")
        await press(pilot, "enter")
        await settle(pilot)
        assert app.browser.trace.layer == "rrf"


async def test_loading_failure_is_reported(tmp_path):
    from tui.browser.screens.loading import LoadingScreen

    app = failing_index_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(
            pilot,
            lambda: any(n.severity == "error" and "Indexing failed" in (n.title or "") for n in notifications(app)),
            timeout=INDEXING_TIMEOUT,
        )
        await settle(pilot)
        assert "Indexing failed" in plain(app.screen.query_one("#loading-file"))
        # progress the worker posted before failing, handled after the failure, leaves the error line
        app.screen.post_message(LoadingScreen.Progress(1, 1, "a.md"))
        await processed(pilot)
        assert "Indexing failed" in plain(app.screen.query_one("#loading-file"))


async def test_store_picker_opens_the_chosen_store(tmp_path):
    from types import SimpleNamespace

    from tui.browser.app import RankscopeApp
    from tui.browser.options import AppOptions
    from tui.browser.screens.browser import BrowserScreen

    db = tmp_path / "found.db"
    s = Store.create(db)
    s.index_text("a", "# Alpha\nalpha words")
    s.close()
    info = SimpleNamespace(path=db, size_bytes=db.stat().st_size, sources=1, chunks=1, schema="8-column")
    app = RankscopeApp(AppOptions(store_finder=lambda: [info], show_timings=False, cursor_blink=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: picker_has_options(app))
        await settle(pilot)
        prompt = str(app.screen.query_one("#stores-list").get_option_at_index(0).prompt)
        assert "found.db" in prompt
        assert " KiB · 1 sources" in prompt  # binary units, as 'rankscope stores' prints them
        await press(pilot, "enter")
        await wait_screen(pilot, BrowserScreen)
        await type_text(pilot, "alpha")
        await press(pilot, "enter")
        await settle(pilot)
        assert app.browser.trace.final[0].candidate.title == "Alpha"


# ── command line helpers ─────────────────────────────────────────────────


def test_command_line_is_shell_quoted():
    p = SearchParams(
        'it\'s a "test"',
        limit=5,
        source="docs/x y",
        source_match="exact",
        content_type="code",
        sessions=("sess-A", "b c"),
    )
    cmd = command_line(p, "/tmp/my store.db")
    assert cmd == (
        "rankscope search 'it'\"'\"'s a \"test\"' --db '/tmp/my store.db' --limit 5 --source 'docs/x y' "
        "--source-exact --content-type code --session sess-A --session 'b c'"
    )
    import shlex

    argv = shlex.split(cmd)
    assert argv[2] == 'it\'s a "test"' and argv[argv.index("--db") + 1] == "/tmp/my store.db"


def test_command_line_defaults_and_empty_allow_set():
    assert command_line(SearchParams("cache"), "s.db") == "rankscope search cache --db s.db"
    assert command_line(SearchParams("cache", sessions=()), "s.db").endswith("--session ''")


def test_command_line_runs(tmp_path, corpus):
    """The copied command reproduces the browser's search."""
    db = tmp_path / "s.db"
    s = Store.create(db)
    from engine import index_corpus, search

    index_corpus(s, corpus)
    expected = [r.candidate.title for r in search(s, SearchParams("cache", limit=4, sessions=("sess-A",))).final]
    s.close()
    import shlex

    argv = shlex.split(command_line(SearchParams("cache", limit=4, sessions=("sess-A",)), str(db)))
    out = subprocess.run(
        [sys.executable, "-m", "tui.cli", *argv[1:], "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    import json

    assert [r["title"] for r in json.loads(out.stdout)["final"]] == expected


def test_describe_params_and_export_path(tmp_path):
    assert describe_params(SearchParams("q")) == "limit 3 · source any · type any · sessions off"
    import datetime as dt

    now = dt.datetime(2026, 1, 2, 3, 4, 5)
    first = export_path("What's up?", tmp_path, now)
    assert first.name == "rankscope-trace-what-s-up-20260102-030405.json"
    first.write_text("{}")
    assert export_path("What's up?", tmp_path, now).name.endswith("-2.json")


# ── serve ────────────────────────────────────────────────────────────────


def test_serve_command_and_bad_path(tmp_path, capsys):
    from tui.cli.serve import serve_command

    cmd = serve_command(str(tmp_path))
    assert cmd.endswith(str(tmp_path.resolve())) and "-m tui.cli" in cmd
    assert serve_command(None).endswith("-m tui.cli")
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--path", str(tmp_path / "nope")])
    assert exc.value.code == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_serve_binds_loopback_by_default(monkeypatch):
    calls = {}

    import tui.cli.webserve

    def fake_serve(self):
        calls.update(
            command=self.command,
            host=self.host,
            port=self.port,
            token=self.token,
            allowed=self.allowed_hosts,
            served=True,
        )

    monkeypatch.setattr(tui.cli.webserve.GuardedServer, "serve", fake_serve)
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--port", "8123"])
    assert exc.value.code == 0
    assert calls["host"] == "127.0.0.1" and calls["port"] == 8123 and calls["served"]
    assert calls["token"] is None and "localhost" in calls["allowed"]


# ── headless core ────────────────────────────────────────────────────────


def test_engine_and_plain_helpers_import_no_textual():
    code = (
        "import sys, engine, engine.lab.journey, tui.browser.corpus_cache, tui.browser.cmdline, tui.browser.subject, tui.present.render\n"
        "assert 'textual' not in sys.modules, sorted(m for m in sys.modules if m.startswith('textual'))"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


async def test_palette_opens_the_store_picker_from_the_browser(tmp_path):
    """ctrl+p "Open a context-mode store…" lists stores; Escape goes back to
    the store being browsed; Enter replaces it with the picked one."""
    from types import SimpleNamespace

    from tui.browser.app import RankscopeApp
    from tui.browser.options import AppOptions
    from tui.browser.screens.browser import BrowserScreen
    from tui.browser.screens.stores import StorePickerScreen

    first = Store.create(":memory:")
    first.index_text("a", "# Alpha\nalpha words")
    db = tmp_path / "other.db"
    s = Store.create(db)
    s.index_text("b", "# Beta\nbeta words")
    s.close()
    info = SimpleNamespace(path=db, size_bytes=db.stat().st_size, sources=1, chunks=1, schema="8-column")
    app = RankscopeApp(AppOptions(store=first, store_finder=lambda: [info], show_timings=False, cursor_blink=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, BrowserScreen)
        await run_command(pilot, "open a context-mode store")
        await wait_screen(pilot, StorePickerScreen)
        await wait_for(pilot, lambda: picker_has_options(app))
        await settle(pilot)
        await press(pilot, "escape")
        await wait_screen(pilot, BrowserScreen)
        assert app.store is first
        await run_command(pilot, "open a context-mode store")
        await wait_for(pilot, lambda: picker_has_options(app))
        await settle(pilot)
        await press(pilot, "enter")
        await wait_for(pilot, lambda: app.browser is not None and app.browser.store is not first)
        await wait_screen(pilot, BrowserScreen)
        assert app.browser is app.screen and app.browser.store is app.store
        await type_text(pilot, "beta")
        await press(pilot, "enter")
        await settle(pilot)
        assert app.browser.trace.final[0].candidate.title == "Beta"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_store_picker_with_no_stores_says_where_it_looked(home, size):
    """``rankscope --stores`` finding nothing lists the folders it searched,
    the same lines as ``rankscope stores``, on screen at both sizes."""
    from typer.testing import CliRunner

    from tui.browser.app import RankscopeApp
    from tui.cli import app as cli
    from tui.browser.screens.stores import StorePickerScreen

    out = CliRunner().invoke(cli, ["stores"], env={"COLUMNS": "200"}).output
    assert out.startswith("No context-mode content stores found. Looked in:")
    folders = [line.strip() for line in out.splitlines()[1:] if line.strip()]
    assert len(folders) >= 5
    app = RankscopeApp(replace(app_arguments(None, stores=True), show_timings=False, cursor_blink=False))
    async with app.run_test(size=size) as pilot:
        screen = await wait_screen(pilot, StorePickerScreen, focused=False)
        status = screen.query_one("#stores-status")
        await wait_for(pilot, lambda: "Looked in:" in plain(status))
        await settle(pilot)
        assert plain(status).strip() == "No context-mode content stores found. Looked in:"
        looked = screen.query_one("#stores-none")
        text = plain(screen.query_one("#stores-looked"))
        assert [line.strip() for line in text.splitlines()[: len(folders)]] == folders
        assert "Run 'rankscope PATH'" in text
        # the list scrolls when it is longer than the screen: End shows its last line
        assert app.focused is looked and looked.region.bottom <= size[1] - 1
        await press(pilot, "end")
        await wait_for(pilot, lambda: looked.scroll_y == looked.max_scroll_y)


@pytest.mark.parametrize("extra", [[], ["--demo"]])
def test_the_browser_without_a_terminal_is_one_line_and_status_2(extra, tmp_path):
    """``rankscope </dev/null >out 2>err`` drew 36 KB of escape codes into a
    file and waited for keys forever; now: one line, exit 2, nothing drawn."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_DRIVER"}
    env["RANKSCOPE_DATA_DIR"] = str(tmp_path / "data")
    env["RANKSCOPE_CACHE_DIR"] = str(tmp_path / "cache")
    out = subprocess.run(
        [sys.executable, "-m", "tui.cli", *extra],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 2, (out.returncode, out.stderr[-300:])
    assert out.stderr.startswith("rankscope: error: the browser needs a terminal") and out.stderr.count("\n") == 1
    assert out.stdout == ""
