"""Catalog entry 01 (issue #20): seed 000's TDE x AES-NI experiment as TLS 1.3 suites x the
server's AES-NI, in a short form.

The entry's machinery is a server restart at every switch of condition
(``examples/catalog/scripts/01-restart-postgres.sh`` through ``pg_ctl``): the TLS 1.3 suite goes
into the server's OpenSSL configuration and the AES-NI mask into its environment, neither of
which PostgreSQL 15 can change without one. The test runs the file against a throwaway server
of its own (the hook restarts it; the suite's shared server must not be), then checks that every
sample ran on a server in the state its condition names (read from the postmaster's own
environment by the before-sample hook), that each suite is the one a session then negotiates,
and the Bayesian answer the page shows: posteriors of every change, and the factorial effects
of encryption, AES-NI and their interaction.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
from pathlib import Path

import pytest

from conftest import throwaway_postgres
from wannabet.backends import parse_target
from wannabet.engine import NativeEngine
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.cli import wannabet

CATALOG = Path(__file__).resolve().parent.parent / "examples" / "catalog"
EXAMPLE = CATALOG / "01-tls-aes-oltp.toml"
RESTART = CATALOG / "scripts" / "01-restart-postgres.sh"
QUICK = ("--samples", "2", "--duration", "0.5s", "--warmup", "0s")
SUITES = {"aes128": "TLS_AES_128_GCM_SHA256", "aes256": "TLS_AES_256_GCM_SHA384"}


def accept_plain_tcp(pg: ThrowawayPostgres) -> None:
    """The TLS throwaway server refuses plain TCP; the entry's `none` level needs it."""
    hba = pg.data / "pg_hba.conf"
    text = hba.read_text()
    reject = "hostnossl all all 127.0.0.1/32 reject\n"
    assert reject in text, text
    hba.write_text(text.replace(reject, "hostnossl all all 127.0.0.1/32 scram-sha-256\n"))
    pg.psql("SELECT pg_reload_conf()")


def restart_env(pg: ThrowawayPostgres) -> dict[str, str]:
    """What the restart script reads: the data directory, pg_ctl, and the user that owns the
    data directory when we are root (PostgreSQL refuses to run as root)."""
    env = {"PGDATA": str(pg.data), "PG_CTL": str(pg.bindir / "pg_ctl")}
    if os.geteuid() == 0:
        env["PG_RUNAS"] = pwd.getpwuid(pg.data.stat().st_uid).pw_name
    return env


def _negotiated(pg: ThrowawayPostgres, sslmode: str) -> tuple[bool, str | None]:
    """Whether a session of the engine (rustls) is encrypted, and with which suite."""
    target = parse_target(f"{pg.url}?sslmode={sslmode}")
    ((ssl, cipher),) = NativeEngine().query(
        target, "SELECT ssl, cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
    )
    return ssl in (True, "t", "true", 1), cipher


@pytest.mark.postgres
def test_tls_suites_and_aesni_factorial_with_bayes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "r.duckdb"
    with throwaway_postgres(tls=True) as pg:
        accept_plain_tcp(pg)
        for key, value in restart_env(pg).items():
            monkeypatch.setenv(key, value)
        run = wannabet("run", str(EXAMPLE), "--target", pg.url, "--results", str(results), *QUICK)
        assert run.returncode == 0, run.stderr

        # The restart script chooses the suite the engine's sessions then negotiate, and a
        # plain connection stays plain.
        for suite in SUITES.values():
            for step in (["suite", suite], ["aesni", "off"]):
                subprocess.run(["sh", str(RESTART), *step], check=True, capture_output=True)
            assert _negotiated(pg, "require") == (True, suite)
        assert _negotiated(pg, "disable") == (False, None)

    store = Store(results, read_only=True)
    samples = store.samples(store.run().run_id)
    labels = {f"encryption={e},aesni={a}" for e in ("none", *SUITES) for a in ("on", "off")}
    assert {s["condition"] for s in samples} == labels and len(samples) == 2 * len(labels)
    for s in samples:
        assert s["status"] == "complete", s
        stats = json.loads(s["stats"])
        # Each sample ran on a server restarted into its condition's state, as its postmaster's
        # environment shows.
        [hook] = stats["hooks"]
        levels = dict(kv.split("=") for kv in s["condition"].split(","))
        state = hook["output"]
        assert f"AES-NI {levels['aesni']} " in state, (s["condition"], state)
        suite = SUITES.get(levels["encryption"], "OpenSSL's default")
        assert f"TLS 1.3 suites: {suite}" in state, (s["condition"], state)
        # The statistics survived the restart before the sample: the server's CPU is there.
        assert stats["postgres"]["cpu_s"] > 0, (s["condition"], stats.get("warnings"))
        # ... and the engine's own record of what its 4 connections negotiated says the same.
        negotiated = stats["engine"].get("tls")
        if levels["encryption"] == "none":
            assert negotiated is None, (s["condition"], negotiated)
        else:
            assert negotiated == {f"TLSv1.3 {suite}": 4}, (s["condition"], negotiated)

    # The Bayesian answer: a posterior and an HDI for every change, and the factorial effects.
    bayes = wannabet("compare", "--bayes", "--results", str(results), "--format", "json")
    assert bayes.returncode == 0, bayes.stderr
    doc = json.loads(bayes.stdout)
    assert doc["conditions"][0]["condition"] == "encryption=none,aesni=on"  # the baseline
    assert len(doc["comparisons"]) == len(labels) - 1
    for c in doc["comparisons"]:
        b = c["bayes"]
        low, high = b["hdi_pct"]
        assert low < b["mean_pct"] < high and 0 <= b["p_faster"] <= 1, c
    effects = {e["term"]: e for e in doc["bayes"]["effects"]}
    assert set(effects) == {
        "encryption: aes128 vs none",
        "encryption: aes256 vs none",
        "aesni: off vs on",
        "encryption × aesni: (aes128 vs none) × (off vs on)",
        "encryption × aesni: (aes256 vs none) × (off vs on)",
    }
    for e in effects.values():
        low, high = e["hdi_pct"]
        assert low < e["mean_pct"] < high, e

    # The seed's own model (gamma, transactions iid) answers too, and says how far it trusts
    # itself: on benchmark data its intervals are too narrow, which it flags.
    gamma = wannabet(
        "compare", "--bayes", "--bayes-model", "gamma", "--results", str(results), "-f", "json"
    )
    assert gamma.returncode == 0, gamma.stderr
    gdoc = json.loads(gamma.stdout)
    assert gdoc["bayes"]["model"] == "gamma"
    assert all(c["bayes"]["model"] == "gamma" for c in gdoc["comparisons"])
