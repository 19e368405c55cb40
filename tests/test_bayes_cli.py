"""`compare --bayes` end to end: the factorial SQLite example run for real, its JSON contract,
the sufficient statistics DuckDB computes, and the error without the optional extra."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wannabet import datasets
from wannabet.analysis import SampleStats
from wannabet.datasets import load_observations
from wannabet.errors import AnalysisError, SpecError
from wannabet.spec import parse_experiment
from wannabet.store import ConditionRow, SampleRow, Store
from wannabet.sufficient import load_sample_stats
from wannabet.testing.cli import plain_env, wannabet
from wannabet.testing.stored import committed_columns

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


QUICK = ["--samples", "4", "--duration", "0.4s", "--warmup", "0.1s"]
KEYS = {"model", "hdi_pct", "mean_pct", "p_faster", "rope_decision", "rhat_max", "ess_min"}


@pytest.fixture(scope="module")
def factorial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("bayes") / "results.duckdb"
    proc = wannabet(
        "run", str(EXAMPLES / "factorial-sqlite.toml"), "--results", str(results), *QUICK
    )
    assert proc.returncode == 0, proc.stderr
    return results


def test_json_contract_and_factorial_effects(factorial: Path) -> None:
    proc = wannabet("compare", "--results", str(factorial), "--bayes", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["comparisons"]) == 3
    for c in doc["comparisons"]:
        b = c["bayes"]
        assert set(b) >= KEYS
        assert b["model"] == "hierarchical"
        assert b["hdi_pct"][0] <= b["mean_pct"] <= b["hdi_pct"][1]
        assert 0.0 <= b["p_faster"] <= 1.0
        assert b["rope_decision"] in ("credible-difference", "practically-equivalent", "undecided")
    terms = [e["term"] for e in doc["bayes"]["effects"]]
    assert terms == [
        "journal_mode: WAL vs DELETE",
        "synchronous: OFF vs FULL",
        "journal_mode × synchronous: (WAL vs DELETE) × (OFF vs FULL)",
    ]

    # The main effects from the stored transactions, computed here independently: the mean of
    # the log sample means per cell, averaged over the other factor. Each HDI must hold it.
    with Store(factorial).read() as con:
        rows = con.execute(
            """
            SELECT c.levels, ln(avg(latency_ms)) AS l
            FROM transaction_latency t JOIN conditions c USING (run_id, condition_id)
            WHERE status = 'ok' AND NOT warmup GROUP BY c.levels, t.sample_id
            """
        ).fetchall()
    cells: dict[tuple[str, str], list[float]] = {}
    for levels, log_mean in rows:
        lv = json.loads(levels)
        cells.setdefault((lv["journal_mode"], lv["synchronous"]), []).append(log_mean)
    m = {k: float(np.mean(v)) for k, v in cells.items()}
    wal = (m["WAL", "FULL"] + m["WAL", "OFF"] - m["DELETE", "FULL"] - m["DELETE", "OFF"]) / 2
    off = (m["DELETE", "OFF"] + m["WAL", "OFF"] - m["DELETE", "FULL"] - m["WAL", "FULL"]) / 2
    inter = m["WAL", "OFF"] - m["DELETE", "OFF"] - m["WAL", "FULL"] + m["DELETE", "FULL"]
    effects = doc["bayes"]["effects"]
    for e, point in zip(effects, (wal, off, inter), strict=True):
        lo, hi = e["hdi_pct"]
        assert lo <= 100 * math.expm1(point) <= hi, (e, point)


def test_table_shows_the_bayesian_section(factorial: Path) -> None:
    proc = wannabet("compare", "--results", str(factorial), "--bayes", "--rope", "5%")
    assert proc.returncode == 0, proc.stderr
    assert "Bayesian estimation · hierarchical model · 95% HDI · ROPE ±5%" in proc.stdout
    assert "Factorial effects on the mean" in proc.stdout
    assert "P(faster)" in proc.stdout


def test_duckdb_sufficient_statistics_match_the_transactions(
    factorial: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every transaction as an observation (no bounded subset), to check the SQL against.
    monkeypatch.setattr(datasets, "SHAPE_SUBSET", 10**12)
    store = Store(factorial)
    run = store.run()
    from_sql = load_sample_stats(store, run)
    for st, obs in zip(from_sql, load_observations(store, run), strict=True):
        ref = SampleStats.from_observations(obs)
        assert st.condition == obs.condition
        assert set(st.levels) == {"journal_mode", "synchronous"}
        np.testing.assert_array_equal(st.n, ref.n)
        for name in ("sum", "sum_sq", "sum_log", "sum_log_sq"):
            np.testing.assert_allclose(getattr(st, name), getattr(ref, name), rtol=1e-9)


def store_with_samples(path: Path, latencies: dict[tuple[int, int], np.ndarray]) -> Store:
    """A run written through the store: for each (condition, sample) its latencies in ms,
    all transactions committed (an empty array: a stalled sample, 0 TPS)."""
    store = Store(path)
    run_id = store.create_run(
        name="edge",
        kind="run",
        seed=1,
        target="sqlite:///x.db",
        settings={"sessions": 1},
        environment={},
        conditions=[ConditionRow(0, "a", {}), ConditionRow(1, "b", {})],
        transaction_types=[("t", 1, "SELECT 1;")],
    )
    t0 = 1_700_000_000_000_000_000
    for sample_id, ((cond, position), ms) in enumerate(latencies.items()):
        start = t0 + sample_id * 10**9 + np.arange(ms.size, dtype=np.int64) * 1_000_000
        cols = committed_columns(start, start + np.round(ms * 1e6).astype(np.int64))
        row = SampleRow(sample_id, cond, 0, position, t0, t0, t0 + 500_000_000, 0.0)
        store.add_sample(run_id, row, cols)
    store.finish_run(run_id, "complete")
    return store


def test_a_zero_ms_transaction_leaves_the_sample_level_model_working(tmp_path: Path) -> None:
    # A coarse timer records 0 ms: ln(0) must never be evaluated (some DuckDB versions raise
    # instead of returning -inf), the sample's log sums are NaN, its plain sums are intact.
    rng = np.random.default_rng(30)
    # Whole microseconds, as the store keeps nanoseconds: the sums can be checked exactly.
    lat = {(c, p): np.round(rng.gamma(4.0, 0.5, 50), 3) for c in (0, 1) for p in range(3)}
    lat[0, 1][7] = 0.0
    store = store_with_samples(tmp_path / "r.duckdb", lat)
    a, b = load_sample_stats(store, store.run())
    assert not a.positive and b.positive
    assert np.isnan(a.sum_log[1]) and np.isfinite(a.sum_log[[0, 2]]).all()
    np.testing.assert_allclose(a.sum, [lat[0, p].sum() for p in range(3)], rtol=1e-9)
    np.testing.assert_allclose(
        a.sum_log[[0, 2]], [np.log(lat[0, p]).sum() for p in (0, 2)], rtol=1e-9
    )
    from wannabet.analysis.bayes import bayes_analysis

    pair = bayes_analysis([a, b]).pair("b")
    assert pair.hdi_pct[0] < pair.mean_pct < pair.hdi_pct[1]


def test_a_stalled_sample_is_named_not_dropped(tmp_path: Path) -> None:
    # 0 TPS is a real measurement the frequentist comparison keeps; dropping it would bias the
    # posterior toward "faster", and the log model cannot take it: a one-line error instead.
    rng = np.random.default_rng(31)
    lat = {(c, p): rng.gamma(4.0, 0.5, 50) for c in (0, 1) for p in range(3)}
    lat[1, 2] = np.array([], dtype=np.float64)
    store = store_with_samples(tmp_path / "r.duckdb", lat)
    tps = [s["tps"] for s in store.samples(store.run().run_id)]
    assert 0.0 in tps
    with pytest.raises(AnalysisError, match=r"sample 2 of condition 'b'.*0 TPS"):
        load_sample_stats(store, store.run(), metric="throughput")
    # The frequentist comparison sees the same samples, the stalled one included.
    b = load_observations(store, store.run(), metric="throughput")[1]
    assert b.values.size == 3 and 0.0 in b.values


def test_transaction_models_warn_about_overconfidence(tmp_path: Path) -> None:
    # Seeded samples, not a live run: a live run's samples may or may not drift, so it could
    # not say whether the warning is right. Condition a's samples each have their own level
    # (as a server's state shifting between samples does); b's transactions are iid.
    from scipy.stats import f_oneway

    rng = np.random.default_rng(32)
    level = {0: 1.0 + 0.3 * rng.standard_normal(6), 1: np.ones(6)}
    lat = {
        (c, p): np.round(level[c][p] * rng.gamma(4.0, 0.5, 200), 3)
        for c in (0, 1)
        for p in range(6)
    }
    store = store_with_samples(tmp_path / "r.duckdb", lat)
    proc = wannabet(
        "compare", "--results", str(store.path), "--bayes", "--bayes-model", "lognormal",
        "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert all(c["bayes"]["model"] == "lognormal" for c in doc["comparisons"])
    warned = [d for d in doc["bayes"]["diagnostics"] if d["code"] == "iid-overconfident"]
    # Only a is named, with SciPy's one-way ANOVA F of its samples.
    assert len(warned) == 1 and "'a'" in warned[0]["message"], warned
    f = f_oneway(*(lat[0, p] for p in range(6))).statistic
    assert f"F={f:.1f}" in warned[0]["message"], (f, warned)
    assert f_oneway(*(lat[1, p] for p in range(6))).pvalue > 0.001


def test_bad_prior_is_a_one_line_error(factorial: Path) -> None:
    proc = wannabet(
        "compare", "--results", str(factorial), "--bayes", "--bayes-model", "gamma",
        "--prior-sd-max", "-3",
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--prior-sd-max" in proc.stderr and "Traceback" not in proc.stderr


def test_without_the_extra_the_error_says_how_to_install(factorial: Path) -> None:
    # Hide the optional packages from the import system, as an installation without them.
    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name in "
        "('numpyro', 'jax', 'arviz_stats') else real(name, *a)\n"
        "from wannabet.cli import main\n"
        f"sys.argv = ['wannabet', 'compare', '--results', {str(factorial)!r}, '--bayes',"
        " '--bayes-model', 'student-t']\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=plain_env(), check=False
    )
    # Not 5 ("the data cannot answer"): the installation lacks a part.
    assert proc.returncode == 7, proc.stderr
    # Advice that works from an install and from a clone of the source.
    assert "pip install 'wannabet[bayes]'" in proc.stderr
    assert "pip install '.[bayes]'" in proc.stderr
    assert "(missing: " in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("flags", "allowed"), [((), ""), (("--bayes",), "")], ids=["plain", "exact-bayes"]
)
def test_compare_imports_no_ppl_unless_needed(
    factorial: Path, flags: tuple[str, ...], allowed: str
) -> None:
    argv = ["wannabet", "compare", "--results", str(factorial), *flags, "--format", "json"]
    code = (
        "import sys\n"
        "from wannabet.cli import main\n"
        f"sys.argv = {argv!r}\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('jax', 'numpyro', 'arviz_stats', 'scipy', 'pydantic')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "sys.stderr.write('LOADED=' + ','.join(loaded))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=plain_env(), check=False
    )
    assert proc.stderr.strip().endswith("LOADED=" + allowed), proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["comparisons"][0].get("bayes") is None) == (not flags)


def test_bayes_table_of_the_experiment_file_sets_the_defaults(tmp_path: Path) -> None:
    spec = tmp_path / "factorial.toml"
    text = (EXAMPLES / "factorial-sqlite.toml").read_text()
    spec.write_text(text + '\n[bayes]\nmodel = "lognormal"\nhdi = 0.9\n')
    results = tmp_path / "results.duckdb"
    proc = wannabet(
        "run", str(spec), "--results", str(results),
        "--samples", "2", "--duration", "0.2s", "--warmup", "0s",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    proc = wannabet("compare", "--results", str(results), "--bayes", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["bayes"]["model"] == "lognormal" and doc["bayes"]["hdi_prob"] == 0.9
    # Flags override the file.
    proc = wannabet(
        "compare", "--results", str(results), "--bayes", "--bayes-model", "hierarchical",
        "--hdi", "0.8", "--format", "json",
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    assert doc["bayes"]["model"] == "hierarchical" and doc["bayes"]["hdi_prob"] == 0.8
    assert all(c["bayes"]["hdi_prob"] == 0.8 for c in doc["comparisons"])


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ('model = "gama"', "bayes.model"),
        ("hdi = 1.2", "bayes.hdi"),
        ("prior_sd_max = -1", "bayes.prior_sd_max"),
        ("rope = 2", "bayes.rope"),
    ],
)
def test_bad_bayes_table_names_the_key(table: str, key: str) -> None:
    text = (EXAMPLES / "factorial-sqlite.toml").read_text() + f"\n[bayes]\n{table}\n"
    with pytest.raises(SpecError) as info:
        parse_experiment(text, file="x.toml")
    assert key in str(info.value)


def test_aggregate_only_imports_refuse_latency_and_accept_throughput(tmp_path: Path) -> None:
    results = tmp_path / "results.duckdb"
    fixture = Path(__file__).resolve().parent / "fixtures" / "import" / "sysbench_oltp.txt"
    proc = wannabet("import", "sysbench", str(fixture), "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    store = Store(results)
    with pytest.raises(AnalysisError, match="--metric throughput"):
        load_sample_stats(store, store.run())
    proc = wannabet(
        "compare", "--results", str(results), "--bayes", "--metric", "throughput",
        "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    (cond,) = doc["bayes"]["conditions"]
    # Throughput is one value per sample: the posterior centre sits among the sample TPS.
    tps = [s["tps"] for s in store.samples(store.run().run_id)]
    assert min(tps) < cond["mean"] < max(tps)
    assert cond["hdi"][0] < float(np.mean(tps)) < cond["hdi"][1]


def test_several_runs_are_compared_with_run_labels(tmp_path: Path) -> None:
    results = tmp_path / "results.duckdb"
    fixtures = Path(__file__).resolve().parent / "fixtures" / "import"
    for name in ("sysbench_oltp.txt", "sysbench_oltp_tuned.txt"):
        proc = wannabet("import", "sysbench", str(fixtures / name), "--results", str(results))
        assert proc.returncode == 0, proc.stderr
    proc = wannabet(
        "compare", "--results", str(results), "--run", "1", "--run", "2", "--bayes",
        "--metric", "throughput", "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [c["condition"] for c in doc["bayes"]["conditions"]] == ["1:baseline", "2:baseline"]
    (cmp,) = doc["comparisons"]
    assert cmp["bayes"]["faster_means"] == "higher"
    # The same direction as the frequentist estimate of the change.
    assert (cmp["bayes"]["mean_pct"] > 0) == (cmp["delta_pct"] > 0)
    assert doc["bayes"]["effects"] == []
