"""Catalog entry 02 (issue #20): seed 000's TDE load test as TLS 1.3 suites x the server's
AES-NI, on a ``\\copy`` of a generated file, in a short form.

The entry loads the file ``scripts/02-make-load-file.py`` writes (a million rows in the full
form); here the same script writes 20,000 rows next to a copy of the experiment file, whose
``\\copy`` path is relative to it, so the file's size is the generator's argument, not a literal
in the experiment file. Each sample is one load after a restart into its condition (the
machinery of entry 01, ``test_catalog_01.py``), a TRUNCATE and a CHECKPOINT. The test checks
that every load loaded the whole file and nothing more, on a server in its condition's state,
and the figures the page reads: the elapsed time per load judged against plain TCP, the
factorial effects, and the server's CPU per load from ``summary --unit load``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import throwaway_postgres
from test_catalog_01 import SUITES, accept_plain_tcp, restart_env
from wannabet.store import Store
from wannabet.testing.cli import wannabet

CATALOG = Path(__file__).resolve().parent.parent / "examples" / "catalog"
EXAMPLE = CATALOG / "02-tls-aes-bulk-load.toml"
GENERATOR = CATALOG / "scripts" / "02-make-load-file.py"
ROWS = 20_000
LABELS = {f"encryption={e},aesni={a}" for e in ("none", *SUITES) for a in ("on", "off")}


@pytest.mark.postgres
def test_tls_suites_and_aesni_on_a_bulk_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "02-orders.csv"
    subprocess.run([sys.executable, str(GENERATOR), str(ROWS), str(data)], check=True)
    lines = data.read_text().splitlines()
    assert len(lines) == ROWS + 1 and lines[0].startswith("order_id,")  # a header, then rows
    experiment = tmp_path / EXAMPLE.name
    experiment.write_text(EXAMPLE.read_text())
    # The hooks find the restart script next to the file (WANNABET_EXPERIMENT_DIR).
    (tmp_path / "scripts").symlink_to(CATALOG / "scripts")
    results = tmp_path / "r.duckdb"

    with throwaway_postgres(tls=True) as pg:
        accept_plain_tcp(pg)
        for key, value in restart_env(pg).items():
            monkeypatch.setenv(key, value)
        run = wannabet(
            "run", str(experiment), "--target", pg.url, "--results", str(results), "--samples", "2"
        )
        assert run.returncode == 0, run.stderr
        # Every load started from an empty table: the last one is all the table holds.
        assert pg.psql("SELECT count(*), count(DISTINCT order_id) FROM orders") == f"{ROWS}|{ROWS}"

    store = Store(results, read_only=True)
    samples = store.samples(store.run().run_id)
    assert {s["condition"] for s in samples} == LABELS and len(samples) == 2 * len(LABELS)
    for s in samples:
        assert s["status"] == "complete" and s["committed"] == 1, s
        stats = json.loads(s["stats"])
        # One load of the whole file, byte for byte, through the connection.
        engine = stats["engine"]
        assert (engine["copy_rows"], engine["copy_bytes"]) == (ROWS, data.stat().st_size)
        # The TRUNCATE and CHECKPOINT hooks ran first; the last one read the server's state.
        assert len(stats["hooks"]) == 3, stats["hooks"]
        levels = dict(kv.split("=") for kv in s["condition"].split(","))
        state = stats["hooks"][-1]["output"]
        assert f"AES-NI {levels['aesni']} " in state, (s["condition"], state)
        suite = SUITES.get(levels["encryption"], "OpenSSL's default")
        assert f"TLS 1.3 suites: {suite}" in state, (s["condition"], state)
        assert stats["valid"] and stats["postgres"]["cpu_s"] > 0, s["condition"]

    # The elapsed time of a load, each condition against plain TCP with AES-NI.
    compare = wannabet("compare", "--bayes", "--results", str(results), "--format", "json")
    assert compare.returncode == 0, compare.stderr
    doc = json.loads(compare.stdout)
    conditions = {c["condition"]: c for c in doc["conditions"]}
    assert set(conditions) == LABELS
    for name, c in conditions.items():
        # One load per sample: the sample's mean is that load's time (ms); 20,000 rows take
        # tens of milliseconds at least.
        assert c["n_samples"] == 2 and c["mean"] > 10, (name, c)
    assert {c["baseline"] for c in doc["comparisons"]} == {"encryption=none,aesni=on"}
    assert len(doc["comparisons"]) == len(LABELS) - 1
    effects = {e["term"] for e in doc["bayes"]["effects"]}
    assert "aesni: off vs on" in effects and "encryption: aes256 vs none" in effects
    assert len(effects) == 5, effects

    # The server's CPU per load, and the client's beside it (rustls encrypting the file).
    summary = wannabet("summary", "--unit", "load", "--results", str(results), "--format", "json")
    assert summary.returncode == 0, summary.stderr
    for c in json.loads(summary.stdout)["conditions"]:
        uow = c["unit_of_work"]
        assert uow["unit"] == "load", uow
        assert uow["cpu_ms_per_unit"] > uow["engine_cpu_ms_per_unit"] > 0, (c["condition"], uow)
