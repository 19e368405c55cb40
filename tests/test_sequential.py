"""Runs that stop when the answer is known (issue #16): anytime-valid confidence sequences,
checked against their closed form, seeded calibration simulations on sample-structured,
autocorrelated data, and real SQLite runs that stop early on a large effect and run to
max_samples on an A-vs-A experiment."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

from wannabet.analysis import AnalysisError
from wannabet.analysis.sequential import (
    MIXTURE_G,
    confidence_sequence,
    radius_multiplier,
    sequential_comparisons,
)
from wannabet.backends import parse_target
from wannabet.engine import NativeEngine
from wannabet.errors import SpecError
from wannabet.render.markdown import comparison_markdown
from wannabet.runner import SilentObserver, run_experiment, with_overrides
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.verdicts import ComparisonOptions, comparison_documents, comparison_options

ALPHA = 0.05


# -- the sequence -------------------------------------------------------------------------------


def _log_bayes_factor(t: float, n: int, g: float) -> float:
    """The log of the one-sample t Bayes factor with a N(0, g) mixture over the standardized
    effect (Rouder et al. 2009, eq. 1 with a fixed g), written independently of the module."""
    v = n - 1
    k = 1 + n * g
    return -0.5 * math.log(k) + (v + 1) / 2 * (math.log1p(t * t / v) - math.log1p(t * t / (v * k)))


@pytest.mark.parametrize("n", [4, 5, 8, 20, 60, 500])
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.0125])
def test_the_radius_is_where_the_bayes_factor_reaches_one_over_alpha(n: int, alpha: float) -> None:
    c = radius_multiplier(n, alpha)
    # As t grows the Bayes factor tends to (1 + n g)^((n - 1)/2): below 1/alpha, no t is enough.
    if (n - 1) / 2 * math.log(1 + n * MIXTURE_G) <= math.log(1 / alpha):
        assert c == math.inf
        return
    assert math.isfinite(c)
    root = optimize.brentq(
        lambda t: _log_bayes_factor(t, n, MIXTURE_G) - math.log(1 / alpha), 0.0, 1e3
    )
    assert c == pytest.approx(root, rel=1e-9)
    # Wider than the fixed-sample t interval at the same level: the price of looking often.
    assert c > stats.t.ppf(1 - alpha / 2, n - 1)


def test_too_few_blocks_give_no_interval_yet() -> None:
    # The Bayes factor cannot reach 1/alpha: sup_t BF = (1 + n g)^((n - 1)/2).
    assert radius_multiplier(1, ALPHA) == math.inf
    assert radius_multiplier(2, ALPHA) == math.inf
    assert radius_multiplier(3, ALPHA) == math.inf  # (1 + 12)^1 = 13 < 20
    assert math.isfinite(radius_multiplier(4, ALPHA))
    mean, low, high = confidence_sequence([0.1, 0.2, 0.15], ALPHA)
    assert np.all(np.isinf(low)) and np.all(np.isinf(high))
    assert mean[-1] == pytest.approx(0.15)


def test_the_sequence_is_the_running_intersection_of_the_intervals() -> None:
    rng = np.random.default_rng(5)
    d = rng.normal(0.1, 0.05, 40)
    mean, low, high = confidence_sequence(d, ALPHA)
    assert np.all(np.isinf(low[:3])) and np.all(np.isfinite(low[3:]))
    assert np.all(np.diff(low[3:]) >= 0) and np.all(np.diff(high[3:]) <= 0)
    for i in range(3, 40):
        n = i + 1
        r = radius_multiplier(n, ALPHA) * np.std(d[:n], ddof=1) / math.sqrt(n)
        assert low[i] >= mean[i] - r - 1e-12 and high[i] <= mean[i] + r + 1e-12
    assert mean[-1] == pytest.approx(d.mean())


def test_bad_input_is_refused() -> None:
    with pytest.raises(AnalysisError, match="finite"):
        confidence_sequence([0.1, math.nan], ALPHA)
    with pytest.raises(AnalysisError, match="at least one pair"):
        sequential_comparisons({}, pairs=[], alpha=ALPHA, rope_pct=2.0)
    with pytest.raises(AnalysisError, match="alpha"):
        radius_multiplier(5, 1.5)


def test_comparisons_split_alpha_and_read_faster_slower_and_equivalent() -> None:
    base = {b: 10.0 * (1 + 0.01 * (-1) ** b) for b in range(12)}
    values = {
        "base": base,
        "fast": {b: v * 0.5 * (1 + 0.002 * (-1) ** (b // 2)) for b, v in base.items()},
        "slow": {b: v * 1.5 * (1 + 0.002 * (-1) ** (b // 2)) for b, v in base.items()},
        "same": {b: v * (1 + 0.001 * (-1) ** (b // 2)) for b, v in base.items()},
        "short": {0: 5.0, 1: 5.0},
    }
    pairs = [(c, "base") for c in ("fast", "slow", "same", "short")]
    out = {
        s.condition: s for s in sequential_comparisons(values, pairs=pairs, alpha=0.05, rope_pct=2)
    }
    assert {s.alpha for s in out.values()} == {0.05 / 4}
    assert out["fast"].state == "faster" and out["fast"].change_pct == pytest.approx(-50, abs=0.5)
    assert out["fast"].low_pct < -50 < out["fast"].high_pct
    assert out["slow"].state == "slower"
    assert out["same"].state == "no-difference"
    assert out["short"].state == "undecided" and out["short"].blocks == 2
    assert out["short"].to_dict()["low_pct"] is None
    # Throughput: higher is faster.
    tps = sequential_comparisons(
        values, pairs=[("fast", "base")], alpha=0.05, rope_pct=2, higher_is_faster=True
    )
    assert tps[0].state == "slower"


# -- calibration: seeded simulations --------------------------------------------------------------


def _paired_block_log_ratios(
    rng: np.random.Generator, runs: int, blocks: int, change: float
) -> np.ndarray:
    """``runs`` x ``blocks`` paired log ratios of sample means from sample-structured,
    autocorrelated data: each sample is the mean of 50 log-normal latencies whose logs follow
    an AR(1) process (phi 0.7), each sample has its own offset (between-sample variance), and
    each block a drift shared by both conditions (a random walk: the machine changes)."""
    m, phi = 50, 0.7
    shape = (runs, blocks, 2)
    z = rng.normal(0.0, 0.1, (*shape, m))
    x = np.empty_like(z)
    x[..., 0] = z[..., 0] / math.sqrt(1 - phi * phi)
    for j in range(1, m):
        x[..., j] = phi * x[..., j - 1] + z[..., j]
    means = np.exp(x).mean(axis=-1)
    offsets = rng.normal(0.0, 0.03, shape)
    drift = np.cumsum(rng.normal(0.0, 0.05, (runs, blocks)), axis=1)[..., None]
    shift = np.array([0.0, math.log1p(change)])
    sample_means = means * np.exp(offsets + drift + shift)
    return np.log(sample_means[..., 1]) - np.log(sample_means[..., 0])


def _first_decision(d: np.ndarray, alpha: float, rope: float) -> tuple[str, int]:
    """What a run watching after every block decides first, and at which block."""
    _, low, high = confidence_sequence(d, alpha)
    lo, hi = (np.expm1(low) * 100, np.expm1(high) * 100)
    for i in range(len(d)):
        if lo[i] > rope or hi[i] < -rope:
            return ("slower" if lo[i] > rope else "faster"), i + 1
        if -rope <= lo[i] and hi[i] <= rope:
            return "no-difference", i + 1
    return "undecided", len(d)


def test_a_vs_a_watched_after_every_block_is_called_different_at_most_at_alpha() -> None:
    rng = np.random.default_rng(20261125)
    runs, blocks = 1000, 60
    d = _paired_block_log_ratios(rng, runs, blocks, 0.0)
    for rope in (0.0, 2.0):
        different = sum(
            _first_decision(d[r], ALPHA, rope)[0] in ("faster", "slower") for r in range(runs)
        )
        # At most alpha, with three Monte Carlo standard errors of slack.
        assert different / runs <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
    # A fixed-sample t test looked at after every block is not safe: the contrast that makes
    # the sequence necessary (a third of runs or more, where the sequence stays at alpha).
    # The one-sample t test of the first n blocks, for every n at once (checked against SciPy).
    n = np.arange(1, blocks + 1)
    mean = np.cumsum(d, axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (np.cumsum(d * d, axis=1) - n * mean * mean) / (n - 1)
        p = 2 * stats.t.sf(np.abs(mean / np.sqrt(var / n)), n - 1)
    for r, k in ((0, 4), (1, 17), (2, blocks)):
        assert p[r, k - 1] == pytest.approx(stats.ttest_1samp(d[r, :k], 0.0).pvalue, rel=1e-9)
    naive = int(np.count_nonzero((p[:, 3:] < ALPHA).any(axis=1)))
    assert naive / runs > 3 * ALPHA


def test_the_sequence_covers_the_true_change_at_every_block_at_least_at_its_level() -> None:
    rng = np.random.default_rng(7)
    runs, blocks = 1000, 60
    for change in (0.0, 0.1):
        d = _paired_block_log_ratios(rng, runs, blocks, change)
        # The true log ratio of the sample means: the same change on every sample's mean.
        truth = math.log1p(change)
        covered = 0
        for r in range(runs):
            _, low, high = confidence_sequence(d[r], ALPHA)
            covered += bool(np.all((low <= truth) & (truth <= high)))
        assert covered / runs >= 1 - ALPHA - 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)


def _fixed_design_blocks(change: float, sd: float, power: float, alpha: float, rope: float) -> int:
    """Blocks of a fixed design whose verdict (paired t interval wholly beyond the ROPE) is
    'faster'/'slower' with probability ``power`` at ``change``: noncentral t, SciPy."""
    margin = abs(math.log1p(change)) - math.log1p(rope / 100)
    for n in range(3, 10_000):
        q = stats.t.ppf(1 - alpha / 2, n - 1)
        # lower interval bound beyond the ROPE: t statistic against the margin exceeds q
        if stats.nct.sf(q, n - 1, margin / (sd / math.sqrt(n))) >= power:
            return n
    raise AssertionError("no fixed design reaches the power")


def test_sequential_runs_stop_earlier_than_the_fixed_design_on_large_changes() -> None:
    # Both designs are planned for 80% power at a change of 5% (the smallest change of
    # interest); the sequential run gets max_samples = the block count that gives it 80% power
    # at 5% in this simulation. The true change is then 5, 10 or 20%.
    rng = np.random.default_rng(11)
    runs, planned, rope = 400, 0.05, 2.0
    sd = float(np.std(_paired_block_log_ratios(rng, 2000, 1, 0.0), ddof=1))
    fixed = _fixed_design_blocks(planned, sd, 0.8, ALPHA, rope)
    d_planned = _paired_block_log_ratios(rng, runs, 300, planned)
    decisions = [_first_decision(d_planned[r], ALPHA, rope) for r in range(runs)]
    stop_at = sorted(n for what, n in decisions if what == "slower")
    max_samples = stop_at[int(0.8 * runs) - 1]  # 80% of runs decided by then
    results = {}
    for change in (0.05, 0.10, 0.20):
        d = _paired_block_log_ratios(rng, runs, max_samples, change)
        decided = [_first_decision(d[r], ALPHA, rope) for r in range(runs)]
        mean_blocks = float(np.mean([n for _, n in decided]))
        power = np.mean([what == "slower" for what, _ in decided])
        results[change] = (mean_blocks, power)
    # The figures docs/statistics.md gives (printed with -s).
    print(f"sd of d {sd:.4f}; fixed design {fixed} blocks; max_samples {max_samples}")
    for change, (mean_blocks, power) in results.items():
        print(f"change {change:.0%}: mean stop {mean_blocks:.1f} blocks, power {power:.2f}")
    assert results[0.05][1] >= 0.75  # the planned power, with simulation slack
    assert results[0.10][0] < fixed and results[0.20][0] < fixed / 2
    assert results[0.10][1] >= 0.95 and results[0.20][1] >= 0.99


# -- real runs ------------------------------------------------------------------------------------

SYNC = textwrap.dedent(
    """\
    name = "sync"
    [setup]
    sql = '''
    PRAGMA journal_mode = WAL;
    DROP TABLE IF EXISTS t;
    CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER);
    '''
    [workload]
    sessions = 1
    [[workload.transactions]]
    name = "insert"
    script = "INSERT INTO t (v) VALUES (random());"
    [[factors]]
    name = "synchronous"
    levels = ["FULL", "OFF"]
    session_sql = "PRAGMA synchronous = {level}"
    [sampling]
    until_decided = true
    max_samples = 30
    duration = "0.25s"
    warmup = "0.05s"
    seed = 3
    """
)

A_VS_A = textwrap.dedent(
    """\
    name = "a-vs-a"
    [workload]
    sessions = 1
    [[workload.transactions]]
    name = "read"
    script = "SELECT length('{copy}');"
    [[factors]]
    name = "copy"
    levels = ["a", "b"]
    [sampling]
    until_decided = true
    max_samples = 5
    duration = "0.1s"
    warmup = "0s"
    seed = 4
    """
)


class _Blocks(SilentObserver):
    def __init__(self) -> None:
        self.seen: list[tuple[int, list[str]]] = []

    def block_finished(self, block: int, sequences: object) -> None:
        self.seen.append((block, [s.state for s in sequences]))  # type: ignore[attr-defined]


def _run(tmp_path: Path, text: str) -> tuple[Store, int, _Blocks]:
    store = Store(tmp_path / "r.duckdb")
    observer = _Blocks()
    outcome = run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=NativeEngine(),
        observer=observer,
    )
    assert outcome.status == "complete"
    return store, outcome.run_id, observer


def test_a_sqlite_run_stops_early_on_synchronous_full_against_off(tmp_path: Path) -> None:
    store, run_id, observer = _run(tmp_path, SYNC)
    info = store.run(run_id)
    rule = info.until_decided
    assert rule is not None and rule["stopped"] == "decided"
    blocks = rule["blocks"]
    assert 4 <= blocks < 30
    assert info.samples == 2 * blocks
    # The progress saw every block, undecided until the last.
    assert [b for b, _ in observer.seen] == list(range(blocks))
    assert observer.seen[-1][1] == ["faster"]
    assert all(states == ["undecided"] for _, states in observer.seen[:-1])
    [doc] = comparison_documents(store, [run_id], ComparisonOptions())
    seq = doc["sequential"]
    assert seq["stopped"] == "decided" and seq["blocks"] == blocks
    [pair] = doc["comparisons"]
    assert pair["verdict"] == "faster" and "fixed_verdict" in pair
    assert "anytime-valid interval" in pair["note"]
    assert seq["comparisons"][0]["high_pct"] < -2.0
    # Every format says how the run stopped and how to read its fixed-sample figures.
    assert "was not fixed in advance" in comparison_markdown(doc)
    assert json.loads(json.dumps(doc))["sequential"]["note"] == seq["note"]


def test_an_a_vs_a_run_goes_to_max_samples_without_calling_it_different(tmp_path: Path) -> None:
    store, run_id, observer = _run(tmp_path, A_VS_A)
    rule = store.run(run_id).until_decided
    assert rule is not None and rule["stopped"] == "max_samples" and rule["blocks"] == 5
    assert len(observer.seen) == 5
    [doc] = comparison_documents(store, [run_id], ComparisonOptions())
    [pair] = doc["comparisons"]
    assert pair["verdict"] not in ("faster", "slower")
    assert doc["sequential"]["comparisons"][0]["state"] not in ("faster", "slower")
    assert "without deciding every comparison" in doc["sequential"]["note"]


def test_compare_judges_a_stopped_run_by_the_rope_and_alpha_it_stopped_by(tmp_path: Path) -> None:
    # A ROPE so wide that the run decides within its blocks however loaded the machine is.
    text = A_VS_A.replace("max_samples = 5", 'max_samples = 12\nrope = "400%"\nalpha = 0.1')
    (tmp_path / "fixed").mkdir()
    store, run_id, _ = _run(tmp_path, text)
    rule = store.run(run_id).until_decided
    assert rule is not None and rule["stopped"] == "decided"
    # Not given, alpha and the ROPE are the run's: the verdict is the one it stopped on.
    options = comparison_options(store, [run_id])
    assert (options.alpha, options.rope_pct) == (0.1, 400.0)
    [doc] = comparison_documents(store, [run_id], options)
    assert doc["comparisons"][0]["verdict"] == "no-difference"
    assert (doc["sequential"]["alpha"], doc["sequential"]["rope_pct"]) == (0.1, 400.0)
    assert "decided" in doc["sequential"]["note"]
    # Given, they win.
    options = comparison_options(store, [run_id], rope="2%", alpha=0.05)
    assert (options.alpha, options.rope_pct) == (0.05, 2.0)
    # Any other run keeps compare's defaults.
    fixed, fixed_id, _ = _run(
        tmp_path / "fixed", A_VS_A.replace("until_decided = true\nmax_samples = 5", "samples = 2")
    )
    assert (comparison_options(fixed, [fixed_id]).rope_pct, comparison_options(fixed).alpha) == (
        2.0,
        0.05,
    )


def test_a_fixed_run_has_no_sequential_section(tmp_path: Path) -> None:
    text = A_VS_A.replace("until_decided = true\nmax_samples = 5", "samples = 2")
    store, run_id, observer = _run(tmp_path, text)
    assert store.run(run_id).until_decided is None and observer.seen == []
    [doc] = comparison_documents(store, [run_id], ComparisonOptions())
    assert "sequential" not in doc and "fixed_verdict" not in doc["comparisons"][0]


# -- the file and the command line ------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "key", "fragment"),
    [
        ("max_samples = 5", "max_samples = 5\nsamples = 3", "sampling.samples", "max_samples"),
        ("until_decided = true", "until_decided = 1", "sampling.until_decided", "true or false"),
        ("until_decided = true", "until_decided = false", "sampling.max_samples", "until_decided"),
        ("max_samples = 5", "max_samples = 1", "sampling.max_samples", "at least 2"),
        ("max_samples = 5", "max_samples = 5\nalpha = 2", "sampling.alpha", "between 0 and 1"),
        ("max_samples = 5", 'max_samples = 5\nrope = "x%"', "sampling.rope", "percentage"),
        ("max_samples = 5", 'max_samples = 5\norder = "sequential"', "sampling.order", "blocks"),
    ],
)
def test_the_sampling_keys_are_checked_with_their_line(
    old: str, new: str, key: str, fragment: str
) -> None:
    with pytest.raises(SpecError, match=fragment) as info:
        parse_experiment(A_VS_A.replace(old, new), file="e.toml")
    assert info.value.key == key and info.value.line is not None


def test_alpha_and_rope_reach_the_plan() -> None:
    text = A_VS_A.replace("max_samples = 5", 'max_samples = 9\nalpha = 0.01\nrope = "5%"')
    sampling = parse_experiment(text, file="e.toml").sampling
    assert (sampling.until_decided, sampling.samples, sampling.alpha, sampling.rope_pct) == (
        True,
        9,
        0.01,
        5.0,
    )
    default = parse_experiment(A_VS_A.replace("max_samples = 5\n", ""), file="e.toml")
    assert default.sampling.samples == 60


def test_the_command_line_turns_the_rule_on_and_checks_its_options() -> None:
    fixed = parse_experiment(
        A_VS_A.replace("until_decided = true\nmax_samples = 5", "samples = 2"), file="e.toml"
    )
    on = with_overrides(fixed, until_decided=True, max_samples=7).sampling
    assert on.until_decided and on.samples == 7
    assert with_overrides(fixed, until_decided=True).sampling.samples == 60
    with pytest.raises(SpecError, match="--max-samples instead"):
        with_overrides(fixed, until_decided=True, samples=4)
    with pytest.raises(SpecError, match="--until-decided"):
        with_overrides(fixed, max_samples=4)


def test_run_until_decided_from_the_command_line_shows_each_block(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from wannabet.cli import app

    file = tmp_path / "e.toml"
    file.write_text(
        A_VS_A.replace("until_decided = true\nmax_samples = 5", "samples = 2"), encoding="utf-8"
    )
    results = str(tmp_path / "r.duckdb")
    target = f"sqlite:///{tmp_path}/t.db"
    args = ["run", str(file), "-r", results, "-t", target, "--until-decided"]
    result = CliRunner().invoke(app, [*args, "--max-samples", "4", "--no-stats"])
    assert result.exit_code == 0, result.stderr
    # Each block's interval and state, as the progress display prints them off a terminal.
    assert result.stderr.count("copy=b vs copy=a:") == 4
    assert "block 4:" in result.stderr and "block 5:" not in result.stderr
    assert "copy=b #4/≤4 (block 4)" in result.stderr  # the most samples, not a fixed count
    # summary says how the run stopped, in the terminal and in Markdown.
    for fmt in ("table", "markdown"):
        shown = CliRunner().invoke(app, ["summary", "-r", results, "-f", fmt]).stdout
        assert "took its most samples (4 blocks) without deciding" in " ".join(shown.split())
    result = CliRunner().invoke(app, ["compare", "-r", results, "-f", "json"])
    assert json.loads(result.stdout)["sequential"]["stopped"] == "max_samples"
    # --samples is a fixed size: refused with a one-line error and exit code 2.
    result = CliRunner().invoke(app, [*args, "--samples", "3"])
    assert result.exit_code == 2
    assert "--max-samples instead of --samples" in result.stderr
    assert "Traceback" not in result.stderr
