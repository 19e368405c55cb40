"""The databases wannabet drives: one descriptor per backend, and the registry that finds it.

Everything that differs between databases is declared once, in the backend's own package
(``backends/sqlite/``, ``backends/postgresql/``), by a :class:`Backend`: the URL schemes it
accepts and how it parses them, its placeholder style, what the environment probe asks it, which
samplers a run on it gets, and how its stored statistics give the unit-of-work figures. The rest
of wannabet asks the registry (:func:`backend_for`, :func:`backend_for_url`) and never compares
``target.kind`` itself, so a kind nobody declared fails loudly instead of getting another
database's logic.

Adding a backend is one more package here (listed in :data:`_PACKAGES`) and either its Rust
module in ``native/src/backend/`` (named by :attr:`Backend.engine`) or, for a database whose
driver is a Python library, a :attr:`Backend.driver` for the DB-API engine.

The descriptor's callables are thin: each backend imports its samplers and its statistics
extraction only when asked, so parsing a URL loads neither psycopg nor SciPy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wannabet.errors import SpecError, TargetError
from wannabet.targets import redact

if TYPE_CHECKING:
    from wannabet.analysis.unit_of_work import WorkSource
    from wannabet.engine.base import Engine
    from wannabet.engine.dbapi import Driver
    from wannabet.model import PlaceholderStyle, SqlDialect
    from wannabet.samplers.base import Collector, Sampler, StatsWarning
    from wannabet.samplers.options import StatsOptions
    from wannabet.samplers.perf import ProfiledProcesses
    from wannabet.targets import Target

__all__ = [
    "Backend",
    "backend_for",
    "backend_for_scheme",
    "backend_for_url",
    "backends",
    "collector_for",
    "database_file",
    "examples",
    "parse_target",
    "profiled_processes",
]

#: the backends' packages, in the order errors list them; each defines ``BACKEND``
_PACKAGES = (
    "wannabet.backends.sqlite",
    "wannabet.backends.postgresql",
    "wannabet.backends.mysql",
    "wannabet.backends.duckdb",
    "wannabet.backends.oracle",
    "wannabet.backends.dbapi",
)


@dataclass(frozen=True, slots=True)
class Backend:
    """What wannabet needs to know about one kind of database."""

    #: the name stored with every run (``runs.target_kind``) and held by ``Target.kind``
    kind: str
    #: URL schemes that select this backend, lower case (``postgresql://``, ``postgres://``)
    schemes: tuple[str, ...]
    #: a URL shown when a target is not understood
    example: str
    #: the Rust module that drives it: ``native/src/backend/<engine>.rs`` (or ``<engine>/``);
    #: ``"python"`` for the backends with a :attr:`driver` (``native/src/backend/python.rs``
    #: calls into :mod:`wannabet.engine.dbapi`)
    engine: str
    #: how the compiled program writes bind parameters (:data:`wannabet.model.PlaceholderStyle`)
    placeholder_style: PlaceholderStyle
    #: ``(url, key) -> Target``; a bad URL raises :class:`~wannabet.errors.SpecError`
    parse: Callable[[str, str], Target]
    #: the password a target URL carries, if any (to scrub it from messages)
    password: Callable[[str], str | None]
    #: the environment probe: ``server``, ``server_version`` and ``server_settings``; being the
    #: first query of a run, it is also the connectivity check
    probe: Callable[[Engine, Target], dict[str, Any]]
    #: the samplers of its server statistics, and warnings for the ones it could not set up;
    #: the engine's and the client process's samplers are every backend's and not listed
    samplers: Callable[[Target, Engine, StatsOptions], tuple[list[Sampler], list[StatsWarning]]]
    #: how its stored statistics give CPU, wait, I/O and commits per sample (unit of work)
    work: Callable[[], WorkSource]
    #: what of pgbench's protocol it has, beyond statements: ``fetch_size`` (the server keeps a
    #: cursor between round trips, or the DB-API driver reads in batches), ``pipelines``
    #: (``\\startpipeline``: statements sent before answers arrive), ``compound`` (``\\;``:
    #: several statements in one query); and ``transactional_ddl`` (CREATE, ALTER and settings
    #: roll back with a transaction, which ``check --target`` relies on to try the set-up
    #: without keeping it)
    features: frozenset[str] = frozenset()
    #: ``target -> Driver``: the target is driven through a Python DB-API module
    #: (:mod:`wannabet.engine.dbapi`) rather than a Rust client; None for the native ones
    driver: Callable[[Target], Driver] | None = None
    #: ``(target, engine) -> ProfiledProcesses``: the processes ``perf`` records for a run with
    #: profiles (``[profile] perf``); it raises ProfileError when they are not visible from
    #: here. None: this backend's server cannot be profiled (a remote service, a driver's
    #: process of its own)
    profiled: Callable[[Target, Engine], ProfiledProcesses] | None = None
    #: environment variables its client reads a password from (``PGPASSWORD``): taken out of
    #: what a hook's command is given
    password_variables: tuple[str, ...] = ()
    #: how its SQL is lexed: where a script's statements end and which ``:name`` are
    #: placeholders (:data:`wannabet.model.SqlDialect`)
    sql_dialect: SqlDialect = "standard"
    #: ``target -> Path | None``: the file on this machine the target's database is, when the
    #: URL says it otherwise than as :attr:`Target.path` (a DB-API module's ``database``
    #: keyword); None: :attr:`Target.path`. A run refuses a target that is its results file.
    database_file: Callable[[Target], Path | None] | None = None
    #: ``(message, code) -> bool``: the database refused a statement only because a transaction
    #: block was open (PostgreSQL's VACUUM, SQLite's VACUUM or PRAGMA synchronous); ``check``
    #: reports it as not checked rather than failed, its dry run being one transaction. None:
    #: no such refusal is known
    refused_in_transaction: Callable[[str, object], bool] | None = None


@cache
def backends() -> tuple[Backend, ...]:
    """Every backend, in the order errors list them."""
    found = tuple(importlib.import_module(name).BACKEND for name in _PACKAGES)
    schemes = [s for b in found for s in b.schemes]
    kinds = [b.kind for b in found]
    if len(set(schemes)) != len(schemes) or len(set(kinds)) != len(kinds):
        raise AssertionError(f"two backends claim one kind or scheme: {kinds}, {schemes}")
    return found


def database_file(target: Target) -> Path | None:
    """The file on this machine ``target``'s database is, if it is one."""
    if target.backend.database_file is not None:
        return target.backend.database_file(target)
    return target.path


def refused_in_transaction(target: Target, message: str, code: object) -> bool:
    """Whether ``target``'s database refused a statement only because a transaction was open
    (:attr:`Backend.refused_in_transaction`)."""
    known = target.backend.refused_in_transaction
    return known is not None and known(message, code)


def password_variables() -> frozenset[str]:
    """Every environment variable a backend's client reads a password from."""
    return frozenset(v for b in backends() for v in b.password_variables)


def backend_for(kind: str) -> Backend:
    """The backend of a target kind (``Target.kind``, ``runs.target_kind``).

    Raises
    ------
    TargetError
        No backend declares this kind.
    """
    for backend in backends():
        if backend.kind == kind:
            return backend
    known = ", ".join(b.kind for b in backends())
    raise TargetError(f"no backend for target kind {kind!r}; wannabet knows: {known}")


def backend_for_scheme(scheme: str) -> Backend | None:
    """The backend a URL scheme selects (any case), or None when none does."""
    scheme = scheme.lower()
    return next((b for b in backends() if scheme in b.schemes), None)


def backend_for_url(url: str) -> Backend:
    """The backend a (possibly redacted) target URL selects.

    Raises
    ------
    TargetError
        The URL's scheme is no backend's.
    """
    scheme = url.split(":", 1)[0] if ":" in url else ""
    backend = backend_for_scheme(scheme)
    if backend is None:
        raise TargetError(f"no backend for the target {redact(url)!r}; {examples()}")
    return backend


def examples() -> str:
    """``use <example> or <example>``: what an error about a target suggests."""
    return "use " + " or ".join(b.example for b in backends())


def parse_target(url: str, *, key: str = "target", file: str | None = None) -> Target:
    """Validate a target URL and resolve what it leaves implicit.

    The URL's scheme picks the backend, which parses the rest. Errors name ``file`` (the
    experiment file, or ``command line``) and ``key``.
    """
    scheme = url.split(":", 1)[0] if ":" in url else ""
    backend = backend_for_scheme(scheme)
    if backend is None:
        raise SpecError(f"unsupported target {redact(url)!r}; {examples()}", file=file, key=key)
    try:
        return backend.parse(url, key)
    except SpecError as exc:
        raise SpecError(exc.reason, file=file or exc.file, key=exc.key, line=exc.line) from None


def collector_for(
    target: Target,
    engine: Engine,
    options: StatsOptions,
    *,
    transaction_names: Sequence[str],
    profile: tuple[ProfiledProcesses, int] | None = None,
) -> Collector | None:
    """The samplers for ``target``; None when statistics are off and nothing is profiled.

    Every target gets the engine's and the client process's figures; its backend adds its
    server's (:attr:`wannabet.backends.Backend.samplers`). A sampler that cannot be set up (no
    permission, psycopg missing) becomes a warning stored with every sample, and the run goes
    on with the others. ``transaction_names`` are the program's, in order: the engine's figures
    count commits per type by them. ``profile`` (the processes and a frequency, checked with
    :func:`profiled_processes`) adds the CPU profile of each sample, statistics on or off.
    """
    from wannabet.samplers.base import Collector

    samplers: list[Sampler] = []
    warnings: list[StatsWarning] = []
    if options.enabled:
        from wannabet.samplers.process import EngineSampler, ProcessSampler

        server, warnings = target.backend.samplers(target, engine, options)
        samplers = [EngineSampler(transaction_names), ProcessSampler(), *server]
    if profile is not None:
        from wannabet.samplers.perf import PerfSampler

        samplers.append(PerfSampler(*profile))
    if not samplers:
        return None
    return Collector(samplers, warnings, scrub=lambda text: redact(text, target.password))


def profiled_processes(target: Target, engine: Engine, frequency_hz: int) -> ProfiledProcesses:
    """The processes of ``target``'s server that ``perf`` records, once checked by recording
    them briefly; ProfileError (one line, with the fix) when that cannot work here."""
    from wannabet.errors import ProfileError
    from wannabet.samplers.perf import check_profiling

    if target.backend.profiled is None:
        raise ProfileError(
            f"profiles are not available for {target.backend.kind} targets: wannabet cannot see"
            " their server's processes; run without --profile / [profile] perf"
        )
    profiled = target.backend.profiled
    processes = profiled(target, engine)
    check_profiling(processes, frequency_hz)
    # A restart between samples gives the server new pids: the sampler looks for it again.
    return replace(processes, locate=lambda: profiled(target, engine))
