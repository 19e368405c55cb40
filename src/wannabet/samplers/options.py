"""Which samplers a run gets: every target's, and its backend's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wannabet.backends import backend_for
from wannabet.engine.base import Engine
from wannabet.model import WAIT_INTERVAL_RANGE_S, WAIT_INTERVAL_S, StatisticsPlan
from wannabet.samplers.base import Collector, Sampler
from wannabet.samplers.process import EngineSampler, ProcessSampler
from wannabet.targets import Target, redact


@dataclass(frozen=True, slots=True)
class StatsOptions:
    """How statistics are collected; ``enabled=False`` collects none (``run --no-stats``)."""

    enabled: bool = True
    wait_interval_s: float = WAIT_INTERVAL_S
    #: cores of a server on another host (for utilization and the response-time curve)
    server_cores: int | None = None

    def __post_init__(self) -> None:
        lo, hi = WAIT_INTERVAL_RANGE_S
        if not lo <= self.wait_interval_s <= hi:
            raise ValueError(
                f"the wait-event sampling interval must be between {lo * 1000:.0f}ms and"
                f" {hi * 1000:.0f}ms, got {self.wait_interval_s * 1000:g}ms"
            )
        if self.server_cores is not None and self.server_cores < 1:
            raise ValueError(f"server cores must be at least 1, got {self.server_cores}")

    @classmethod
    def of_plan(cls, plan: StatisticsPlan) -> StatsOptions:
        """The options an experiment file's ``[statistics]`` table asks for."""
        return cls(
            enabled=plan.enabled,
            wait_interval_s=plan.wait_interval_s,
            server_cores=plan.server_cores,
        )


def collector_for(
    target: Target, engine: Engine, options: StatsOptions, *, transaction_names: Sequence[str]
) -> Collector | None:
    """The samplers for ``target``; None when statistics are off.

    Every target gets the engine's and the client process's figures; its backend adds its
    server's (:attr:`wannabet.backends.Backend.samplers`). A sampler that cannot be set up (no
    permission, psycopg missing) becomes a warning stored with every sample, and the run goes
    on with the others. ``transaction_names`` are the program's, in order: the engine's figures
    count commits per type by them.
    """
    if not options.enabled:
        return None
    server, warnings = backend_for(target.kind).samplers(target, engine, options)
    samplers: list[Sampler] = [EngineSampler(transaction_names), ProcessSampler(), *server]
    return Collector(samplers, warnings, scrub=lambda text: redact(text, target.password))
