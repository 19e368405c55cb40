"""The results schema and its forward-only migrations.

History (never edit a released migration; add a new one):

- 1: runs, conditions, transaction_types, samples, transactions, and the ``transaction_latency``
  view.
- 2: ``imports`` (one row per imported file: path, sha256, format; re-imports are refused by
  hash) and ``aggregates`` (statistics that a foreign tool kept instead of transactions:
  pgbench's aggregate intervals, Swingbench's and sysbench's per-run summaries).
- 3: per-sample summaries (issue #13): ``sample_moments``, ``sample_statuses`` and
  ``sample_bins``, keyed by ``(run_id, sample_id)``, and ``samples.recorded`` (the fraction of
  transactions stored as rows; 1.0 for every older sample). The three tables are backfilled
  from ``transactions`` for every existing sample that has transactions, with the statements of
  :func:`summary_inserts` (the same SQL the importers' samples are summarised with), so an older
  file analyses as a new one does.
- 4: ``sample_results`` (issue #14): per sample, transaction type and phase, the count, sums,
  minimum and maximum of the results of the transactions that record one (``result = true``).
  Older samples recorded none, so nothing is backfilled.
- 5: ``samples.reason`` (issue #19): why a sample whose ``status`` is ``degraded`` is (it ran
  past its deadline and grace, or lost or gave up on sessions). Older samples are ``complete``
  and have none.
- 6: ``transaction_latency`` recreated (issue #21): ``txn_type`` is the type's index, as in every
  table (it was the type's name, so the view could not be joined with ``transaction_types`` or
  the summary tables on it); the name is ``txn_name``. The view also gains ``position``,
  ``intended_start_ns`` and ``end_ns``. Nothing is stored differently.
- 7: ``profiles`` (issue #17): per profiled sample, one row per distinct folded call stack
  (frames root first, ``;`` between) and its weight (the sum of ``perf``'s periods: for
  ``cpu-clock``, nanoseconds of CPU). Older samples have no profile.
"""

from __future__ import annotations

#: the DuckDB variable that says whether the analyses include degraded samples; the store sets
#: it on every connection (``wannabet.store.queries.ANALYSED`` reads it)
INCLUDE_DEGRADED = "wannabet_include_degraded"


def latency_ms(table: str = "") -> str:
    """The SQL expression of a transaction's latency in ms; ``table`` qualifies its columns.

    Latency runs from the *intended* start, not the actual one: under a fixed arrival rate a
    transaction that waited for a free session waited on the system too (coordinated omission).
    This is the one definition: every query and the ``transaction_latency`` view use it. Changing
    it changes new files only; existing files keep the view they were created with, so a change
    needs a migration that recreates the view.
    """
    prefix = f"{table}." if table else ""
    return f"({prefix}end_ns - {prefix}intended_start_ns) / 1e6"


#: The latency in ms of a row of ``transactions`` (or of a table with the same two columns).
LATENCY_MS = latency_ms()


def latency_ns(table: str = "") -> str:
    """The SQL expression of a transaction's latency in integer ns, clamped at 0.

    The same definition as :func:`latency_ms` (from the intended start), in the engine's unit
    and clamped at 0 as the engine's summaries and :func:`wannabet.store.summaries.from_columns`
    clamp it (a clock step can end a transaction before it was due): the latency the per-sample
    summaries are made of.
    """
    prefix = f"{table}." if table else ""
    return f"greatest({prefix}end_ns - {prefix}intended_start_ns, 0)"


def _bin_width(ns: str) -> str:
    """SQL: the width of the histogram bin holding the latency ``ns`` (a BIGINT expression).

    HdrHistogram's layout with 2 significant digits (:mod:`wannabet.analysis.histogram`): a
    value below 256 has a bin of its own; above, with ``k = floor(log2 v)``, bins are ``2^(k-7)``
    wide. ``log2`` of a double can be off by one next to a power of two (a BIGINT above 2^53
    rounds when converted), so ``k`` is corrected with exact HUGEINT shifts.
    """
    k0 = f"floor(log2({ns}))::INTEGER"
    k = (
        f"({k0} - ((1::HUGEINT << {k0}) > {ns})::INTEGER"
        f" + ((1::HUGEINT << ({k0} + 1)) <= {ns})::INTEGER)"
    )
    return f"CASE WHEN {ns} < 256 THEN 1::BIGINT ELSE (1::BIGINT << ({k} - 7)) END"


def summary_inserts(where: str) -> tuple[str, str, str]:
    """The three statements that summarise stored transactions into the summary tables.

    ``where`` is a SQL condition on ``transactions t`` choosing the samples (``TRUE`` for all).
    One row per ``(run_id, sample_id, txn_type, warmup)`` in ``sample_moments`` (successful
    transactions only), per status in ``sample_statuses``, per non-empty bin in ``sample_bins``:
    what :func:`wannabet.store.summaries.from_columns` computes from a sample's columns, with
    ``transactions.warmup`` as the phase. The log sums are NaN when a latency is not positive
    (``ln`` only ever sees positive values: some DuckDB versions raise on ``ln(0)``).

    Migration 3 backfills older files with these statements, and the importers' samples are
    summarised with them: one code path. A change here changes what migration 3 did, so a
    different summary needs a new migration, with this function's text kept for migration 3.
    """
    ns = latency_ns("t")
    ok = f"""
        SELECT t.run_id, t.sample_id, t.txn_type, t.warmup, {ns} AS ns
        FROM transactions t WHERE ({where}) AND t.status = 'ok'
    """
    moments = f"""
        INSERT INTO sample_moments
        SELECT run_id, sample_id, txn_type, warmup, count(*),
               fsum(ns / 1e6), fsum((ns / 1e6) * (ns / 1e6)),
               CASE WHEN min(ns) > 0 THEN fsum(ln(greatest(ns, 1) / 1e6)) ELSE 'NaN'::DOUBLE END,
               CASE WHEN min(ns) > 0 THEN fsum(ln(greatest(ns, 1) / 1e6) ^ 2)
                    ELSE 'NaN'::DOUBLE END,
               min(ns), max(ns)
        FROM ({ok}) GROUP BY run_id, sample_id, txn_type, warmup
    """
    statuses = f"""
        INSERT INTO sample_statuses
        SELECT t.run_id, t.sample_id, t.txn_type, t.warmup, t.status, count(*)
        FROM transactions t WHERE ({where})
        GROUP BY t.run_id, t.sample_id, t.txn_type, t.warmup, t.status
    """
    bins = f"""
        INSERT INTO sample_bins
        SELECT run_id, sample_id, txn_type, warmup, ns - ns % width, ns - ns % width + (width - 1),
               count(*)
        FROM (SELECT *, {_bin_width("ns")} AS width FROM ({ok}))
        GROUP BY ALL
    """
    return moments, statuses, bins


#: Migration 6's ``transaction_latency``: one row per stored transaction with its sample, condition
#: and type, and its latency. ``txn_type`` is the type's index, as in every table, so the view
#: joins with ``transaction_types`` and the summary tables on ``(run_id, txn_type)``; the type's
#: name is ``txn_name`` (as :meth:`wannabet.store.Store.aggregates` names it). A type missing
#: from ``transaction_types`` keeps its row, with a NULL name.
TRANSACTION_LATENCY_6 = f"""
CREATE OR REPLACE VIEW transaction_latency AS
SELECT t.run_id, t.sample_id, s.position, s.condition_id, c.label AS condition, s.block,
       t.session, t.txn_type, tt.name AS txn_name, t.status, t.error_code, t.retries, t.warmup,
       t.intended_start_ns, t.start_ns, t.end_ns,
       {latency_ms("t")} AS latency_ms
FROM transactions t
JOIN samples s USING (run_id, sample_id)
JOIN conditions c ON c.run_id = s.run_id AND c.condition_id = s.condition_id
LEFT JOIN transaction_types tt ON tt.run_id = t.run_id AND tt.txn_type = t.txn_type
"""

MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (
        1,
        "initial schema",
        (
            """
            CREATE TABLE runs (
                run_id       INTEGER PRIMARY KEY,
                name         VARCHAR NOT NULL,
                description  VARCHAR,
                kind         VARCHAR NOT NULL,      -- 'run' or 'import'
                source       VARCHAR,               -- experiment file or imported file
                spec_text    VARCHAR,
                target       VARCHAR,               -- password redacted
                target_kind  VARCHAR,
                seed         BIGINT,
                status       VARCHAR NOT NULL
                             CHECK (status IN ('running', 'complete', 'interrupted', 'failed')),
                started_at   TIMESTAMPTZ NOT NULL,
                ended_at     TIMESTAMPTZ,
                message      VARCHAR,               -- why a run failed or was interrupted
                host         VARCHAR,
                pid          INTEGER,
                tool_version VARCHAR,
                settings     JSON,                  -- the effective sampling plan and workload
                environment  JSON                   -- host, CPU, OS, server version and settings
            )
            """,
            """
            CREATE TABLE conditions (
                run_id       INTEGER NOT NULL,
                condition_id INTEGER NOT NULL,
                label        VARCHAR NOT NULL,
                levels       JSON,
                session_sql  JSON,
                system_sql   JSON,
                PRIMARY KEY (run_id, condition_id)
            )
            """,
            """
            CREATE TABLE transaction_types (
                run_id   INTEGER NOT NULL,
                txn_type SMALLINT NOT NULL,
                name     VARCHAR NOT NULL,
                weight   INTEGER,
                script   VARCHAR,
                PRIMARY KEY (run_id, txn_type)
            )
            """,
            """
            CREATE TABLE samples (
                run_id           INTEGER NOT NULL,
                sample_id        INTEGER NOT NULL,
                condition_id     INTEGER NOT NULL,
                block            INTEGER NOT NULL,
                position         INTEGER NOT NULL,
                status           VARCHAR NOT NULL,
                t0_ns            BIGINT NOT NULL,   -- wall-clock ns when the sample's clock started
                measure_start_ns BIGINT NOT NULL,   -- t0 + warm-up
                end_ns           BIGINT NOT NULL,
                duration_s       DOUBLE NOT NULL,   -- the measured window
                warmup_s         DOUBLE NOT NULL,
                transactions     BIGINT NOT NULL,   -- measured (after warm-up), any status
                committed        BIGINT NOT NULL,
                errors           BIGINT NOT NULL,
                tps              DOUBLE,            -- committed / duration_s
                sessions_lost    INTEGER NOT NULL DEFAULT 0,
                error_messages   JSON,
                stats            JSON,              -- database and OS statistics deltas
                PRIMARY KEY (run_id, sample_id)
            )
            """,
            """
            CREATE TABLE transactions (
                run_id            INTEGER NOT NULL,
                sample_id         INTEGER NOT NULL,
                session           INTEGER NOT NULL,
                txn_type          SMALLINT NOT NULL,
                intended_start_ns BIGINT NOT NULL,
                start_ns          BIGINT NOT NULL,
                end_ns            BIGINT NOT NULL,
                status            VARCHAR NOT NULL,
                error_code        VARCHAR,
                retries           INTEGER NOT NULL,
                warmup            BOOLEAN NOT NULL
            )
            """,
            f"""
            CREATE VIEW transaction_latency AS
            SELECT t.run_id, t.sample_id, s.condition_id, c.label AS condition, s.block,
                   t.session, tt.name AS txn_type, t.status, t.error_code, t.retries, t.warmup,
                   t.start_ns,
                   {latency_ms("t")} AS latency_ms
            FROM transactions t
            JOIN samples s USING (run_id, sample_id)
            JOIN conditions c ON c.run_id = s.run_id AND c.condition_id = s.condition_id
            LEFT JOIN transaction_types tt ON tt.run_id = t.run_id AND tt.txn_type = t.txn_type
            """,
        ),
    ),
    (
        2,
        "imports and aggregates",
        (
            """
            CREATE TABLE imports (
                run_id      INTEGER NOT NULL,
                path        VARCHAR NOT NULL,
                sha256      VARCHAR NOT NULL,       -- of the file's content
                format      VARCHAR NOT NULL,       -- pgbench, swingbench, sysbench, hyperfine
                condition   VARCHAR,
                imported_at TIMESTAMPTZ NOT NULL,
                metadata    JSON                    -- what the file said about itself
            )
            """,
            """
            CREATE TABLE aggregates (
                run_id       INTEGER NOT NULL,
                sample_id    INTEGER,               -- NULL: the whole condition
                condition_id INTEGER NOT NULL,
                txn_type     SMALLINT,              -- NULL: all transaction types
                count        BIGINT NOT NULL,       -- successful transactions
                failed       BIGINT NOT NULL DEFAULT 0,
                skipped      BIGINT NOT NULL DEFAULT 0,
                retried      BIGINT,
                retries      BIGINT,
                lat_sum_ms   DOUBLE,                -- sufficient statistics, if the tool has them
                lat_sum2_ms2 DOUBLE,
                lat_min_ms   DOUBLE,
                lat_max_ms   DOUBLE,
                lat_mean_ms  DOUBLE,
                lag_sum_ms   DOUBLE,
                lag_max_ms   DOUBLE,
                percentiles  JSON,                  -- {"p95": ms, ...} as the tool gave them
                histogram    JSON,                  -- [[upper bound ms, count], ...]
                extra        JSON
            )
            """,
        ),
    ),
    (
        3,
        "per-sample summaries: moments, statuses, latency histogram bins; samples.recorded",
        (
            """
            CREATE TABLE sample_moments (
                run_id     INTEGER NOT NULL,
                sample_id  INTEGER NOT NULL,
                txn_type   SMALLINT NOT NULL,
                warmup     BOOLEAN NOT NULL,
                count      BIGINT NOT NULL,         -- successful transactions
                sum_ms     DOUBLE,
                sumsq_ms   DOUBLE,
                sumlog_ms  DOUBLE,                  -- NaN: a latency <= 0; NULL: not known
                sumlog2_ms DOUBLE,
                min_ns     BIGINT,
                max_ns     BIGINT,
                PRIMARY KEY (run_id, sample_id, txn_type, warmup)
            )
            """,
            """
            CREATE TABLE sample_statuses (
                run_id    INTEGER NOT NULL,
                sample_id INTEGER NOT NULL,
                txn_type  SMALLINT NOT NULL,
                warmup    BOOLEAN NOT NULL,
                status    VARCHAR NOT NULL,         -- as transactions.status
                count     BIGINT NOT NULL,
                PRIMARY KEY (run_id, sample_id, txn_type, warmup, status)
            )
            """,
            """
            CREATE TABLE sample_bins (
                run_id    INTEGER NOT NULL,
                sample_id INTEGER NOT NULL,
                txn_type  SMALLINT NOT NULL,
                warmup    BOOLEAN NOT NULL,
                lo_ns     BIGINT NOT NULL,          -- the bin [lo_ns, hi_ns], both inclusive
                hi_ns     BIGINT NOT NULL,
                count     BIGINT NOT NULL
            )
            """,
            "ALTER TABLE samples ADD COLUMN recorded DOUBLE DEFAULT 1.0",
            *summary_inserts("TRUE"),
        ),
    ),
    (
        4,
        "per-sample results of the transactions that record one",
        (
            """
            CREATE TABLE sample_results (
                run_id    INTEGER NOT NULL,
                sample_id INTEGER NOT NULL,
                txn_type  SMALLINT NOT NULL,
                warmup    BOOLEAN NOT NULL,
                count     BIGINT NOT NULL,          -- successful transactions with a number
                sum       DOUBLE NOT NULL,
                sumsq     DOUBLE NOT NULL,
                min       DOUBLE NOT NULL,
                max       DOUBLE NOT NULL,
                PRIMARY KEY (run_id, sample_id, txn_type, warmup)
            )
            """,
        ),
    ),
    (
        5,
        "degraded samples: samples.reason",
        ("ALTER TABLE samples ADD COLUMN reason VARCHAR",),
    ),
    (
        6,
        "transaction_latency: txn_type is the type's index, txn_name its name",
        (TRANSACTION_LATENCY_6,),
    ),
    (
        7,
        "per-sample CPU profiles: profiles",
        (
            """
            CREATE TABLE profiles (
                run_id    INTEGER NOT NULL,
                sample_id INTEGER NOT NULL,
                stack     VARCHAR NOT NULL,         -- folded: frames root first, ';' between
                weight    BIGINT NOT NULL,          -- sum of perf's periods (cpu-clock: ns)
                PRIMARY KEY (run_id, sample_id, stack)
            )
            """,
        ),
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1][0]
