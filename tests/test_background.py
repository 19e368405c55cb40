"""Background load (issue #14): an unmeasured workload on sessions of its own, running while each
sample runs; recorded with the sample, never analysed."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import NativeEngine
from wannabet.errors import SpecError
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres

NOISE = textwrap.dedent(
    """\
    name = "noise"
    [setup]
    sql = "DROP TABLE IF EXISTS bg_log; CREATE TABLE bg_log (who text)"
    [workload]
    sessions = 1
    [[workload.transactions]]
    name = "measured"
    script = "SELECT count(*) FROM generate_series(1, 2000);"
    [[factors]]
    name = "noise"
    [factors.levels.quiet]
    session_sql = "SET application_name = 'measured-quiet'"
    [factors.levels.busy]
    session_sql = "SET application_name = 'measured-busy'"
    [factors.levels.busy.background]
    sessions = 2
    transactions = [
      { name = "log", script = "INSERT INTO bg_log SELECT current_setting('application_name');" },
    ]
    [sampling]
    samples = 2
    duration = "0.5s"
    warmup = "0s"
    seed = 4
    """
)


def test_a_background_load_runs_during_each_sample_and_is_only_recorded(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    store = Store(tmp_path / "r.duckdb")
    target = parse_target(postgres.url)
    outcome = run_experiment(
        parse_experiment(NOISE, file="noise.toml"),
        target=target,
        store=store,
        engine=NativeEngine(),
    )
    assert outcome.status == "complete"
    with store.read() as con:
        samples = con.execute(
            "SELECT c.label, s.stats, s.t0_ns, s.end_ns FROM samples s"
            " JOIN conditions c USING (run_id, condition_id) ORDER BY s.position"
        ).fetchall()
        types = [name for (name,) in con.execute("SELECT name FROM transaction_types").fetchall()]
    # The background's transactions are not the run's: only the measured type is stored.
    assert types == ["measured"]
    committed = 0
    for label, stats, _, _ in samples:
        background = json.loads(stats).get("background")
        if label == "noise=quiet":
            assert background is None
            continue
        assert background["sessions"] == 2
        assert background["committed"] > 0 and background["errors"] == 0
        assert background["seconds"] >= 0.5
        committed += background["committed"]
    engine = NativeEngine()
    # Every background insert it reported is in the table (it may have done a few more after
    # its last report), from sessions named as background, none from the measured sessions.
    rows = engine.query(target, "SELECT who, count(*) FROM bg_log GROUP BY who")
    assert len(rows) == 1
    [(who, count)] = rows
    assert who is not None and who.endswith("-background")
    assert committed <= int(count or 0) <= committed + 400


def test_background_mistakes_are_named() -> None:
    base = "name = 'e'\n[[workload.transactions]]\nscript = 'SELECT 1;'\n"
    with pytest.raises(SpecError, match="background: needs transactions"):
        parse_experiment(base + "[background]\nsessions = 2\n", file="e.toml")
    with pytest.raises(SpecError, match=r"background\.sesions: unknown key"):
        parse_experiment(
            base + "[background]\nsesions = 2\ntransactions = [{ script = 'SELECT 1;' }]\n",
            file="e.toml",
        )
