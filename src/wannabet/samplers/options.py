"""How statistics are collected: the options of a run's samplers."""

from __future__ import annotations

from dataclasses import dataclass

from wannabet.model import WAIT_INTERVAL_RANGE_S, WAIT_INTERVAL_S, StatisticsPlan


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
