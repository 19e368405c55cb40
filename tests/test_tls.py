"""TLS to PostgreSQL: libpq's sslmode and sslrootcert, against a throwaway server that accepts TCP
clients over TLS only (certificate for localhost and 127.0.0.1 from a throwaway CA)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import NativeEngine
from wannabet.errors import ConnectError
from wannabet.targets import Target
from wannabet.testing import ThrowawayPostgres

ENGINE = NativeEngine()
SSL_OF_THIS_SESSION = "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()"

pytestmark = pytest.mark.postgres


@pytest.fixture
def server(tls_postgres: ThrowawayPostgres) -> ThrowawayPostgres:
    return tls_postgres


def url(server: ThrowawayPostgres, query: str = "", host: str = "127.0.0.1") -> str:
    base = f"postgresql://{server.user}:{server.password}@{host}:{server.port}/{server.database}"
    return base + (f"?{query}" if query else "")


def self_signed(directory: Path, name: str, *extensions: str) -> tuple[Path, Path]:
    """A self-signed certificate (CA:TRUE, openssl's default) and its key."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt"),
            *("ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", f"/CN={name}"),
            *("-keyout", str(key), "-out", str(cert)),
            *(arg for ext in extensions for arg in ("-addext", ext)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def rsa_pss_self_signed(directory: Path, digest: str) -> tuple[Path, Path]:
    """A self-signed RSA-PSS certificate for localhost and 127.0.0.1 (signature hash
    ``digest``, or RFC 4055's default SHA-1 when empty)."""
    cert, key = directory / f"pss{digest}.crt", directory / f"pss{digest}.key"
    subprocess.run(
        ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
         "-out", str(key)],
        check=True, capture_output=True,
    )  # fmt: skip
    sign = ["-sigopt", "rsa_padding_mode:pss", *([f"-{digest}"] if digest else ["-sha1"])]
    subprocess.run(
        ["openssl", "req", "-x509", "-key", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         *sign],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


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
    other, _ = self_signed(tmp_path, "other")
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
        f"sslcert={tmp_path / 'none.crt'}&sslkey=/k": "sslcert " + str(tmp_path / "none.crt"),
        "sslpassword=secret": "sslpassword is not supported",
        f"sslmode=verify-ca&sslrootcert={server.ca_file}&sslcrl=/x.crl": "sslcrl /x.crl",
        "sslmode=require&sslrootcert=system": "needs sslmode=verify-full",
        f"sslmode=verify-ca&sslrootcert={tmp_path / 'none.crt'}": "none.crt",
    }
    for query, fragment in cases.items():
        with pytest.raises(ConnectError) as info:
            ENGINE.query(parse_target(url(server, query)), "SELECT 1")
        message = str(info.value)
        assert fragment in message and "\n" not in message, message
        assert server.password not in message


def test_a_self_signed_server_certificate_given_as_the_root_is_trusted(
    fresh_tls_postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    """PostgreSQL's documented recipe (openssl req -x509) makes a self-signed certificate with
    CA:TRUE and hands the same file to clients as root.crt; libpq accepts it, so must we."""
    pg = fresh_tls_postgres
    cert, key = self_signed(tmp_path, "localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1")
    pg.use_certificate(cert, key)
    for mode in ("verify-ca", "verify-full"):
        target = parse_target(url(pg, f"sslmode={mode}&sslrootcert={cert}"))
        assert ssl_of(target)[0] == "t"
    # The name is still checked for verify-full.
    wrong = f"sslmode=verify-full&sslrootcert={cert}&hostaddr=127.0.0.1"
    with pytest.raises(ConnectError, match=r"(?i)not valid for name"):
        ENGINE.query(parse_target(url(pg, wrong, host="wrong.example")), "SELECT 1")


def cert_url(server: ThrowawayPostgres, query: str = "") -> str:
    base = f"postgresql://{server.cert_user}@127.0.0.1:{server.port}/{server.database}"
    return f"{base}?sslmode=verify-full&sslrootcert={server.ca_file}" + (
        f"&{query}" if query else ""
    )


def current_user(target: Target) -> str:
    ((user,),) = ENGINE.query(target, "SELECT current_user")
    return user


def test_a_client_certificate_logs_in(
    server: ThrowawayPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server knows this user by certificate only (``cert`` in pg_hba.conf)."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    cert, key = server.client_certificate(tmp_path)
    with pytest.raises(ConnectError, match="certificate"):
        ENGINE.query(parse_target(cert_url(server)), "SELECT 1")
    target = parse_target(cert_url(server, f"sslcert={cert}&sslkey={key}"))
    assert current_user(target) == server.cert_user
    # From the environment, as libpq reads it.
    monkeypatch.setenv("PGSSLCERT", str(cert))
    monkeypatch.setenv("PGSSLKEY", str(key))
    assert current_user(parse_target(cert_url(server))) == server.cert_user
    monkeypatch.delenv("PGSSLCERT")
    monkeypatch.delenv("PGSSLKEY")
    # libpq's default files, ~/.postgresql/postgresql.crt and postgresql.key.
    (home / ".postgresql").mkdir(parents=True)
    cert.rename(home / ".postgresql/postgresql.crt")
    key.rename(home / ".postgresql/postgresql.key")
    assert current_user(parse_target(cert_url(server))) == server.cert_user


def test_client_key_problems_are_one_clear_line(
    server: ThrowawayPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no default certificate or key
    cert, key = server.client_certificate(tmp_path)
    encrypted = tmp_path / "encrypted.key"
    subprocess.run(
        ["openssl", "pkey", "-in", str(key), "-out", str(encrypted), "-aes256",
         "-passout", "pass:phrase"],
        check=True, capture_output=True,
    )  # fmt: skip
    encrypted.chmod(0o600)
    loose = tmp_path / "loose.key"
    loose.write_bytes(key.read_bytes())
    loose.chmod(0o644)
    _, other_key = self_signed(tmp_path, "other")
    other_key.chmod(0o600)
    cases = {
        f"sslcert={cert}&sslkey={loose}": f"run: chmod 600 {loose}",
        f"sslcert={cert}&sslkey={encrypted}": "the key is encrypted",
        f"sslcert={cert}&sslkey={tmp_path / 'none.key'}": "needs its private key",
        f"sslcert={cert}": "needs its private key",  # libpq's default key is not there
        f"sslcert={cert}&sslkey={other_key}": "the key is not the certificate's",
    }
    for query, fragment in cases.items():
        with pytest.raises(ConnectError) as info:
            ENGINE.query(parse_target(cert_url(server, query)), "SELECT 1")
        message = str(info.value)
        assert fragment in message and "\n" not in message, (query, message)


def test_channel_binding_to_an_rsa_pss_certificate(
    fresh_tls_postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    """RSA-PSS carries its hash in the signature's parameters; the binding must use it, as the
    server does (a wrong or missing one fails channel_binding=require)."""
    pg = fresh_tls_postgres
    for digest in ("sha384", "sha256", ""):
        cert, key = rsa_pss_self_signed(tmp_path, digest)
        pg.use_certificate(cert, key)
        # webpki accepts no SHA-1 signature, so that one is not verified, only bound.
        verify = f"verify-full&sslrootcert={cert}" if digest else "require"
        query = f"sslmode={verify}&channel_binding=require"
        assert ssl_of(parse_target(url(pg, query)))[0] == "t", digest


def test_a_revoked_server_certificate_is_refused(
    server: ThrowawayPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sslcrl and sslcrldir as libpq reads them: a list from the CA that revokes nothing lets
    the connection through, one that revokes the server's certificate stops it."""
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.postgresql/root.crl
    root = f"sslmode=verify-full&sslrootcert={server.ca_file}"
    clean = server.revocation_list(tmp_path / "clean.crl", revoke_server=False)
    assert ssl_of(parse_target(url(server, f"{root}&sslcrl={clean}")))[0] == "t"
    revoked = server.revocation_list(tmp_path / "revoked.crl", revoke_server=True)
    with pytest.raises(ConnectError, match=r"(?i)revoked"):
        ENGINE.query(parse_target(url(server, f"{root}&sslcrl={revoked}")), "SELECT 1")
    directory = tmp_path / "crls"
    directory.mkdir()
    revoked.rename(directory / "0a1b2c3d.r0")
    with pytest.raises(ConnectError, match=r"(?i)revoked"):
        ENGINE.query(parse_target(url(server, f"{root}&sslcrldir={directory}")), "SELECT 1")


def _one_sample(target: Target, sessions: int) -> dict[str, object]:
    """The engine statistics of a short sample of ``SELECT 1`` with ``sessions`` sessions."""
    from wannabet.engine import SampleRequest, compile_program
    from wannabet.samplers.process import engine_section
    from wannabet.spec import parse_experiment

    text = 'name = "t"\n[[workload.transactions]]\nname = "one"\nscript = "SELECT 1"\n'
    experiment = parse_experiment(text, file="t.toml")
    request = SampleRequest(
        program=compile_program(experiment.workload, target.placeholder_style),
        sessions=sessions,
        session_sql=(),
        duration_ns=0,
        max_transactions=20,
        seed=1,
    )
    return engine_section(ENGINE.run_sample(target, request)).values


def test_the_engine_records_the_tls_its_connections_negotiated(server: ThrowawayPostgres) -> None:
    # The server's own view of an engine connection: the version and suite (OpenSSL names
    # TLS 1.3 suites as IANA does) that the engine must record for each of its connections.
    target = parse_target(url(server, "sslmode=require"))
    version, cipher = ENGINE.query(
        target, "SELECT version, cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
    )[0]
    values = _one_sample(target, sessions=3)
    assert values["tls"] == {f"{version} {cipher}": 3}, values
    assert not [k for k in values if str(k).startswith("tls ")], values


def test_a_plain_connection_records_no_tls(postgres: ThrowawayPostgres) -> None:
    values = _one_sample(parse_target(postgres.url + "?sslmode=disable"), sessions=2)
    assert "tls" not in values and values["committed"] == 20, values
