"""The Python API (docs/python.md) in-process: what the notebook test does not reach.

Its calls are the CLI's (the CLI is built on them); here: their objects agree with the CLI's
JSON, and bad input fails with wannabet's errors, never a bare traceback from inside.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import wannabet
from wannabet.cli import app
from wannabet.errors import MissingExtra, StoreError

EXPERIMENT = """
name = "api"
[setup]
sql = "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (1, 0);"
[workload]
sessions = 1
[[workload.transactions]]
name = "bump"
script = "UPDATE t SET v = v + 1 WHERE id = 1;"
[[workload.transactions]]
name = "read"
script = "SELECT v FROM t WHERE id = 1;"
[[factors]]
name = "sync"
levels = ["OFF", "FULL"]
session_sql = "PRAGMA synchronous = {level}"
[sampling]
samples = 3
duration = "0.5s"
warmup = "0s"
seed = 7
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, wannabet.Outcome]:
    where = tmp_path_factory.mktemp("api")
    (where / "e.toml").write_text(EXPERIMENT)
    results = where / "r.duckdb"
    outcome = wannabet.run_experiment(
        where / "e.toml", results=results, target=f"sqlite:///{where / 't.db'}", stats=False
    )
    return results, outcome


def cli_json(*args: Any) -> Any:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_run_from_python_is_the_run_the_cli_reads(
    ran: tuple[Path, wannabet.Outcome],
) -> None:
    results, outcome = ran
    run = outcome.run
    assert run.info.status == "complete" and run.conditions() == ["sync=OFF", "sync=FULL"]
    assert [r.run_id for r in wannabet.open_results(results).runs()] == [run.id]
    assert run.summary().to_dict() == cli_json("summary", "-r", results, "-f", "json")
    assert run.compare().to_dict() == cli_json("compare", "-r", results, "-f", "json")
    assert run.plan(change="10%").to_dict() == cli_json(
        "plan", "-r", results, "--change", "10%", "-f", "json"
    )


def test_tables_hold_every_sample_and_every_stored_transaction(
    ran: tuple[Path, wannabet.Outcome],
) -> None:
    results, outcome = ran
    run = wannabet.open_results(results).run(outcome.run.id)
    samples = run.samples()
    assert len(samples) == 6 and {"condition", "block"} <= set(samples.columns)
    tx = run.transactions()
    shown = {r["condition"]: r for r in run.summary().to_dict()["conditions"]}
    for label, figures in shown.items():
        mine = [r for r in tx.to_pylist() if r["condition"] == label and r["status"] == "ok"]
        assert len(mine) == figures["transactions"] - figures["errors"]
        mean = sum(r["latency_ms"] for r in mine) / len(mine)
        assert mean == pytest.approx(figures["latency_ms"]["mean"], rel=1e-9)
    per_sample = run.sample_summaries()
    assert len(per_sample) == 6
    assert sum(r["transactions"] for r in per_sample.to_pylist()) == sum(
        f["transactions"] for f in shown.values()
    )
    by_condition = {r["condition"]: r for r in run.summary().conditions.to_pylist()}
    assert by_condition.keys() == shown.keys()
    assert all(by_condition[k]["mean_ms"] == shown[k]["latency_ms"]["mean"] for k in shown)


def test_result_objects_show_as_the_cli_tables_in_a_notebook(
    ran: tuple[Path, wannabet.Outcome],
) -> None:
    run = ran[1].run
    comparison = run.compare()
    assert set(comparison.verdicts) == {"sync=FULL"}
    page = comparison._repr_html_()
    assert page.startswith("<pre") and "sync=FULL" in page
    assert "sync=FULL" in str(comparison)
    assert comparison.pairs.to_pylist()[0]["baseline"] == "sync=OFF"
    assert "<table>" in run.samples()._repr_html_()


def test_report_charts_are_altair_charts_and_an_unknown_one_names_those_there_are(
    ran: tuple[Path, wannabet.Outcome], tmp_path: Path
) -> None:
    import altair as alt

    report = ran[1].run.report()
    assert "histogram-log" in report.charts and "run-order" in report.charts
    chart = report.chart("run-order")
    assert isinstance(chart, alt.TopLevelMixin)
    assert chart.to_dict()["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
    with pytest.raises(KeyError, match="histogram-log"):
        report.chart("no-such-chart")
    saved = report.save(tmp_path / "r.html")
    assert "<html" in saved.read_text(encoding="utf-8")


def test_a_missing_results_file_is_an_error_not_a_new_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such results file"):
        wannabet.open_results(tmp_path / "nope.duckdb")
    assert not (tmp_path / "nope.duckdb").exists()


def test_a_missing_data_frame_library_names_the_notebook_extra(
    ran: tuple[Path, wannabet.Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = ran[1].run.samples()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pandas" else real(name, *a)
    )
    with pytest.raises(MissingExtra, match=r"wannabet\[notebook\]"):
        table.to_pandas()


def test_import_wannabet_does_not_load_the_api() -> None:
    import subprocess
    import sys

    code = "import sys, wannabet; print('wannabet.api' in sys.modules, 'duckdb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def cli_text(*args: Any) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return str(result.stdout)


def test_where_two_views_compute_a_mean_differently_the_labels_say_how(
    ran: tuple[Path, wannabet.Outcome],
) -> None:
    results = ran[0]
    summary = " ".join(cli_text("summary", "-r", results).split())
    assert "latency pools every successful transaction, each counting once" in summary
    assert "warm-up excluded" in summary
    compare = " ".join(cli_text("compare", "-r", results).split())
    assert "over the samples' mean latency, each sample counting once" in compare
    by_txn = " ".join(cli_text("compare", "-r", results, "--level", "transaction").split())
    assert "over the transactions, each counting once" in by_txn
    markdown = cli_text("summary", "-r", results, "-f", "markdown")
    assert "each counting once" in markdown
    assert "each sample counting once" in cli_text("compare", "-r", results, "-f", "markdown")


def test_counts_have_thousands_separators_as_tps_does(
    ran: tuple[Path, wannabet.Outcome],
) -> None:
    results = ran[0]
    # Markdown: one row a line whatever the terminal's width (the table may wrap).
    shown = cli_text("summary", "-r", results, "-f", "markdown")
    rows = ran[1].run.summary().to_dict()["conditions"]
    # A count of four digits or more has a separator. sync=OFF commits without an fsync and
    # runs thousands in its 1.5 s on any machine; sync=FULL may not when the disk is busy.
    big = [row for row in rows if row["transactions"] >= 1000]
    assert big, rows
    for row in big:
        assert f"{row['transactions']:,}" in shown


def test_check_experiment_returns_what_check_prints(tmp_path: Path) -> None:
    """``wannabet check`` is ``api.check_experiment`` plus printing: the file's errors, the
    counts of its ok line and the target's refusals come back as one object."""
    from wannabet import check_experiment  # re-exported, as docs/python.md says
    from wannabet.errors import SpecError

    good = tmp_path / "e.toml"
    good.write_text(EXPERIMENT)
    found = check_experiment(good)
    assert found.ok and not found.on_target and found.findings == ()
    assert (found.conditions, found.samples, found.transaction_types) == (2, 3, 2)
    assert not found.until_decided
    ok = CliRunner().invoke(app, ["check", str(good)])
    assert ok.exit_code == 0
    # (The console may wrap a long path.)
    assert " ".join(ok.stdout.split()) == (
        f"ok: {good}: 2 conditions, 3 samples each, 2 transaction types"
    )
    # Every mistake of the file, in file order, and nothing else checked.
    broken = tmp_path / "broken.toml"
    broken.write_text(
        EXPERIMENT.replace("sessions = 1", "sessions = 0").replace(
            '"UPDATE t SET v = v + 1 WHERE id = 1;"', '"\\\\sett x 1"'
        )
    )
    found = check_experiment(broken)
    assert not found.ok and found.conditions == 0
    assert [e.key for e in found.errors] == ["workload.sessions", "workload.transactions[0].script"]
    assert all(isinstance(e, SpecError) for e in found.errors)
    # What every target refuses (a pipeline under the simple protocol) without a target...
    piped = tmp_path / "piped.toml"
    piped.write_text(
        EXPERIMENT.replace("sessions = 1", 'sessions = 1\nprotocol = "simple"').replace(
            '"SELECT v FROM t WHERE id = 1;"',
            "'''\n\\startpipeline\nSELECT v FROM t WHERE id = 1;\n\\endpipeline\n'''",
        )
    )
    (refused,) = check_experiment(piped).errors
    assert "\\startpipeline" in str(refused) and "protocol" in str(refused)
    # ... and, with one, the dry run: every statement prepared, a refusal with its line.
    target = f"sqlite:///{tmp_path / 'dry.db'}"
    found = check_experiment(good, target=target)
    assert found.ok and found.on_target and found.statements == 4 and found.unchecked == 0
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(EXPERIMENT.replace("SELECT v FROM", "SELECT w FROM"))
    found = check_experiment(wrong, target=target)
    assert not found.ok and found.errors == ()
    (error,) = found.refused
    assert f"{wrong}:12:" in error.message and "no such column: w" in error.message
