"""``wannabet plan`` as a sentence and two small tables, or as JSON."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from wannabet.analysis.planning import Pilot, Plan
from wannabet.durations import format_duration
from wannabet.render.format import MISSING

_STAT = {"mean": "mean latency", "p99": "p99 latency", "tps": "throughput (TPS)"}


def plan_options(plan: Plan) -> str:
    """The plan as ``wannabet run`` options; empty when no plan reaches the power."""
    if plan.best is None or plan.best.samples is None:
        return ""
    return f"--samples {plan.best.samples} --duration {format_duration(plan.best.duration_s)}"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def _what(pilot: Pilot) -> str:
    stat = _STAT[pilot.stat]
    return f"{stat} of {pilot.txn}" if pilot.txn else stat


def plan_sentence(pilot: Pilot, plan: Plan) -> str:
    """What the plan says, in one sentence."""
    goal = (
        f"To resolve a change of {plan.change_pct:g}% in the {_what(pilot)} (ROPE"
        f" ±{plan.rope_pct:g}%, alpha {plan.alpha:g} over {plan.comparisons}"
        f" comparison{'s' if plan.comparisons != 1 else ''}) with"
        f" {100 * plan.target_power:g}% power"
    )
    best = plan.best
    if best is None or best.samples is None or best.run_s is None:
        longest = max(plan.candidates, key=lambda c: c.duration_s)
        return (
            f"{goal}, no plan of up to 1,000 samples per condition will do: at"
            f" {longest.duration_s:.3g} s per sample (the longest this pilot supports, 4 times"
            f" its own) the power stays at {100 * longest.power:.0f}%. Plan for a larger"
            " change, run a pilot with longer samples, or make the samples steadier (the table"
            " below says which part of the variance dominates)."
        )
    sure = ""
    if plan.power_range is not None:
        lo, hi = plan.power_range
        sure = (
            f" With a pilot of {pilot.components.samples} samples the power could be"
            f" {100 * lo:.0f}% to {100 * hi:.0f}% (80% interval of the variance)."
        )
    return (
        f"{goal}: {best.samples} samples of {best.duration_s:.3g} s per condition (power"
        f" {100 * best.power:.0f}%). The run will take about {_clock(best.run_s)}"
        f" ({plan.conditions} conditions × {best.samples} samples × ({best.duration_s:.3g} s +"
        f" {plan.overhead_s:.1f} s of warm-up and set-up)).{sure}"
    )


def plan_table(pilot: Pilot, plan: Plan, run_id: int) -> Group:
    c = pilot.components
    shares = c.shares()
    parts: list[Any] = [Text(plan_sentence(pilot, plan))]
    variance = Table(
        title=f"Where the variance of a {c.pilot_duration_s:.3g} s sample comes from (run {run_id},"
        f" {c.samples} samples)",
        title_justify="left",
    )
    variance.add_column("level", style="bold")
    variance.add_column("share", justify="right")
    variance.add_column("shrinks with longer samples", justify="left")
    for key, name, shrinks in (
        ("between_blocks", "between blocks (drift of the machine)", "no"),
        ("between_samples", "between samples (each sample's start)", "no"),
        ("within_samples", "within samples (transactions)", "yes, as 1/duration"),
    ):
        variance.add_row(name, f"{100 * shares[key]:.0f}%", shrinks)
    parts.append(variance)
    options = Table(title="Samples per condition by sample length", title_justify="left")
    for name in ("duration", "samples", "power", "run"):
        options.add_column(name, justify="right")
    for cand in plan.candidates:
        mark = " ←" if cand is plan.best else ""
        options.add_row(
            f"{cand.duration_s:.3g} s",
            "> 1,000" if cand.samples is None else str(cand.samples),
            f"{100 * cand.power:.0f}%",
            MISSING if cand.run_s is None else _clock(cand.run_s) + mark,
        )
    parts.append(options)
    flags = plan_options(plan)
    if flags:
        parts.append(
            Text.from_markup(f"Run it with: [bold]wannabet run FILE {escape(flags)}[/bold]")
        )
    if not c.from_halves:
        parts.append(
            Text("note: without stored rows the within-sample part ignores autocorrelation")
        )
    if pilot.degraded:
        parts.append(Text(_degraded_note(pilot.degraded)))
    return Group(*parts)


def _degraded_note(n: int) -> str:
    return (
        f"note: {n} degraded sample(s) of the pilot are left out (a stuck server, a restart:"
        " see `wannabet summary`); --include-degraded takes them in"
    )


def plan_json(pilot: Pilot, plan: Plan, run_id: int) -> str:
    doc = {
        "run_id": run_id,
        "stat": pilot.stat,
        "txn": pilot.txn,
        "conditions": list(pilot.conditions),
        "variance": pilot.components.to_dict(),
        "plan": plan.to_dict(),
        "options": plan_options(plan) or None,
        "sentence": plan_sentence(pilot, plan),
        "degraded": pilot.degraded,
    }
    return json.dumps(doc, indent=2, allow_nan=False)
