"""Experiment files (TOML) → :class:`wannabet.model.Experiment`, with errors a user can act on.

Every error names the file, the key and, where it can be found, the line, and says how to fix
the problem. See ``docs/experiment-file.md`` for the format.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from wannabet.durations import parse_duration
from wannabet.errors import SpecError
from wannabet.model import (
    AUTO_MAX_ROWS,
    DEFAULT_ALPHA,
    DEFAULT_RECONNECT_S,
    DEFAULT_ROPE_PCT,
    HOOK_POINTS,
    PREDEFINED_VARIABLES,
    PROFILE_FREQUENCY_HZ,
    PROFILE_FREQUENCY_RANGE_HZ,
    QUERY_PROTOCOLS,
    START_TOLERANCE_S,
    WAIT_INTERVAL_RANGE_S,
    WAIT_INTERVAL_S,
    Background,
    CopyCommand,
    DistributedPlan,
    Experiment,
    Factor,
    HeldSession,
    Hook,
    LevelSettings,
    PipelineCommand,
    ProfilePlan,
    QueryProtocol,
    SamplingPlan,
    Script,
    Setup,
    SqlCommand,
    StatisticsPlan,
    Transaction,
    Workload,
)
from wannabet.script import PLACEHOLDER, ScriptError, fill, parse_script_for_any_target

_T = TypeVar("_T")

_TOP_KEYS = (
    "name",
    "description",
    "target",
    "setup",
    "workload",
    "factors",
    "sampling",
    "statistics",
    "profile",
    "distributed",
    "bayes",
    "hooks",
    "background",
)
_BACKGROUND_KEYS = ("sessions", "rate", "transactions", "session_sql")
_HOOK_KEYS = ("when", "sql", "shell", "timeout")
_BAYES_KEYS = ("model", "hdi", "prior_cv", "prior_mean", "prior_sd_max")
_BAYES_MODELS = ("hierarchical", "gamma", "lognormal", "student-t")
_SETUP_KEYS = ("sql",)
_WORKLOAD_KEYS = (
    "sessions",
    "transactions",
    "variables",
    "session_sql",
    "rate",
    "on_error",
    "max_tries",
    "protocol",
    "fetch_size",
    "reconnect",
    "reconnect_timeout",
)
_TRANSACTION_KEYS = ("name", "weight", "script", "result")
_FACTOR_KEYS = (
    "name",
    "levels",
    "session_sql",
    "system_sql",
    "sessions",
    "rate",
    "protocol",
    "fetch_size",
)
_LEVEL_KEYS = (
    "session_sql",
    "system_sql",
    "sessions",
    "rate",
    "transactions",
    "protocol",
    "held",
    "background",
    "fetch_size",
    "target",
    "target_params",
    "system_shell",
)
_HELD_KEYS = ("sql", "end")
_STATISTICS_KEYS = ("enabled", "wait_interval", "server_cores")
_PROFILE_KEYS = ("perf", "frequency")
_DISTRIBUTED_KEYS = ("generators", "address", "start_tolerance")
#: the most load generators a run may ask for
MAX_GENERATORS = 1024
_SAMPLING_KEYS = (
    "samples",
    "duration",
    "transactions",
    "warmup",
    "cooldown",
    "order",
    "seed",
    "record",
    "until_decided",
    "max_samples",
    "alpha",
    "rope",
    "grace",
    "timeout",
    "on_degraded",
)
_ON_DEGRADED = ("retry", "skip", "stop")
#: ``max_samples`` when ``until_decided`` is on and it is not given: the 30-60 samples per
#: condition the analysts of the reference articles took by habit, at the upper end
DEFAULT_MAX_SAMPLES = 60
_ORDERS = ("randomized-blocks", "blocks", "sequential")
#: the engine's integers are 64-bit; beyond this a value is a typo, not a plan
_MAX_INT = 2**63 - 1
_MIN_DURATION_S = 0.001


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment file."""
    return parse_experiment(_read(path), file=str(path))


def check_file(path: str | Path) -> list[SpecError]:
    """Every error of an experiment file (see :func:`check_experiment`); empty when valid."""
    try:
        text = _read(path)
    except SpecError as exc:
        return [exc]
    return check_experiment(text, file=str(path))


def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("no such file; check the path", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read the file: {exc}", file=str(path)) from None


def check_experiment(text: str, *, file: str = "<experiment>") -> list[SpecError]:
    """Every error of an experiment file's text, in file order; empty when it is valid.

    Each section, transaction, factor and hook is validated on its own, so one mistake does not
    hide the next (a TOML syntax error is one error: nothing after it can be read).
    """
    try:
        data = _toml(text, file)
    except SpecError as exc:
        return [exc]
    reader = _Reader(text, file)
    reader.errors = []
    with reader.collecting():
        reader.experiment(data)
    # One error per key: a value read on with its default may be refused again further on
    # (grace = "x" then "must be at least 1ms"); the first says what is wrong.
    seen: set[str] = set()
    unique = []
    for err in reader.errors:
        said = [str(err)] + ([f"key:{err.key}"] if err.key else [])
        if not seen.intersection(said):
            seen.update(said)
            unique.append(err)
    return sorted(unique, key=lambda e: (e.line is None, e.line or 0))


def parse_experiment(text: str, *, file: str = "<experiment>") -> Experiment:
    """Validate the text of an experiment file and build the frozen model."""
    return _Reader(text, file).experiment(_toml(text, file))


#: arrays and tables nested deeper than this are refused: no experiment needs more than a few
#: levels, and Python's TOML reader recurses once per level
MAX_NESTING = 32


def _depth(value: Any) -> int:
    """How deep arrays and tables nest in ``value`` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _toml(text: str, file: str) -> dict[str, Any]:
    too_deep = (
        f"arrays or tables nested more than {MAX_NESTING} levels deep; an experiment file needs"
        " a few at most: check the brackets"
    )
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise SpecError(too_deep, file=file) from None
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        line = int(m.group(1)) if m else None
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        if "Unescaped '\\'" in reason:
            reason += (
                '; in a """ string a backslash starts an escape: write scripts as literal'
                " strings ('''...''') so that \\set and \\sleep stay as written"
            )
        raise SpecError(f"not valid TOML: {reason}", file=file, line=line) from None
    for key, value in data.items():
        if _depth(value) > MAX_NESTING:
            raise SpecError(too_deep, key=key, file=file, line=_KeyLocator(text).line(key))
    return data


def parse_bayes_settings(text: str, *, file: str = "<experiment>") -> dict[str, Any]:
    """The validated ``[bayes]`` table of an experiment file's text (empty when absent).

    Keys: ``model``, ``hdi``, ``prior_cv``, ``prior_mean``, ``prior_sd_max``; ``compare --bayes``
    reads them from the run's stored experiment file, and its flags override them.
    """
    try:
        data = _toml(text, file)
    except SpecError:
        return {}
    reader = _Reader(text, file)
    return reader.bayes(reader.table(data, "bayes", ""))


class _Reader:
    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.locator = _KeyLocator(text)
        #: with a list, every error is collected and reading goes on (``check_experiment``)
        self.errors: list[SpecError] | None = None

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """Collect an error of the block and go on, when collecting; else let it raise."""
        if self.errors is None:
            yield
            return
        try:
            yield
        except SpecError as exc:
            self.errors.append(exc)

    def attempt(self, read: Callable[[], _T], default: _T) -> _T:
        """``read()``, or ``default`` after collecting its error (when collecting)."""
        with self.collecting():
            return read()
        return default

    def fail(self, key: str, message: str, *, line: int | None = None) -> SpecError:
        return SpecError(message, file=self.file, key=key, line=line or self.locator.line(key))

    # -- helpers ----------------------------------------------------------------------------------

    def check_keys(self, table: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
        for key in table:
            if key not in allowed:
                full = f"{prefix}.{key}" if prefix else key
                hint = difflib.get_close_matches(key, allowed, n=1)
                advice = f"did you mean {hint[0]!r}?" if hint else f"allowed: {', '.join(allowed)}"
                error = self.fail(full, f"unknown key; {advice}")
                if self.errors is None:
                    raise error
                # Checking: an unknown key changes nothing else read from the table, so the
                # reading goes on and the table's other mistakes are reported too.
                self.errors.append(error)

    def table(self, data: Mapping[str, Any], key: str, prefix: str) -> Mapping[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            full = f"{prefix}.{key}" if prefix else key
            raise self.fail(full, f"must be a table, e.g. [{full}]")
        return value

    def string(
        self, data: Mapping[str, Any], key: str, full: str, *, required: bool = False
    ) -> Any:
        value = data.get(key)
        if value is None:
            if required:
                raise self.fail(full, f'is required; add {key} = "..."')
            return None
        if not isinstance(value, str):
            raise self.fail(full, f"must be a string, not {_type(value)}")
        return value

    def integer(
        self,
        data: Mapping[str, Any],
        key: str,
        full: str,
        default: int,
        *,
        minimum: int,
        maximum: int = _MAX_INT,
    ) -> int:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            return self.recover(
                self.fail(full, f"must be a whole number, not {_type(value)}"), default
            )
        if value < minimum:
            return self.recover(
                self.fail(full, f"must be at least {minimum}, got {value}"), default
            )
        if value > maximum:
            return self.recover(
                self.fail(full, f"must be at most {maximum:,}, got {value:,}"), default
            )
        return value

    def duration(self, data: Mapping[str, Any], key: str, full: str, default: float) -> float:
        if key not in data:
            return default
        try:
            return parse_duration(data[key])
        except ValueError as exc:
            return self.recover(self.fail(full, str(exc)), default)

    def recover(self, error: SpecError, default: _T) -> _T:
        """A value's mistake: raised, or, when checking, collected and the reading goes on
        with ``default``, so that the table's next mistake is reported too."""
        if self.errors is None:
            raise error
        self.errors.append(error)
        return default

    # -- sections ---------------------------------------------------------------------------------

    def experiment(self, data: Mapping[str, Any]) -> Experiment:
        # Each section on its own: when collecting (check_experiment), an error in one does not
        # hide the errors of the others.
        self.attempt(lambda: self.check_keys(data, _TOP_KEYS, ""), None)
        name = self.attempt(lambda: self.name(data), "experiment")
        no_setup: Mapping[str, Any] = {}
        setup = self.attempt(lambda: self.setup_table(data), no_setup)
        workload = self.attempt(
            lambda: self.workload(self.workload_table(data)),
            Workload(sessions=1, transactions=()),
        )
        no_factors: tuple[Factor, ...] = ()
        factors = self.attempt(lambda: self.factors(data.get("factors", []), workload), no_factors)
        self.attempt(lambda: self.some_transactions(data, workload, factors), None)
        self.attempt(lambda: self.placeholders(factors, workload), None)
        sampling = self.attempt(
            lambda: self.sampling(self.table(data, "sampling", "")), SamplingPlan()
        )
        statistics = self.attempt(
            lambda: self.statistics(self.table(data, "statistics", "")), StatisticsPlan()
        )
        profile = self.attempt(lambda: self.profile(self.table(data, "profile", "")), ProfilePlan())
        distributed = self.attempt(
            lambda: self.distributed(self.table(data, "distributed", "")), DistributedPlan()
        )
        # validated now, read by compare --bayes
        no_settings: dict[str, Any] = {}
        self.attempt(lambda: self.bayes(self.table(data, "bayes", "")), no_settings)
        no_hooks: tuple[Hook, ...] = ()
        hooks = self.attempt(lambda: self.hooks(data.get("hooks", [])), no_hooks)
        target = self.attempt(lambda: self.string(data, "target", "target"), None)
        known = set(PREDEFINED_VARIABLES) | {name for name, _ in workload.variables}
        background = self.attempt(
            lambda: self.background(data.get("background"), "background", known), None
        )
        return Experiment(
            name=name,
            description=self.string(data, "description", "description") or "",
            target=target,
            setup=Setup(
                sql=self.attempt(lambda: self.string(setup, "sql", "setup.sql"), None),
                sql_line=self.locator.value_line("setup.sql", 1),
            ),
            workload=workload,
            factors=factors,
            sampling=sampling,
            statistics=statistics,
            profile=profile,
            distributed=distributed,
            hooks=hooks,
            background=background,
            source_path=self.file,
            source_text=self.text,
        )

    def name(self, data: Mapping[str, Any]) -> str:
        name = self.string(data, "name", "name", required=True)
        if not name.strip():
            raise self.fail("name", "must not be empty")
        return str(name)

    def setup_table(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
        setup = self.table(data, "setup", "")
        self.check_keys(setup, _SETUP_KEYS, "setup")
        return setup

    def workload_table(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """``[workload]``, which every file needs."""
        if "workload" not in data:
            raise SpecError(
                "missing [workload]; add a [workload] table with sessions and"
                " [[workload.transactions]]",
                file=self.file,
                key="workload",
            )
        return self.table(data, "workload", "")

    def workload(self, data: Mapping[str, Any]) -> Workload:
        self.check_keys(data, _WORKLOAD_KEYS, "workload")
        sessions = self.integer(data, "sessions", "workload.sessions", 1, minimum=1, maximum=10_000)
        variables = self.variables(data.get("variables", {}))
        known = set(PREDEFINED_VARIABLES) | {name for name, _ in variables}
        # Absent: every level of a factor must bring its own (checked once factors are read).
        transactions: tuple[Transaction, ...] = ()
        if "transactions" in data:
            transactions = self.transactions(data["transactions"], "workload.transactions", known)
        rate = self.rate(data, "workload.rate")
        protocol: QueryProtocol | None = self.attempt(
            lambda: self.protocol(data, "workload.protocol"), None
        )
        on_error = data.get("on_error", "continue")
        if on_error not in ("continue", "abort"):
            on_error = self.recover(
                self.fail("workload.on_error", f'must be "continue" or "abort", got {on_error!r}'),
                "continue",
            )
        return Workload(
            sessions=sessions,
            transactions=transactions,
            variables=variables,
            session_sql=self.sql_list(data, "session_sql", "workload.session_sql"),
            rate=rate,
            on_error=on_error,
            max_tries=self.integer(
                data, "max_tries", "workload.max_tries", 1, minimum=1, maximum=1_000_000
            ),
            protocol=protocol or "prepared",
            fetch_size=self.fetch_size(data, "workload.fetch_size"),
            reconnect_s=self.attempt(lambda: self.reconnect(data), None),
        )

    def reconnect(self, data: Mapping[str, Any]) -> float | None:
        """``reconnect = true`` and its bound ``reconnect_timeout``: how long a session tries
        to get a dropped connection back (None: it does not)."""
        on = data.get("reconnect", False)
        if not isinstance(on, bool):
            raise self.fail("workload.reconnect", f"must be true or false, not {_type(on)}")
        if not on:
            if "reconnect_timeout" in data:
                raise self.fail(
                    "workload.reconnect_timeout",
                    "applies only with reconnect = true; add it, or remove reconnect_timeout",
                )
            return None
        bound = self.duration(
            data, "reconnect_timeout", "workload.reconnect_timeout", DEFAULT_RECONNECT_S
        )
        if not 0.1 <= bound <= 86_400:
            raise self.fail(
                "workload.reconnect_timeout",
                'must be between 100ms and 24h, e.g. reconnect_timeout = "30s"',
            )
        return bound

    def fetch_size(self, data: Mapping[str, Any], full: str) -> int | None:
        """``fetch_size``: rows per round trip of a result (None when absent)."""
        if "fetch_size" not in data:
            return None
        return self.integer(data, "fetch_size", full, 0, minimum=1, maximum=2**31 - 1)

    def target_params(self, raw: Any, key: str) -> tuple[tuple[str, str], ...]:
        """``target_params = { sslmode = "require" }``: put into the target URL's query."""
        if raw is None:
            return ()
        if not isinstance(raw, dict) or not raw:
            raise self.fail(key, 'must be a table of parameters, e.g. { sslmode = "require" }')
        out = []
        for name, value in raw.items():
            if isinstance(value, bool):
                value = "1" if value else "0"
            if not isinstance(value, str | int):
                raise self.fail(f"{key}.{name}", f"must be text or a number, not {_type(value)}")
            out.append((str(name), str(value)))
        return tuple(out)

    def some_transactions(
        self, data: Mapping[str, Any], workload: Workload, factors: tuple[Factor, ...]
    ) -> None:
        """The workload's transactions, unless a factor gives every level its own."""
        table = data.get("workload")
        if workload.transactions or not isinstance(table, dict) or "transactions" in table:
            return  # there are some, or their own error was reported
        if any(f.settings and all(s.transactions for s in f.settings) for f in factors):
            return
        raise self.fail(
            "workload.transactions",
            "needs at least one [[workload.transactions]] table with name and script (or a"
            " factor whose every level sets its own transactions)",
        )

    def placeholders(self, factors: tuple[Factor, ...], workload: Workload) -> None:
        """Scripts with ``{factor}`` placeholders parse with each level put in (the other
        factors at their first level; the runner checks every combination again)."""
        known = set(PREDEFINED_VARIABLES) | {name for name, _ in workload.variables}
        first = {f.name: f.levels[0] for f in factors if f.levels}
        scripts = list(workload.transactions)
        for f in factors:
            for settings in f.settings:
                scripts.extend(settings.transactions or ())
        for t in scripts:
            named = set(PLACEHOLDER.findall(t.script.text))
            if t.script.needs_levels and not named <= first.keys():
                unknown = ", ".join(f"{{{n}}}" for n in sorted(named - first.keys()))
                factors_named = ", ".join(sorted(first)) or "none"
                raise self.fail(
                    f"transaction {t.name!r}",
                    f"{unknown} names no factor (factors: {factors_named})",
                    line=t.script_line,
                )
            used = named & first.keys()
            for f in (f for f in factors if f.name in used):
                for level in f.levels:
                    text = fill(t.script.text, first | {f.name: level})
                    try:
                        parse_script_for_any_target(text, known_variables=known)
                    except ScriptError as exc:
                        raise self.fail(
                            f"transaction {t.name!r}",
                            f"with {f.name}={level}: {exc}",
                            line=t.file_line(exc.line),
                        ) from None

    def protocol(self, data: Mapping[str, Any], full: str) -> QueryProtocol | None:
        """``protocol``: how statements are sent, as pgbench's -M (None when absent)."""
        value = data.get("protocol")
        if value is None:
            return None
        if value not in QUERY_PROTOCOLS:
            hint = difflib.get_close_matches(str(value), QUERY_PROTOCOLS, n=1)
            advice = f"; did you mean {hint[0]!r}?" if hint else ""
            raise self.fail(
                full,
                f"must be one of {', '.join(map(repr, QUERY_PROTOCOLS))}, got {value!r}{advice}",
            )
        return cast(QueryProtocol, value)

    def transactions(self, raw: Any, prefix: str, known: set[str]) -> tuple[Transaction, ...]:
        """``[[workload.transactions]]`` (or a level's ``transactions``): name, weight, script."""
        if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
            raise self.fail(
                prefix,
                f"needs at least one [[{prefix}]] table with name and script",
            )
        transactions: list[Transaction] = []
        for index, entry in enumerate(raw):
            with self.collecting():
                key = f"{prefix}[{index}]"
                self.check_keys(entry, _TRANSACTION_KEYS, key)
                tname = self.string(entry, "name", f"{key}.name") or f"t{index + 1}"
                if any(t.name == tname for t in transactions):
                    raise self.fail(
                        f"{key}.name", f"duplicate transaction name {tname!r}; names must be unique"
                    )
                weight = entry.get("weight", 1)
                if (
                    isinstance(weight, bool)
                    or not isinstance(weight, int)
                    or not 0 < weight <= 1_000_000
                ):
                    weight = self.recover(
                        self.fail(
                            f"{key}.weight",
                            f"must be a whole number > 0 (up to 1,000,000), got {weight!r}",
                        ),
                        1,
                    )
                script_text = self.string(entry, "script", f"{key}.script", required=True)
                try:
                    script = _parse_with_placeholders(script_text, known)
                except ScriptError as exc:
                    line = self.locator.value_line(f"{key}.script", exc.line)
                    raise self.fail(f"{key}.script", str(exc), line=line) from None
                script = self.copy_files(script, f"{key}.script")
                start = self.locator.value_line(f"{key}.script", 1)
                result = entry.get("result", False)
                if not isinstance(result, bool):
                    raise self.fail(f"{key}.result", f"must be true or false, not {_type(result)}")
                if result and not script.statements:
                    raise self.fail(
                        f"{key}.result",
                        "the script has no SQL statement whose first column could be its result",
                    )
                if result and script.statements[-1].compound:
                    raise self.fail(
                        f"{key}.result",
                        "the script's last statement is joined with \\; to others; end it with ;"
                        " so that its first column is the one answer",
                    )
                if result and _last_statement_pipelined(script):
                    raise self.fail(
                        f"{key}.result",
                        "the script's last statement is inside a pipeline, whose results are not"
                        " read; end the script with a statement after \\endpipeline",
                    )
                transactions.append(
                    Transaction(
                        name=tname, weight=weight, script=script, script_line=start, result=result
                    )
                )
        return tuple(transactions)

    def copy_files(self, script: Script, key: str) -> Script:
        """``\\copy`` files relative to the experiment file's directory, and readable."""
        commands = list(script.commands)
        base = Path(self.file).parent if Path(self.file).is_file() else Path.cwd()
        for i, c in enumerate(commands):
            if not isinstance(c, CopyCommand) or c.path is None:
                continue
            path = (base / Path(c.path).expanduser()).resolve()
            if not path.is_file() or not os.access(path, os.R_OK):
                raise self.fail(
                    key,
                    f"\\copy: cannot read {c.path!r} (looked for {path}); paths are relative to"
                    " the experiment file's directory",
                    line=self.locator.value_line(key, c.line),
                )
            commands[i] = dataclasses.replace(c, path=str(path))
        return dataclasses.replace(script, commands=tuple(commands))

    def variables(self, raw: Any) -> tuple[tuple[str, int | float], ...]:
        if not isinstance(raw, dict):
            raise self.fail("workload.variables", "must be a table of name = number")
        out = []
        for name, value in raw.items():
            key = f"workload.variables.{name}"
            with self.collecting():
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    raise self.fail(key, "variable names use letters, digits and _ only")
                if name == "client_id":
                    raise self.fail(
                        key,
                        "client_id is set by the engine to the session number; pick another name",
                    )
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise self.fail(key, f"must be a number, not {_type(value)}")
                if (isinstance(value, int) and abs(value) > _MAX_INT) or not math.isfinite(value):
                    raise self.fail(key, f"{value!r} is out of range for a 64-bit number")
                out.append((name, value))
                continue
            # Checking, and this one is wrong: said above, and kept as 0 so that the scripts
            # using it are not reported for an unknown variable too.
            out.append((name, 0))
        return tuple(out)

    def sql_list(self, data: Mapping[str, Any], key: str, full: str) -> tuple[str, ...]:
        value = data.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise self.fail(full, "must be a string or a list of strings")

    def factors(self, raw: Any, workload: Workload) -> tuple[Factor, ...]:
        if not isinstance(raw, list) or not all(isinstance(f, dict) for f in raw):
            raise self.fail("factors", "must be an array of tables: [[factors]]")
        known = set(PREDEFINED_VARIABLES) | {name for name, _ in workload.variables}
        factors: list[Factor] = []
        setters: dict[str, str] = {}  # sessions / rate / transactions -> the factor that sets it
        for index, entry in enumerate(raw):
            with self.collecting():
                key = f"factors[{index}]"
                self.check_keys(entry, _FACTOR_KEYS, key)
                name = self.string(entry, "name", f"{key}.name", required=True)
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
                    raise self.fail(f"{key}.name", f"{name!r}: use letters, digits, _ . - only")
                if any(f.name == name for f in factors):
                    raise self.fail(f"{key}.name", f"duplicate factor name {name!r}")
                labels, own = self.levels(entry.get("levels"), f"{key}.levels", known)
                session_sql = self.string(entry, "session_sql", f"{key}.session_sql")
                system_sql = self.string(entry, "system_sql", f"{key}.system_sql")
                for field_name, sql in (("session_sql", session_sql), ("system_sql", system_sql)):
                    if sql is not None and len(labels) > 1 and "{level}" not in sql:
                        raise self.fail(
                            f"{key}.{field_name}",
                            "does not use {level}, so every level would run the same SQL",
                        )
                # sessions = "{level}" (or rate, protocol, fetch_size): the level is the value.
                for field_name in ("sessions", "rate", "protocol", "fetch_size"):
                    if field_name not in entry:
                        continue
                    if entry[field_name] != "{level}":
                        raise self.fail(
                            f"{key}.{field_name}",
                            f'must be "{{level}}" (each level is the {field_name}); for other'
                            f" values set {field_name} per level in [factors.levels.NAME]",
                        )
                    if any(getattr(o, field_name) is not None for o in own):
                        raise self.fail(
                            f"{key}.{field_name}", "is set both for the factor and for a level"
                        )
                    values: list[Any] = [
                        self.level_number(label, field_name, f"{key}.levels") for label in labels
                    ]
                    own = [
                        dataclasses.replace(o, **{field_name: v})
                        for o, v in zip(own, values, strict=True)
                    ]
                sets = {
                    f for f in ("sessions", "rate", "transactions", "protocol", "fetch_size",
                                "target")
                    if any(getattr(o, f) is not None for o in own)
                }  # fmt: skip
                for what in sorted(sets):
                    if what in setters:
                        raise self.fail(
                            key,
                            f"factors {setters[what]!r} and {name!r} both set {what};"
                            " one factor per setting (combine their levels into one factor)",
                        )
                    setters[what] = name
                # {name} in the workload's scripts or session SQL: the factor changes those.
                placeholders = {
                    n
                    for text in (
                        *(t.script.text for t in workload.transactions),
                        *workload.session_sql,
                    )
                    for n in PLACEHOLDER.findall(text)
                }
                if (
                    session_sql is None
                    and system_sql is None
                    and name not in placeholders
                    and not any(o != LevelSettings() for o in own)
                ):
                    raise self.fail(
                        key,
                        f"factor {name!r} changes nothing; give session_sql or system_sql"
                        " using {level}, sessions, rate or protocol, settings per level in"
                        f" [factors.levels.NAME], or {{{name}}} in the workload's scripts",
                    )
                factors.append(
                    Factor(
                        name=name,
                        levels=tuple(labels),
                        session_sql=session_sql,
                        system_sql=system_sql,
                        settings=tuple(own) if any(o != LevelSettings() for o in own) else (),
                    )
                )
        return tuple(factors)

    def levels(self, raw: Any, key: str, known: set[str]) -> tuple[list[str], list[LevelSettings]]:
        """``levels = [...]`` (names only) or ``[factors.levels.NAME]`` tables (names with
        what each level sets), in the order written."""
        labels: list[str] = []
        own: list[LevelSettings] = []
        if isinstance(raw, dict) and raw:
            for label, table in raw.items():
                lkey = f"{key}.{label}"
                if not isinstance(table, dict):
                    raise self.fail(lkey, f"must be a table: [{key.split('[')[0]}.levels.{label}]")
                self.check_keys(table, _LEVEL_KEYS, lkey)
                labels.append(str(label))
                own.append(self.level_settings(table, lkey, known))
            return labels, own
        if not isinstance(raw, list) or not raw:
            raise self.fail(
                key,
                'needs a non-empty list, e.g. levels = ["on", "off"], or a table per level:'
                " [factors.levels.NAME]",
            )
        for level in raw:
            if isinstance(level, dict | list):
                raise self.fail(key, f"levels are strings or numbers, not {_type(level)}")
            label = _level_text(level)
            if label in labels:
                raise self.fail(key, f"level {label!r} appears twice")
            labels.append(label)
            own.append(LevelSettings())
        return labels, own

    def hooks(self, raw: Any) -> tuple[Hook, ...]:
        if not isinstance(raw, list) or not all(isinstance(h, dict) for h in raw):
            raise self.fail("hooks", "must be an array of tables: [[hooks]]")
        hooks = []
        for index, entry in enumerate(raw):
            with self.collecting():
                key = f"hooks[{index}]"
                self.check_keys(entry, _HOOK_KEYS, key)
                when = self.string(entry, "when", f"{key}.when", required=True)
                if when not in HOOK_POINTS:
                    close = difflib.get_close_matches(when, HOOK_POINTS, n=1)
                    hint = f'; did you mean "{close[0]}"?' if close else ""
                    raise self.fail(
                        f"{key}.when",
                        f"must be one of {', '.join(HOOK_POINTS)}, got {when!r}{hint}",
                    )
                sql = self.string(entry, "sql", f"{key}.sql")
                shell = self.string(entry, "shell", f"{key}.shell")
                if (sql is None) == (shell is None):
                    raise self.fail(
                        key, 'give either sql = "..." or shell = "...", not both or neither'
                    )
                timeout = self.duration(entry, "timeout", f"{key}.timeout", 60.0)
                if not timeout > 0:
                    raise self.fail(f"{key}.timeout", "must be longer than 0s")
                line = self.locator.line(key)
                where = f"{self.file}:{line}: {key}" if line else f"{self.file}: {key}"
                hooks.append(Hook(when, sql=sql, shell=shell, timeout_s=timeout, where=where))
        return tuple(hooks)

    def rate(self, data: Mapping[str, Any], full: str) -> float | None:
        """An open-loop ``rate``: transactions per second, > 0 (None when absent)."""
        rate = data.get("rate")
        if rate is None:
            return None
        if (
            isinstance(rate, bool)
            or not isinstance(rate, int | float)
            or not math.isfinite(rate)
            or not 0 < rate <= 10_000_000
        ):
            raise self.fail(full, f"must be a number of transactions per second > 0, got {rate!r}")
        return float(rate)

    def level_settings(self, table: Mapping[str, Any], key: str, known: set[str]) -> LevelSettings:
        sessions = None
        if "sessions" in table:
            sessions = self.integer(
                table, "sessions", f"{key}.sessions", 1, minimum=1, maximum=10_000
            )
        rate = self.rate(table, f"{key}.rate")
        transactions = None
        if "transactions" in table:
            transactions = self.transactions(table["transactions"], f"{key}.transactions", known)
        return LevelSettings(
            session_sql=self.sql_list(table, "session_sql", f"{key}.session_sql"),
            system_sql=self.sql_list(table, "system_sql", f"{key}.system_sql"),
            sessions=sessions,
            rate=rate,
            transactions=transactions,
            protocol=self.protocol(table, f"{key}.protocol"),
            held=self.held(table.get("held"), f"{key}.held"),
            background=self.background(table.get("background"), f"{key}.background", known),
            fetch_size=self.fetch_size(table, f"{key}.fetch_size"),
            target=self.target(table, f"{key}.target"),
            target_params=self.target_params(table.get("target_params"), f"{key}.target_params"),
            system_shell=self.sql_list(table, "system_shell", f"{key}.system_shell"),
        )

    def target(self, table: Mapping[str, Any], key: str) -> str | None:
        """A level's ``target``: a URL (its backend checks the rest when the run is planned)."""
        url: str | None = self.string(table, "target", key)
        if url is None:
            return None
        if not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", url):
            raise self.fail(key, "must be a target URL, e.g. postgresql://user@host:5432/dbname")
        return url

    def background(self, raw: Any, key: str, known: set[str]) -> Background | None:
        """``[background]``: sessions, rate and transactions of an unmeasured load."""
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table with sessions and transactions")
        self.check_keys(raw, _BACKGROUND_KEYS, key)
        if "transactions" not in raw:
            raise self.fail(key, f"needs transactions: [[{key}.transactions]] with a script")
        return Background(
            transactions=self.transactions(raw["transactions"], f"{key}.transactions", known),
            sessions=self.integer(raw, "sessions", f"{key}.sessions", 1, minimum=1, maximum=10_000),
            rate=self.rate(raw, f"{key}.rate"),
            session_sql=self.sql_list(raw, "session_sql", f"{key}.session_sql"),
        )

    def held(self, raw: Any, key: str) -> tuple[HeldSession, ...]:
        """``held``: one connection per entry, a SQL string or ``{ sql, end }``."""
        if raw is None:
            return ()
        if isinstance(raw, str | dict):
            raw = [raw]
        if not isinstance(raw, list) or not raw:
            raise self.fail(key, "must be a list of SQL strings or of { sql, end } tables")
        out = []
        for i, entry in enumerate(raw):
            where = f"{key}[{i}]"
            if isinstance(entry, str):
                entry = {"sql": entry}
            if not isinstance(entry, dict):
                raise self.fail(where, "must be a SQL string or a { sql, end } table")
            self.check_keys(entry, _HELD_KEYS, where)
            sql = self.string(entry, "sql", f"{where}.sql", required=True)
            if not sql.strip():
                raise self.fail(f"{where}.sql", "is empty; give the SQL the held session runs")
            end = entry.get("end", "rollback")
            if end not in ("rollback", "commit"):
                raise self.fail(f"{where}.end", f'must be "rollback" or "commit", got {end!r}')
            out.append(HeldSession(sql=sql, end=end))
        return tuple(out)

    def level_number(self, label: str, what: str, key: str) -> int | float | str:
        """A level that is itself a number of sessions, a rate or a protocol."""
        if what == "protocol":
            if label not in QUERY_PROTOCOLS:
                raise self.fail(
                    key, f"level {label!r} is not a protocol ({', '.join(QUERY_PROTOCOLS)})"
                )
            return label
        try:
            value = int(label) if what == "sessions" else float(label)
        except ValueError:
            raise self.fail(key, f"level {label!r} is not a {what} value") from None
        if what == "fetch_size":
            try:
                value = int(label)
            except ValueError:
                raise self.fail(key, f"level {label!r} is not a fetch_size (rows)") from None
            if not 1 <= value < 2**31:
                raise self.fail(key, f"level {label!r} is out of range for fetch_size")
            return value
        lowest, highest = (1, 10_000) if what == "sessions" else (0, 10_000_000)
        if not (value >= lowest if what == "sessions" else value > lowest) or value > highest:
            raise self.fail(key, f"level {label!r} is out of range for {what}")
        return value

    def bayes(self, data: Mapping[str, Any]) -> dict[str, Any]:
        self.check_keys(data, _BAYES_KEYS, "bayes")
        out: dict[str, Any] = {}
        model = data.get("model")
        if model is not None:
            if model not in _BAYES_MODELS:
                hint = difflib.get_close_matches(str(model), _BAYES_MODELS, n=1)
                advice = f"did you mean {hint[0]!r}?" if hint else ", ".join(_BAYES_MODELS)
                model = self.recover(
                    self.fail("bayes.model", f"unknown model {model!r}; {advice}"), None
                )
            if model is not None:
                out["model"] = model
        for key in ("hdi", "prior_cv", "prior_mean", "prior_sd_max"):
            value = data.get(key)
            if value is None:
                continue
            # A wrong one is left out (compare --bayes keeps its default) and the next is read.
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                self.recover(
                    self.fail(f"bayes.{key}", f"must be a positive number, got {value!r}"), None
                )
            elif key == "hdi" and not 0.5 <= value < 1:
                self.recover(
                    self.fail("bayes.hdi", f"must lie in [0.5, 1), e.g. 0.95; got {value!r}"),
                    None,
                )
            else:
                out[key] = float(value)
        return out

    def statistics(self, data: Mapping[str, Any]) -> StatisticsPlan:
        self.check_keys(data, _STATISTICS_KEYS, "statistics")
        enabled = data.get("enabled", True)
        if not isinstance(enabled, bool):
            enabled = self.recover(
                self.fail("statistics.enabled", f"must be true or false, not {_type(enabled)}"),
                True,
            )
        interval = self.duration(data, "wait_interval", "statistics.wait_interval", WAIT_INTERVAL_S)
        lo, hi = WAIT_INTERVAL_RANGE_S
        if not lo <= interval <= hi:
            interval = self.recover(
                self.fail(
                    "statistics.wait_interval",
                    f"must be between {lo * 1000:.0f}ms and {hi * 1000:.0f}ms,"
                    f' got {interval * 1000:g}ms; e.g. wait_interval = "50ms"',
                ),
                WAIT_INTERVAL_S,
            )
        cores = None
        if "server_cores" in data:
            cores = self.integer(
                data, "server_cores", "statistics.server_cores", 1, minimum=1, maximum=65536
            )
        return StatisticsPlan(enabled=enabled, wait_interval_s=interval, server_cores=cores)

    def profile(self, data: Mapping[str, Any]) -> ProfilePlan:
        self.check_keys(data, _PROFILE_KEYS, "profile")
        perf = data.get("perf", False)
        if not isinstance(perf, bool):
            perf = self.recover(
                self.fail("profile.perf", f"must be true or false, not {_type(perf)}"), False
            )
        lo, hi = PROFILE_FREQUENCY_RANGE_HZ
        frequency = self.integer(
            data, "frequency", "profile.frequency", PROFILE_FREQUENCY_HZ, minimum=lo, maximum=hi
        )
        return ProfilePlan(perf=perf, frequency_hz=frequency)

    def distributed(self, data: Mapping[str, Any]) -> DistributedPlan:
        self.check_keys(data, _DISTRIBUTED_KEYS, "distributed")
        generators = self.integer(
            data, "generators", "distributed.generators", 0, minimum=0, maximum=MAX_GENERATORS
        )
        address = self.attempt(lambda: self.string(data, "address", "distributed.address"), None)
        tolerance = self.duration(
            data, "start_tolerance", "distributed.start_tolerance", START_TOLERANCE_S
        )
        if not 0.001 <= tolerance <= 10:
            tolerance = self.recover(
                self.fail(
                    "distributed.start_tolerance",
                    f'must be between 1ms and 10s, got {tolerance * 1000:g}ms; e.g. "50ms"',
                ),
                START_TOLERANCE_S,
            )
        return DistributedPlan(generators, address or None, tolerance)

    def sampling(self, data: Mapping[str, Any]) -> SamplingPlan:
        # Each mistake is recovered from with the key's default, so that checking reports every
        # one of the table's keys, not only the first.
        self.check_keys(data, _SAMPLING_KEYS, "sampling")
        until_decided = data.get("until_decided", False)
        stated = isinstance(until_decided, bool)
        if not stated:
            until_decided = self.recover(
                self.fail(
                    "sampling.until_decided", f"must be true or false, not {_type(until_decided)}"
                ),
                False,
            )
        if until_decided:
            if "samples" in data:
                self.recover(
                    self.fail(
                        "sampling.samples",
                        "with until_decided the run stops when its comparisons are decided; give"
                        " the most samples per condition as max_samples instead of samples",
                    ),
                    None,
                )
            samples = self.integer(
                data,
                "max_samples",
                "sampling.max_samples",
                DEFAULT_MAX_SAMPLES,
                minimum=2,
                maximum=1_000_000,
            )
        else:
            # With a wrong until_decided, whether these apply is not known: not said again.
            for key in ("max_samples", "alpha", "rope") if stated else ():
                if key in data:
                    self.recover(
                        self.fail(
                            f"sampling.{key}",
                            "applies only to a run that stops when decided; add until_decided ="
                            " true, or remove it",
                        ),
                        None,
                    )
            samples = self.integer(
                data, "samples", "sampling.samples", 10, minimum=1, maximum=1_000_000
            )
        alpha = data.get("alpha", DEFAULT_ALPHA)
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
            alpha = self.recover(
                self.fail("sampling.alpha", f"must be a number between 0 and 1, got {alpha!r}"),
                DEFAULT_ALPHA,
            )
        rope_pct = self.percent(data, "rope", "sampling.rope", DEFAULT_ROPE_PCT)
        transactions = data.get("transactions")
        if transactions is not None and (
            isinstance(transactions, bool)
            or not isinstance(transactions, int)
            or not 1 <= transactions <= 2**62
        ):
            transactions = self.recover(
                self.fail(
                    "sampling.transactions", f"must be a whole number ≥ 1, got {transactions!r}"
                ),
                None,
            )
        duration: float | None = self.duration(data, "duration", "sampling.duration", 5.0)
        if transactions is not None and "duration" not in data:
            duration = None
        if duration is not None and duration < _MIN_DURATION_S:
            duration = self.recover(self.fail("sampling.duration", "must be at least 1ms"), 5.0)
        order = data.get("order", "randomized-blocks")
        if order not in _ORDERS:
            hint = difflib.get_close_matches(str(order), _ORDERS, n=1)
            advice = f"did you mean {hint[0]!r}?" if hint else f"use one of {', '.join(_ORDERS)}"
            order = self.recover(
                self.fail("sampling.order", f"unknown order {order!r}; {advice}"),
                "randomized-blocks",
            )
        if until_decided and order == "sequential":
            order = self.recover(
                self.fail(
                    "sampling.order",
                    "until_decided judges the conditions block by block; use randomized-blocks"
                    " (the default) or blocks",
                ),
                "randomized-blocks",
            )
        grace = None
        if "grace" in data:
            grace = self.duration(data, "grace", "sampling.grace", 0.0)
            if grace < _MIN_DURATION_S:
                grace = self.recover(
                    self.fail("sampling.grace", 'must be at least 1ms, e.g. grace = "5s"'), None
                )
        timeout = None
        if "timeout" in data:
            if duration is not None:
                self.recover(
                    self.fail(
                        "sampling.timeout",
                        "a timed sample's deadline is its duration (plus grace); timeout is for"
                        " samples of a transaction count: remove it or set grace",
                    ),
                    None,
                )
            else:
                timeout = self.duration(data, "timeout", "sampling.timeout", 0.0)
                if timeout < _MIN_DURATION_S:
                    timeout = self.recover(
                        self.fail("sampling.timeout", 'must be at least 1ms, e.g. timeout = "10m"'),
                        None,
                    )
        on_degraded = data.get("on_degraded", "retry")
        if on_degraded not in _ON_DEGRADED:
            on_degraded = self.recover(
                self.fail(
                    "sampling.on_degraded",
                    f"must be one of {', '.join(map(repr, _ON_DEGRADED))}, got {on_degraded!r}",
                ),
                "retry",
            )
        seed = data.get("seed")
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _MAX_INT
        ):
            seed = self.recover(
                self.fail("sampling.seed", f"must be a whole number ≥ 0, got {seed!r}"), None
            )
        if seed is None:
            import secrets

            seed = secrets.randbelow(2**31)
        return SamplingPlan(
            samples=samples,
            duration_s=duration,
            transactions=transactions,
            # A count-based sample has no time budget to spend on warm-up unless asked for.
            warmup_s=self.duration(
                data, "warmup", "sampling.warmup", 1.0 if duration is not None else 0.0
            ),
            cooldown_s=self.duration(data, "cooldown", "sampling.cooldown", 0.0),
            order=order,
            seed=seed,
            **self.record(data),
            until_decided=until_decided,
            alpha=float(alpha),
            rope_pct=rope_pct,
            grace_s=grace,
            timeout_s=timeout,
            on_degraded=on_degraded,
        )

    def percent(self, data: Mapping[str, Any], key: str, full: str, default: float) -> float:
        """A percentage written ``"2%"`` or as a number (2 is 2%)."""
        if key not in data:
            return default
        value = data[key]
        text = value.strip().removesuffix("%") if isinstance(value, str) else value
        try:
            pct = float(text) if not isinstance(text, bool) else math.nan
        except (TypeError, ValueError):
            pct = math.nan
        if not (math.isfinite(pct) and pct >= 0):
            return self.recover(
                self.fail(full, f'must be a percentage >= 0 such as "2%", got {value!r}'), default
            )
        return pct

    def record(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``[sampling] record``: "auto", "all", "none" or a fraction in (0, 1) → the
        ``record`` and ``max_rows`` of the sampling plan."""
        try:
            fraction, max_rows = parse_record(data.get("record", "auto"))
        except ValueError as exc:
            fraction, max_rows = self.recover(
                self.fail("sampling.record", str(exc)), parse_record("auto")
            )
        return {"record": fraction, "max_rows": max_rows}


def parse_record(value: object) -> tuple[float, int]:
    """``record`` ("auto", "all", "none" or a fraction strictly between 0 and 1, as a number or
    as text such as ``"0.01"``) → the fraction of transactions stored as rows and the most rows
    a sample keeps (0: no limit; "auto" keeps every row up to :data:`AUTO_MAX_ROWS`, then a
    uniform random subset of that many).

    Raises ValueError with the fix in its message.
    """
    if value == "auto":
        return 1.0, AUTO_MAX_ROWS
    if value == "all":
        return 1.0, 0
    if value == "none":
        return 0.0, 0
    fraction: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        fraction = float(value)
    elif isinstance(value, str):
        try:
            fraction = float(value)
        except ValueError:
            fraction = None
    if fraction is not None and 0.0 < fraction < 1.0:
        return fraction, 0
    if fraction == 1.0:
        raise ValueError('1 keeps every transaction: write "all"')
    if fraction == 0.0:
        raise ValueError('0 keeps no transaction: write "none"')
    hint = ""
    if isinstance(value, str) and fraction is None:
        close = difflib.get_close_matches(value, ["auto", "all", "none"], n=1)
        hint = f'; did you mean "{close[0]}"?' if close else ""
    shown = repr(value) if not isinstance(value, str) else f'"{value}"'
    raise ValueError(
        f'must be "auto", "all", "none" or a fraction between 0 and 1 such as 0.01, got'
        f" {shown}{hint}"
    )


def _level_text(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _type(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _parse_with_placeholders(text: str, known: set[str]) -> Script:
    """The script; one that parses only once its ``{factor}`` placeholders are filled (``\\sleep
    {think} ms``) is read with each as 0, keeping its text: every condition parses it again
    with its levels in (:func:`wannabet.design.with_placeholders`), and the file's factors
    are checked to name every one (:meth:`_Reader.placeholders`)."""
    try:
        return parse_script_for_any_target(text, known_variables=known)
    except ScriptError:
        if not PLACEHOLDER.search(text):
            raise
    names = dict.fromkeys(PLACEHOLDER.findall(text), "0")
    script = parse_script_for_any_target(fill(text, names), known_variables=known)
    return dataclasses.replace(script, text=text, needs_levels=True)


class _KeyLocator:
    """Finds the line of a dotted key such as ``workload.transactions[1].script`` in TOML text.

    tomllib keeps no positions, so this follows table headers and key assignments, skipping the
    inside of multi-line strings. It is a best effort: a key it cannot find gets no line.
    """

    def __init__(self, text: str) -> None:
        self.entries: list[tuple[str, int, int]] = []  # (dotted key, line, value start line)
        counts: dict[str, int] = {}
        table = ""
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            stripped = lines[i].strip()
            lineno = i + 1
            header = re.fullmatch(r"\[\[\s*([^\]]+?)\s*\]\]\s*(#.*)?", stripped)
            if header:
                name = header.group(1)
                index = counts.get(name, 0)
                counts[name] = index + 1
                table = f"{name}[{index}]"
                self.entries.append((table, lineno, lineno))
                i += 1
                continue
            header = re.fullmatch(r"\[\s*([^\]]+?)\s*\]\s*(#.*)?", stripped)
            if header:
                table = self._resolve(header.group(1), counts)
                self.entries.append((table, lineno, lineno))
                i += 1
                continue
            assign = re.match(r"([A-Za-z0-9_\-\"'.]+)\s*=\s*(.*)", stripped)
            if assign:
                key = assign.group(1).strip("\"'")
                full = f"{table}.{key}" if table else key
                value = assign.group(2)
                start = lineno
                for quote in ('"""', "'''"):
                    if value.startswith(quote):
                        rest = value[3:]
                        # The first newline after an opening triple quote is trimmed by TOML.
                        start = lineno + 1 if rest.strip() == "" else lineno
                        if quote not in rest:
                            i += 1
                            while i < len(lines) and quote not in lines[i]:
                                i += 1
                        break
                self.entries.append((full, lineno, start))
                if value.startswith("[") and "{" in "\n".join(lines[i : i + 3]):
                    # An array of inline tables (a level's transactions): its keys' lines too.
                    i = self._inline_tables(full, lines, i, lines[i].index(value))
            i += 1

    def _inline_tables(self, full: str, lines: list[str], i: int, col: int) -> int:
        """Records ``full[n].key`` for the keys of the inline tables of the array that starts
        at line ``i``, column ``col``; returns the line where the array ends."""
        depth, table = 0, -1
        while i < len(lines):
            line, lineno = lines[i], i + 1
            j = col
            col = 0
            while j < len(line):
                c = line[j]
                if c == "#":
                    break
                if line.startswith(("'''", '"""'), j):
                    quote = line[j : j + 3]
                    close = line.find(quote, j + 3)
                    if close >= 0:
                        j = close + 3
                        continue
                    i += 1  # a multi-line string: skip to the line that closes it
                    while i < len(lines) and quote not in lines[i]:
                        i += 1
                    if i >= len(lines):
                        return i
                    line, j = lines[i], lines[i].index(quote) + 3
                    continue
                if c in "'\"":
                    close = line.find(c, j + 1)
                    j = len(line) if close < 0 else close + 1
                    continue
                if c in "[{":
                    depth += 1
                    table += c == "{" and depth == 2
                elif c in "]}":
                    depth -= 1
                    if depth == 0:
                        return i
                elif depth == 2:
                    key = re.match(r"([A-Za-z0-9_\-]+)\s*=\s*", line[j:])
                    if key:
                        after = line[j + key.end() :]
                        start = lineno + 1 if after.strip() in ("'''", '"""') else lineno
                        self.entries.append((f"{full}[{table}].{key.group(1)}", lineno, start))
                        j += key.end()
                        continue
                j += 1
            i += 1
        return i

    @staticmethod
    def _resolve(name: str, counts: dict[str, int]) -> str:
        # [workload.transactions.x] style sub-tables of arrays are rare; keep the plain name.
        for array, count in counts.items():
            if name.startswith(array + "."):
                return f"{array}[{count - 1}]{name[len(array) :]}"
        return name

    def _find(self, key: str) -> tuple[int, int] | None:
        for full, line, start in self.entries:
            if full == key:
                return line, start
        return None

    def line(self, key: str) -> int | None:
        while key:
            found = self._find(key)
            if found:
                return found[0]
            key = re.sub(r"(\.[^.\[]+|\[\d+\])$", "", key) if ("." in key or "[" in key) else ""
        return None

    def value_line(self, key: str, offset: int) -> int | None:
        """The file line of line ``offset`` (from 1) inside the string value of ``key``."""
        found = self._find(key)
        if not found:
            return None
        return found[1] + offset - 1


def _last_statement_pipelined(script: Script) -> bool:
    """Whether the script's last SQL statement lies between ``\\startpipeline`` and its end."""
    open_pipeline = last = False
    for c in script.commands:
        if isinstance(c, PipelineCommand):
            open_pipeline = c.kind != "end"
        elif isinstance(c, SqlCommand):
            last = open_pipeline
    return last
