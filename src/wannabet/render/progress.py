"""The live progress of a run: condition, sample k/n, current TPS and p99, ETA."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from wannabet.engine.base import SampleResult
from wannabet.model import Condition, ScheduledSample


class ProgressDisplay:
    """A :class:`wannabet.runner.RunObserver` that draws a rich progress bar.

    The bar advances in seconds of planned sample time when samples have a duration, so the ETA
    is honest; with transaction-count samples it advances one step per sample.
    """

    def __init__(
        self, console: Console, *, sample_seconds: float | None, samples_per_condition: int
    ) -> None:
        self.console = console
        self.sample_seconds = sample_seconds
        self.samples_per_condition = samples_per_condition
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[tps]:>9} TPS"),
            TextColumn("p99 {task.fields[p99]:>8}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task: TaskID | None = None
        self.done_per_condition: Counter[int] = Counter()
        self.completed_before = 0.0
        self._last = (0, 0.0)

    def __enter__(self) -> ProgressDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def run_started(
        self, run_id: int, conditions: Sequence[Condition], plan: Sequence[ScheduledSample]
    ) -> None:
        total = len(plan) * (self.sample_seconds or 1.0)
        self.task = self.progress.add_task(f"run {run_id}", total=total, tps="–", p99="–")

    def sample_started(self, sample: ScheduledSample, condition: Condition) -> None:
        k = self.done_per_condition[sample.condition_index] + 1
        label = escape(condition.label)
        self._last = (0, time.monotonic())
        if self.task is not None:
            self.progress.update(
                self.task, description=f"{label} · sample {k}/{self.samples_per_condition}"
            )

    def sample_progress(self, ok: int, errors: int, elapsed_s: float, p99_ms: float) -> None:
        if self.task is None:
            return
        previous_ok, previous_t = self._last
        now = time.monotonic()
        tps = (
            (ok - previous_ok) / (now - previous_t)
            if now > previous_t and previous_ok
            else (ok / elapsed_s if elapsed_s > 0 else 0.0)
        )
        self._last = (ok, now)
        advance = min(elapsed_s, self.sample_seconds) if self.sample_seconds else 0.0
        self.progress.update(
            self.task,
            completed=self.completed_before + advance,
            tps=f"{tps:,.0f}",
            p99=f"{p99_ms:.2f} ms",
        )

    def sample_finished(self, sample: ScheduledSample, result: SampleResult, tps: float) -> None:
        self.done_per_condition[sample.condition_index] += 1
        self.completed_before += self.sample_seconds or 1.0
        if self.task is not None:
            self.progress.update(self.task, completed=self.completed_before, tps=f"{tps:,.0f}")
