"""Target URLs and password redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from wannabet.backends import (
    backend_for,
    backend_for_scheme,
    backend_for_url,
    backends,
    parse_target,
)
from wannabet.engine import NativeEngine
from wannabet.errors import SpecError, TargetError
from wannabet.targets import redact
from wannabet.testing import ThrowawayPostgres

NATIVE_BACKENDS = Path(__file__).resolve().parent.parent / "native" / "src" / "backend"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://u:pw@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:p%40ss@h:5432/db", "postgresql://u:***@h:5432/db"),
        (
            "cannot connect to postgresql://u:s3cr3t@h:1/d: refused",
            "cannot connect to postgresql://u:***@h:1/d: refused",
        ),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("host=h password=secret user=u", "host=h password=*** user=u"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_redact_named_secrets_and_their_encoding() -> None:
    assert redact("auth failed for p@ss and p%40ss", "p@ss") == "auth failed for *** and ***"


def test_password_is_decoded() -> None:
    assert parse_target("postgresql://u:p%40ss%3A1@h/db").password == "p@ss:1"


def test_raw_at_sign_in_password_is_refused_without_echo() -> None:
    with pytest.raises(SpecError) as info:
        parse_target("postgresql://odd:p@ss@127.0.0.1:5/db")
    assert "p@ss" not in str(info.value) and "%40" in str(info.value)


def test_pgpassword_fills_a_missing_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", "from-env")
    target = parse_target("postgresql://u@h:5432/db")
    assert target.password == "from-env"
    assert "from-env" not in target.display


def _pgpass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "pgpass"
    path.write_text(text)
    path.chmod(mode)
    monkeypatch.setenv("PGPASSFILE", str(path))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    return path


def test_the_password_file_fills_a_missing_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pgpass(
        tmp_path,
        monkeypatch,
        "# comment\n"
        "other:5432:*:u:wrong\n"
        "127.0.0.1:5433:*:u:wrong-port\n"
        "127.0.0.1:*:db:u:pa\\:ss\\\\x:y\n"
        "*:*:*:*:too-late\n",
    )
    target = parse_target("postgresql://u@127.0.0.1:5432/db")
    assert target.password == "pa:ss\\x"  # escapes undone; as libpq, ends at a bare colon
    assert "pa:ss" not in target.display
    # The first matching line wins; the user and database default as libpq's do.
    monkeypatch.setenv("PGUSER", "v")
    assert parse_target("postgresql://h/d").password == "too-late"
    # A password in the URL, or PGPASSWORD, is used before the file.
    assert parse_target("postgresql://u:given@127.0.0.1/db").password == "given"
    monkeypatch.setenv("PGPASSWORD", "env")
    assert parse_target("postgresql://u@127.0.0.1/db").password == "env"


def test_a_password_file_others_may_read_is_refused_only_when_it_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _pgpass(tmp_path, monkeypatch, "127.0.0.1:*:*:u:secret\n", mode=0o644)
    assert parse_target("postgresql://x@10.0.0.1/db").password is None
    with pytest.raises(SpecError) as info:
        parse_target("postgresql://u@127.0.0.1/db")
    assert f"chmod 600 {path}" in str(info.value) and "secret" not in str(info.value)


def test_sqlite_paths(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    relative = parse_target("sqlite:///bench.db")
    assert relative.path == tmp_path / "bench.db"
    absolute = parse_target(f"sqlite:///{tmp_path}/x.db")
    assert absolute.path == tmp_path / "x.db"
    with pytest.raises(SpecError, match="in-memory"):
        parse_target("sqlite:///:memory:")
    with pytest.raises(SpecError, match="unsupported target"):
        parse_target("db2://u@h/db")


def test_every_backend_is_found_by_its_kind_and_its_schemes() -> None:
    assert [b.kind for b in backends()] == [
        "sqlite",
        "postgresql",
        "mysql",
        "duckdb",
        "oracle",
        "dbapi",
    ]
    for backend in backends():
        assert backend_for(backend.kind) is backend
        for scheme in backend.schemes:
            assert backend_for_scheme(scheme.upper()) is backend
        # Its engine is a Rust module of that name.
        module = NATIVE_BACKENDS / backend.engine
        assert module.with_suffix(".rs").is_file() or (module / "mod.rs").is_file(), backend.engine
        # The DB-API backends, and only they, run through the Python-session module.
        assert (backend.engine == "python") == (backend.driver is not None), backend.kind
    assert parse_target("postgres://u@h/db").placeholder_style == "dollar"
    assert parse_target("sqlite:///x.db").placeholder_style == "qmark"
    assert parse_target("mariadb://u@h/db").placeholder_style == "positional"


def test_an_unknown_kind_gets_no_other_backend_s_logic() -> None:
    with pytest.raises(TargetError, match="no backend for target kind 'db2'"):
        backend_for("db2")
    with pytest.raises(TargetError) as info:
        backend_for_url("db2://u:pw@h/db")
    assert "pw" not in str(info.value) and "sqlite:///file.db" in str(info.value)


def test_the_password_file_matches_hosts_as_libpq_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pgpass(
        tmp_path,
        monkeypatch,
        "DB.example:*:*:u:upper\n/srv/pg:*:*:u:socket\nlocalhost:*:*:u:local\n",
    )
    # Host names compare as written (a URL parser would lowercase them).
    assert parse_target("postgresql://u@DB.example/db").password == "upper"
    assert parse_target("postgresql://u@db.example/db").password is None
    # A socket directory matches its path; the default one matches localhost.
    assert parse_target("postgresql://u@x/db?host=/srv/pg").password == "socket"
    assert parse_target("postgresql://u@x/db?host=/var/run/postgresql").password == "local"


def test_libpq_tls_environment_reaches_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGSSLMODE", "verify-full")
    monkeypatch.setenv("PGSSLROOTCERT", "/etc/ssl/root.crt")
    target = parse_target("postgresql://u:p@h/db")
    assert target.url.endswith("?sslmode=verify-full&sslrootcert=/etc/ssl/root.crt")
    # The URL's own settings win.
    target = parse_target("postgresql://u:p@h/db?sslmode=disable")
    assert "sslmode=disable" in target.url and "verify-full" not in target.url


def test_host_and_port_parameters_win_as_in_libpq() -> None:
    """libpq lets ``?host=``/``?port=`` replace the host/port before the path; the engine's
    driver would try both hosts and keep the first port, so both move into the parameters."""
    from wannabet.backends.postgresql.url import host_port

    cases = {
        "postgresql://u:p@x:6000/db?host=/srv/pg": "postgresql://u:p@/db?host=/srv/pg&port=6000",
        "postgresql://u:p@127.0.0.1:6000/db?port=7001": (
            "postgresql://u:p@/db?host=127.0.0.1&port=7001"
        ),
        "postgresql://u:p@[::1]:6000/db?port=7000&sslmode=require": (
            "postgresql://u:p@/db?sslmode=require&host=::1&port=7000"
        ),
        "postgresql:///db?host=%2Fvar%2Frun%2Fpostgresql": (
            "postgresql:///db?host=/var/run/postgresql"
        ),
    }
    for url, expected in cases.items():
        assert parse_target(url).url == expected, url
    assert host_port(cases["postgresql://u:p@x:6000/db?host=/srv/pg"]) == ("/srv/pg", 6000)
    plain = "postgresql://u:p@Db.Example:6000/db?options=-c%20work_mem%3D64MB+x"
    assert parse_target(plain).url == plain and host_port(plain) == ("Db.Example", 6000)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u@h1,h2/db",
        "postgresql://u@h1:5432,h2:5433/db",
        "postgresql://u@/db?host=a,b",
        "postgresql://u@/db?host=a&host=b",
        "postgresql://u@h/db?port=5432,5433",
        "postgresql://u@h:abc/db",
    ],
)
def test_one_server_per_target(url: str) -> None:
    with pytest.raises(SpecError, match=r"one server|not a number"):
        parse_target(url)


@pytest.mark.postgres
def test_the_engine_connects_where_the_host_parameter_says(
    postgres: ThrowawayPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both hosts reach the server, by TCP and by its socket; libpq takes the parameter's.
    Over the socket there is no TLS, so verify-full needs no root certificate there."""
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.postgresql/root.crt
    pg = postgres
    url = f"postgresql://{pg.user}:{pg.password}@127.0.0.1:{pg.port}/{pg.database}?host={pg.root}"
    sql = "SELECT coalesce(host(inet_server_addr()), 'socket')"
    assert NativeEngine().query(parse_target(url), sql) == [("socket",)]
    verified = parse_target(url + "&sslmode=verify-full")
    assert NativeEngine().query(verified, sql) == [("socket",)]


@pytest.mark.postgres
def test_the_engine_uses_the_port_parameter(postgres: ThrowawayPostgres) -> None:
    """The port before the path is a closed one; libpq, and so wannabet, use the parameter's."""
    pg = postgres
    url = f"postgresql://{pg.user}:{pg.password}@127.0.0.1:1/{pg.database}?port={pg.port}"
    sql = "SELECT inet_server_port()"
    assert NativeEngine().query(parse_target(url), sql) == [(str(pg.port),)]
