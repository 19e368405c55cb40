"""Read-only opens of a results file: what a reader must never do, and a killed writer's log."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from test_store import columns, make_run
from wannabet.errors import StoreError
from wannabet.store import SampleRow, Store


def test_a_reader_refuses_a_duckdb_file_that_is_no_results_file(tmp_path: Path) -> None:
    other = tmp_path / "analytics.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE events AS SELECT range AS id FROM range(10)")
    con.close()
    before = other.read_bytes()
    with pytest.raises(StoreError, match="not a wannabet results file"):
        Store(other, read_only=True).runs()
    # Nothing was created in the user's file.
    assert other.read_bytes() == before
    con = duckdb.connect(str(other), read_only=True)
    rows = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    tables = {r[0] for r in rows}
    con.close()
    assert tables == {"events"}


def test_a_reader_replays_the_log_a_killed_writer_left(results: Path) -> None:
    store = Store(results)
    run_id = make_run(store)
    cols = columns(200, seed=3)
    store.add_sample(run_id, SampleRow(0, 0, 0, 0, 0, 0, int(cols["end_ns"].max()), 0.0), cols)
    # A writer that dies before it checkpoints leaves its changes only in the log.
    con = duckdb.connect(str(results))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("UPDATE runs SET name = 'renamed' WHERE run_id = ?", [run_id])
    con.close()
    wal = results.with_name(results.name + ".wal")
    assert wal.exists()
    reader = Store(results, read_only=True)
    assert reader.run(run_id).name == "renamed"
    assert reader.condition_summaries(run_id)[0].transactions == int(np.size(cols["status"]))
    # The log was checkpointed into the file, as the next writer would have done.
    assert not wal.exists()


def test_a_sqlite_file_as_results_is_refused_without_loading_an_extension(
    tmp_path: Path,
) -> None:
    import os
    import sqlite3

    from wannabet.testing.cli import one_line_error, plain_env, wannabet

    theirs = tmp_path / "app.sqlite"
    con = sqlite3.connect(theirs)
    con.execute("CREATE TABLE t (id INTEGER)")
    con.commit()
    con.close()
    before = theirs.read_bytes()
    home = tmp_path / "home"
    home.mkdir()
    env = {**plain_env(), "HOME": str(home)}
    for command in (["runs"], ["summary"], ["compare"]):
        proc = wannabet(*command, "-r", str(theirs), env=env)
        assert "not a wannabet results file" in one_line_error(proc, 4)
    # DuckDB would install sqlite_scanner under ~/.duckdb/extensions: nothing was fetched.
    assert not (home / ".duckdb").exists(), os.listdir(home)
    assert theirs.read_bytes() == before


def test_held_reads_open_the_file_once_and_match_plain_reads(
    results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(results)
    run_id = make_run(store)
    cols = columns(300, seed=4)
    store.add_sample(run_id, SampleRow(0, 0, 0, 0, 0, 0, int(cols["end_ns"].max()), 0.0), cols)
    store.finish_run(run_id, "complete")
    reader = Store(results, read_only=True)
    plain = (reader.runs(), reader.conditions(run_id), reader.samples(run_id))
    opened = []
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: opened.append(a) or real(*a, **k))
    with reader.held():
        with reader.held():  # nested: the outer connection serves
            held = (reader.runs(), reader.conditions(run_id), reader.samples(run_id))
        # Two cursors at once: one method's pending rows are not disturbed by another's.
        with reader.read() as first, reader.read() as second:
            first.execute("SELECT count(*) FROM transactions")
            second.execute("SELECT 1")
            assert first.fetchall() == [(300,)]
    assert len(opened) == 1
    assert repr(held) == repr(plain)
    # Outside the block every method opens the file again, as before; a writer ignores held().
    reader.runs()
    assert len(opened) == 2
    writer = Store(results)
    with writer.held():
        writer.runs()
        writer.runs()
    assert len(opened) == 4
