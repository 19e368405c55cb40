"""Experiment-file validation: every error names the file, the key, the line and the fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wannabet.design import conditions
from wannabet.errors import SpecError
from wannabet.model import AUTO_MAX_ROWS
from wannabet.spec import load_experiment, parse_experiment

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

VALID = textwrap.dedent(
    """\
    name = "t"
    [workload]
    sessions = 2
    [[workload.transactions]]
    name = "update"
    weight = 3
    script = '''
    \\set id random(1, 1000)
    UPDATE accounts SET balance = balance + 1 WHERE id = :id;
    '''
    [[factors]]
    name = "synchronous"
    levels = ["FULL", "OFF"]
    session_sql = "PRAGMA synchronous = {level}"
    [sampling]
    samples = 3
    duration = "2s"
    warmup = "500ms"
    seed = 7
    """
)


def error_for(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_experiment(text, file="exp.toml")
    return info.value


def test_valid_file_builds_the_model() -> None:
    exp = parse_experiment(VALID, file="exp.toml")
    assert exp.name == "t"
    assert exp.workload.sessions == 2
    (txn,) = exp.workload.transactions
    assert (txn.name, txn.weight) == ("update", 3)
    assert [type(c).__name__ for c in txn.script.commands] == ["SetCommand", "SqlCommand"]
    assert exp.factors[0].levels == ("FULL", "OFF")
    assert exp.sampling.samples == 3
    assert exp.sampling.duration_s == 2.0
    assert exp.sampling.warmup_s == 0.5
    assert exp.sampling.seed == 7
    assert exp.source_text == VALID


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_examples_are_valid(path: Path) -> None:
    exp = load_experiment(path)
    assert all(c.transactions or exp.workload.transactions for c in conditions(exp.factors))


def test_unknown_key_suggests_the_right_one_with_its_line() -> None:
    err = error_for(VALID.replace("sessions = 2", "sesions = 2"))
    assert str(err).startswith("exp.toml:3: workload.sesions: unknown key")
    assert "did you mean 'sessions'?" in str(err)


def test_unknown_top_level_key() -> None:
    err = error_for('nmae = "x"\n' + VALID)
    assert err.line == 1 and err.key == "nmae"
    assert "did you mean 'name'?" in str(err)


def test_bad_duration_names_key_and_line() -> None:
    err = error_for(VALID.replace('duration = "2s"', 'duration = "2 parsecs"'))
    assert err.key == "sampling.duration"
    assert err.line == 17
    assert "not a duration" in str(err) and '"500ms"' in str(err)


def test_unknown_meta_command_points_at_the_script_line() -> None:
    err = error_for(VALID.replace("\\set id", "\\sett id"))
    assert err.key == "workload.transactions[0].script"
    assert err.line == 8
    assert "unknown meta-command \\sett" in str(err) and "did you mean \\set?" in str(err)


def test_unknown_variable_points_at_the_statement_line() -> None:
    err = error_for(VALID.replace("WHERE id = :id", "WHERE id = :idd"))
    assert err.line == 9
    assert "unknown variable :idd" in str(err) and "did you mean :id?" in str(err)


@pytest.mark.parametrize("weight", ["0", "-1", "1.5", '"heavy"'])
def test_weight_must_be_positive(weight: str) -> None:
    err = error_for(VALID.replace("weight = 3", f"weight = {weight}"))
    assert err.key == "workload.transactions[0].weight"
    assert err.line == 6
    assert "> 0" in str(err)


def test_sessions_must_be_at_least_one() -> None:
    err = error_for(VALID.replace("sessions = 2", "sessions = 0"))
    assert err.key == "workload.sessions" and err.line == 3
    assert "at least 1" in str(err)


def test_backslash_in_basic_string_explains_literal_strings() -> None:
    err = error_for(VALID.replace("script = '''", 'script = """').replace("'''\n[[f", '"""\n[[f'))
    assert "not valid TOML" in str(err)
    assert "'''" in str(err)


def test_factor_sql_must_use_level() -> None:
    err = error_for(VALID.replace("PRAGMA synchronous = {level}", "PRAGMA synchronous = FULL"))
    assert err.key == "factors[0].session_sql"
    assert "{level}" in str(err)


def test_duplicate_levels_are_refused() -> None:
    err = error_for(VALID.replace('["FULL", "OFF"]', '["FULL", "FULL"]'))
    assert "appears twice" in str(err)


def test_missing_workload() -> None:
    err = error_for('name = "x"\n')
    assert err.key == "workload" and "[workload]" in str(err)


def test_unknown_order_suggests() -> None:
    err = error_for(VALID.replace("seed = 7", 'seed = 7\norder = "randomised-blocks"'))
    assert "did you mean 'randomized-blocks'?" in str(err)


def test_missing_file() -> None:
    with pytest.raises(SpecError, match="no such file"):
        load_experiment("/nonexistent/exp.toml")


def test_transaction_count_sampling_drops_the_default_duration() -> None:
    exp = parse_experiment(VALID.replace('duration = "2s"', "transactions = 500"), file="e")
    assert exp.sampling.transactions == 500
    assert exp.sampling.duration_s is None


def test_seed_is_drawn_and_recorded_when_absent() -> None:
    exp = parse_experiment(VALID.replace("seed = 7", ""), file="e")
    assert isinstance(exp.sampling.seed, int) and exp.sampling.seed >= 0


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('duration = "2s"', "duration = nan", "sampling.duration"),
        ('duration = "2s"', "duration = inf", "sampling.duration"),
        ('duration = "2s"', "duration = 1e-10", "sampling.duration"),
        ('duration = "2s"', "duration = 1e12", "sampling.duration"),
        ("sessions = 2", "sessions = 100000", "workload.sessions"),
        ("seed = 7", "seed = 7\ncooldown = nan", "sampling.cooldown"),
        ("sessions = 2", "sessions = 2\nrate = nan", "workload.rate"),
        ("sessions = 2", "sessions = 2\nmax_tries = 99999999999", "workload.max_tries"),
    ],
)
def test_out_of_range_values_are_spec_errors(old: str, new: str, key: str) -> None:
    err = error_for(VALID.replace(old, new))
    assert err.key == key


def test_count_based_samples_have_no_default_warmup() -> None:
    exp = parse_experiment(
        VALID.replace('duration = "2s"\nwarmup = "500ms"', "transactions = 100"), file="e"
    )
    assert exp.sampling.warmup_s == 0.0


def test_durations_accept_bare_seconds_from_the_command_line() -> None:
    from wannabet.durations import parse_duration

    assert parse_duration("1") == 1.0
    assert parse_duration("2.5") == 2.5
    assert parse_duration("1m30s") == 90.0
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("1x")


def test_statistics_table_defaults_and_values() -> None:
    plan = parse_experiment(VALID, file="exp.toml").statistics
    assert (plan.enabled, plan.wait_interval_s, plan.server_cores) == (True, 0.05, None)
    text = VALID + '[statistics]\nenabled = false\nwait_interval = "20ms"\nserver_cores = 16\n'
    plan = parse_experiment(text, file="exp.toml").statistics
    assert (plan.enabled, plan.wait_interval_s, plan.server_cores) == (False, 0.02, 16)


@pytest.mark.parametrize(
    ("table", "key", "fragment"),
    [
        ('wait_interval = "5ms"', "statistics.wait_interval", "between 10ms and 50ms, got 5ms"),
        ('wait_interval = "soon"', "statistics.wait_interval", "not a duration"),
        ('enabled = "no"', "statistics.enabled", "must be true or false"),
        ("server_cores = 0", "statistics.server_cores", "at least 1"),
        ("intervall = 1", "statistics.intervall", "unknown key"),
    ],
)
def test_bad_statistics_settings_name_the_key_and_line(table: str, key: str, fragment: str) -> None:
    text = VALID + "[statistics]\n" + table + "\n"
    err = error_for(text)
    assert err.key == key and fragment in str(err), str(err)
    assert err.line == text.count("\n")


@pytest.mark.parametrize(
    ("value", "fraction", "max_rows", "setting"),
    [
        (None, 1.0, AUTO_MAX_ROWS, "auto"),
        ('"auto"', 1.0, AUTO_MAX_ROWS, "auto"),
        ('"all"', 1.0, 0, "all"),
        ('"none"', 0.0, 0, "none"),
        ("0.01", 0.01, 0, 0.01),
        ("0.5", 0.5, 0, 0.5),
    ],
)
def test_record_keeps_auto_all_none_or_a_fraction(
    value: str | None, fraction: float, max_rows: int, setting: str | float
) -> None:
    text = VALID if value is None else VALID.replace("seed = 7", f"seed = 7\nrecord = {value}")
    sampling = parse_experiment(text, file="e").sampling
    assert (sampling.record, sampling.max_rows) == (fraction, max_rows)
    assert sampling.record_setting == setting


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ('"some"', 'got "some"'),
        ('"nnoe"', 'did you mean "none"?'),
        ("1", 'write "all"'),
        ("0", 'write "none"'),
        ("1.5", "got 1.5"),
        ("-0.1", "got -0.1"),
        ("true", "got True"),
        ("nan", "got nan"),
    ],
)
def test_a_bad_record_names_the_key_its_line_and_the_choices(value: str, fragment: str) -> None:
    err = error_for(VALID.replace("seed = 7", f"seed = 7\nrecord = {value}"))
    message = str(err)
    line = VALID.count("\n", 0, VALID.index("seed = 7")) + 2
    assert message.startswith(f"exp.toml:{line}: sampling.record: "), message
    assert fragment in message


def test_the_workload_needs_no_transactions_when_every_level_brings_its_own() -> None:
    text = textwrap.dedent(
        """\
        name = "a-vs-b"
        [workload]
        sessions = 2
        [[factors]]
        name = "query"
        [factors.levels.a]
        transactions = [{ name = "q", script = "SELECT 1;" }]
        [factors.levels.b]
        transactions = [{ name = "q", script = "SELECT 2;" }]
        """
    )
    experiment = parse_experiment(text, file="e.toml")
    assert experiment.workload.transactions == ()
    # One level without its own transactions would run none.
    partial = text.replace('transactions = [{ name = "q", script = "SELECT 2;" }]', "rate = 5")
    err = error_for(partial)
    assert "workload.transactions: needs at least one [[workload.transactions]]" in str(err)


def test_check_reports_every_mistake_inside_one_table() -> None:
    """Several mistakes in one table, and in one transaction, are each reported with their
    key, not only the first; a wrong variable is not reported again where it is used."""
    from wannabet.spec import check_experiment

    text = textwrap.dedent(
        """\
        name = "many"
        [workload]
        sesions = 4
        sessions = 0
        variables = { m = "x", ok = 3 }
        [[workload.transactions]]
        weight = 0
        script = "SELECT :idd + :m + :ok;"
        [sampling]
        samples = 0
        duration = "5 parsecs"
        order = "random"
        grace = "x"
        """
    )
    errors = check_experiment(text, file="e.toml")
    keys = [e.key for e in errors]
    assert keys == [
        "workload.sesions",
        "workload.sessions",
        "workload.variables.m",
        "workload.transactions[0].weight",
        "workload.transactions[0].script",
        "sampling.samples",
        "sampling.duration",
        "sampling.order",
        "sampling.grace",
    ], [str(e) for e in errors]
    assert "unknown variable :idd" in str(errors[4])
    assert all(e.line is not None for e in errors)
    # Reading the file for a run still stops at its first mistake.
    with pytest.raises(SpecError, match=r"workload\.sesions"):
        parse_experiment(text, file="e.toml")


CHECKED = textwrap.dedent(
    """\
    name = "t"
    [workload]
    sessions = 2
    [[workload.transactions]]
    name = "q"
    script = "SELECT 1;"
    [[factors]]
    name = "s"
    levels = ["FULL", "OFF"]
    session_sql = "PRAGMA synchronous = {level}"
    """
)


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (
            '[bayes]\nmodel = "bogus"\nhdi = 1\nprior_cv = -1\nprior_mean = 2',
            [
                ("bayes.model", "unknown model 'bogus'"),
                ("bayes.hdi", "must lie in [0.5, 1)"),
                ("bayes.prior_cv", "must be a positive number, got -1"),
            ],
        ),
        (
            '[statistics]\nenabled = "yes"\nwait_interval = "5ms"\nserver_cores = 0',
            [
                ("statistics.enabled", "must be true or false"),
                ("statistics.wait_interval", "must be between 10ms and 50ms, got 5ms"),
                ("statistics.server_cores", "must be at least 1, got 0"),
            ],
        ),
        (
            '[profile]\nperf = "yes"\nfrequency = 0',
            [
                ("profile.perf", "must be true or false, not a string"),
                ("profile.frequency", "must be at least 1, got 0"),
            ],
        ),
        (
            '[sampling]\nuntil_decided = true\nsamples = 5\norder = "sequential"\n'
            'alpha = 1.5\nrope = "abc"\nseed = -1\non_degraded = "x"\nrecord = "some"',
            [
                ("sampling.samples", "give the most samples per condition as max_samples"),
                ("sampling.order", "until_decided judges the conditions block by block"),
                ("sampling.alpha", "must be a number between 0 and 1, got 1.5"),
                ("sampling.rope", "must be a percentage >= 0"),
                ("sampling.seed", "must be a whole number ≥ 0, got -1"),
                ("sampling.on_degraded", "got 'x'"),
                ("sampling.record", 'got "some"'),
            ],
        ),
        (
            '[sampling]\nmax_samples = 5\nalpha = 0.1\nrope = "1%"\ntransactions = 0\n'
            'timeout = "1s"',
            [
                ("sampling.max_samples", "applies only to a run that stops when decided"),
                ("sampling.alpha", "applies only to a run that stops when decided"),
                ("sampling.rope", "applies only to a run that stops when decided"),
                ("sampling.transactions", "must be a whole number ≥ 1, got 0"),
                ("sampling.timeout", "a timed sample's deadline is its duration"),
            ],
        ),
        (
            '[distributed]\ngenerators = -1\naddress = 5\nstart_tolerance = "20s"',
            [
                ("distributed.generators", "must be at least 0, got -1"),
                ("distributed.address", "must be a string, not a number"),
                ("distributed.start_tolerance", "must be between 1ms and 10s"),
            ],
        ),
    ],
    ids=["bayes", "statistics", "profile", "until_decided", "not-until-decided", "distributed"],
)
def test_check_reports_every_mistake_of_each_section_in_file_order(
    tmp_path: Path, section: str, expected: list[tuple[str, str]]
) -> None:
    """Each section's keys are checked on their own: its second mistake is reported too, with
    its line, not hidden behind the first (docs/cli.md, check)."""
    from wannabet.testing.cli import wannabet

    spec = tmp_path / "e.toml"
    spec.write_text(CHECKED + section + "\n")
    proc = wannabet("check", str(spec))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    lines = spec.read_text().splitlines()
    assert len(errors) == len(expected), proc.stderr
    for error, (key, fragment) in zip(errors, expected, strict=True):
        line = 1 + next(i for i, t in enumerate(lines) if t.startswith(key.split(".")[1] + " "))
        assert error.startswith(f"error: {spec}:{line}: {key}: "), error
        assert fragment in error, error
    assert f"{len(expected)} errors in" in proc.stderr
    # Reading the file for a run still stops at its first mistake.
    with pytest.raises(SpecError) as err:
        parse_experiment(spec.read_text(), file="e.toml")
    assert err.value.key == expected[0][0]


def test_check_reports_every_mistake_of_the_workloads_own_keys() -> None:
    from wannabet.spec import check_experiment

    text = CHECKED.replace(
        "sessions = 2",
        'sessions = 2\non_error = "stop"\nmax_tries = 0\nprotocol = "fast"\nreconnect = 1',
    )
    errors = check_experiment(text, file="e.toml")
    assert [(e.key, e.line) for e in errors] == [
        ("workload.on_error", 4),
        ("workload.max_tries", 5),
        ("workload.protocol", 6),
        ("workload.reconnect", 7),
    ], [str(e) for e in errors]
