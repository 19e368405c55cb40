"""``wannabet plan`` (issue #16): variance components recovered from simulated pilots, the power
function against simulation, the promise of a plan checked by running the product's verdict on
sample-structured, autocorrelated data, and the command on a real SQLite pilot."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from wannabet.analysis import AnalysisError, Observations, compare
from wannabet.analysis.planning import plan_samples, power, variance_components
from wannabet.backends import parse_target
from wannabet.engine import NativeEngine
from wannabet.errors import SpecError, TargetError
from wannabet.plans import load_pilot, write_plan
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store

# A sample-structured, autocorrelated process: transactions at RATE per second whose log
# latencies follow an AR(1) process, a per-sample offset, and a per-block drift.
RATE, PHI, SD_Z, SD_SAMPLE, SD_BLOCK = 100.0, 0.8, 0.4, 0.04, 0.03


def _sample(rng: np.random.Generator, d: float, shift: float) -> np.ndarray:
    m = max(int(RATE * d), 4)
    z = rng.normal(0.0, SD_Z, m)
    x = np.empty(m)
    x[0] = z[0] / math.sqrt(1 - PHI * PHI)
    for j in range(1, m):
        x[j] = PHI * x[j - 1] + z[j]
    return np.exp(x + shift + rng.normal(0.0, SD_SAMPLE))


def _run(rng: np.random.Generator, n: int, d: float, change: float) -> list[list[np.ndarray]]:
    """``n`` blocks of two conditions, the second ``change`` slower."""
    out: list[list[np.ndarray]] = [[], []]
    for _ in range(n):
        drift = rng.normal(0.0, SD_BLOCK)
        for c in (0, 1):
            out[c].append(_sample(rng, d, drift + (math.log1p(change) if c else 0.0)))
    return out


def _components(run: list[list[np.ndarray]], d: float):  # type: ignore[no-untyped-def]
    cond, block, value, dur, half = [], [], [], [], []
    for c, samples in enumerate(run):
        for b, lat in enumerate(samples):
            h = len(lat) // 2
            cond.append(c)
            block.append(b)
            value.append(lat.mean())
            dur.append(d)
            half.append(math.log(lat[:h].mean()) - math.log(lat[h:].mean()))
    return variance_components(cond, block, value, dur, half_log_ratio=half)


def test_the_components_of_a_large_pilot_predict_the_variance_at_other_lengths() -> None:
    rng = np.random.default_rng(1)
    d = 2.0
    c = _components(_run(rng, 1000, d, 0.0), d)
    # The block drift: three standard errors of its moment estimate (about 0.0005 with 1,000
    # blocks, where the within-sample part dominates the mean squares).
    assert c.between_blocks == pytest.approx(SD_BLOCK**2, abs=0.0015)
    assert sum(c.shares().values()) == pytest.approx(1.0)
    # What a plan relies on: the variance of a sample's log mean (offsets and drift included,
    # as an unpaired test sees it) at half, the same, twice and four times the pilot's length,
    # against that variance measured on 2,000 fresh samples of each length. The halves
    # underestimate the within part of strongly autocorrelated data by a few % (the halves
    # correlate across their boundary), so the prediction is good to about 15%.
    for length in (1.0, 2.0, 4.0, 8.0):
        logs = [
            math.log(_sample(rng, length, rng.normal(0.0, SD_BLOCK)).mean()) for _ in range(2000)
        ]
        truth = float(np.var(logs, ddof=1))
        assert c.variance(length) == pytest.approx(truth, rel=0.15), length


def test_power_matches_a_simulated_welch_verdict() -> None:
    rng = np.random.default_rng(2)
    n, v, change, rope = 12, 0.004, 8.0, 2.0
    promised = power(n, v, change_pct=change, rope_pct=rope, alpha=0.05)
    hits, runs = 0, 4000
    for _ in range(runs):
        a = rng.normal(0.0, math.sqrt(v), n)
        b = rng.normal(math.log1p(change / 100), math.sqrt(v), n)
        se = math.sqrt(a.var(ddof=1) / n + b.var(ddof=1) / n)
        low = (b.mean() - a.mean()) - stats.t.ppf(0.975, 2 * n - 2) * se
        hits += low > math.log1p(rope / 100)
    assert promised == pytest.approx(hits / runs, abs=0.03)
    # Inside the ROPE no verdict is possible, and more comparisons cost power.
    assert power(n, v, change_pct=1.0, rope_pct=2.0, alpha=0.05) == 0.0
    assert power(n, v, change_pct=change, rope_pct=rope, alpha=0.05, comparisons=3) < promised


def test_a_plan_keeps_its_promise_on_sample_structured_autocorrelated_data() -> None:
    """Each pilot (15 samples per condition) gives a plan for 80% power at a change of 8%;
    the product's verdict (``compare``, sample level) then runs on 150 simulated experiments
    of that plan. Over the pilots the power reached lies within 10 points of the power
    promised; one pilot's own promise is as good as its variance estimate (the plan prints that
    range), so each stays within 25 points."""
    reached, promised = [], []
    for seed in (1, 2, 3, 4):
        rng = np.random.default_rng(seed)
        pilot = _components(_run(rng, 15, 2.0, 0.0), 2.0)
        plan = plan_samples(
            pilot, change_pct=8, rope_pct=2, target_power=0.8, overhead_s=0.5, min_samples=5
        )
        assert plan.best is not None and plan.best.samples is not None
        assert plan.power_range is not None
        assert plan.power_range[0] < plan.best.power < plan.power_range[1]
        n, d = plan.best.samples, plan.best.duration_s
        hits, runs = 0, 150
        for _ in range(runs):
            sim = _run(rng, n, d, 0.08)
            groups = [
                Observations(f"c{c}", np.array([s.mean() for s in sim[c]]), np.arange(n))
                for c in (0, 1)
            ]
            result = compare(groups, rope_pct=2.0, alpha=0.05, n_boot=400, seed=seed)
            hits += result.comparisons[0].verdict == "slower"
        reached.append(hits / runs)
        promised.append(plan.best.power)
        assert abs(hits / runs - plan.best.power) <= 0.25
    print("reached", reached, "promised", [round(p, 3) for p in promised])
    assert abs(float(np.mean(reached)) - float(np.mean(promised))) <= 0.10


def test_the_plan_chooses_the_cheapest_duration_and_says_when_none_will_do() -> None:
    rng = np.random.default_rng(5)
    pilot = _components(_run(rng, 20, 2.0, 0.0), 2.0)
    plan = plan_samples(pilot, change_pct=10, overhead_s=1.0)
    assert plan.best is not None and plan.best.run_s is not None
    reachable = [c for c in plan.candidates if c.run_s is not None]
    assert plan.best.run_s == min(c.run_s for c in reachable if c.run_s is not None)
    assert all(c.samples is None or c.samples >= 10 for c in plan.candidates)
    assert {c.duration_s for c in plan.candidates} <= {0.5, 1.0, 2.0, 5.0}
    with pytest.raises(AnalysisError, match="inside the ROPE"):
        plan_samples(pilot, change_pct=1.5, rope_pct=2.0)
    hopeless = plan_samples(pilot, change_pct=2.1, rope_pct=2.0)
    assert hopeless.best is None and hopeless.to_dict()["samples"] is None


def test_a_pilot_too_small_is_refused() -> None:
    with pytest.raises(AnalysisError, match="at least 2 samples"):
        variance_components([0, 1], [0, 0], [1.0, 1.1], [1.0, 1.0], half_log_ratio=[0.0, 0.1])


# -- the command on a real pilot ---------------------------------------------------------------

PILOT = textwrap.dedent(
    """\
    # a pilot: keep this comment
    name = "pilot"
    [workload]
    sessions = 1
    [[workload.transactions]]
    name = "read"
    script = "SELECT length('{copy}');"
    [[factors]]
    name = "copy"
    levels = ["a", "b"]
    [sampling]
    samples = 4  # the pilot's
    duration = "0.2s"
    warmup = "0s"
    seed = 9
    """
)


def _pilot(tmp_path: Path, text: str = PILOT) -> tuple[Store, int]:
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=NativeEngine(),
    )
    return store, outcome.run_id


def _cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from wannabet.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_plan_on_a_real_pilot_prints_writes_and_checks(tmp_path: Path) -> None:
    store, run_id = _pilot(tmp_path)
    results = str(tmp_path / "r.duckdb")
    for stat in ("mean", "p99", "tps"):
        pilot = load_pilot(store, store.run(run_id), stat)
        assert pilot.components.samples == 8 and pilot.conditions == ("copy=a", "copy=b")
        assert 0.19 <= pilot.components.pilot_duration_s <= 0.25
    code, out, err = _cli("plan", "-r", results, "--change", "30%", "-f", "json")
    assert code == 0, err
    doc = json.loads(out)
    plan = doc["plan"]
    assert doc["stat"] == "mean" and plan["change_pct"] == 30.0
    assert set(doc["variance"]["shares"]) == {"between_blocks", "between_samples", "within_samples"}
    if plan["samples"] is not None:
        assert doc["options"] == f"--samples {plan['samples']} --duration " + (
            f"{round(plan['duration_s'] * 1000)}ms"
            if plan["duration_s"] < 1
            else f"{plan['duration_s']:g}s"
        )
        # the run time is what the sentence says it is: conditions x samples x (d + overhead)
        assert plan["run_s"] == pytest.approx(
            2 * plan["samples"] * (plan["duration_s"] + plan["overhead_s"])
        )
    code, out, err = _cli("plan", "-r", results, "--change", "30%", "--txn", "read")
    assert code == 0 and "To resolve a change of 30% in the mean latency of read" in out
    code, out, err = _cli("plan", "-r", results, "--change", "1%")
    assert code == 5 and "inside the ROPE" in err and "Traceback" not in err
    # The plan has no Markdown or CSV form: refused in one line (exit code 2), not printed as
    # the table, and before --write changes the file.
    file = tmp_path / "e.toml"
    file.write_text(PILOT, encoding="utf-8")
    for fmt in ("markdown", "csv"):
        code, out, err = _cli(
            "plan", "-r", results, "--change", "30%", "-f", fmt, "--write", str(file)
        )
        assert code == 2 and out == "", (code, out, err)
        assert err.strip() == (
            f"error: command line: --format: plan prints a table or JSON, not {fmt};"
            " use --format table or json"
        ), err
    assert file.read_text(encoding="utf-8") == PILOT


def test_write_puts_the_plan_into_the_sampling_table_and_keeps_the_rest(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    plan = plan_samples(_components(_run(rng, 20, 2.0, 0.0), 2.0), change_pct=10)
    assert plan.best is not None
    file = tmp_path / "e.toml"
    file.write_text(PILOT, encoding="utf-8")
    write_plan(file, plan)
    text = file.read_text(encoding="utf-8")
    assert "# a pilot: keep this comment" in text and 'warmup = "0s"' in text
    # A comment after a value stays after the new value.
    assert f"samples = {plan.best.samples}  # the pilot's" in text
    file.write_text(PILOT.replace('duration = "0.2s"', "duration = '0.2s'\t# was # short"), "utf-8")
    write_plan(file, plan)
    assert "\t# was # short" in file.read_text(encoding="utf-8")
    text = file.read_text(encoding="utf-8")
    sampling = parse_experiment(text, file="e.toml").sampling
    assert sampling.samples == plan.best.samples
    assert sampling.duration_s == pytest.approx(plan.best.duration_s)
    # A file without [sampling] gets one.
    bare = PILOT.split("[sampling]")[0]
    file.write_text(bare, encoding="utf-8")
    write_plan(file, plan)
    assert parse_experiment(file.read_text(encoding="utf-8"), file="e").sampling.samples == (
        plan.best.samples
    )
    # A file that stops when decided is not turned into a fixed one behind its back.
    decided = PILOT.replace("samples = 4  # the pilot's", "until_decided = true")
    file.write_text(decided, encoding="utf-8")
    with pytest.raises(SpecError, match="until_decided") as info:
        write_plan(file, plan)
    assert info.value.line is not None
    assert file.read_text(encoding="utf-8") == decided


def test_a_pilot_without_rows_is_refused_with_the_fix(tmp_path: Path) -> None:
    text = PILOT.replace("seed = 9", 'seed = 9\nrecord = "none"')
    store, run_id = _pilot(tmp_path, text)
    with pytest.raises(AnalysisError, match='record = "auto"'):
        load_pilot(store, store.run(run_id), "mean")
    with pytest.raises(SpecError, match="every transaction type"):
        load_pilot(store, store.run(run_id), "tps", "read")


def test_a_pilot_says_how_many_degraded_samples_it_left_out(tmp_path: Path) -> None:
    import duckdb

    _, run_id = _pilot(tmp_path)
    path = tmp_path / "r.duckdb"
    with duckdb.connect(str(path)) as con:  # as a stuck server would have left them
        con.execute(
            "UPDATE samples SET status = 'degraded', reason = 'stuck' WHERE sample_id IN (0, 3)"
        )
    pilot = load_pilot(Store(path), Store(path).run(run_id), "mean")
    assert pilot.degraded == 2 and pilot.components.samples == 6
    taken_in = Store(path, include_degraded=True)
    pilot = load_pilot(taken_in, taken_in.run(run_id), "mean")
    assert pilot.degraded == 0 and pilot.components.samples == 8
    code, out, err = _cli("plan", "-r", str(path), "--change", "30%", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["degraded"] == 2
    code, out, err = _cli("plan", "-r", str(path), "--change", "30%")
    assert "2 degraded sample(s) of the pilot are left out" in " ".join(out.split())
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE samples SET status = 'degraded', reason = 'stuck'")
    with pytest.raises(AnalysisError, match="its 8 degraded sample"):
        load_pilot(Store(path), Store(path).run(run_id), "mean")


def test_the_command_and_the_library_plan_with_the_same_defaults() -> None:
    """One owner of plan's defaults: the command line shows and passes the library's."""
    import inspect

    import typer

    from wannabet.api import Results
    from wannabet.cli import app
    from wannabet.model import (
        DEFAULT_ALPHA,
        DEFAULT_ROPE_PCT,
        PLAN_CHANGE_PCT,
        PLAN_MIN_SAMPLES,
        PLAN_POWER,
    )

    command = typer.main.get_command(app).commands["plan"]  # type: ignore[attr-defined]
    cli = {p.name: p.default for p in command.params}
    library = {
        name: p.default
        for name, p in inspect.signature(Results.plan).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    expected = {
        "change": f"{PLAN_CHANGE_PCT:g}%",
        "rope": f"{DEFAULT_ROPE_PCT:g}%",
        "alpha": DEFAULT_ALPHA,
        "power": PLAN_POWER,
        "min_samples": PLAN_MIN_SAMPLES,
    }
    for name, value in expected.items():
        assert cli[name] == library[name] == value, name
    assert (DEFAULT_ALPHA, DEFAULT_ROPE_PCT, PLAN_CHANGE_PCT, PLAN_POWER) == (0.05, 2.0, 5.0, 0.8)


def test_a_pilot_whose_transactions_all_failed_is_refused_for_that_reason(tmp_path: Path) -> None:
    text = (
        textwrap.dedent(
            """\
        name = "all-fail"
        [setup]
        sql = "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)"
        [[workload.transactions]]
        name = "q"
        script = "INSERT INTO t VALUES (1)"
        [[factors]]
        name = "f"
        levels = ["2000", "4000"]
        session_sql = "PRAGMA cache_size = {level}"
        [sampling]
        samples = 2
        duration = "0.2s"
        warmup = "0s"
        """
        )
        .replace("-a", "-2000")
        .replace("-b", "-4000")
    )
    store = Store(tmp_path / "r.duckdb")
    # The run stops after its first samples: nothing succeeded (its samples are kept).
    with pytest.raises(TargetError, match="no transaction succeeded"):
        run_experiment(
            parse_experiment(text, file="all-fail.toml"),
            target=parse_target(f"sqlite:///{tmp_path / 'db.sqlite'}"),
            store=store,
            engine=NativeEngine(),
        )
    (run,) = store.runs()
    assert run.transactions > 0
    with pytest.raises(AnalysisError, match="has no successful transaction to plan from"):
        load_pilot(store, run, "mean")
