"""Typed warnings that carry advice, in the manner of hyperfine's.

A diagnostic never changes a number; it tells the reader why a number may mislead and what to
do about it. Every diagnostic has a stable ``code`` that other tools may match on:

==========================  ===============================================================
code                        raised when
==========================  ===============================================================
``too-few-samples``         fewer than 4 samples: the U test cannot reach p < 0.05
``zero-variance``           every observation is identical
``bimodal``                 Silverman's test finds more than one mode
``outliers``                samples with ``|modified z| > 3.5`` (kept, not removed)
``warm-up``                 the first samples are slower than the rest
``trend``                   the values drift over the run (Mann-Kendall)
``single-sample``           transaction level with one sample: batch means inside it
``environment-differs``     recorded environments of the compared runs differ
==========================  ===============================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .consistency import DIAGNOSTIC_ALPHA, Consistency
from .tests import min_mann_whitney_p, p_text

__all__ = [
    "MIN_SAMPLES",
    "Diagnostic",
    "condition_diagnostics",
    "environment_diagnostic",
    "environment_differences",
    "too_few_samples",
]

#: Fewer samples than this and the Mann-Whitney U test cannot be significant at 0.05.
MIN_SAMPLES = 4

_MAX_VALUE_CHARS = 60


def too_few_samples(n_a: int, n_b: int) -> str:
    """Why a pair with fewer than :data:`MIN_SAMPLES` samples in a condition gets no verdict,
    and how to get one: a whole pgbench or sysbench log imported as it is is one sample."""
    return (
        f"inconclusive: too few samples ({n_a} and {n_b}; need at least {MIN_SAMPLES} per"
        " condition, better 30): run more samples (or import more runs per condition), or"
        " re-import per-transaction logs (pgbench, BenchBase, YCSB raw, fio --write_lat_log) with"
        " --sample-interval (e.g. 10s: one sample per interval of each log), or interval"
        " logs as they are (YCSB HdrHistogram logs, fio --write_hist_log)"
    )


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A warning about the data, with advice.

    Attributes
    ----------
    code : str
        Stable identifier, e.g. ``"warm-up"``.
    message : str
        What was observed, with the numbers.
    advice : str
        What to do about it.
    """

    code: str
    message: str
    advice: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {"code": self.code, "message": self.message, "advice": self.advice}


def _list(condition: str, ids: tuple[int, ...], limit: int = 8) -> str:
    """Samples named as every output names them: the condition and each sample's number in
    it (``off #4, off #9``). The numbers are the observations' sample ids: for a stored run,
    each sample's rank within its condition, 1-based, in run order
    (:func:`wannabet.datasets.load_observations`)."""
    shown = ", ".join(f"{condition} #{i}" for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def condition_diagnostics(
    condition: str,
    *,
    n_samples: int,
    n: int,
    sd: float,
    consistency: Consistency,
    unit: str,
    batch_means: bool = False,
) -> tuple[Diagnostic, ...]:
    """Diagnostics of one condition from its summary and consistency profile.

    Parameters
    ----------
    condition : str
        Label used in the messages.
    n_samples : int
        Number of samples (or batches: the independent units).
    n : int
        Number of observations at the analysis level.
    sd : float
        Standard deviation of the observations at the analysis level.
    consistency : Consistency
        The condition's consistency block.
    unit : str
        Unit for the messages.
    batch_means : bool
        True when the transaction level fell back to batch means inside a single sample.

    Returns
    -------
    tuple of Diagnostic
    """
    out: list[Diagnostic] = []
    c = condition
    if n_samples < MIN_SAMPLES:
        pmin = min_mann_whitney_p(n_samples, n_samples)
        out.append(
            Diagnostic(
                "too-few-samples",
                f"{c!r} has {n_samples} sample(s); with fewer than {MIN_SAMPLES} per condition "
                f"the Mann-Whitney U test cannot reach p < 0.05 (smallest p here: {pmin:.2f})",
                "run at least 10, better 30, samples per condition",
            )
        )
    if sd == 0 and n >= 2:
        out.append(
            Diagnostic(
                "zero-variance",
                f"every observation of {c!r} is identical, so no test or interval is meaningful",
                "check that the timer resolution is fine enough and that the values are "
                "measurements, not a constant",
            )
        )
    mm = consistency.multimodality
    mmt = consistency.multimodality_transactions
    for res, what in ((mm, "observations"), (mmt, "transactions")):
        if res is not None and res.multimodal:
            where = ", ".join(f"{m:.4g}" for m in res.modes)
            out.append(
                Diagnostic(
                    "bimodal",
                    f"the {what} of {c!r} have more than one mode (Silverman's test "
                    f"{p_text(res.p)}; modes near {where} {unit}); one mean describes such a "
                    "distribution badly",
                    "look at the histogram; compare the percentiles, or find what splits the "
                    "runs into two groups (cache misses, checkpoints, a second code path)",
                )
            )
    o = consistency.outliers
    if o.samples:
        out.append(
            Diagnostic(
                "outliers",
                f"{len(o.samples)} sample(s) of {c!r} are outliers by the modified z-score "
                f"(|Mz| > {o.threshold:g}): {_list(c, o.samples)}; they are kept in every "
                "statistic",
                "inspect those samples (background jobs, autovacuum, noisy neighbours); rerun "
                "the experiment rather than deleting them",
            )
        )
    w = consistency.warmup
    if w.detected:
        change = "" if w.change_pct is None else f"{w.change_pct:+.1f}%, "
        out.append(
            Diagnostic(
                "warm-up",
                f"the first {w.first_k} samples of {c!r} are slower than the rest "
                f"({change}one-sided p={w.p_value:.4f})",
                f'add a warm-up period (e.g. warmup = "30s") or discard the first {w.first_k} '
                "samples",
            )
        )
    if w.trend:
        out.append(
            Diagnostic(
                "trend",
                f"the sample values of {c!r} drift over the run (Mann-Kendall tau="
                f"{w.trend_tau:+.2f}, p={w.trend_p:.4f} < {DIAGNOSTIC_ALPHA})",
                "look for growing tables, filling caches or disks, or thermal throttling; "
                "randomize the order of conditions in blocks",
            )
        )
    if batch_means:
        out.append(
            Diagnostic(
                "single-sample",
                f"{c!r} has a single sample, so the transaction-level interval uses batch means "
                "inside it and cannot see run-to-run variation",
                "run several samples per condition; differences between runs are usually "
                "larger than the noise within one",
            )
        )
    return tuple(out)


def environment_differences(
    environments: Mapping[str, Mapping[str, str]],
) -> dict[str, dict[str, str | None]]:
    """Keys whose values differ between the given environments.

    Parameters
    ----------
    environments : mapping
        Environment (key -> value) per condition or run.

    Returns
    -------
    dict
        ``{key: {name: value or None}}`` for every key that is missing somewhere or has more
        than one value; empty when all environments agree.
    """
    keys = sorted({k for env in environments.values() for k in env})
    out: dict[str, dict[str, str | None]] = {}
    for k in keys:
        vals = {name: (None if k not in env else str(env[k])) for name, env in environments.items()}
        if len(set(vals.values())) > 1:
            out[k] = vals
    return out


def _short(v: str | None) -> str:
    if v is None:
        return "(missing)"
    return v if len(v) <= _MAX_VALUE_CHARS else v[: _MAX_VALUE_CHARS - 3] + "..."


def environment_diagnostic(
    environments: Mapping[str, Mapping[str, str]],
) -> Diagnostic | None:
    """An ``environment-differs`` diagnostic listing the differing keys, or None.

    Values are shortened to 60 characters; callers must redact secrets before passing
    environments in.
    """
    diff = environment_differences(environments)
    if not diff:
        return None
    parts = []
    for k, vals in list(diff.items())[:10]:
        shown = ", ".join(f"{name}={_short(v)}" for name, v in vals.items())
        parts.append(f"{k} ({shown})")
    more = f" and {len(diff) - 10} more" if len(diff) > 10 else ""
    return Diagnostic(
        "environment-differs",
        "the compared runs were recorded in different environments: " + "; ".join(parts) + more,
        "rerun the conditions on the same host, server version and settings, or make the "
        "difference an explicit factor of the experiment",
    )
