"""The per-condition summary of a run in every output format.

The JSON form is a contract (``docs/cli.md``)::

    {"run": {...}, "conditions": [{"condition": "synchronous=OFF", "samples": N,
      "transactions": N, "errors": N, "errors_by_status": {...}, "tps": x,
      "latency_ms": {"mean", "p50", "p95", "p99", "max"}}],
     "types": [{"condition": ..., "txn": "update", "transactions": N, "errors": N,
      "errors_by_status": {...}, "tps": x, "latency_ms": {...}}]}

``types`` (per condition and transaction type, like pgbench ``-r``) is there only when the run
has several transaction types; ``relations`` (per condition, the tables and indexes the samples
used on PostgreSQL: mean counters per sample, HOT and buffer-hit shares, dead tuples after) only
when the run's statistics have them; so is each condition's ``client`` (wannabet's process: the
median and range of the samples' peak memory, bytes received per transaction).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table

from wannabet.render.format import (
    MISSING,
    TimeUnit,
    cell,
    fmt_num,
    markup,
    one_line,
    time_unit,
)
from wannabet.render.markdown import markdown_table
from wannabet.store import ConditionSummary, RunInfo

if TYPE_CHECKING:
    from wannabet.analysis.client import ClientCost
    from wannabet.analysis.relations import RelationActivity
    from wannabet.analysis.unit_of_work import UnitOfWork
    from wannabet.datasets import OpenLoop, TypeSummary
    from wannabet.store.queries import GeneratorSummary

_COLUMNS = (
    "condition",
    "samples",
    "transactions",
    "errors",
    "tps",
    "mean_ms",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
)


def summary_dict(
    run: RunInfo,
    rows: Sequence[ConditionSummary],
    units: Sequence[UnitOfWork] = (),
    types: Sequence[TypeSummary] = (),
    relations: Sequence[RelationActivity] = (),
    open_loop: Sequence[OpenLoop] = (),
    degraded: Sequence[Mapping[str, Any]] = (),
    generators: Sequence[GeneratorSummary] = (),
    client: Sequence[ClientCost] = (),
) -> dict[str, Any]:
    by_label = {u.condition: u for u in units}
    costs = {c.condition: c for c in client}
    conditions = []
    for r in rows:
        d = r.to_dict()
        cost = costs.get(r.condition)
        if cost is not None:
            d["client"] = _finite(cost.to_dict())
        u = by_label.get(r.condition)
        if u is not None:
            d["unit_of_work"] = _finite(u.to_dict())
            check = u.server_check
            d["server_check"] = (
                check.to_dict()
                if check is not None
                else {"engine_commits": None, "server_commits": None}
            )
        conditions.append(d)
    out: dict[str, Any] = {"run": run.to_dict(), "conditions": conditions}
    if types:
        out["types"] = [_finite(t.to_dict()) for t in types]
    if relations:
        out["relations"] = [_finite(r.to_dict()) for r in relations]
    if open_loop:
        out["open_loop"] = [_finite(o.to_dict()) for o in open_loop]
    if degraded:
        out["degraded"] = [dict(d) for d in degraded]
    if generators:
        out["generators"] = [_finite(g.to_dict()) for g in generators]
    return out


def summary_json(
    run: RunInfo,
    rows: Sequence[ConditionSummary],
    units: Sequence[UnitOfWork] = (),
    types: Sequence[TypeSummary] = (),
    relations: Sequence[RelationActivity] = (),
    open_loop: Sequence[OpenLoop] = (),
    degraded: Sequence[Mapping[str, Any]] = (),
    generators: Sequence[GeneratorSummary] = (),
    client: Sequence[ClientCost] = (),
) -> str:
    doc = summary_dict(run, rows, units, types, relations, open_loop, degraded, generators, client)
    return json.dumps(doc, indent=2, allow_nan=False)


_TYPE_HEADER: tuple[str, ...] = ("condition", "txn", "transactions", "errors", "TPS")
_LATENCY_COLUMNS = ("mean", "p50", "p95", "p99", "max")


def _latency_units(table: Sequence[Sequence[Any]]) -> list[TimeUnit]:
    """Per latency column (the last five cells of each row, in ms), the unit that suits it:
    one unit a column, so its values compare (µs, ms or s); JSON and CSV stay in ms."""
    return [time_unit(row[i] for row in table) for i in range(-5, 0)]


def _latency_header(units: Sequence[TimeUnit]) -> list[str]:
    return [f"{name} {u}" for name, u in zip(_LATENCY_COLUMNS, units, strict=True)]


def _type_cells(t: TypeSummary) -> list[Any]:
    lat = t.latency_ms
    return [t.condition, t.txn, t.transactions, t.errors, t.tps] + [
        lat[k] for k in ("mean", "p50", "p95", "p99", "max")
    ]


def types_table(types: Sequence[TypeSummary]) -> Table:
    """Per condition and transaction type: pgbench ``-r``'s view, with the tail."""
    table = Table(title="Per transaction type", title_justify="left")
    table.add_column("condition", style="bold", overflow="fold")
    table.add_column("txn", overflow="fold")
    units = _latency_units([_type_cells(t) for t in types])
    for name in (*_TYPE_HEADER[2:5], *_latency_header(units)):
        table.add_column(name, justify="right")
    for t in types:
        cells = _type_cells(t)
        errors = f"{t.errors:,}" if not t.errors else f"[red]{t.errors:,}[/red]"
        table.add_row(
            markup(t.condition),
            markup(t.txn),
            f"{t.transactions:,}",
            errors,
            fmt_num(cells[4]),
            *(u.num(c) for u, c in zip(units, cells[5:], strict=True)),
        )
    return table


def types_markdown(types: Sequence[TypeSummary]) -> str:
    """The per-type rows as an aligned Markdown table, under a bold title."""
    body = []
    units = _latency_units([_type_cells(t) for t in types])
    for t in types:
        cells = _type_cells(t)
        body.append([cells[0], cells[1], f"{cells[2]:,}", f"{cells[3]:,}", fmt_num(cells[4])])
        body[-1] += [u.num(c) for u, c in zip(units, cells[5:], strict=True)]
    header = [*_TYPE_HEADER[:5], *_latency_header(units)]
    table = markdown_table(header, body, ["left", "left"] + ["right"] * 8)
    return "**Per transaction type**\n\n" + table


def _finite(value: Any) -> Any:
    """JSON has no inf/NaN: a saturated point of a curve becomes null."""
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


#: relations shown per condition and kind in the tables (JSON has every one)
RELATIONS_SHOWN = 8


def relation_rows(relations: Sequence[RelationActivity]) -> list[tuple[str, list[str]]]:
    """(kind, cells) per shown relation: tables then indexes per condition, busiest first."""
    shown: dict[tuple[str, str], int] = {}
    rows: list[tuple[str, list[str]]] = []
    for r in relations:
        seen = shown.get((r.condition, r.kind), 0)
        if seen >= RELATIONS_SHOWN:
            continue
        shown[(r.condition, r.kind)] = seen + 1
        m = r.per_sample
        share = MISSING if r.hit_share is None else f"{r.hit_share:.1%}"
        if r.kind == "table":
            hot = "" if r.hot_share is None else f" ({r.hot_share:.0%} HOT)"
            dead = MISSING if r.dead_tuples is None else fmt_num(r.dead_tuples)
            cells = [
                r.condition,
                r.relation,
                fmt_num(m["seq_scan"]),
                fmt_num(m["idx_scan"]),
                fmt_num(m["n_tup_ins"]),
                fmt_num(m["n_tup_upd"]) + hot,
                fmt_num(m["n_tup_del"]),
                dead,
                share,
            ]
        else:
            cells = [
                r.condition,
                f"{r.relation} on {r.table}" if r.table else r.relation,
                fmt_num(m["idx_scan"]),
                fmt_num(m["idx_tup_read"]),
                fmt_num(m["idx_tup_fetch"]),
                share,
            ]
        rows.append((r.kind, cells))
    return rows


TABLE_HEADER = ["condition", "table", "seq scans", "idx scans", "inserted", "updated"]
TABLE_HEADER += ["deleted", "dead after", "buffer hits"]
INDEX_HEADER = ["condition", "index", "scans", "tuples read", "tuples fetched", "buffer hits"]


def relation_sections(
    relations: Sequence[RelationActivity],
) -> list[tuple[str, list[str], list[list[str]]]]:
    """("Tables" or "Indexes", header, rows) for each kind the samples used: what the terminal,
    the Markdown and the HTML report show (per condition, mean per sample)."""
    rows = relation_rows(relations)
    out = []
    for kind, header, title in (
        ("table", TABLE_HEADER, "Tables"),
        ("index", INDEX_HEADER, "Indexes"),
    ):
        body = [cells for k, cells in rows if k == kind]
        if body:
            out.append((title, header, body))
    return out


def relations_tables(relations: Sequence[RelationActivity]) -> list[Table]:
    """Tables and indexes the samples used: per condition, mean per sample."""
    out = []
    for title, header, body in relation_sections(relations):
        table = Table(title=f"{title} (per sample, mean)", title_justify="left")
        for i, name in enumerate(header):
            table.add_column(name, justify="left" if i < 2 else "right", overflow="fold")
        for cells in body:
            table.add_row(*(markup(c) for c in cells))
        out.append(table)
    return out


def relations_markdown(relations: Sequence[RelationActivity]) -> str:
    """The same tables as :func:`relations_tables`, as Markdown."""
    parts = []
    for title, header, body in relation_sections(relations):
        align = ["left", "left"] + ["right"] * (len(header) - 2)
        parts.append(f"**{title}** (per sample, mean)\n\n" + markdown_table(header, body, align))
    return "\n".join(parts)


def unit_of_work_table(units: Sequence[UnitOfWork]) -> Table:
    """The unit-of-work table: λ, CPU, wait and response per unit, utilization, top waits."""
    unit = units[0].unit if units else "commit"
    title = f"Unit of work (per {unit}, mean of samples)"
    table = Table(
        title=title, title_justify="left", caption=UNIT_OF_WORK_NOTE, caption_justify="left"
    )
    table.add_column("condition", style="bold", overflow="fold")
    for name in ("units/s", "CPU ms", "wait ms", "resp ms", "util", "written", "commits eng/srv"):
        table.add_column(name, justify="right")
    table.add_column("top waits", overflow="fold")
    for u in units:
        d = u.to_dict()
        check = u.server_check
        commits = MISSING
        if check is not None:
            commits = f"{check.engine_commits}/{check.server_commits}"
            if check.ok is False:
                commits = f"[red bold]{commits}[/red bold]"
        util = d["utilization"]
        table.add_row(
            markup(u.condition),
            fmt_num(d["units_per_s"]),
            fmt_num(d["cpu_ms_per_unit"]),
            fmt_num(d["wait_ms_per_unit"]),
            fmt_num(d["response_ms_per_unit"]),
            MISSING if util is None else f"{util:.0%}",
            _written(d["io_per_unit"]),
            commits,
            markup(", ".join(f"{w.event} {w.share:.0%}" for w in u.top_waits[:3]) or MISSING),
        )
    return table


def unit_of_work_markdown(units: Sequence[UnitOfWork]) -> str:
    """The unit-of-work table, the curve lines and the warnings, as aligned Markdown."""
    unit = units[0].unit if units else "commit"
    body = []
    for u in units:
        d = u.to_dict()
        check = u.server_check
        commits = MISSING if check is None else f"{check.engine_commits}/{check.server_commits}"
        util = d["utilization"]
        waits = ", ".join(f"{w.event} {w.share:.0%}" for w in u.top_waits[:3]) or MISSING
        body.append(
            [
                u.condition,
                fmt_num(d["units_per_s"]),
                fmt_num(d["cpu_ms_per_unit"]),
                fmt_num(d["wait_ms_per_unit"]),
                fmt_num(d["response_ms_per_unit"]),
                MISSING if util is None else f"{util:.0%}",
                _written(d["io_per_unit"]),
                commits,
                waits,
            ]
        )
    header = ["condition", "units/s", "CPU ms", "wait ms", "response ms", "utilization"]
    header += ["written", "commits engine/server", "top waits"]
    table = markdown_table(header, body, ["left"] + ["right"] * 7 + ["left"])
    lines = [f"**Unit of work** (per {cell(unit)}, mean of samples)", "", table.rstrip("\n")]
    lines += ["", f"_{UNIT_OF_WORK_NOTE}._"]
    extra = [f"- {cell(line)}" for line in curve_lines(units)]
    extra += [f"- **warning:** {cell(w)}" for w in unit_of_work_warnings(units)]
    return "\n".join(lines + (["", *extra] if extra else [])) + "\n"


CLIENT_NOTE = (
    "wannabet's process: peak resident memory per sample (median, range); bytes received"
    " from the server per transaction (PostgreSQL and MySQL)"
)


def _mib(value: float | None) -> str:
    return MISSING if value is None else f"{value / 2**20:,.1f}"


def _client_cells(c: ClientCost) -> list[str]:
    spread = (
        MISSING
        if c.peak_rss_min_bytes is None or c.peak_rss_max_bytes is None
        else f"{_mib(c.peak_rss_min_bytes)}–{_mib(c.peak_rss_max_bytes)}"
    )
    per_txn = c.bytes_per_transaction
    return [
        str(c.samples),
        _mib(c.peak_rss_bytes),
        spread,
        MISSING if per_txn is None else fmt_num(per_txn),
    ]


_CLIENT_HEADER = ("samples", "peak MiB", "range MiB", "bytes in/txn")


def client_table(client: Sequence[ClientCost]) -> Table:
    """The client's cost per condition: peak memory and bytes received per transaction."""
    table = Table(
        title="Client (median of samples)",
        title_justify="left",
        caption=CLIENT_NOTE,
        caption_justify="left",
    )
    table.add_column("condition", style="bold", overflow="fold")
    for name in _CLIENT_HEADER:
        table.add_column(name, justify="right")
    for c in client:
        table.add_row(markup(c.condition), *_client_cells(c))
    return table


def client_markdown(client: Sequence[ClientCost]) -> str:
    body = [[c.condition, *_client_cells(c)] for c in client]
    table = markdown_table(["condition", *_CLIENT_HEADER], body, ["left"] + ["right"] * 4)
    return f"**Client** (median of samples)\n\n{table.rstrip()}\n\n_{CLIENT_NOTE}._\n"


def _written(io: dict[str, float]) -> str:
    """Bytes written per unit: WAL on PostgreSQL, redo on MySQL, the process's writes on
    SQLite."""
    for key, label in (
        ("wal_bytes", "WAL"),
        ("Innodb_os_log_written", "redo"),
        ("write_bytes", ""),
    ):
        if io.get(key) is not None:
            value = io[key]
            text = f"{value / 1024:.1f} KiB" if value >= 1024 else f"{value:.0f} B"
            return f"{label} {text}".strip()
    return MISSING


def curve_lines(units: Sequence[UnitOfWork]) -> list[str]:
    """The response-time curve in words: capacity, and what more arrivals would cost."""
    out = []
    for u in units:
        c = u.curve
        if c is None:
            continue
        lam = c.operating_units_per_s
        at = ", ".join(
            f"{k:g}× λ → {fmt_num(c.response_at(k * lam))} ms"
            if k * lam < c.capacity_units_per_s
            else f"{k:g}× λ → saturated"
            for k in (1.5, 2.0, 3.0)
        )
        out.append(
            f"{u.condition}: M/M/{c.cores} with S = {fmt_num(c.service_ms)} ms CPU per {u.unit},"
            f" capacity {fmt_num(c.capacity_units_per_s)}/s, now at {fmt_num(lam)}/s"
            f" ({lam / c.capacity_units_per_s:.0%}); {at}"
        )
    return out


def unit_of_work_warnings(units: Sequence[UnitOfWork]) -> list[str]:
    """Statistics notes; a commit mismatch comes first, because it voids the run's figures."""
    out = []
    for u in units:
        check = u.server_check
        if check is not None and check.ok is False:
            from wannabet.analysis.unit_of_work import COMMIT_MISMATCH

            worst = check.worst_sample_mismatch
            out.append(
                f"COMMIT MISMATCH {u.condition}: engine {check.engine_commits}, server"
                f" {check.server_commits} ({check.mismatch or 0.0:.1%}, worst sample"
                f" {worst or 0.0:.1%}; limit {COMMIT_MISMATCH:.0%}): the run is not valid"
            )
    # A note several conditions share is said once, naming them: the same sentence per
    # condition is noise that hides the notes that differ.
    by_note: dict[str, list[str]] = {}
    for u in units:
        for n in u.notes:
            # The commit mismatch is said above, as a line of its own; every other note here.
            if not n.startswith("the server counted"):
                by_note.setdefault(n, []).append(u.condition)
    out.extend(f"{', '.join(conditions)}: {n}" for n, conditions in by_note.items())
    return out


def _flat(row: ConditionSummary) -> list[Any]:
    lat = row.latency_ms
    return [
        row.condition,
        row.samples,
        row.transactions,
        row.errors,
        row.tps,
        lat["mean"],
        lat["p50"],
        lat["p95"],
        lat["p99"],
        lat["max"],
    ]


def _csv(value: object) -> object:
    """A CSV field: a name on one line with its control characters shown escaped."""
    if value is None:
        return ""
    return one_line(value) if isinstance(value, str) else value


def summary_csv(rows: Sequence[ConditionSummary], types: Sequence[TypeSummary] = ()) -> str:
    """One row per condition; with per-type rows, a ``txn`` column (``all`` on the condition
    rows) and one row per condition and type after them (``samples`` left empty)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_COLUMNS + (("txn",) if types else ()))
    for row in rows:
        writer.writerow([_csv(v) for v in _flat(row)] + (["all"] if types else []))
    for t in types:
        cells = _type_cells(t)
        flat = [cells[0], None, *cells[2:], cells[1]]
        writer.writerow([_csv(v) for v in flat])
    return out.getvalue()


#: How summary's figures are computed, said under its table: compare's (per-sample means) and
#: the unit of work's (whole samples) differ, and a reader who sees two means must know why.
SUMMARY_NOTE = (
    "TPS and latency over the measured window (warm-up excluded); latency pools every"
    " successful transaction, each counting once (compare's mean is the mean of the sample"
    " means, each sample counting once)"
)
UNIT_OF_WORK_NOTE = (
    "units/s over each whole sample, warm-up included (the database statistics cover it),"
    " averaged over samples; TPS counts the measured window only"
)


def summary_markdown(run: RunInfo, rows: Sequence[ConditionSummary]) -> str:
    units = _latency_units([_flat(row) for row in rows])
    header = ["condition", "samples", "transactions", "errors", "TPS", *_latency_header(units)]
    body = []
    for row in rows:
        cells = _flat(row)
        body.append([cells[0], *(f"{c:,}" for c in cells[1:4]), fmt_num(cells[4])])
        body[-1] += [u.num(c) for u, c in zip(units, cells[5:], strict=True)]
    table = markdown_table(header, body, ["left"] + ["right"] * 9)
    title = f"**Run {run.run_id}: {cell(run.name)}** ({run.status})\n\n"
    return title + table + f"\n_{SUMMARY_NOTE}._\n"


def summary_table(run: RunInfo, rows: Sequence[ConditionSummary]) -> Table:
    table = Table(
        title=markup(f"Run {run.run_id}: {run.name} ({run.status})"),
        title_justify="left",
        caption=SUMMARY_NOTE,
        caption_justify="left",
    )
    table.add_column("condition", style="bold", overflow="fold")
    units = _latency_units([_flat(row) for row in rows])
    for name in ("samples", "transactions", "errors", "TPS", *_latency_header(units)):
        table.add_column(name, justify="right")
    for row in rows:
        cells = _flat(row)
        errors = f"{cells[3]:,}" if not row.errors else f"[red]{cells[3]:,}[/red]"
        table.add_row(
            markup(cells[0]),
            f"{cells[1]:,}",
            f"{cells[2]:,}",
            errors,
            fmt_num(cells[4]),
            *(u.num(c) for u, c in zip(units, cells[5:], strict=True)),
        )
    return table


def open_loop_table(open_loop: Sequence[OpenLoop]) -> Table:
    """Open loop: the rate asked for against the rate reached, and the schedule lag."""
    table = Table(
        title="Open loop (latency counts from each transaction's scheduled start)",
        title_justify="left",
    )
    table.add_column("condition", style="bold", overflow="fold")
    for name in ("requested/s", "achieved/s", "reached", "lag mean ms", "lag p99 ms"):
        table.add_column(name, justify="right")
    for o in open_loop:
        reached = (
            MISSING if o.achieved_rate is None else f"{o.achieved_rate / o.requested_rate:.0%}"
        )
        table.add_row(
            markup(o.condition),
            f"{o.requested_rate:,.0f}",
            MISSING if o.achieved_rate is None else f"{o.achieved_rate:,.0f}",
            f"[red]{reached}[/red]" if o.missed else reached,
            fmt_num(o.lag_mean_ms),
            fmt_num(o.lag_p99_ms),
        )
    return table


def open_loop_markdown(open_loop: Sequence[OpenLoop]) -> str:
    rows = [
        [
            o.condition,
            f"{o.requested_rate:,.0f}",
            MISSING if o.achieved_rate is None else f"{o.achieved_rate:,.0f}",
            fmt_num(o.lag_mean_ms),
            fmt_num(o.lag_p99_ms),
            "**missed**" if o.missed else "reached",
        ]
        for o in open_loop
    ]
    table = markdown_table(
        ["condition", "requested/s", "achieved/s", "lag mean ms", "lag p99 ms", "rate"],
        rows,
        ["left", "right", "right", "right", "right", "left"],
    )
    return "**Open loop** (latency counts from each transaction's scheduled start)\n\n" + table


_GENERATOR_HEADER = (
    "condition",
    "generator",
    "host",
    "samples",
    "lost",
    "committed",
    "TPS",
    "p50 ms",
    "p99 ms",
    "clock offset ms",
    "± ms",
    "start lag ms",
    "start skew ms",
)


def generator_cells(g: GeneratorSummary) -> list[str]:
    return [
        g.condition,
        str(g.generator),
        g.host,
        str(g.samples),
        str(g.lost),
        f"{g.committed:,}",
        MISSING if g.tps is None else f"{g.tps:,.0f}",
        fmt_num(g.p50_ms),
        fmt_num(g.p99_ms),
        _ms(g.offset_ms),
        _ms(g.uncertainty_ms),
        _ms(g.start_lag_ms),
        _ms(g.start_skew_ms),
    ]


def _ms(value: float | None) -> str:
    """A clock figure in ms to the microsecond (clocks are read to about that)."""
    return MISSING if value is None else f"{value:.3f}"


def generators_table(generators: Sequence[GeneratorSummary]) -> Table:
    """A distributed run by load generator: each one's commits, TPS and latency quantiles."""
    table = Table(title="Load generators (per condition)", title_justify="left")
    for i, name in enumerate(_GENERATOR_HEADER):
        table.add_column(name, justify="left" if i in (0, 2) else "right")
    for g in generators:
        cells = generator_cells(g)
        table.add_row(*[markup(c) if i in (0, 2) else c for i, c in enumerate(cells)])
    return table


def generators_markdown(generators: Sequence[GeneratorSummary]) -> str:
    table = markdown_table(
        list(_GENERATOR_HEADER),
        [generator_cells(g) for g in generators],
        ["left", "right", "left"] + ["right"] * (len(_GENERATOR_HEADER) - 3),
    )
    return "**Load generators** (per condition)\n\n" + table


def stop_sentence(run: RunInfo) -> str:
    """How a run that stops when decided stopped; empty for a run of fixed size."""
    rule = run.until_decided
    if rule is None:
        return ""
    blocks = rule.get("blocks")
    if rule.get("stopped") == "decided":
        return (
            f"The run stopped after {blocks} blocks: every comparison was decided by its"
            " anytime-valid confidence sequence (wannabet compare shows them)."
        )
    if rule.get("stopped") == "max_samples":
        return (
            f"The run took its most samples ({blocks} blocks) without deciding every"
            " comparison (wannabet compare shows the sequences)."
        )
    return "The run was to stop when decided, but it did not finish."


def summary_warnings(
    rows: Sequence[ConditionSummary], open_loop: Sequence[OpenLoop] = ()
) -> list[str]:
    """What a reader of the table must not miss."""
    out = [w for o in open_loop if (w := o.warning()) is not None]
    for row in rows:
        if row.samples and not row.transactions:
            out.append(
                f"{row.condition}: no measured transactions; every one was warm-up or the"
                " samples were empty (lengthen the duration or shorten the warm-up)"
            )
        if row.sessions_lost:
            out.append(
                f"{row.condition}: {row.sessions_lost} session(s) lost their connection; those"
                " samples ran with fewer sessions than planned (see the server log)"
            )
        if row.transactions and row.errors:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(row.errors_by_status.items()))
            out.append(
                f"{row.condition}: {row.errors} failed transactions"
                + (f" ({kinds})" if kinds else "")
            )
    return out
