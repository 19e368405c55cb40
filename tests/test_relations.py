"""Per-table and per-index statistics on PostgreSQL (issue #14): what each relation the samples
used did, per condition, in `summary`."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wannabet.analysis.relations import relation_activity
from wannabet.backends import parse_target
from wannabet.cli import app
from wannabet.engine import NativeEngine
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres


def test_means_count_a_sample_that_did_not_use_a_relation_as_zero() -> None:
    used = {"relation": "t", "n_tup_upd": 10, "n_tup_hot_upd": 4, "heap_blks_hit": 90}
    docs = [
        {"postgres": {"tables": [{**used, "heap_blks_read": 10, "n_dead_tup": 6}]}},
        {"postgres": {"tables": [{**used, "n_tup_upd": 30, "n_tup_hot_upd": 26}]}},
        {"postgres": {"tables": []}},
    ]
    [t] = relation_activity({"c": docs})
    assert t.samples == 3
    assert t.per_sample["n_tup_upd"] == pytest.approx(40 / 3)
    assert t.hot_share == pytest.approx(30 / 40)
    assert t.hit_share == pytest.approx(180 / 190)
    assert t.dead_tuples == 6  # only the samples that reported it


FILLFACTOR = textwrap.dedent(
    """\
    name = "relations"
    [setup]
    sql = '''
    DROP TABLE IF EXISTS rel_accounts;
    CREATE TABLE rel_accounts (id integer PRIMARY KEY, balance integer NOT NULL, code integer);
    CREATE INDEX rel_accounts_code ON rel_accounts (code);
    INSERT INTO rel_accounts SELECT g, 0, g FROM generate_series(1, 5000) g;
    '''
    [workload]
    sessions = 1
    [[workload.transactions]]
    name = "update"
    script = '''
    \\set id random(1, 5000)
    UPDATE rel_accounts SET balance = balance + 1 WHERE id = :id;
    '''
    [[workload.transactions]]
    name = "lookup"
    script = '''
    \\set code random(1, 5000)
    SELECT balance FROM rel_accounts WHERE code = :code;
    '''
    [sampling]
    samples = 2
    duration = "0.5s"
    warmup = "0s"
    """
)


def test_summary_shows_what_each_table_and_index_did(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(FILLFACTOR, file="rel.toml"),
        target=parse_target(postgres.url),
        store=store,
        engine=NativeEngine(),
    )
    assert outcome.status == "complete"
    with store.read() as con:
        committed = dict(
            con.execute(
                "SELECT tt.name, count(*) FROM transactions t JOIN transaction_types tt"
                " USING (run_id, txn_type) WHERE t.status = 'ok' GROUP BY tt.name"
            ).fetchall()
        )
    result = CliRunner().invoke(app, ["summary", "-r", str(store.path), "-f", "json"])
    assert result.exit_code == 0, result.stderr
    relations = {r["relation"]: r for r in json.loads(result.stdout)["relations"]}
    table = relations["rel_accounts"]
    # Every committed update updated one row; the server's count says the same.
    assert table["per_sample"]["n_tup_upd"] * 2 == committed["update"]
    assert 0 <= table["hot_share"] <= 1 and table["hit_share"] > 0.9
    # The lookups went through the index on code, one scan each.
    index = relations["rel_accounts_code"]
    assert index["kind"] == "index" and index["table"] == "rel_accounts"
    assert index["per_sample"]["idx_scan"] * 2 == committed["lookup"]
    text = CliRunner().invoke(app, ["summary", "-r", str(store.path), "-f", "markdown"]).stdout
    assert "**Tables** (per sample, mean)" in text and "**Indexes** (per sample, mean)" in text
    assert "rel_accounts_code on rel_accounts" in text
    shown = CliRunner().invoke(app, ["summary", "-r", str(store.path)]).stdout
    assert "Tables (per sample, mean)" in shown and "Indexes (per sample, mean)" in shown
    page = tmp_path / "report.html"
    made = CliRunner().invoke(app, ["report", "-r", str(store.path), "-o", str(page)])
    assert made.exit_code == 0, made.output
    html = page.read_text()
    tables = html[html.index('id="tables-table"') : html.index('id="indexes-table"')]
    assert "<td>rel_accounts</td>" in tables
    assert "<td>rel_accounts_code on rel_accounts</td>" in html[html.index('id="indexes-table"') :]
