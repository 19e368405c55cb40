"""MySQL and MariaDB (issue #15): URLs and passwords, the engine's protocols, retries of
deadlocks, the server's statistics per sample and the unit of work, against the throwaway
MariaDB."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from wannabet.backends import parse_target
from wannabet.backends.mysql.sampler import flushed
from wannabet.engine import STATUS_NAMES, NativeEngine, SampleRequest, compile_program
from wannabet.errors import ConnectError, SpecError
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.targets import Target
from wannabet.testing.ci import unavailable
from wannabet.testing.mariadb import MariaDBUnavailable, ThrowawayMariaDB
from wannabet.work import unit_of_work_for_run

ENGINE = NativeEngine()
OK, DEADLOCK = STATUS_NAMES.index("ok"), STATUS_NAMES.index("deadlock")


# -- URLs and passwords (no server) ----------------------------------------------------------


def test_a_url_without_password_takes_mysql_pwd_then_the_option_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = parse_target("mariadb://me@db.example/shop")
    assert target.kind == "mysql" and target.password is None
    assert target.url == "mariadb://me@db.example:3306/shop"
    options = tmp_path / "my.cnf"
    options.write_text("[client]\nuser = filed\npassword = 'from file'\n[mysqldump]\nuser=x\n")
    options.chmod(0o600)
    monkeypatch.setenv("MYSQL_OPTION_FILE", str(options))
    target = parse_target("mysql://db.example/shop")
    assert target.password == "from file" and "filed:" in target.url
    assert "from" not in target.display and "***" in target.display
    monkeypatch.setenv("MYSQL_PWD", "s3cret@x")
    target = parse_target("mysql://me@db.example:3307/shop")
    assert target.password == "s3cret@x" and target.url.endswith("@db.example:3307/shop")
    # The URL's own password wins over both.
    assert parse_target("mysql://me:inline@h/db").password == "inline"
    # As the client: a file others may read is used; one anyone may write to is ignored, and
    # an error only when its password would have been the one used.
    options.chmod(0o644)
    monkeypatch.delenv("MYSQL_PWD")
    assert parse_target("mysql://h/db").password == "from file"
    options.chmod(0o666)
    assert parse_target("mysql://me:inline@h/db").password == "inline"
    monkeypatch.setenv("MYSQL_PWD", "env")
    assert parse_target("mysql://me@h/db").password == "env"
    monkeypatch.delenv("MYSQL_PWD")
    with pytest.raises(SpecError, match=r"anyone may write to it, .* run: chmod o-w "):
        parse_target("mysql://h/db")


TRICKY_OPTIONS = r"""# a comment
; another
[client]
user = bob   # trailing comment
password = p#w
  [Client]  # groups take any case
password = "quoted # kept" # not kept
host = 'a\tb\\d\se'
[mysqldump]
password = not-the-client's
[mysql]
USER = a;b ; c
!include {dir}/inc.cnf
!include {dir}/missing.cnf
!includedir {dir}/conf.d
"""


@pytest.mark.parametrize(
    ("last", "password", "user"),
    [
        ("", "p\tw s\\", "from-dir"),
        ("password = ' sp '", " sp ", "from-dir"),
        ('password = "x y"z # c', '"x y"z', "from-dir"),
        (r"password = a\qb\"c#d", 'a\\qb"c#d', "from-dir"),
        ("password = 'it''s' # ok\nuser=last", "it''s", "last"),
    ],
)
def test_option_files_are_read_as_the_mariadb_client_reads_them(
    mariadb: ThrowawayMariaDB,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    last: str,
    password: str,
    user: str,
) -> None:
    """Comments, quotes, escapes, groups and includes, checked against the client library's
    own reader (my_print_defaults, installed with the server)."""
    reader = shutil.which("my_print_defaults")
    if reader is None:
        unavailable("my_print_defaults", RuntimeError("it comes with the MariaDB server"))
    main = tmp_path / "my.cnf"
    main.write_text(TRICKY_OPTIONS.format(dir=tmp_path))
    (tmp_path / "inc.cnf").write_text("[client]\npassword = p\\tw\\ss\\\\ # from inc\n")
    (tmp_path / "conf.d").mkdir()
    # Read in name order, .cnf files only.
    (tmp_path / "conf.d" / "b.cnf").write_text(f"[client]\nuser = from-dir\n{last}\n")
    (tmp_path / "conf.d" / "a.cnf").write_text("[client]\nuser = first\n")
    (tmp_path / "conf.d" / "c.txt").write_text("[client]\nuser = not-a-cnf\n")
    main.chmod(0o644)
    groups = ("client", "client-server", "client-mariadb", "mysql")
    out = subprocess.run(
        [reader, f"--defaults-file={main}", *groups], capture_output=True, text=True, check=True
    ).stdout
    # The client takes the last of each option, its name in any case.
    client = {}
    for line in out.splitlines():
        name, _, value = line.removeprefix("--").partition("=")
        client[name.lower()] = value
    assert (client["password"], client["user"]) == (password, user)
    monkeypatch.setenv("MYSQL_OPTION_FILE", str(main))
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    target = parse_target("mysql://db.example/shop")
    assert target.password == password
    assert target.url.startswith(f"mysql://{quote(user, safe='')}:{quote(password, safe='')}@")


def test_an_option_file_with_comments_and_includes_logs_in_to_the_server(
    mariadb: ThrowawayMariaDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The password, included from a file others may read and followed by a comment, is the
    one the server takes."""
    (tmp_path / "secret.cnf").write_text(
        f'[client]\nuser = {mariadb.user} # the test user\npassword = "{mariadb.password}" # x\n'
    )
    main = tmp_path / "my.cnf"
    main.write_text(f"[client]\npassword = wrong\n!include {tmp_path}/secret.cnf\n")
    main.chmod(0o644)
    monkeypatch.setenv("MYSQL_OPTION_FILE", str(main))
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    bare = mariadb.url.replace(f"{mariadb.user}:{mariadb.password}@", "")
    assert ENGINE.query(parse_target(bare), "SELECT current_user()")[0][0].startswith(
        f"{mariadb.user}@"
    )
    # A missing !includedir stops the client; here it is one error naming the line.
    main.write_text(f"[client]\n!includedir {tmp_path}/none\n")
    with pytest.raises(SpecError, match=r"my.cnf:2: cannot read the directory .*none"):
        parse_target(bare)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql:///db", "names no host"),
        ("mysql://u:pw@h/db?sslmode=require", "unknown key 'sslmode'"),
        ("mysql://u:pw@h/db?ssl-mode=sometimes", "ssl-mode=sometimes is not one of"),
        ("mysql://u:p@w@h/db", "contains a raw '@'"),
    ],
)
def test_bad_urls_are_one_clear_error_without_the_password(url: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as info:
        parse_target(url, file="e.toml")
    assert "pw" not in str(info.value) and "e.toml" in str(info.value)


# -- the engine ------------------------------------------------------------------------------


@pytest.fixture
def target(mariadb: ThrowawayMariaDB) -> Target:
    t = parse_target(mariadb.url)
    ENGINE.execute(t, "DROP TABLE IF EXISTS accounts, hot, counters, kv")
    return t


def sample(target: Target, script: str, *, sessions: int = 2, count: int = 0, **kw: Any) -> Any:
    spec = f"name = 'e'\n[[workload.transactions]]\nscript = '''\n{script}\n'''\n"
    experiment = parse_experiment(spec, file="e")
    request = SampleRequest(
        program=compile_program(experiment.workload, target.placeholder_style),
        sessions=sessions,
        session_sql=(),
        duration_ns=0,
        max_transactions=count,
        seed=1,
        **kw,
    )
    return ENGINE.run_sample(target, request)


def scalar(target: Target, sql: str) -> int:
    return int(ENGINE.query(target, sql)[0][0] or 0)


@pytest.mark.parametrize("protocol", ["simple", "extended", "prepared"])
def test_every_protocol_binds_reads_and_sets_variables(target: Target, protocol: str) -> None:
    ENGINE.execute(target, "CREATE TABLE kv (k int PRIMARY KEY, v int NOT NULL)")
    ENGINE.execute(target, "INSERT INTO kv VALUES (1, 10), (2, 20), (3, 30)")
    # \gset reads a row into variables; the next statement uses them; \; sends two at once.
    script = textwrap.dedent(
        """\
        \\set k random(1, 3)
        BEGIN;
        SELECT v AS old, k * 1.5 AS f FROM kv WHERE k = :k FOR UPDATE \\gset
        UPDATE kv SET v = :old + 1 WHERE k = :k \\;
        UPDATE kv SET v = v WHERE k = :k;
        COMMIT;
        """
    )
    result = sample(target, script, sessions=2, count=300, protocol=protocol)
    assert (result.columns["status"] == OK).all(), result.error_codes
    assert scalar(target, "SELECT sum(v) FROM kv") == 60 + 300


def test_a_deadlocking_workload_retries_with_max_tries(target: Target) -> None:
    ENGINE.execute(target, "CREATE TABLE hot (id int PRIMARY KEY, n int NOT NULL)")
    ENGINE.execute(target, "INSERT INTO hot VALUES (1, 0), (2, 0)")
    # The two sessions lock the two rows in opposite orders: InnoDB kills one of them (1213).
    script = textwrap.dedent(
        """\
        \\set first 1 + :client_id % 2
        BEGIN;
        UPDATE hot SET n = n + 1 WHERE id = :first;
        \\sleep 2 ms
        UPDATE hot SET n = n + 1 WHERE id = 3 - :first;
        COMMIT;
        """
    )
    plain = sample(target, script, sessions=2, count=100)
    status = plain.columns["status"]
    assert (status == DEADLOCK).sum() > 0
    codes = {plain.error_codes[i] for i in plain.columns["error_code"][status == DEADLOCK]}
    assert codes == {"1213"}
    assert scalar(target, "SELECT sum(n) FROM hot") == 2 * (status == OK).sum()
    retried = sample(target, script, sessions=2, count=100, max_tries=1000)
    assert (retried.columns["status"] == OK).sum() == 100
    assert retried.columns["retries"].sum() > 0
    assert retried.counters["server_commits"] == 100
    assert scalar(target, "SELECT sum(n) FROM hot") == 2 * ((status == OK).sum() + 100)


def test_tls_required_is_refused_by_a_server_without_it_and_preferred_falls_back(
    mariadb: ThrowawayMariaDB,
) -> None:
    with pytest.raises(ConnectError, match="requires secure connection") as info:
        ENGINE.query(parse_target(f"{mariadb.url}?ssl-mode=REQUIRED"), "SELECT 1")
    assert mariadb.password not in str(info.value)
    assert ENGINE.query(parse_target(f"{mariadb.url}?ssl-mode=PREFERRED"), "SELECT 1") == [("1",)]


@pytest.fixture(scope="module")
def mariadb_tls() -> Iterator[ThrowawayMariaDB]:
    """A second throwaway MariaDB that serves TLS with a certificate from its own CA."""
    try:
        server = ThrowawayMariaDB(install=True, tls=True).start()
    except MariaDBUnavailable as exc:
        unavailable("a MariaDB server with TLS", exc)
    try:
        yield server
    finally:
        server.stop()


def test_tls_modes_as_the_mysql_client(mariadb_tls: ThrowawayMariaDB, tmp_path: Path) -> None:
    """REQUIRED encrypts without checking; VERIFY_CA checks the chain against ssl-ca and
    VERIFY_IDENTITY also the host name (the certificate names 127.0.0.1); a certificate from
    another CA is refused."""
    url, ca = mariadb_tls.url, mariadb_tls.ca_file
    cipher = "SHOW SESSION STATUS LIKE 'Ssl_cipher'"
    for query in ("ssl-mode=REQUIRED", f"ssl-mode=VERIFY_CA&ssl-ca={ca}",
                  f"ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"):  # fmt: skip
        rows = ENGINE.query(parse_target(f"{url}?{query}"), cipher)
        assert rows and rows[0][1], query  # a cipher: the session is encrypted
    assert ENGINE.query(parse_target(f"{url}?ssl-mode=DISABLED"), cipher) == [("Ssl_cipher", "")]
    other = tmp_path / "other-ca.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(tmp_path / "k"), "-out", str(other), "-days", "1",
         "-subj", "/CN=other"],
        check=True, capture_output=True,
    )  # fmt: skip
    with pytest.raises(ConnectError) as info:
        ENGINE.query(parse_target(f"{url}?ssl-mode=VERIFY_CA&ssl-ca={other}"), "SELECT 1")
    assert "certificate" in str(info.value).lower()
    assert mariadb_tls.password not in str(info.value)


def test_the_engine_records_the_tls_of_its_connections(mariadb_tls: ThrowawayMariaDB) -> None:
    from wannabet.samplers.process import engine_section

    experiment = parse_experiment(
        'name = "t"\n[[workload.transactions]]\nname = "one"\nscript = "SELECT 1"\n', file="t"
    )

    def tls_of(query: str) -> Any:
        target = parse_target(f"{mariadb_tls.url}?{query}")
        request = SampleRequest(
            program=compile_program(experiment.workload, target.placeholder_style),
            sessions=2,
            session_sql=(),
            duration_ns=0,
            max_transactions=10,
            seed=1,
        )
        return engine_section(ENGINE.run_sample(target, request)).values.get("tls")

    rows = dict(ENGINE.query(parse_target(f"{mariadb_tls.url}?ssl-mode=REQUIRED"),
                             "SHOW SESSION STATUS LIKE 'Ssl_%'"))  # fmt: skip
    assert rows["Ssl_version"].startswith("TLSv1"), rows
    assert tls_of("ssl-mode=REQUIRED") == {f"{rows['Ssl_version']} {rows['Ssl_cipher']}": 2}
    assert tls_of("ssl-mode=DISABLED") is None


def test_a_wrong_password_is_a_connect_error_without_it(mariadb: ThrowawayMariaDB) -> None:
    url = mariadb.url.replace(mariadb.password, "not-the-password")
    with pytest.raises(ConnectError, match="Access denied") as info:
        ENGINE.query(parse_target(url), "SELECT 1")
    assert "not-the-password" not in str(info.value)


# -- statistics and the unit of work -----------------------------------------------------------

COMMIT_TOML = """
name = "flush-log"
[setup]
sql = '''
DROP TABLE IF EXISTS counters;
CREATE TABLE counters (id int PRIMARY KEY, n bigint NOT NULL) ENGINE = InnoDB;
INSERT INTO counters VALUES (0, 0), (1, 0), (2, 0), (3, 0);
'''
[workload]
sessions = 2
[[workload.transactions]]
name = "bump"
script = '''
BEGIN;
UPDATE counters SET n = n + 1 WHERE id = :client_id;
COMMIT;
'''
[[factors]]
name = "innodb_flush_log_at_trx_commit"
levels = ["1", "2"]
system_sql = "SET GLOBAL innodb_flush_log_at_trx_commit = {level}"
[sampling]
samples = 3
duration = "1s"
warmup = "0.2s"
"""


@pytest.fixture(scope="module")
def commit_run(
    mariadb: ThrowawayMariaDB, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Store, int]:
    store = Store(tmp_path_factory.mktemp("my-stats") / "r.duckdb")
    out = run_experiment(
        parse_experiment(COMMIT_TOML, file="exp.toml"),
        target=parse_target(mariadb.url),
        store=store,
        engine=NativeEngine(),
    )
    assert out.status == "complete"
    return store, out.run_id


def test_server_commits_match_the_engine_exactly(commit_run: tuple[Store, int]) -> None:
    store, run_id = commit_run
    docs = [json.loads(s["stats"]) for s in store.samples(run_id)]
    assert len(docs) == 6
    for doc in docs:
        my = doc["mysql"]
        assert doc["valid"] is True and doc["warnings"] == [], doc["warnings"]
        assert my["commits_check_reliable"] is True
        # The engine's committed transactions include the warm-up; both count every COMMIT.
        assert my["server_commits"] == my["engine_commits"] >= doc["engine"]["committed"] > 0
        assert my["status"]["Handler_update"] >= my["server_commits"]
        assert my["cpu_s"] > 0 and my["cores"] >= 1
        # Every UPDATE is a handler call, timed apart: CPU and enclosed file waits, not a wait.
        waits = my["waits"]
        handler = [e for e in waits["events"] if e["event"].startswith("io/table/")]
        assert handler and waits["handler_s"] >= handler[0]["wait_s"] > 0, waits
        assert waits["wait_s"] == pytest.approx(
            sum(e["wait_s"] for e in waits["events"] if "/table/" not in e["event"])
        )
        # Neither the snapshots' statements nor the driver's on connecting are the workload's.
        assert not [s for s in my["statements"] if "@@" in s["query"] or "SHOW" in s["query"]]
    for u in unit_of_work_for_run(store, run_id):
        assert u.server_check is not None and u.server_check.ok, u.server_check
        assert u.cpu_ms_per_unit is not None and u.cpu_ms_per_unit.mean > 0
        assert u.wait_ms_per_unit is not None and u.wait_ms_per_unit.mean >= 0
        assert not any("/table/" in w.event for w in u.top_waits), u.top_waits
        assert u.io_per_unit["Innodb_data_fsyncs"].mean >= 0
        # MariaDB 10.8+ times no redo log I/O: the table says the commit flush is not in it.
        version = json.loads(store.samples(run_id)[0]["stats"])["mysql"]["server_version"]
        if "MariaDB" in version and tuple(map(int, version.split(".")[:2])) >= (10, 8):
            assert any("redo log" in n for n in u.notes), u.notes


def test_flushing_the_log_at_every_commit_syncs_more(commit_run: tuple[Store, int]) -> None:
    store, run_id = commit_run
    units = {u.condition: u for u in unit_of_work_for_run(store, run_id)}
    every, second = (
        units[f"innodb_flush_log_at_trx_commit={v}"].io_per_unit["Innodb_data_fsyncs"].mean
        for v in ("1", "2")
    )
    # 1 syncs the redo log at each commit (group commit may share one); 2 once a second.
    # (MariaDB counts the log's fsyncs with the data files'.)
    assert every > 0.2 and second < 0.1 * every, (every, second)


def test_the_run_records_the_servers_settings(commit_run: tuple[Store, int]) -> None:
    store, run_id = commit_run
    with store.read() as con:
        env = json.loads(
            con.execute("SELECT environment FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
        )
    assert env["server"] == "MariaDB" and "MariaDB" in env["server_version"]
    settings = env["server_settings"]
    assert settings["innodb_flush_log_at_trx_commit"] in ("1", "2")
    assert {"sync_binlog", "innodb_buffer_pool_size", "performance_schema"} <= set(settings)
    assert os.environ.get("MYSQL_PWD") is None


def test_commits_joined_with_backslash_semicolon_are_counted(
    target: Target, tmp_path: Path
) -> None:
    """pgbench's ``\\;`` sends statements as one query; the server counts each COMMIT among
    them in Com_commit, in any case and as COMMIT WORK, so the engine must too."""
    text = COMMIT_TOML.replace("samples = 3", "samples = 1").replace(
        'levels = ["1", "2"]', 'levels = ["2"]'
    )
    text = text.replace("sessions = 2", 'sessions = 2\nprotocol = "simple"')
    text = text.replace(
        "COMMIT;\n'''",
        "COMMIT;\n"
        "BEGIN \\; UPDATE counters SET n = n + 1 WHERE id = :client_id \\; commit work;\n"
        "BEGIN;\nUPDATE counters SET n = n + 1 WHERE id = :client_id \\;\n"
        "/* done */ Commit \\;\nSELECT 1;\n'''",
    )
    store = Store(tmp_path / "r.duckdb")
    out = run_experiment(
        parse_experiment(text, file="e.toml"), target=target, store=store, engine=NativeEngine()
    )
    doc = json.loads(store.samples(out.run_id)[0]["stats"])
    my = doc["mysql"]
    assert doc["valid"] is True and doc["warnings"] == [], doc["warnings"]
    # Three COMMITs a transaction, every one of them seen by the server.
    assert my["server_commits"] == my["engine_commits"] >= 3 * doc["engine"]["committed"] > 0
    for u in unit_of_work_for_run(store, out.run_id):
        assert u.server_check is not None and u.server_check.ok, u.server_check


LEXING_TOML = r"""
name = "mysql-lexing"
[setup]
sql = '''
DROP TABLE IF EXISTS `odd;name`;
# a comment; with a semicolon and an apostrophe: it's
CREATE TABLE `odd;name` (id int PRIMARY KEY, `note;col` varchar(40) NOT NULL);
INSERT INTO `odd;name` VALUES (1, 'it\'s; one'), (2, "say \"two\"; :no");
'''
[workload]
sessions = 1
[[workload.transactions]]
name = "read"
script = '''
# pick a row; the ids are 1 and 2, it's :not_a_variable
\set id random(1, 2)
SELECT `note;col` AS note FROM `odd;name` WHERE id = :id AND `note;col` <> 'x\'; :nope' \gset
UPDATE `odd;name` SET `note;col` = `note;col` WHERE id = :id; -- done; :nor_this
'''
[sampling]
samples = 1
transactions = 40
"""


def test_scripts_and_set_up_are_split_as_the_server_reads_them(
    target: Target, tmp_path: Path
) -> None:
    """Backslash escapes, backticks and # comments hold semicolons and :names that are no
    statement end and no placeholder on MySQL; read with PostgreSQL's rules, the set-up and
    every transaction failed."""
    store = Store(tmp_path / "r.duckdb")
    out = run_experiment(
        parse_experiment(LEXING_TOML, file="e.toml"),
        target=target,
        store=store,
        engine=NativeEngine(),
    )
    [row] = store.samples(out.run_id)
    assert row["transactions"] == 40 and row["errors"] == 0, row
    notes = sorted(r[0] for r in ENGINE.query(target, "SELECT `note;col` FROM `odd;name`"))
    assert notes == ["it's; one", 'say "two"; :no']


def test_flush_status_mid_sample_invalidates_that_sample(
    mariadb: ThrowawayMariaDB, target: Target, tmp_path: Path
) -> None:
    text = COMMIT_TOML.replace("samples = 3", "samples = 1").replace(
        'levels = ["1", "2"]', 'levels = ["1"]'
    )
    # The statistics reset lands between the snapshots, as another DBA's FLUSH STATUS would.
    text = text.replace(
        "COMMIT;\n'''",
        "COMMIT;\nSELECT n FROM counters WHERE id = :client_id \\gset\n"
        "\\if :client_id = 0 and :n % 20 = 0\nFLUSH STATUS;\n\\endif\n'''",
    )
    store = Store(tmp_path / "r.duckdb")
    out = run_experiment(
        parse_experiment(text, file="e.toml"), target=target, store=store, engine=NativeEngine()
    )
    doc = json.loads(store.samples(out.run_id)[0]["stats"])
    assert doc["valid"] is False
    assert "status counters" in json.dumps(doc) and "FLUSH STATUS" in json.dumps(doc)
    assert doc["mysql"]["server_commits"] is None


def test_a_user_without_performance_schema_keeps_the_other_statistics(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    """SHOW GLOBAL STATUS needs no privilege: a user who may not read performance_schema still
    gets the counters and the commit check; a note names what is missing and the GRANT."""
    mariadb.sql_as_root(
        "DROP USER IF EXISTS 'nops'@'127.0.0.1';"
        "CREATE USER 'nops'@'127.0.0.1' IDENTIFIED BY 'nops-pw';"
        f"GRANT ALL ON {mariadb.database}.* TO 'nops'@'127.0.0.1';"
    )
    url = f"mysql://nops:nops-pw@127.0.0.1:{mariadb.port}/{mariadb.database}"
    text = COMMIT_TOML.replace("samples = 3", "samples = 1").replace(
        'levels = ["1", "2"]', 'levels = ["2"]'
    )
    # The factor's SET GLOBAL needs a privilege this user lacks.
    text = text.replace(
        'system_sql = "SET GLOBAL innodb_flush_log_at_trx_commit = {level}"',
        'session_sql = "SET @level = {level}"',
    )
    text = text.replace('name = "innodb_flush_log_at_trx_commit"', 'name = "level"')
    store = Store(tmp_path / "r.duckdb")
    out = run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(url),
        store=store,
        engine=NativeEngine(),
    )
    doc = json.loads(store.samples(out.run_id)[0]["stats"])
    my = doc["mysql"]
    assert doc["valid"] is True, doc
    assert my["server_commits"] == my["engine_commits"] > 0
    assert my["status"]["Handler_update"] >= my["server_commits"]
    assert "waits" not in my and "statements" not in my
    notes = " ".join(json.dumps(doc).split())
    assert "wait events and statement digests left out: 'nops'@'127.0.0.1' lacks" in notes
    assert "GRANT SELECT ON performance_schema.* TO 'nops'@'127.0.0.1'" in notes
    assert "failed to start" not in notes
    for u in unit_of_work_for_run(store, out.run_id):
        assert u.server_check is not None and u.server_check.ok, u.server_check
    # Granted, the same user gets them all.
    mariadb.sql_as_root("GRANT SELECT ON performance_schema.* TO 'nops'@'127.0.0.1';")
    out = run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(url),
        store=store,
        engine=NativeEngine(),
    )
    my = json.loads(store.samples(out.run_id)[0]["stats"])["mysql"]
    assert my["waits"]["events"] and "statements" in my


def test_a_flush_is_seen_even_when_the_counters_grew_back_past_their_start() -> None:
    # Flushed 1 s into a 10 s sample: Com_commit grew back past its start, Uptime did not move
    # back; only the uptime of the last flush shows the reset.
    before = {"Uptime": 500, "Uptime_since_flush_status": 500, "Com_commit": 100}
    after = {"Uptime": 510, "Uptime_since_flush_status": 9, "Com_commit": 900}
    assert flushed(before, after)
    assert not flushed(before, {**after, "Uptime_since_flush_status": 510})
    assert not flushed({"Uptime": 1}, after)  # a server without the variable: not claimed


# -- the example -------------------------------------------------------------------------------


def test_the_mariadb_example_runs_and_summarises_commits(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    """examples/mariadb-flush-log.toml in a short form, through the command line."""
    from wannabet.testing.cli import wannabet

    results = tmp_path / "r.duckdb"
    example = Path(__file__).resolve().parent.parent / "examples" / "mariadb-flush-log.toml"
    quick = ("--samples", "2", "--duration", "0.6s", "--warmup", "0.1s")
    run = wannabet("run", str(example), "--target", mariadb.url, "--results", str(results), *quick)
    assert run.returncode == 0, run.stderr
    assert mariadb.password not in run.stdout + run.stderr
    summary = wannabet("summary", "--results", str(results), "--format", "json")
    assert summary.returncode == 0, summary.stderr
    doc = json.loads(summary.stdout)
    assert {c["condition"] for c in doc["conditions"]} == {
        "innodb_flush_log_at_trx_commit=1",
        "innodb_flush_log_at_trx_commit=2",
    }
    for cond in doc["conditions"]:
        uow, check = cond["unit_of_work"], cond["server_check"]
        assert uow["unit"] == "commit" and uow["cpu_ms_per_unit"] > 0, uow
        assert check["engine_commits"] == check["server_commits"] > 0, check
    assert mariadb.password not in summary.stdout
    # The after-run hook put the durable setting back.
    assert scalar(parse_target(mariadb.url), "SELECT @@innodb_flush_log_at_trx_commit") == 1


def test_check_target_prepares_without_running_ddl_that_would_commit(
    mariadb: ThrowawayMariaDB, target: Target, tmp_path: Path
) -> None:
    """MySQL commits DDL at once, so `check --target` runs neither the set-up nor the
    conditions' SQL there: it prepares the statements against the tables as they are."""
    from wannabet.testing.cli import wannabet

    ENGINE.execute(
        target, "DROP TABLE IF EXISTS bench_history, bench_tellers, bench_accounts, bench_branches"
    )
    example = Path(__file__).resolve().parent.parent / "examples" / "mariadb-flush-log.toml"
    proc = wannabet("check", str(example), "--target", mariadb.url)
    assert proc.returncode == 0, proc.stderr
    err = " ".join(proc.stderr.split())
    assert "commits DDL and settings at once, so check did not run the [setup]" in err
    assert "doesn't exist); the [setup], not run, may be what it needs" in err
    assert "notes above on what it could not check" in " ".join(proc.stdout.split())
    # Nothing was created, and the global setting was not touched.
    assert not ENGINE.query(target, "SHOW TABLES LIKE 'bench_%'")
    # Without a set-up, a refused statement is an error naming its line.
    bad = tmp_path / "bad.toml"
    bad.write_text(
        "name = 'bad'\n[[workload.transactions]]\nscript = '''\nSELECT nope FROM missing;\n'''\n"
    )
    proc = wannabet("check", str(bad), "--target", mariadb.url)
    assert proc.returncode == 3
    assert "bad.toml:4: the database refused statement 1 of" in " ".join(proc.stderr.split())
    assert mariadb.password not in proc.stdout + proc.stderr
