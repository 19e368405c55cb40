"""The live progress of a run: the sample (``off #2/6 (block 2)``), current TPS and p99, ETA.

A sample is named as every output names it (:func:`wannabet.render.format.sample_name`): its
condition, its number within the condition (1-based, in run order) out of the condition's
samples, and its block (1-based).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from wannabet.analysis import histogram
from wannabet.analysis.sequential import SequentialComparison
from wannabet.engine.base import SampleResult
from wannabet.model import Condition, ScheduledSample
from wannabet.render.format import MISSING, duration, sample_name
from wannabet.render.format import label as shown


class ProgressDisplay:
    """A :class:`wannabet.runner.RunObserver` that draws a rich progress bar.

    The bar advances in seconds of planned sample time when samples have a duration, so the ETA
    is honest; with transaction-count samples it advances one step per sample. When stderr is
    not a terminal (nohup, CI, a redirect), where a live bar would show only its last frame, it
    prints one plain line per finished sample instead.
    """

    def __init__(
        self,
        console: Console,
        *,
        sample_seconds: float | None,
        samples_per_condition: int,
        until_decided: bool = False,
        warmup_s: float = 0.0,
    ) -> None:
        self.console = console
        self.warmup_ns = int(warmup_s * 1e9)
        self.sample_seconds = sample_seconds
        self.samples_per_condition = samples_per_condition
        self.until_decided = until_decided
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
        self.live = console.is_terminal
        self._started = time.monotonic()
        self._total = 0
        self._before = 0  # samples a resumed run had
        self._shown = ""  # the running sample's name

    def __enter__(self) -> ProgressDisplay:
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.progress.stop()

    def run_started(
        self,
        run_id: int,
        conditions: Sequence[Condition],
        plan: Sequence[ScheduledSample],
        done: frozenset[int] = frozenset(),
    ) -> None:
        left = len(plan) - len(done)
        total = left * (self.sample_seconds or 1.0)
        # The line counts samples of the whole run; the ETA those of this process (a resumed
        # run's earlier samples took no time here).
        self._total, self._before, self._started = len(plan), len(done), time.monotonic()
        # A resumed run counts each condition's samples on from those it has.
        self.done_per_condition.update(s.condition_index for s in plan if s.position in done)
        if not self.live:
            what = f"{left} samples" + (f" left of {len(plan)} (resumed)" if done else "")
            self.console.print(f"run {run_id}: {what}", highlight=False, soft_wrap=True)
            return
        self.task = self.progress.add_task(f"run {run_id}", total=total, tps=MISSING, p99=MISSING)

    def sample_started(self, sample: ScheduledSample, condition: Condition, number: int) -> None:
        # The runner numbers samples as it stores them: a degraded attempt run again is stored
        # too, so counting finished samples here would name the retry after the attempt.
        self._shown = self._name(shown(condition.label), sample, number)
        self._last = (0, time.monotonic())
        if self.task is not None:
            # The rate shown until the first tick of this sample is not the previous one's.
            self.progress.update(
                self.task,
                description=self._shown,
                tps=MISSING,
                p99=MISSING,
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
            p99=duration(p99_ms),
        )

    def sample_finished(self, sample: ScheduledSample, result: SampleResult, tps: float) -> None:
        self.done_per_condition[sample.condition_index] += 1
        self.completed_before += self.sample_seconds or 1.0
        if self.task is not None:
            self.progress.update(self.task, completed=self.completed_before, tps=f"{tps:,.0f}")
        if not self.live:
            self._print_line(sample, result, tps)

    def block_finished(self, block: int, sequences: Sequence[SequentialComparison]) -> None:
        """A run that stops when decided: each comparison's anytime-valid interval and state
        after the block, above the bar."""
        undecided = sum(s.state == "undecided" for s in sequences)
        head = (
            f"block {block + 1}: every comparison decided, the run stops"
            if not undecided
            else f"block {block + 1}: {undecided} of {len(sequences)} undecided"
        )
        lines = [head] + [
            f"  {shown(s.condition)} vs {shown(s.baseline)}: {s.describe()}" for s in sequences
        ]
        self.console.print("\n".join(lines), highlight=False, soft_wrap=True)

    def _print_line(self, sample: ScheduledSample, result: SampleResult, tps: float) -> None:
        finished = sum(self.done_per_condition.values())
        p99 = duration(sample_p99_ms(result, self.warmup_ns))
        elapsed = time.monotonic() - self._started
        here = finished - self._before
        eta = elapsed / here * (self._total - finished) if here > 0 else 0.0
        self.console.print(
            f"[{finished}/{self._total}] {self._shown}:"
            f" {tps:,.0f} TPS, p99 {p99}, elapsed {_clock(elapsed)}, ETA {_clock(eta)}",
            highlight=False,
            soft_wrap=True,
        )

    def _name(self, label: str, sample: ScheduledSample, number: int) -> str:
        """``off #2/6 (block 2)``: the sample's name with the number of samples its condition
        will have stored: the planned ones and each degraded attempt that was run again (a
        stored sample that did not finish one of the planned ones); ``≤`` when the run may
        stop before its most samples (until decided)."""
        retried = max(0, number - 1 - self.done_per_condition[sample.condition_index])
        of = self.samples_per_condition + retried
        return sample_name(
            label, number, sample.block + 1, of=f"≤{of}" if self.until_decided else of
        )


def sample_p99_ms(result: SampleResult, warmup_ns: int) -> float | None:
    """The sample's p99 latency (ms) as ``summary`` gives it; None when no transaction after
    the warm-up succeeded.

    As the TPS beside it: successful transactions after the warm-up, latency from the
    scheduled start (an open loop that falls behind waits). From the summaries' histograms,
    which count every transaction whether its row was kept or not (``--record none`` keeps
    none, a fraction a subset), at their bin's midpoint clipped to the sample's extremes as
    ``summary``'s p99; from the kept
    rows only when the engine gave no summaries.
    """
    summaries = result.summaries
    if summaries.statuses["count"].size:
        bins = summaries.bins
        measured = ~bins["warmup"]
        # One histogram per transaction type (each in the engine's layout), merged exactly.
        per_type = []
        for txn_type in np.unique(bins["txn_type"][measured]):
            mine = np.flatnonzero(measured & (bins["txn_type"] == txn_type))
            mine = mine[np.argsort(bins["lo_ns"][mine])]
            per_type.append(
                histogram.Histogram(
                    bins["lo_ns"][mine].astype(np.uint64),
                    bins["hi_ns"][mine].astype(np.uint64),
                    bins["count"][mine].astype(np.uint64),
                )
            )
        merged = histogram.merge(*per_type)
        if not histogram.count(merged):
            return None
        # Clipped to the measured extremes, as summary's p99 is.
        moments = summaries.moments
        late = ~moments["warmup"] & (moments["count"] > 0)
        extremes = (
            (float(moments["min_ns"][late].min()), float(moments["max_ns"][late].max()))
            if late.any()
            else None
        )
        return float(histogram.quantiles(merged, [0.99], extremes=extremes)[0]) / 1e6
    columns = result.columns
    ok = (columns["status"] == 0) & (columns["start_ns"] >= result.t0_ns + warmup_ns)
    latency_ms = (columns["end_ns"][ok] - columns["intended_start_ns"][ok]) / 1e6
    return float(np.percentile(latency_ms, 99)) if latency_ms.size else None


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"
