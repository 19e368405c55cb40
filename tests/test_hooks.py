"""Hooks (issue #14): SQL and shell commands before and after the run, each condition and each
sample, with their output captured, a time limit, and a failure that names the hook; and
``wannabet check``, which reports every mistake of a file."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import textwrap
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import FakeEngine
from wannabet.errors import HookError, SpecError
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing.cli import wannabet, wannabet_ok

SPEC = (
    textwrap.dedent(
        """\
    name = "hooks"
    [setup]
    sql = "CREATE TABLE IF NOT EXISTS prepared (n INTEGER)"
    [workload]
    [[workload.transactions]]
    script = "SELECT 1;"
    [[factors]]
    name = "f"
    levels = [1000, 2000]
    session_sql = "PRAGMA cache_size = {level}"
    [sampling]
    samples = 2
    duration = "0.2s"
    warmup = "0s"
    seed = 5
    """
    )
    .replace("-{level}", "{level}")
    .replace('["a", "b"]', "[1000, 2000]")
)


def run_error(proc: subprocess.CompletedProcess[str], code: int) -> str:
    """The one ``error:`` line of a run that failed after its progress lines began."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def hook(when: str, body: str) -> str:
    return f'[[hooks]]\nwhen = "{when}"\n{body}\n'


def test_every_hook_point_runs_in_order_with_where_the_run_is(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    record = (
        f'shell = "echo $WANNABET_HOOK ${{WANNABET_CONDITION:-}} ${{WANNABET_SAMPLE:-}} >> {log}"'
    )
    hooks = "".join(
        hook(when, record)
        for when in (
            "before-run", "after-run", "before-condition", "after-condition",
            "before-sample", "after-sample",
        )
    )  # fmt: skip
    hooks += hook("before-sample", 'sql = "INSERT INTO prepared VALUES (1)"')
    spec = tmp_path / "e.toml"
    spec.write_text(SPEC + hooks)
    results = tmp_path / "r.duckdb"
    wannabet_ok("run", str(spec), "--results", str(results), "--no-stats", cwd=tmp_path)
    lines = [line.split() for line in log.read_text().splitlines()]
    store = Store(results)
    samples = store.samples(store.run().run_id)
    expected: list[list[str]] = [["before-run"]]
    previous = None
    for s in samples:
        label = s["condition"]
        if label != previous:
            if previous is not None:
                expected.append(["after-condition", previous])
            expected.append(["before-condition", label])
            previous = label
        expected += [["before-sample", label, str(s["position"])]]
        expected += [["after-sample", label, str(s["position"])]]
    expected += [["after-condition", str(previous)], ["after-run"]]
    assert lines == expected
    # The SQL hook ran on the target before every sample, and each sample keeps what its
    # before-sample hooks did, finished before the sample's clock started.
    with sqlite3.connect(tmp_path / "hooks.sqlite") as con:
        assert con.execute("SELECT count(*) FROM prepared").fetchone() == (len(samples),)
    for s in samples:
        done = json.loads(s["stats"])["hooks"]
        assert [d["when"] for d in done] == ["before-sample", "before-sample"]
        assert all(d["end_ns"] <= s["t0_ns"] for d in done)
        assert done[0]["hook"].endswith("hooks[4]")


def test_a_failing_shell_hook_stops_the_run_naming_it_and_keeps_the_samples(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "e.toml"
    fail_on_third = (
        'shell = "n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count;'
        ' test $n -lt 2 || { echo cache not dropped >&2; exit 3; }"'
    )
    spec.write_text(SPEC + hook("before-sample", fail_on_third))
    results = tmp_path / "r.duckdb"
    proc = wannabet("run", str(spec), "--results", str(results), "--no-stats", cwd=tmp_path)
    line = run_error(proc, 6)
    hook_line = (SPEC + "[[hooks]]").count("\n") + 1
    assert f"e.toml:{hook_line}: hooks[0] (before-sample)" in line
    assert "exited with 3: cache not dropped" in line
    store = Store(results)
    run = store.run()
    assert run.status == "failed" and run.samples == 2


def test_a_hook_past_its_time_limit_is_stopped(tmp_path: Path) -> None:
    spec = tmp_path / "e.toml"
    spec.write_text(SPEC + hook("before-run", 'shell = "sleep 5"\ntimeout = "0.3s"'))
    proc = wannabet("run", str(spec), "--results", str(tmp_path / "r.duckdb"), cwd=tmp_path)
    assert "hooks[0] (before-run): still running after 0.3 s" in run_error(proc, 6)


def test_a_hook_past_its_time_limit_takes_what_it_started_with_it(tmp_path: Path) -> None:
    import psutil  # type: ignore[import-untyped]

    spec = tmp_path / "e.toml"
    started = 'shell = "sleep 30 & echo $! > child.pid; wait"\ntimeout = "0.5s"'
    spec.write_text(SPEC + hook("before-run", started))
    proc = wannabet("run", str(spec), "--results", str(tmp_path / "r.duckdb"), cwd=tmp_path)
    assert "still running after 0.5 s" in run_error(proc, 6)
    child = int((tmp_path / "child.pid").read_text())
    # Gone, or killed and not yet reaped by init.
    with contextlib.suppress(psutil.NoSuchProcess):
        assert psutil.Process(child).status() == "zombie"


def test_a_shell_hook_is_not_given_a_password_variable(tmp_path: Path) -> None:
    import os

    spec = tmp_path / "e.toml"
    show = """shell = 'echo "pg=${PGPASSWORD:-none} my=${MYSQL_PWD:-none} x=${KEPT:-none}" > env'"""
    spec.write_text(SPEC + hook("before-run", show))
    env = {**os.environ, "PGPASSWORD": "s3cret-pg", "MYSQL_PWD": "s3cret-my", "KEPT": "yes"}
    results = tmp_path / "r.duckdb"
    wannabet_ok("run", str(spec), "--results", str(results), "--no-stats", cwd=tmp_path, env=env)
    assert (tmp_path / "env").read_text() == "pg=none my=none x=yes\n"


@pytest.mark.parametrize(
    ("body", "key", "fragment"),
    [
        (
            'when = "befor-sample"\nsql = "SELECT 1"',
            "hooks[0].when",
            'did you mean "before-sample"',
        ),
        ('when = "after-run"', "hooks[0]", "give either sql"),
        ('when = "after-run"\nsql = "SELECT 1"\nshell = "true"', "hooks[0]", "not both"),
        ('when = "after-run"\nsql = "SELECT 1"\ntimeout = "0s"', "hooks[0].timeout", "longer"),
        ('when = "after-run"\nsql = "SELECT 1"\nwhy = 1', "hooks[0].why", "unknown key"),
    ],
)
def test_bad_hooks_name_the_key_and_line(body: str, key: str, fragment: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_experiment(SPEC + "[[hooks]]\n" + body + "\n", file="e.toml")
    assert err.value.key == key and fragment in str(err.value), str(err.value)
    assert err.value.line is not None


def test_check_reports_every_mistake_of_a_file_with_its_line(tmp_path: Path) -> None:
    # Three mistakes in three places: a transaction's script, a factor and a hook.
    broken = SPEC.replace('script = "SELECT 1;"', 'script = "\\\\sett x 1"').replace(
        "levels = [1000, 2000]", "levels = [1000, 1000]"
    ) + hook("befor-run", 'sql = "SELECT 1"')
    spec = tmp_path / "broken.toml"
    spec.write_text(broken)
    proc = wannabet("check", str(spec))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 3, proc.stderr
    assert "workload.transactions[0].script" in errors[0]
    assert "factors[0].levels: level '1000' appears twice" in errors[1]
    assert "hooks[0].when" in errors[2] and 'did you mean "before-run"' in errors[2]
    lines = [int(e.split(":")[2]) for e in errors]  # error: FILE:LINE: ...
    assert lines == sorted(lines) and all(n > 0 for n in lines)
    assert "3 errors in" in proc.stderr
    # A valid file: one line saying what it would run.
    good = tmp_path / "good.toml"
    good.write_text(SPEC)
    ok = wannabet_ok("check", str(good))
    assert "ok:" in ok and "2 conditions, 2 samples each, 1 transaction type" in ok
    # A file that is not there is one error, too.
    proc = wannabet("check", str(tmp_path / "none.toml"))
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_a_levels_shell_commands_run_whenever_the_run_switches_to_it(tmp_path: Path) -> None:
    log = tmp_path / "switches.log"
    text = textwrap.dedent(
        f"""\
        name = "switch"
        [[workload.transactions]]
        script = "SELECT 1;"
        [[factors]]
        name = "mode"
        [factors.levels.a]
        system_shell = ["echo a $WANNABET_CONDITION >> {log}", "echo again >> {log}"]
        [factors.levels.b]
        system_shell = "echo b >> {log}"
        [sampling]
        order = "blocks"
        samples = 2
        duration = "0.1s"
        warmup = "0s"
        """
    )
    outcome = run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=Store(tmp_path / "r.duckdb"),
        engine=FakeEngine(),
    )
    assert outcome.status == "complete"
    # Two blocks, each entering a then b: the commands of the level entered, in order.
    assert log.read_text().splitlines() == ["a mode=a", "again", "b"] * 2
    failing = text.replace('system_shell = "echo b >> ', 'system_shell = "exit 4; echo ')
    with pytest.raises(HookError, match=r"system_shell 1 of mode=b \(before-condition\)"):
        run_experiment(
            parse_experiment(failing, file="e.toml"),
            target=parse_target(f"sqlite:///{tmp_path}/t2.db"),
            store=Store(tmp_path / "r2.duckdb"),
            engine=FakeEngine(),
        )


def test_a_hook_finds_the_scripts_next_to_the_experiment_file(tmp_path: Path) -> None:
    # The file and its script in one directory, the run started from another: the hook reaches
    # the script through WANNABET_EXPERIMENT_DIR, as a file that ships its scripts does.
    shipped, elsewhere = tmp_path / "shipped", tmp_path / "elsewhere"
    (shipped / "scripts").mkdir(parents=True)
    elsewhere.mkdir()
    log = tmp_path / "log.txt"
    (shipped / "scripts" / "note.sh").write_text(f'echo "$WANNABET_EXPERIMENT_DIR" >> {log}\n')
    spec = shipped / "e.toml"
    spec.write_text(
        SPEC + hook("before-run", 'shell = "sh \\"$WANNABET_EXPERIMENT_DIR/scripts/note.sh\\""')
    )
    results = tmp_path / "r.duckdb"
    wannabet_ok("run", "../shipped/e.toml", "--results", str(results), "--no-stats", cwd=elsewhere)
    assert log.read_text().splitlines() == [str(shipped.resolve())]


def test_a_message_naming_a_variable_prints_it_as_written(tmp_path: Path) -> None:
    """``:id:`` in a message is a variable, not rich's emoji code for 🆔."""
    spec = tmp_path / "e.toml"
    spec.write_text('name = "e"\n[[workload.transactions]]\nscript = "SELECT :id + :b"\n')
    proc = wannabet("check", str(spec))
    assert proc.returncode == 2
    assert "unknown variable :id:" in proc.stderr and "🆔" not in proc.stderr
