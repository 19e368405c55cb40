"""TLS to PostgreSQL: libpq's sslmode and sslrootcert, against a throwaway server that accepts TCP
clients over TLS only (certificate for localhost and 127.0.0.1 from a throwaway CA)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wannabet.engine import NativeEngine, SampleRequest, compile_program
from wannabet.errors import ConnectError, QueryError
from wannabet.runner import run_experiment
from wannabet.spec import load_experiment, parse_experiment
from wannabet.store import Store
from wannabet.targets import Target, parse_target
from wannabet.testing import PostgresUnavailable, ThrowawayPostgres

ENGINE = NativeEngine()
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SSL_OF_THIS_SESSION = "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()"

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def server() -> Iterator[ThrowawayPostgres]:
    try:
        pg = ThrowawayPostgres(install=True, tls=True).start()
    except PostgresUnavailable as exc:
        if IN_CI:
            pytest.fail(f"CI needs a TLS PostgreSQL server: {exc}")
        pytest.skip(f"no TLS PostgreSQL server here: {exc}")
    try:
        yield pg
    finally:
        pg.stop()


def url(server: ThrowawayPostgres, query: str = "", host: str = "127.0.0.1") -> str:
    base = f"postgresql://{server.user}:{server.password}@{host}:{server.port}/{server.database}"
    return base + (f"?{query}" if query else "")


def ssl_of(target: Target) -> tuple[str, str]:
    ((on, version),) = ENGINE.query(target, SSL_OF_THIS_SESSION)
    return on, version


def test_the_default_and_require_encrypt(server: ThrowawayPostgres) -> None:
    # libpq's default, prefer, takes TLS when the server offers it.
    assert ssl_of(parse_target(url(server)))[0] == "t"
    on, version = ssl_of(parse_target(url(server, "sslmode=require")))
    assert on == "t" and version.startswith("TLSv1.")
    # SCRAM bound to the server's certificate (tls-server-end-point), as libpq offers it.
    target = parse_target(url(server, "sslmode=require&channel_binding=require"))
    assert ssl_of(target)[0] == "t"


def test_disable_is_refused_by_a_tls_only_server(server: ThrowawayPostgres) -> None:
    with pytest.raises(ConnectError, match="no encryption") as info:
        ENGINE.query(parse_target(url(server, "sslmode=disable")), "SELECT 1")
    assert server.password not in str(info.value)


def test_verify_full_checks_the_chain_and_the_name(server: ThrowawayPostgres) -> None:
    root = f"sslrootcert={server.ca_file}"
    for host in ("127.0.0.1", "localhost"):
        target = parse_target(url(server, f"sslmode=verify-full&{root}", host=host))
        assert ssl_of(target)[0] == "t"
    # A name the certificate does not carry: verify-full refuses, verify-ca accepts.
    wrong = f"hostaddr=127.0.0.1&{root}"
    with pytest.raises(ConnectError, match=r"(?i)certificate"):
        ENGINE.query(
            parse_target(url(server, f"sslmode=verify-full&{wrong}", host="wrong.example")),
            "SELECT 1",
        )
    target = parse_target(url(server, f"sslmode=verify-ca&{wrong}", host="wrong.example"))
    assert ssl_of(target)[0] == "t"


def test_a_certificate_from_another_ca_is_refused(
    server: ThrowawayPostgres, tmp_path: Path
) -> None:
    other = tmp_path / "other-ca.crt"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec"),
            *("-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-nodes", "-keyout", str(tmp_path / "k"), "-out", str(other), "-days", "1"),
            *("-subj", "/CN=other"),
        ],
        check=True,
        capture_output=True,
    )
    # require with a root certificate checks the chain too, as in libpq.
    for mode in ("require", "verify-ca", "verify-full"):
        with pytest.raises(ConnectError, match=r"(?i)certificate"):
            target = parse_target(url(server, f"sslmode={mode}&sslrootcert={other}"))
            ENGINE.query(target, "SELECT 1")


def test_tls_settings_errors_are_one_clear_line(
    server: ThrowawayPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.postgresql/root.crt
    cases = {
        "sslmode=verify-full": "sslrootcert=/path/to/root.crt",
        "sslmode=sometimes": "unknown sslmode",
        "sslcert=/x.crt": "sslcert is not supported",
        "sslmode=require&sslrootcert=system": "needs sslmode=verify-full",
        f"sslmode=verify-ca&sslrootcert={tmp_path / 'none.crt'}": "none.crt",
    }
    for query, fragment in cases.items():
        with pytest.raises(ConnectError) as info:
            ENGINE.query(parse_target(url(server, query)), "SELECT 1")
        message = str(info.value)
        assert fragment in message and "\n" not in message, message
        assert server.password not in message


COMMITS_TOML = """
name = "tls-commits"
[setup]
sql = '''
DROP TABLE IF EXISTS counters;
CREATE TABLE counters (id int PRIMARY KEY, n bigint NOT NULL);
INSERT INTO counters SELECT i, 0 FROM generate_series(0, 7) i;
'''
[workload]
sessions = 2
[[workload.transactions]]
name = "bump"
script = '''
UPDATE counters SET n = n + 1 WHERE id = :client_id;
'''
[sampling]
samples = 2
duration = "1s"
warmup = "0s"
"""


def test_commits_and_statistics_are_exact_over_tls(
    server: ThrowawayPostgres, tmp_path: Path
) -> None:
    """The engine follows the protocol inside TLS (transaction status, commits), and the
    statistics connections (psycopg and the native poller) use the same URL."""
    (tmp_path / "exp.toml").write_text(COMMITS_TOML)
    store = Store(tmp_path / "r.duckdb")
    target = parse_target(url(server, f"sslmode=verify-full&sslrootcert={server.ca_file}"))
    out = run_experiment(
        load_experiment(tmp_path / "exp.toml"), target=target, store=store, engine=ENGINE
    )
    samples = store.samples(out.run_id)
    assert len(samples) == 2
    for s in samples:
        doc = json.loads(s["stats"])
        assert doc["valid"] and doc["warnings"] == [], doc
        pg = doc["postgres"]
        assert pg["engine_commits"] > 0 and pg["commits_check_reliable"] is True
        assert pg["server_commits"] == pg["engine_commits"], pg
        assert pg["waits"]["polls"] > 0 and pg["waits"]["error"] is None


def test_abort_cancels_a_running_statement_over_tls(server: ThrowawayPostgres) -> None:
    target = parse_target(url(server, "sslmode=require"))
    spec = (
        "name = 'e'\n[[workload.transactions]]\nscript = '''\n"
        "SELECT pg_sleep(CASE WHEN :client_id = 0 THEN 0.5 ELSE 30 END);\n"
        "SELECT 1 / :client_id;\n'''\n"
    )
    workload = parse_experiment(spec, file="e").workload
    request = SampleRequest(
        program=compile_program(workload, target.placeholder_style),
        sessions=2,
        session_sql=(),
        duration_ns=int(60e9),
        max_transactions=0,
        seed=1,
        on_error="abort",
    )
    started = time.monotonic()
    with pytest.raises(QueryError, match="division by zero"):
        ENGINE.run_sample(target, request)
    assert time.monotonic() - started < 15


def test_a_self_signed_server_certificate_given_as_the_root_is_trusted(tmp_path: Path) -> None:
    """PostgreSQL's documented recipe (openssl req -x509) makes a self-signed certificate with
    CA:TRUE and hands the same file to clients as root.crt; libpq accepts it, so must we."""
    try:
        pg = ThrowawayPostgres(install=True, tls=True).start()
    except PostgresUnavailable as exc:
        if IN_CI:
            pytest.fail(f"CI needs a TLS PostgreSQL server: {exc}")
        pytest.skip(f"no TLS PostgreSQL server here: {exc}")
    try:
        cert, key = tmp_path / "self.crt", tmp_path / "self.key"
        subprocess.run(
            [
                *("openssl", "req", "-x509", "-newkey", "ec"),
                *("-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"),
                *("-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost"),
                *("-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
            ],
            check=True,
            capture_output=True,
        )
        pg.use_certificate(cert, key)
        for mode in ("verify-ca", "verify-full"):
            target = parse_target(url(pg, f"sslmode={mode}&sslrootcert={cert}"))
            assert ssl_of(target)[0] == "t"
        # The name is still checked for verify-full.
        wrong = f"sslmode=verify-full&sslrootcert={cert}&hostaddr=127.0.0.1"
        with pytest.raises(ConnectError, match=r"(?i)not valid for name"):
            ENGINE.query(parse_target(url(pg, wrong, host="wrong.example")), "SELECT 1")
    finally:
        pg.stop()
