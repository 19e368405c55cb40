"""Unit-of-work analysis: Erlang C against published and independently computed values, the
t intervals against SciPy and by simulation, and the per-condition figures on stored statistics."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from wannabet.analysis.unit_of_work import (
    ResponseCurve,
    ServerCheck,
    UnitOfWork,
    calibrated_curve,
    erlang_c,
    mmm_response_ms,
    response_curve,
    t_estimate,
    unit_of_work,
    unit_of_work_from_samples,
)
from wannabet.backends import backend_for

#: what the run's backend would supply: how its statistics give CPU, wait and commits
PG = backend_for("postgresql").work()
SQLITE = backend_for("sqlite").work()


def erlang_c_by_sum(m: int, a: float) -> float:
    """The textbook closed form (Kleinrock 1975, eq. 3.42), summed directly."""
    top = a**m / math.factorial(m) * m / (m - a)
    return top / (sum(a**k / math.factorial(k) for k in range(m)) + top)


@pytest.mark.parametrize(
    ("m", "a", "published"),
    [
        (1, 0.5, 0.5),  # M/M/1: P(wait) = rho
        (2, 1.0, 1 / 3),  # two servers at rho = 0.5
        (10, 8.0, 0.4092),  # Erlang C table, 10 agents, 8 Erlangs
    ],
)
def test_erlang_c_matches_published_values(m: int, a: float, published: float) -> None:
    assert erlang_c(m, a) == pytest.approx(published, abs=5e-5)


@given(m=st.integers(1, 40), rho=st.floats(0.0, 0.99))
def test_erlang_c_matches_the_closed_form(m: int, rho: float) -> None:
    a = rho * m
    assert erlang_c(m, a) == pytest.approx(erlang_c_by_sum(m, a), rel=1e-9, abs=1e-12)


def test_mm1_response_time_is_service_over_idle_fraction() -> None:
    # M/M/1: R = S / (1 - rho); S = 2 ms, lambda = 300/s -> rho = 0.6, R = 5 ms.
    assert mmm_response_ms(2.0, 1, 300.0) == pytest.approx(5.0)
    assert mmm_response_ms(2.0, 1, 500.0) == math.inf
    with pytest.raises(ValueError, match="m must be"):
        erlang_c(0, 0.1)


def test_the_curve_starts_at_service_plus_wait_and_rises() -> None:
    curve = response_curve(1.0, 0.5, 2, 500.0, 1.6)
    assert curve is not None
    assert curve.response_ms[0] == pytest.approx(1.5)
    assert np.all(np.diff(curve.response_ms) > 0)
    assert curve.capacity_units_per_s == pytest.approx(2000.0)
    assert curve.units_per_s[-1] < curve.capacity_units_per_s


def test_t_estimate_matches_scipy() -> None:
    x = np.random.default_rng(3).normal(10, 2, 12)
    est = t_estimate(x)
    assert est is not None
    low, high = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert (est.low, est.high) == pytest.approx((low, high))
    one = t_estimate([4.0])
    assert one is not None and one.low is None and one.mean == 4.0
    assert t_estimate([]) is None


def test_t_estimate_covers_the_mean_at_its_nominal_rate() -> None:
    rng = np.random.default_rng(11)
    hits = 0
    reps = 4000
    for _ in range(reps):
        est = t_estimate(rng.normal(5.0, 1.0, 8))
        assert est is not None and est.low is not None and est.high is not None
        hits += est.low <= 5.0 <= est.high
    # 95% nominal; the binomial sd at 4000 reps is 0.34%.
    assert 0.94 <= hits / reps <= 0.96


def pg_sample(
    units: int,
    cpu_s: float | None,
    wait_s: float,
    *,
    valid: bool = True,
    server: int | None = None,
    events: list[tuple[str, str, float]] | None = None,
    cores: int | None = 2,
) -> dict[str, Any]:
    events = events or [("IO", "WALSync", wait_s)]
    return {
        "valid": valid,
        "engine": {"committed": units, "elapsed_s": 2.0, "cpu_s": 0.1, "busy_s": 3.0},
        "postgres": {
            "cpu_s": cpu_s,
            "cores": cores,
            "elapsed_s": 2.0,
            "database": {"active_time": 1000.0 * (wait_s + (cpu_s or 0))},
            "waits": {
                "polls": 100,
                "wait_s": wait_s,
                "events": [{"type": t, "event": e, "wait_s": w} for t, e, w in events],
            },
            "engine_commits": units + 10,
            "server_commits": units + 10 if server is None else server,
            "commits_check_reliable": True,
        },
    }


def test_unit_of_work_of_postgres_samples() -> None:
    samples = [pg_sample(1000, 0.5, 1.0), pg_sample(2000, 0.8, 1.6)]
    u = unit_of_work("on", samples, source=PG)
    assert u.units_per_s is not None and u.units_per_s.mean == pytest.approx(750.0)
    assert u.cpu_ms_per_unit is not None and u.cpu_ms_per_unit.mean == pytest.approx(0.45)
    assert u.wait_ms_per_unit is not None and u.wait_ms_per_unit.mean == pytest.approx(0.9)
    assert u.response_ms_per_unit is not None
    assert u.response_ms_per_unit.mean == pytest.approx(1.35)
    assert u.utilization is not None and u.utilization.mean == pytest.approx((0.125 + 0.2) / 2)
    assert [w.event for w in u.top_waits] == ["WALSync"]
    assert u.top_waits[0].ms_per_unit == pytest.approx(2600.0 / 3000)
    assert u.server_check is not None and u.server_check.ok
    assert u.curve is not None and u.curve.cores == 2
    d = u.to_dict()
    assert set(d) >= {
        "unit",
        "units_per_s",
        "cpu_ms_per_unit",
        "wait_ms_per_unit",
        "response_ms_per_unit",
        "top_waits",
    }


def test_invalid_samples_are_left_out_and_said_so() -> None:
    samples = [pg_sample(1000, 0.5, 1.0), pg_sample(1000, 5.0, 9.0, valid=False)]
    u = unit_of_work("c", samples, source=PG)
    assert u.valid_samples == 1
    assert u.cpu_ms_per_unit is not None and u.cpu_ms_per_unit.mean == pytest.approx(0.5)
    assert any("invalid statistics" in n for n in u.notes)


def test_a_commit_mismatch_over_one_percent_is_flagged() -> None:
    ok = unit_of_work("c", [pg_sample(1000, 0.5, 1.0, server=1015)], source=PG)
    assert ok.server_check is not None and ok.server_check.ok
    bad = unit_of_work("c", [pg_sample(1000, 0.5, 1.0, server=1030)], source=PG)
    assert bad.server_check is not None and bad.server_check.ok is False
    assert any("commits" in n for n in bad.notes)


def test_a_remote_server_has_no_cpu_and_no_curve() -> None:
    u = unit_of_work("c", [pg_sample(1000, None, 1.0, cores=None)], source=PG)
    assert u.cpu_ms_per_unit is None and u.response_ms_per_unit is None and u.curve is None
    assert u.wait_ms_per_unit is not None
    assert any("CPU is unknown" in n for n in u.notes)


def test_sampler_warnings_reach_the_notes_once() -> None:
    a, b = pg_sample(1000, 1.0, 0.5), pg_sample(1000, 1.0, 0.5)
    for doc in (a, b):
        doc["warnings"] = ["postgres: bgwriter is not available: permission denied"]
    u = unit_of_work("c", [a, b], source=PG)
    assert u.notes == ("statistics: postgres: bgwriter is not available: permission denied",)


def test_postgres_without_its_sampler_claims_no_cpu_or_wait() -> None:
    doc = pg_sample(1000, 0.5, 1.0)
    del doc["postgres"]
    doc["engine"]["server_commits"] = 1010
    doc["warnings"] = ["postgres: cannot open a statistics connection: too many clients"]
    u = unit_of_work("c", [doc], source=PG)
    assert u.cpu_ms_per_unit is None and u.wait_ms_per_unit is None
    assert u.engine_cpu_ms_per_unit is not None  # the client side is still measured
    assert any("too many clients" in n for n in u.notes)


def test_sqlite_wait_is_busy_time_minus_cpu() -> None:
    doc = {
        "valid": True,
        "engine": {"committed": 500, "elapsed_s": 1.0, "cpu_s": 0.4, "busy_s": 1.4},
        "client_process": {"cores": 2},
    }
    rows = [{"condition": "OFF", "stats": doc}, {"condition": "x"}]
    (u,) = unit_of_work_from_samples(rows, source=SQLITE)
    assert u.cpu_source == "engine threads"
    assert u.cpu_ms_per_unit is not None and u.cpu_ms_per_unit.mean == pytest.approx(0.8)
    assert u.wait_ms_per_unit is not None and u.wait_ms_per_unit.mean == pytest.approx(2.0)
    assert u.utilization is not None and u.utilization.mean == pytest.approx(0.2)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 10**6), st.floats(0.0, 100.0), st.floats(0.0, 100.0)),
        min_size=1,
        max_size=12,
    )
)
def test_response_is_cpu_plus_wait_and_intervals_hold_their_means(
    rows: list[tuple[int, float, float]],
) -> None:
    u = unit_of_work("c", [pg_sample(n, c, w) for n, c, w in rows], source=PG)
    assert u.cpu_ms_per_unit and u.wait_ms_per_unit and u.response_ms_per_unit
    assert u.response_ms_per_unit.mean == pytest.approx(
        u.cpu_ms_per_unit.mean + u.wait_ms_per_unit.mean, rel=1e-9, abs=1e-12
    )
    for est in (u.cpu_ms_per_unit, u.wait_ms_per_unit, u.response_ms_per_unit):
        if est.low is not None and est.high is not None:
            assert est.low <= est.mean + 1e-9 and est.mean <= est.high + 1e-9


# -- the curve through the measured point, utilization, and the server count --------------


def test_the_curve_passes_through_the_measured_point() -> None:
    # S = 0.5 ms, 2 cores, λ = 500/s: the M/M/2 CPU part alone is below the measured 1.5 ms.
    u = unit_of_work("c", [pg_sample(1000, 0.5, 1.0), pg_sample(1000, 0.5, 1.0)], source=PG)
    c = u.curve
    assert c is not None and u.units_per_s is not None and u.response_ms_per_unit is not None
    assert c.operating_units_per_s == pytest.approx(u.units_per_s.mean)
    assert c.operating_response_ms == pytest.approx(u.response_ms_per_unit.mean)
    assert c.response_at(c.operating_units_per_s) == pytest.approx(c.operating_response_ms)
    # The fixed wait is what the CPU model leaves of the measured response, not the raw wait.
    assert c.wait_ms == pytest.approx(1.5 - mmm_response_ms(0.5, 2, 500.0))
    assert c.wait_ms < u.wait_ms_per_unit.mean  # type: ignore[union-attr]


def test_a_point_below_the_cpu_model_stays_where_measured_and_is_noted() -> None:
    # M/M/1, S = 2 ms at 300/s: the model says 5 ms, the measurement 3 ms.
    curve, note = calibrated_curve(2.0, 3.0, 1, 300.0)
    assert curve is not None and curve.wait_ms == 0.0
    assert curve.operating_response_ms == pytest.approx(3.0)
    assert curve.response_at(300.0) == pytest.approx(5.0)
    assert 300.0 in curve.units_per_s  # the curve reaches the measured rate
    assert note is not None and "5 ms" in note and "upper bound" in note
    none, why = calibrated_curve(2.0, 3.0, 1, 600.0)
    assert none is None and why is not None and "capacity" in why


def test_utilization_uses_the_window_of_lambda() -> None:
    doc = pg_sample(1000, 0.5, 0.2)
    doc["postgres"]["elapsed_s"] = 2.6  # the sampler's window includes its own set-up
    u = unit_of_work("c", [doc], source=PG)
    assert u.utilization is not None and u.units_per_s and u.cpu_ms_per_unit
    # λ·S/m with λ = 1000 / 2.0 s, S = 0.5 ms, m = 2
    assert u.utilization.mean == pytest.approx(500.0 * 0.5e-3 / 2)
    assert u.utilization.mean == pytest.approx(
        u.units_per_s.mean * u.cpu_ms_per_unit.mean / 1000.0 / 2
    )


def test_wait_above_cpu_notes_that_the_curve_does_not_model_the_io_limit() -> None:
    assert any(
        "not the CPU" in n for n in unit_of_work("c", [pg_sample(1000, 0.2, 1.0)], source=PG).notes
    )
    assert not any(
        "not the CPU" in n for n in unit_of_work("c", [pg_sample(1000, 1.0, 0.2)], source=PG).notes
    )


def sqlite_doc(cache_write: int) -> dict[str, Any]:
    return {
        "valid": True,
        "engine": {
            "committed": 500,
            "elapsed_s": 1.0,
            "cpu_s": 0.4,
            "busy_s": 1.4,
            "cache_write": cache_write,
        },
        "client_process": {"cores": 4},
    }


def test_sqlite_curves_model_the_cpu_the_engine_may_use() -> None:
    # Writers and readers alike: the engine threads' CPU runs in parallel outside the write lock.
    for cache_write in (120, 0):
        u = unit_of_work("c", [sqlite_doc(cache_write)], source=SQLITE)
        assert u.curve is not None and u.curve.cores == 4
        assert u.curve.service_ms == pytest.approx(u.cpu_ms_per_unit.mean)  # type: ignore[union-attr]


# -- means over the same samples, top waits, the commit check ------------------------------


def test_cpu_wait_and_response_are_means_over_the_same_samples() -> None:
    full = pg_sample(1000, 1.0, 0.5)
    no_waits = pg_sample(1000, 3.0, 0.0)
    no_waits["postgres"]["waits"] = {"polls": 0, "wait_s": None, "events": []}
    u = unit_of_work("c", [full, no_waits], source=PG)
    assert u.cpu_ms_per_unit and u.wait_ms_per_unit and u.response_ms_per_unit
    assert u.cpu_ms_per_unit.mean == pytest.approx(1.0)  # not (1 + 3) / 2
    assert u.response_ms_per_unit.mean == pytest.approx(
        u.cpu_ms_per_unit.mean + u.wait_ms_per_unit.mean
    )
    # ms per unit of an event divides by the units of the samples that sampled waits.
    assert u.top_waits[0].ms_per_unit == pytest.approx(0.5)


def test_the_commit_check_flags_a_bad_sample_even_when_the_sums_cancel() -> None:
    high, low = pg_sample(1000, 1.0, 0.5, server=1061), pg_sample(1000, 1.0, 0.5, server=959)
    u = unit_of_work("c", [high, low], source=PG)
    check = u.server_check
    assert check is not None and check.mismatch is not None and check.mismatch < 0.01
    assert check.worst_sample_mismatch == pytest.approx(51 / 1010)
    assert check.ok is False
    assert ServerCheck(100, 100, 1, worst_sample_mismatch=0.0).ok is True


def _unit_with(check: ServerCheck | None, curve: ResponseCurve | None) -> UnitOfWork:
    return UnitOfWork(
        condition="on",
        unit="commit",
        samples=2,
        valid_samples=2,
        units_per_s=None,
        cpu_ms_per_unit=None,
        wait_ms_per_unit=None,
        response_ms_per_unit=None,
        utilization=None,
        top_waits=(),
        cpu_source="server processes (/proc)",
        wait_source="sampled wait events",
        server_check=check,
        curve=curve,
    )


def test_summary_puts_a_commit_mismatch_first() -> None:
    from wannabet.render.summary import unit_of_work_warnings

    bad = _unit_with(ServerCheck(1000, 1000, 2, worst_sample_mismatch=0.05), None)
    good = _unit_with(ServerCheck(1000, 1005, 2, worst_sample_mismatch=0.005), None)
    (line,) = unit_of_work_warnings([bad, good])
    assert line.startswith("COMMIT MISMATCH on: engine 1000, server 1000")
    assert "worst sample 5.0%" in line and "limit 1%" in line


def test_curve_lines_state_capacity_and_the_cost_of_more_arrivals() -> None:
    from wannabet.render.summary import curve_lines

    # M/M/1 with S = 2 ms at 250/s (50%): R(1.5λ = 375/s) = 2 / (1 − 0.75) = 8 ms; 2λ saturates.
    curve = response_curve(2.0, 0.0, 1, 250.0, 4.0)
    (line,) = curve_lines([_unit_with(None, curve), _unit_with(None, None)])
    assert "M/M/1 with S = 2.00 ms" in line and "capacity 500.0/s" in line and "(50%)" in line
    assert "1.5× λ → 8.00 ms" in line and "2× λ → saturated" in line


def test_no_queueing_curve_for_a_closed_loop_that_cannot_queue() -> None:
    samples = [pg_sample(1000, 0.5, 1.0), pg_sample(2000, 0.8, 1.6)]  # 2 cores
    # One or two sessions on two cores never wait for a CPU: M/M/2 would invent a queue.
    for sessions in (1, 2):
        u = unit_of_work("c", samples, source=PG, closed_sessions=sessions)
        assert u.curve is None
        assert any("cannot queue for CPU" in n for n in u.notes), u.notes
    # More sessions than cores, or an open loop (None), get the curve.
    assert unit_of_work("c", samples, source=PG, closed_sessions=8).curve is not None
    assert unit_of_work("c", samples, source=PG).curve is not None


def test_a_note_several_conditions_share_is_said_once() -> None:
    from wannabet.render.summary import unit_of_work_warnings

    samples = [pg_sample(1000, 0.5, 1.0), pg_sample(2000, 0.8, 1.6)]
    units = [unit_of_work(c, samples, source=PG, closed_sessions=1) for c in ("a", "b", "c")]
    lines = unit_of_work_warnings(units)
    # Each note once, for the three conditions (this sample's waits exceed its CPU, too).
    assert len(lines) == len(units[0].notes) == 2
    assert lines[0].startswith("a, b, c: a closed loop of 1 session(s) on 2 core(s)")
    assert all(line.startswith("a, b, c: ") for line in lines)


MYSQL = backend_for("mysql").work()


def mysql_sample(events: list[tuple[str, float]], log_written: int) -> dict[str, Any]:
    """A MariaDB sample as its sampler stores it (figures of a recorded 1,000-commit sample)."""
    return {
        "valid": True,
        "engine": {"committed": 1000, "elapsed_s": 2.0, "cpu_s": 0.1, "busy_s": 3.0},
        "mysql": {
            "cpu_s": 0.2,
            "cores": 2,
            "status": {"Innodb_os_log_written": log_written, "Innodb_data_fsyncs": 400},
            "waits": {
                "wait_s": sum(w for _, w in events),  # as written before handlers were left out
                "events": [
                    {"type": e.split("/")[0], "event": e, "count": 1000, "wait_s": w}
                    for e, w in events
                ],
            },
            "server_commits": 1000,
            "engine_commits": 1000,
            "commits_check_reliable": True,
        },
    }


def test_mysql_handler_calls_are_not_waits() -> None:
    # The recorded sample: 0.066 s in handler calls (the rows' CPU), 0.004 s of table locks,
    # 0.012 s of data-file I/O. Only the file I/O is a wait; the handler time holds CPU.
    sample = mysql_sample(
        [
            ("io/table/sql/handler", 0.066),
            ("lock/table/sql/handler", 0.004),
            ("io/file/innodb/innodb_data_file", 0.012),
            ("io/file/innodb/innodb_log_file", 0.030),
        ],
        log_written=5_000_000,
    )
    u = unit_of_work("c", [sample, sample], source=MYSQL)
    assert u.wait_ms_per_unit is not None
    assert u.wait_ms_per_unit.mean == pytest.approx((0.012 + 0.030) * 1000 / 1000)
    assert [w.event for w in u.top_waits] == [
        "io/file/innodb/innodb_log_file",
        "io/file/innodb/innodb_data_file",
    ]
    # The redo log's writes were timed: nothing to say about them.
    assert not any("redo log" in n for n in u.notes), u.notes


def test_mysql_redo_log_writes_the_server_does_not_time_are_said() -> None:
    # MariaDB 10.11 with innodb_flush_log_at_trx_commit = 1: redo written, no log file event.
    timed = [("io/table/sql/handler", 0.066), ("io/file/innodb/innodb_data_file", 0.012)]
    u = unit_of_work("c", [mysql_sample(timed, log_written=5_000_000)] * 3, source=MYSQL)
    notes = [n for n in u.notes if "redo log" in n]
    assert len(notes) == 1 and "not in the wait per unit" in notes[0], u.notes
    assert u.wait_ms_per_unit is not None
    assert u.wait_ms_per_unit.mean == pytest.approx(0.012)
    # The text summary says it too, as the JSON and the report do.
    from wannabet.render.summary import unit_of_work_warnings

    assert any("redo log" in line for line in unit_of_work_warnings([u])), u.notes
    # A read-only sample writes no redo: no note.
    u = unit_of_work("c", [mysql_sample(timed, log_written=0)], source=MYSQL)
    assert not any("redo log" in n for n in u.notes), u.notes


def test_a_stray_commit_or_two_in_a_small_sample_is_not_a_mismatch() -> None:
    # Catalog 08's case: about 43 commits per sample, one of another backend's in one of them
    # (2.3% of that sample), the sums 0.1% apart.
    samples = [pg_sample(33, 1.0, 0.5, server=44 if i % 10 == 0 else 43) for i in range(30)]
    check = unit_of_work("c", samples, source=PG).server_check
    assert check is not None and check.ok is True and check.worst_sample_mismatch is None
    # Three apart is more than a stray job's commits: that sample counts.
    samples[0] = pg_sample(33, 1.0, 0.5, server=46)
    check = unit_of_work("c", samples, source=PG).server_check
    assert check is not None and check.ok is False
    assert check.worst_sample_mismatch == pytest.approx(3 / 43)


def test_work_values_are_the_per_sample_figures_summary_averages() -> None:
    from wannabet.analysis.unit_of_work import work_values

    samples = [pg_sample(1000, 0.5, 1.0), pg_sample(2000, 0.8, 1.6), pg_sample(10, 9.0, 9.0)]
    samples[2]["valid"] = False  # invalid statistics: no value, as summary leaves it out
    u = unit_of_work("c", samples, source=PG)
    cpu = work_values(samples, "cpu", source=PG)
    wait = work_values(samples, "wait", source=PG)
    response = work_values(samples, "response", source=PG)
    assert cpu == pytest.approx([0.5, 0.4, None]) and wait == pytest.approx([1.0, 0.8, None])
    assert response == pytest.approx([1.5, 1.2, None])
    assert u.cpu_ms_per_unit is not None and u.response_ms_per_unit is not None
    assert u.cpu_ms_per_unit.mean == pytest.approx((0.5 + 0.4) / 2)
    assert u.response_ms_per_unit.mean == pytest.approx((1.5 + 1.2) / 2)
    # A remote server's sample has no CPU: no cpu or response value, its wait still counts.
    remote = pg_sample(1000, None, 1.0)
    assert work_values([remote], "cpu", source=PG) == [None]
    assert work_values([remote], "response", source=PG) == [None]
    assert work_values([remote], "wait", source=PG) == pytest.approx([1.0])
