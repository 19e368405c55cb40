"""``{factor}`` placeholders (issue #14): a condition's level put into scripts and session SQL,
so think time, a table or a hint can be a factor; checked when the file is read."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import NativeEngine
from wannabet.errors import SpecError
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store

THINK = textwrap.dedent(
    """\
    name = "think"
    [setup]
    sql = '''
    DROP TABLE IF EXISTS small; DROP TABLE IF EXISTS large;
    CREATE TABLE small (id INTEGER PRIMARY KEY);
    CREATE TABLE large (id INTEGER PRIMARY KEY);
    INSERT INTO small VALUES (1);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
    INSERT INTO large SELECT i FROM n;
    '''
    [workload]
    sessions = 1
    session_sql = "PRAGMA cache_size = {cache}"
    [[workload.transactions]]
    name = "scan"
    script = '''
    SELECT sum(id) FROM {table};
    \\sleep {think} ms
    '''
    [[factors]]
    name = "table"
    levels = ["small", "large"]
    [[factors]]
    name = "think"
    levels = [0, 20]
    [[factors]]
    name = "cache"
    levels = [-2000, -4000]
    session_sql = "SELECT '{level}'"
    [sampling]
    samples = 2
    duration = "0.4s"
    warmup = "0s"
    seed = 9
    """
)


def test_levels_fill_the_placeholders_of_each_condition(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(THINK, file="think.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=NativeEngine(),
    )
    assert outcome.status == "complete"
    means = {c.condition: c.latency_ms["mean"] for c in store.condition_summaries(outcome.run_id)}
    assert len(means) == 8
    for label, mean in means.items():
        assert mean is not None
        # 20 ms of think time counts inside the transaction, as in pgbench; 0 ms does not.
        if "think=20" in label:
            assert 20 <= mean < 60, (label, mean)
        else:
            assert mean < 20, (label, mean)
    # Scanning 50,000 rows takes longer than one row (with 20 ms of sleep the difference
    # drowns in the sleep's jitter).
    for cache in ("-2000", "-4000"):
        small = means[f"table=small,think=0,cache={cache}"]
        large = means[f"table=large,think=0,cache={cache}"]
        assert large > 2 * small  # type: ignore[operator]


@pytest.mark.parametrize(
    ("script", "factor", "message"),
    [
        ("\\sleep {thinkk} ms\nSELECT 1;", "think", "{thinkk} names no factor (factors: think)"),
        ("\\sleep {think} ms\nSELECT 1;", "think", "with think=soon"),
    ],
)
def test_a_placeholder_that_fits_no_level_is_reported(
    script: str, factor: str, message: str
) -> None:
    text = (
        f"name = 'e'\n[[workload.transactions]]\nname = 't'\nscript = '''\n{script}\n'''\n"
        f"[[factors]]\nname = '{factor}'\nlevels = ['5', 'soon']\n"
        "session_sql = \"SELECT '{level}'\"\n"
    )
    with pytest.raises(SpecError) as err:
        parse_experiment(text, file="e.toml")
    assert message in str(err.value)
    assert "e.toml:5" in str(err.value)
