"""The command line, end to end, against real SQLite files and the throwaway PostgreSQL."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from wannabet.errors import StoreError
from wannabet.runner import reset_default_target
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres, cli
from wannabet.testing.cli import one_line_error, plain_env

# The command line's own contract: exit codes and output of a real process.
wannabet = functools.partial(cli.wannabet, child=True)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


QUICK = ["--samples", "2", "--duration", "0.5s", "--warmup", "0.2s"]


@pytest.fixture(scope="module")
def sqlite_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    results = tmp_path_factory.mktemp("cli") / "results.duckdb"
    proc = wannabet(
        "run", str(EXAMPLES / "sqlite-synchronous.toml"), "--results", str(results), *QUICK
    )
    return results, proc


def test_run_prints_the_per_condition_table(
    sqlite_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    results, proc = sqlite_run
    assert proc.returncode == 0, proc.stderr
    for label in ("synchronous=FULL", "synchronous=NORMAL", "synchronous=OFF"):
        assert label in proc.stdout
    # Latency columns in the unit that suits them (SQLite's are often µs).
    assert "TPS" in proc.stdout and any(f"p99 {u}" in proc.stdout for u in ("ns", "µs", "ms"))
    info = Store(results).run()
    assert info.status == "complete" and info.samples == 6
    # The default target is a fresh SQLite file next to the results.
    assert (results.parent / "sqlite-synchronous.sqlite").exists()
    # Without a terminal, progress is one plain line per finished sample, not a live bar.
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 6 and lines[-1].startswith("[6/6] "), proc.stderr
    assert all(" TPS, p99 " in line and " ETA " in line for line in lines)
    # The hint is one line whatever the width (stderr is a pipe here), and names the next
    # step with this results file: compare, as the run has conditions to compare.
    [hint] = [line for line in proc.stderr.splitlines() if line.startswith("Stored in")]
    assert hint.endswith(f"Next: wannabet compare -r {results} --run {info.run_id}"), hint


def test_a_run_where_every_transaction_fails_stops_with_the_error(tmp_path: Path) -> None:
    """A broken script stops the run after one sample of each condition, with its error; a
    condition that alone fails everything is a finding, reported as a warning (see the report
    tests' query_only=ON condition)."""
    text = (EXAMPLES / "sqlite-synchronous.toml").read_text()
    broken = text.replace("\\set id random(1, 100000)", "\\set id 1 / 0")
    assert broken != text
    (tmp_path / "broken.toml").write_text(broken)
    results = tmp_path / "r.duckdb"
    proc = wannabet("run", str(tmp_path / "broken.toml"), "--results", str(results), *QUICK)
    assert proc.returncode == 3, proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert "no transaction succeeded" in error and "division by zero" in error, error
    info = Store(results).run()
    # It stops once each condition has had a sample; the samples measured are kept.
    assert info.status == "failed" and info.samples == 3


def test_the_default_target_never_deletes_a_file_wannabet_did_not_make(tmp_path: Path) -> None:
    # A database of the user's that happens to have the default target's name is kept.
    theirs = tmp_path / "sqlite-synchronous.sqlite"
    con = sqlite3.connect(theirs)
    con.execute("CREATE TABLE precious (x)")
    con.commit()
    con.close()
    run = (
        "run",
        str(EXAMPLES / "sqlite-synchronous.toml"),
        "--results",
        str(tmp_path / "r.duckdb"),
    )
    proc = wannabet(*run, *QUICK)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert str(theirs) in line and "wannabet did not make it" in line and "--target" in line
    con = sqlite3.connect(theirs)
    assert con.execute("SELECT name FROM sqlite_master").fetchall() == [("precious",)]
    con.close()
    # wannabet's own default target (as a previous run left it) is reset by the next run; the
    # reset leaves the file to [setup], so that its PRAGMA page_size applies.
    theirs.unlink()
    reset_default_target(theirs)
    assert not theirs.exists()
    con = sqlite3.connect(theirs)
    con.execute("CREATE TABLE leftover (x)")
    con.commit()
    con.close()
    proc = wannabet(*run, *QUICK)
    assert proc.returncode == 0, proc.stderr
    con = sqlite3.connect(theirs)
    assert ("leftover",) not in con.execute("SELECT name FROM sqlite_master").fetchall()
    con.close()


def test_summary_json_follows_the_contract(
    sqlite_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    results, _ = sqlite_run
    proc = wannabet("summary", "--results", str(results), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # The example has two transaction types, so per-type rows come too (like pgbench -r).
    assert set(doc) == {"run", "conditions", "types"}
    run = doc["run"]
    assert run["status"] == "complete" and run["name"] == "sqlite-synchronous"
    assert run["settings"]["seed"] == 42 and len(run["settings"]["schedule"]) == 6
    assert run["environment"]["server"] == "SQLite"
    assert [c["condition"] for c in doc["conditions"]] == [
        "synchronous=FULL",
        "synchronous=NORMAL",
        "synchronous=OFF",
    ]
    for c in doc["conditions"]:
        assert {"condition", "transactions", "errors", "tps", "latency_ms"} <= set(c)
        assert c["transactions"] > 0 and c["errors"] == 0 and c["tps"] > 0
        lat = c["latency_ms"]
        assert set(lat) == {"mean", "p50", "p95", "p99", "max"}
        assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    # Cross-check against the stored transactions.
    with Store(results).read() as con:
        n = con.execute("SELECT count(*) FROM transactions WHERE NOT warmup").fetchone()[0]
    assert sum(c["transactions"] for c in doc["conditions"]) == n
    types = doc["types"]
    assert sorted((t["condition"], t["txn"]) for t in types) == sorted(
        (c["condition"], name) for c in doc["conditions"] for name in ("read", "update")
    )
    for c in doc["conditions"]:
        mine = [t for t in types if t["condition"] == c["condition"]]
        assert sum(t["transactions"] for t in mine) == c["transactions"]


@pytest.mark.parametrize("fmt", ["markdown", "csv", "table"])
def test_summary_other_formats(
    sqlite_run: tuple[Path, subprocess.CompletedProcess[str]], fmt: str
) -> None:
    results, _ = sqlite_run
    proc = wannabet("summary", "--results", str(results), "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    assert "synchronous=OFF" in proc.stdout
    if fmt == "csv":
        header = proc.stdout.splitlines()[0]
        assert header.startswith("condition,samples,transactions,errors,tps")
        # A header, the 3 conditions (txn "all") and their 2 types each (read, update).
        assert header.endswith(",txn")
        assert len(proc.stdout.strip().splitlines()) == 1 + 3 + 6


def test_runs_and_export(
    sqlite_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    results, _ = sqlite_run
    proc = wannabet("runs", "--results", str(results), "--format", "json")
    assert proc.returncode == 0
    (run,) = json.loads(proc.stdout)
    assert run["status"] == "complete"
    proc = wannabet(
        "export", "--results", str(results), "-o", str(tmp_path / "out"), "--format", "csv"
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "transactions.csv").exists()


def test_invalid_experiment_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    text = (
        (EXAMPLES / "sqlite-synchronous.toml").read_text().replace("sessions = 2", "sessions = 0")
    )
    bad.write_text(text)
    proc = wannabet("run", str(bad), "--results", str(tmp_path / "r.duckdb"))
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "bad.toml:" in line and "workload.sessions" in line and "at least 1" in line
    assert not (tmp_path / "r.duckdb").exists()


def test_unreachable_target(tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    secret = "Sup3r-secret-pw"
    proc = wannabet(
        "run",
        str(EXAMPLES / "postgres-commit.toml"),
        "--results",
        str(results),
        "--target",
        f"postgresql://bench:{secret}@127.0.0.1:1/postgres",
        *QUICK,
    )
    assert proc.returncode == 3
    line = one_line_error(proc)
    assert "cannot connect to postgresql://bench:***@127.0.0.1:1/postgres" in line
    assert secret not in proc.stdout + proc.stderr
    assert not results.exists() or all(r.status != "complete" for r in Store(results).runs())


def test_wrong_password_is_redacted(postgres: ThrowawayPostgres, tmp_path: Path) -> None:
    wrong = "Wr0ng-" + postgres.password
    url = postgres.url.replace(postgres.password, wrong)
    proc = wannabet(
        "run",
        str(EXAMPLES / "postgres-commit.toml"),
        "--results",
        str(tmp_path / "r.duckdb"),
        "--target",
        url,
        *QUICK,
    )
    assert proc.returncode == 3
    line = one_line_error(proc)
    assert "password authentication failed" in line or "authentication" in line
    assert wrong not in proc.stdout + proc.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    proc = wannabet("--debug", "summary", "--results", str(tmp_path / "none.duckdb"))
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_postgres_example_runs_against_the_test_server(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    results = tmp_path / "pg.duckdb"
    proc = wannabet(
        "run",
        str(EXAMPLES / "postgres-commit.toml"),
        "--results",
        str(results),
        "--target",
        postgres.url,
        "--samples",
        "2",
        "--duration",
        "1s",
        "--warmup",
        "0.2s",
    )
    assert proc.returncode == 0, proc.stderr
    assert "synchronous_commit=on" in proc.stdout and "synchronous_commit=off" in proc.stdout
    doc = json.loads(wannabet("summary", "--results", str(results), "--format", "json").stdout)
    assert doc["run"]["environment"]["server"] == "PostgreSQL"
    assert doc["run"]["environment"]["server_version"].startswith(("15", "16", "17", "18"))
    assert "***" in doc["run"]["target"]
    for c in doc["conditions"]:
        assert c["transactions"] > 0 and c["errors"] == 0
    # Every committed TPC-B transaction inserted one history row.
    with Store(results).read() as con:
        committed = con.execute("SELECT count(*) FROM transactions WHERE status = 'ok'").fetchone()[
            0
        ]
    assert int(postgres.psql("SELECT count(*) FROM pgbench_history")) == committed
    # The password is nowhere: not in output, not in the results file.
    assert postgres.password not in proc.stdout + proc.stderr
    assert postgres.password.encode() not in results.read_bytes()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_keeps_finished_samples(tmp_path: Path, stop: signal.Signals) -> None:
    """Ctrl-C, and SIGTERM as kill, timeout and service managers send it, end the run between
    samples: it is marked interrupted and every finished sample stays readable."""
    results = tmp_path / "r.duckdb"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            # As from a terminal: a suite started in the background (`cmd &` in a script) runs
            # with SIGINT ignored, which children inherit and wannabet rightly leaves ignored.
            "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler);"
            " sys.argv[0] = 'wannabet'; runpy.run_module('wannabet', run_name='__main__')",
            "run",
            str(EXAMPLES / "sqlite-synchronous.toml"),
            "--results",
            str(results),
            "--samples",
            "60",
            "--duration",
            "0.3s",
            "--warmup",
            "0s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # If it ever hangs, SIGABRT below makes faulthandler print where every thread is.
        env=plain_env() | {"PYTHONFAULTHANDLER": "1"},
    )
    with proc:
        store = Store(results)
        deadline = time.monotonic() + 120
        seen: list[str] = []
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            if results.exists():
                try:
                    if store.run().samples >= 2:
                        break
                except StoreError as exc:  # the writer may hold the file for a moment
                    seen.append(str(exc))
        assert proc.poll() is None, f"the run ended before it was interrupted; reads: {seen[-3:]}"
        proc.send_signal(stop)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=30)
            # Whether the run went on sampling (its last progress lines) or hung (the dump's
            # innermost frames come first; the extension module list after them is left out).
            before, _, dump = err.partition("Fatal Python error")
            progress = "\n".join(before.strip().splitlines()[-5:])
            dump = dump.split("Extension modules:")[0]
            pytest.fail(
                f"no exit within 60 s of {stop.name}; last progress:\n{progress}\n"
                f"where it was: Fatal Python error{dump[:6000]}"
            )
    assert proc.returncode == 128 + stop, err
    assert "Traceback" not in err
    assert "interrupted" in err
    info = store.run()
    assert info.status == "interrupted"
    assert 2 <= info.samples < 180
    samples = store.samples(info.run_id)
    assert sum(s["transactions"] for s in samples) == info.transactions > 0
    assert os.path.exists(results)


@pytest.mark.parametrize("args", [(), ("--level", "transaction"), ("--metric", "throughput")])
def test_compare_a_real_run(
    sqlite_run: tuple[Path, subprocess.CompletedProcess[str]], args: tuple[str, ...]
) -> None:
    results, _ = sqlite_run
    proc = wannabet("compare", "--results", str(results), "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["run"]["name"] == "sqlite-synchronous"
    assert doc["conditions"][0]["condition"] == "synchronous=FULL"
    assert {c["condition"] for c in doc["comparisons"]} == {
        "synchronous=NORMAL",
        "synchronous=OFF",
    }
    for c in doc["comparisons"]:
        assert c["baseline"] == "synchronous=FULL"
        assert c["verdict"] in ("faster", "slower", "no-difference", "inconclusive")
    assert doc["unit"] == ("tps" if "throughput" in args else "ms")


def test_password_in_the_experiment_file_is_not_stored(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    spec = tmp_path / "pw.toml"
    text = (EXAMPLES / "postgres-commit.toml").read_text()
    spec.write_text(text.replace("postgresql://postgres@localhost:5432/postgres", postgres.url))
    results = tmp_path / "pw.duckdb"
    proc = wannabet(
        "run",
        str(spec),
        "--results",
        str(results),
        "--samples",
        "1",
        "--duration",
        "0.3s",
        "--warmup",
        "0s",
    )
    assert proc.returncode == 0, proc.stderr
    assert postgres.password not in proc.stdout + proc.stderr
    with Store(results).read() as con:
        stored_spec = con.execute("SELECT spec_text FROM runs").fetchone()[0]
    assert "postgresql://wannabet:***@127.0.0.1" in stored_spec
    export = tmp_path / "export"
    assert (
        wannabet(
            "export", "--results", str(results), "--format", "csv", "-o", str(export)
        ).returncode
        == 0
    )
    for path in [results, *export.iterdir()]:
        assert postgres.password.encode() not in path.read_bytes(), path


def test_file_and_option_problems_are_one_line(
    sqlite_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    results, _ = sqlite_run
    example = str(EXAMPLES / "sqlite-synchronous.toml")
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    cases = [
        (("run", example, "--results", str(tmp_path / "no/such/dir/r.duckdb"), *QUICK),
         4, "does not exist"),
        (("run", example, "--results", str(a_file / "r.duckdb"), *QUICK), 4, "not a directory"),
        (("run", example, "-t", "postgresql://u:SECRETPW@[::1/db", *QUICK),
         2, "command line: --target:"),
        # An output path is the command line's mistake (2), as report -o's; not the results'.
        (("export", "--results", str(results), "--output", str(a_file)), 2, "not a directory"),
        (("export", "--results", str(results), "--run", "1", "--all"), 2, "not both"),
        (("summary", "--results", str(results), "--run", "99"), 2, "--run 99: no such run"),
    ]  # fmt: skip
    for args, code, fragment in cases:
        proc = wannabet(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == code and len(lines) == 1, (args, proc.stderr)
        assert fragment in lines[0] and "SECRETPW" not in lines[0], (args, lines[0])
    assert not (tmp_path / "no").exists()


def test_usage_mistakes_are_one_line() -> None:
    for args, fragment in [
        (("summary", "--run", "abc"), "Invalid value for '--run'"),
        (("compare", "--nope"), "No such option: --nope"),
    ]:
        proc = wannabet(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert lines[0].startswith("error: ") and fragment in lines[0] and "--help" in lines[0]
    # A group alone still shows its help.
    proc = wannabet("import")
    assert proc.returncode == 2 and "csv" in proc.stdout + proc.stderr


def test_a_hangup_ignored_by_nohup_stays_ignored(tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    example = str(EXAMPLES / "sqlite-synchronous.toml")
    nohup = shutil.which("nohup")
    assert nohup, "coreutils' nohup is needed"
    # nohup, not preexec_fn: that forks this process, which JAX (imported by other tests) warns of.
    proc = subprocess.Popen(
        [nohup, sys.executable, "-m", "wannabet", "run", example, "--results", str(results),
         *QUICK],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=plain_env(),
    )  # fmt: skip
    with proc:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:  # until the sample loop
            time.sleep(0.1)
            try:
                if results.exists() and Store(results).run().samples >= 1:
                    break
            except StoreError:  # the writer may hold the file for a moment
                pass
        assert proc.poll() is None, "the run ended before the hangup"
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert Store(results).run().status == "complete"


def test_sql_the_database_refuses_is_named_by_its_line(tmp_path: Path) -> None:
    text = (EXAMPLES / "sqlite-synchronous.toml").read_text()
    broken = text.replace("UPDATE accounts SET", "UPDATE accounts SETT", 1)
    assert broken != text
    line = next(i for i, row in enumerate(broken.splitlines(), 1) if "SETT" in row)
    spec = tmp_path / "broken.toml"
    spec.write_text(broken)
    proc = wannabet("run", str(spec), "--results", str(tmp_path / "r.duckdb"), *QUICK)
    assert proc.returncode == 3, proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith(f"error: {spec}:{line}: the database refused statement 1"), error
    assert "SETT" in error and "fix the SQL" in error


# -- compare --txn/--stat and summary's per-type rows (issue #13), in process -------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    from test_verdicts import mixed_run

    return mixed_run(tmp_path).path


def _cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from wannabet.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_compare_txn_stat_json_and_csv(mixed: Path) -> None:
    code, out, _ = _cli(
        "compare", "-r", str(mixed), "--txn", "update", "--stat", "p99", "-f", "json"
    )
    assert code == 0
    doc = json.loads(out)
    assert (doc["txn"], doc["stat"]) == ("update", "p99")
    assert doc["comparisons"][0]["verdict"] == "slower"
    assert doc["conditions"][1]["stat_value"] > doc["conditions"][0]["stat_value"]
    code, out, _ = _cli(
        "compare",
        "-r",
        str(mixed),
        "--txn",
        "update",
        "--txn",
        "lookup",
        "--stat",
        "p99",
        "--level",
        "transaction",
        "-f",
        "csv",
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith(",txn,stat,stat_value")
    assert [line.split(",")[-3] for line in lines[1:]] == ["update"] * 2 + ["lookup"] * 2
    code, out, _ = _cli(
        "compare", "-r", str(mixed), "--txn", "update", "--txn", "lookup", "-f", "json"
    )
    assert [d["txn"] for d in json.loads(out)] == ["update", "lookup"]


def test_compare_txn_stat_table_and_markdown_name_them(mixed: Path) -> None:
    code, out, _ = _cli("compare", "-r", str(mixed), "--txn", "update", "--stat", "p99.9")
    flat = " ".join(out.split())  # the title wraps at the terminal's width
    assert code == 0 and "p99.9 of type update" in flat and "Δ p99.9" in flat
    code, out, _ = _cli("compare", "-r", str(mixed), "--stat", "median", "-f", "markdown")
    assert code == 0 and "median of all transaction types" in out and "| Δ median" in out


def test_compare_unknown_txn_is_one_line(mixed: Path) -> None:
    code, _, err = _cli("compare", "-r", str(mixed), "--txn", "insert")
    assert code != 0
    assert "no transaction type 'insert'; its types: lookup, update" in err
    assert len(err.strip().splitlines()) == 1


def test_summary_shows_per_type_rows(mixed: Path) -> None:
    code, out, _ = _cli("summary", "-r", str(mixed), "-f", "json")
    assert code == 0
    doc = json.loads(out)
    rows = {(t["condition"], t["txn"]): t for t in doc["types"]}
    assert sorted(rows) == [(c, t) for c in ("after", "before") for t in ("lookup", "update")]
    for c in doc["conditions"]:
        mine = [t for t in doc["types"] if t["condition"] == c["condition"]]
        assert sum(t["transactions"] for t in mine) == c["transactions"]
        assert sum(t["tps"] for t in mine) == pytest.approx(c["tps"])
    after, before = rows["after", "update"], rows["before", "update"]
    assert after["latency_ms"]["p99"] > 1.4 * before["latency_ms"]["p99"]
    assert rows["after", "lookup"]["latency_ms"]["p50"] < after["latency_ms"]["p50"] / 3
    code, out, _ = _cli("summary", "-r", str(mixed))
    assert code == 0 and "Per transaction type" in out
    code, out, _ = _cli("summary", "-r", str(mixed), "-f", "csv")
    lines = out.splitlines()
    assert lines[0].endswith(",txn") and len(lines) == 1 + 2 + 4
    code, out, _ = _cli("summary", "-r", str(mixed), "-f", "markdown")
    assert code == 0 and "**Per transaction type**" in out


def test_a_target_that_is_the_results_file_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DuckDB (or SQLite, or DB-API) target that is the run's own results file would have the
    run write into the database it measures: refused in one line naming both, exit code 2,
    whether the two are written relative or absolute, through a symlink or a hard link."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path)
    spec = tmp_path / "e.toml"
    spec.write_text(
        "name = 'e'\n[sampling]\nsamples = 1\nduration = '0.2s'\nwarmup = '0s'\n"
        "[[workload.transactions]]\nscript = 'SELECT 1'\n"
    )
    results = tmp_path / "r.duckdb"
    for given, url in [
        ("r.duckdb", f"duckdb:///{results}"),  # relative results, absolute target
        (str(results), "duckdb:///r.duckdb"),  # and the other way round
        (str(tmp_path / "link" / "r.duckdb"), "duckdb:///r.duckdb?threads=1"),  # a symlink
        ("r.duckdb", "dbapi://duckdb?database=r.duckdb"),
        ("r.duckdb", f"sqlite:///{results}"),
    ]:
        line = one_line_error(cli.wannabet("run", str(spec), "-r", given, "-t", url), 2)
        shown = url.split("?")[0].replace(":///r.duckdb", f":///{results}")
        assert line == (
            f"error: command line: --target: {shown if 'dbapi' not in url else url} is the"
            f" results file {given} itself; the run would store its results in the database"
            " it measures: name another results file (--results) or another target"
        )
        assert not results.exists()  # nothing made: not the store, not the target

    # An existing results file, and a hard link to it as the target (another path, one inode).
    assert cli.wannabet("run", str(spec), "-r", "r.duckdb", "-t", "sqlite:///t.db").returncode == 0
    before = results.read_bytes()
    os.link(results, tmp_path / "h.duckdb")
    line = one_line_error(
        cli.wannabet("run", str(spec), "-r", "r.duckdb", "-t", "duckdb:///h.duckdb"), 2
    )
    assert f"duckdb:///{tmp_path / 'h.duckdb'} is the results file r.duckdb itself" in line
    assert results.read_bytes() == before
    assert [r.status for r in Store(results, read_only=True).runs()] == ["complete"]

    # A factor's level naming the results file: refused by its key, before the other runs.
    spec.write_text(
        spec.read_text()
        + "[[factors]]\nname = 'where'\n[factors.levels.a]\n"
        + "target = 'sqlite:///t.db'\n[factors.levels.b]\ntarget = 'sqlite:///r.duckdb'\n"
    )
    line = one_line_error(cli.wannabet("run", str(spec), "-r", "r.duckdb"), 2)
    assert line.startswith(f"error: {spec}: target of condition where=b: sqlite:///{results} is")
    assert results.read_bytes() == before


def test_the_docs_name_the_commands_without_results() -> None:
    """docs/cli.md says which commands take --results; the rest (check) have no such option."""
    import re

    import typer.main

    from wannabet.cli import app

    def leaves(group: Any, prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                out |= leaves(command, f"{prefix}{name} ")
            else:
                out[prefix + name] = command
        return out

    commands = leaves(typer.main.get_command(app))
    without = {
        name
        for name, command in commands.items()
        if "--results" not in {opt for param in command.params for opt in param.opts}
    }
    docs = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text("utf-8")
    said = re.search(r"Every command but (.*?) \(.*?\) takes `--results FILE`", docs, re.S)
    assert said is not None, "docs/cli.md no longer says which commands take --results"
    assert set(re.findall(r"`([a-z ]+)`", said.group(1))) == without == {"check"}
