//! MySQL and MariaDB through the `mysql` crate: one blocking connection per
//! session thread, as the other backends.
//!
//! Protocols map as pgbench's `-M` does onto PostgreSQL: `prepared` prepares
//! each statement once per connection (COM_STMT_PREPARE) and then only
//! executes it; `extended` prepares, executes and closes it every time;
//! `simple` sends the text with the values written in (COM_QUERY, the text
//! protocol, what the mysql client and sysbench's `--db-ps-mode=disable` do).

use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder, Params, SslOpts, Statement};

use super::{inline_values, value_from_text, DbError, DbResult, Protocol, Session, Status, Store};
use crate::script::Value;

/// `ssl-mode` as the mysql client reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disabled,
    /// TLS when the server offers it, unverified; plain otherwise (the client's default).
    Preferred,
    /// TLS or no connection, the certificate not verified.
    Required,
    /// TLS with a certificate signed by `ssl-ca` (or the system's roots).
    VerifyCa,
    /// VERIFY_CA and the host name matches the certificate.
    VerifyIdentity,
}

/// Where to connect: the crate's options and how TLS is wanted.
#[derive(Clone)]
pub struct Target {
    pub opts: Opts,
    pub ssl: SslMode,
    pub ssl_ca: Option<std::path::PathBuf>,
}

fn bad_url(message: impl Into<String>) -> DbError {
    DbError::new(Status::Connection, None, message)
}

/// `mysql://user:password@host:port/db?ssl-mode=...&ssl-ca=...` (or
/// `mariadb://`). The TLS keys are the mysql client's; other keys are the
/// crate's connection options. Never echoes the URL: it may hold a password.
pub fn parse(url: &str) -> DbResult<Target> {
    let rest = url
        .strip_prefix("mysql://")
        .or_else(|| url.strip_prefix("mariadb://"))
        .ok_or_else(|| bad_url("a MySQL URL starts with mysql:// or mariadb://"))?;
    let (base, query) = match rest.split_once('?') {
        Some((b, q)) => (b, q),
        None => (rest, ""),
    };
    let mut ssl = SslMode::Preferred;
    let mut ssl_ca = None;
    let mut connect_timeout = Some(super::DEFAULT_CONNECT_TIMEOUT);
    let mut kept: Vec<&str> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_encoding::percent_decode_str(value)
            .decode_utf8_lossy()
            .into_owned();
        match key.replace('_', "-").to_ascii_lowercase().as_str() {
            "ssl-mode" => {
                ssl = match value.to_ascii_uppercase().replace('-', "_").as_str() {
                    "DISABLED" => SslMode::Disabled,
                    "PREFERRED" => SslMode::Preferred,
                    "REQUIRED" => SslMode::Required,
                    "VERIFY_CA" => SslMode::VerifyCa,
                    "VERIFY_IDENTITY" => SslMode::VerifyIdentity,
                    _ => {
                        return Err(bad_url(format!(
                            "ssl-mode={value} is not one of DISABLED, PREFERRED, REQUIRED, \
                             VERIFY_CA, VERIFY_IDENTITY"
                        )))
                    }
                }
            }
            "ssl-ca" => ssl_ca = Some(std::path::PathBuf::from(value)),
            // As the mysql client: seconds, 0 for no limit.
            "connect-timeout" => {
                let secs: u64 = value.parse().map_err(|_| {
                    bad_url(format!(
                        "connect-timeout={value} is not a number of seconds"
                    ))
                })?;
                connect_timeout = (secs > 0).then(|| Duration::from_secs(secs));
            }
            _ => kept.push(pair),
        }
    }
    if matches!(ssl, SslMode::VerifyCa | SslMode::VerifyIdentity) && ssl_ca.is_none() {
        return Err(bad_url(
            "ssl-mode=VERIFY_CA and VERIFY_IDENTITY need ssl-ca=/path/ca.pem, the CA that signed \
             the server's certificate",
        ));
    }
    if let Some(ca) = &ssl_ca {
        if !ca.is_file() {
            return Err(bad_url(format!(
                "ssl-ca {} is not a readable file",
                ca.display()
            )));
        }
    }
    let mut url = format!("mysql://{base}");
    if !kept.is_empty() {
        url.push('?');
        url.push_str(&kept.join("&"));
    }
    let opts = Opts::from_url(&url).map_err(|e| bad_url(format!("invalid MySQL URL: {e}")))?;
    let opts = OptsBuilder::from_opts(opts)
        .tcp_connect_timeout(connect_timeout)
        // The runner keeps its own statements; the crate's cache would make
        // `extended` the same as `prepared`.
        .stmt_cache_size(0)
        // Connect where the URL says, as the mysql client does for a host: the
        // crate would otherwise move a connection to a local server onto its
        // Unix socket, bypassing the TLS asked for and measuring another path
        // than the one configured (and than sysbench's TCP).
        .prefer_socket(false);
    Ok(Target {
        opts: opts.into(),
        ssl,
        ssl_ca,
    })
}

impl Target {
    fn tls(&self) -> Option<SslOpts> {
        let verify = matches!(self.ssl, SslMode::VerifyCa | SslMode::VerifyIdentity);
        match self.ssl {
            SslMode::Disabled => None,
            _ => Some(
                SslOpts::default()
                    .with_root_cert_path(self.ssl_ca.clone())
                    .with_danger_accept_invalid_certs(!verify)
                    .with_danger_skip_domain_validation(self.ssl != SslMode::VerifyIdentity),
            ),
        }
    }

    /// Sessions of this process are found in the processlist by this name
    /// (`program_name` connection attribute); held sessions carry their role.
    pub fn rename(&mut self, role: &str) {
        let name = format!("{}-{role}", super::application_name());
        self.opts = OptsBuilder::from_opts(self.opts.clone())
            .connect_attrs(Some(
                [("program_name", name)]
                    .into_iter()
                    .collect::<std::collections::HashMap<_, _>>(),
            ))
            .into();
    }

    pub fn connect(&self) -> DbResult<Conn> {
        let builder = OptsBuilder::from_opts(self.opts.clone()).ssl_opts(self.tls());
        match Conn::new(builder) {
            Err(mysql::Error::DriverError(mysql::DriverError::TlsNotSupported))
                if self.ssl == SslMode::Preferred =>
            {
                Conn::new(OptsBuilder::from_opts(self.opts.clone()).ssl_opts(None::<SslOpts>))
                    .map_err(connect_error)
            }
            other => other.map_err(connect_error),
        }
    }
}

fn connect_error(e: mysql::Error) -> DbError {
    let mut err = classify(e);
    err.status = Status::Connection;
    err
}

/// How to stop a running statement: `KILL QUERY` on a new connection.
pub struct CancelInfo {
    target: Target,
    id: u32,
}

impl CancelInfo {
    pub fn cancel(&self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let opts = OptsBuilder::from_opts(self.target.opts.clone())
            .tcp_connect_timeout(Some(left))
            .read_timeout(Some(left))
            .write_timeout(Some(left));
        let target = Target {
            opts: opts.into(),
            ..self.target.clone()
        };
        if let Ok(mut conn) = target.connect() {
            let _ = conn.query_drop(format!("KILL QUERY {}", self.id));
        }
    }
}

/// A statement as the runner registered it.
struct Prepared {
    text: String,
    parts: Vec<String>,
    /// Prepared once (the `prepared` protocol); None for compound statements.
    stmt: Option<Statement>,
    compound: bool,
    /// Per statement it sends, whether it is a COMMIT: counted when it
    /// succeeds, for the check against the server's `Com_commit`.
    commits: Vec<bool>,
}

/// Whether a statement is a COMMIT (`COMMIT`, `COMMIT WORK`, ...), which the
/// server counts in `Com_commit`.
fn is_commit(sql: &str) -> bool {
    let t = sql.trim_start();
    t.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("commit"))
        && !t[6..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
}

pub struct MySession {
    conn: Conn,
    target: Target,
    stmts: Vec<Prepared>,
    protocol: Protocol,
    /// Reused for simple-protocol statement text.
    inline: String,
    /// Reused for bound values.
    values: Vec<mysql::Value>,
    /// `\\copy` rows and bytes loaded since the counters were reset.
    copied: (i64, i64),
    /// COMMIT statements that succeeded since the counters were reset.
    commits: i64,
    /// The connection's TLS as a counter name (`tls::tls_counter`), None when plain.
    tls: Option<&'static str>,
}

impl MySession {
    pub fn connect(target: &Target) -> DbResult<MySession> {
        let mut conn = target.connect()?;
        let tls = match target.ssl {
            SslMode::Disabled => None,
            // The crate does not expose its TLS session: the server's view of it.
            _ => negotiated(&mut conn)?,
        };
        Ok(MySession {
            conn,
            target: target.clone(),
            stmts: Vec::new(),
            protocol: Protocol::Prepared,
            inline: String::new(),
            values: Vec::new(),
            copied: (0, 0),
            commits: 0,
            tls,
        })
    }

    pub fn cancel_info(&self) -> CancelInfo {
        CancelInfo {
            target: self.target.clone(),
            id: self.conn.connection_id(),
        }
    }
}

/// The TLS version and cipher the server says this connection uses, or None
/// when it is plain (`Ssl_version` empty).
fn negotiated(conn: &mut Conn) -> DbResult<Option<&'static str>> {
    let rows: Vec<(String, String)> = conn
        .query("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')")
        .map_err(classify)?;
    let value = |name: &str| {
        rows.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    Ok(match (value("Ssl_version"), value("Ssl_cipher")) {
        (Some(version), Some(cipher)) => Some(crate::backend::tls::tls_counter(version, cipher)),
        _ => None,
    })
}

fn bind(v: &Value) -> mysql::Value {
    match *v {
        Value::Int(x) => mysql::Value::Int(x),
        Value::Float(x) => mysql::Value::Double(x),
        Value::Bool(b) => mysql::Value::Int(b as i64),
        Value::Null => mysql::Value::NULL,
        Value::Unset => unreachable!("runner checks for unset values"),
    }
}

/// A result value as text, as the mysql client shows it.
fn text(v: &mysql::Value) -> Option<String> {
    Some(match v {
        mysql::Value::NULL => return None,
        mysql::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        mysql::Value::Int(x) => x.to_string(),
        mysql::Value::UInt(x) => x.to_string(),
        mysql::Value::Float(x) => x.to_string(),
        mysql::Value::Double(x) => x.to_string(),
        mysql::Value::Date(y, mo, d, h, mi, s, us) => {
            format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}")
        }
        mysql::Value::Time(neg, d, h, mi, s, us) => {
            let hours = *d as u64 * 24 + *h as u64;
            let sign = if *neg { "-" } else { "" };
            format!("{sign}{hours:02}:{mi:02}:{s:02}.{us:06}")
        }
    })
}

/// A result value as a script variable (`\\gset`).
fn variable(v: &mysql::Value) -> DbResult<Value> {
    Ok(match v {
        mysql::Value::NULL => Value::Null,
        mysql::Value::Int(x) => Value::Int(*x),
        mysql::Value::UInt(x) => match i64::try_from(*x) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Float(*x as f64),
        },
        mysql::Value::Float(x) => Value::Float(*x as f64),
        mysql::Value::Double(x) => Value::Float(*x),
        other => value_from_text(text(other).as_deref())?,
    })
}

/// Reads every row of every result set (reads cost what they would in an
/// application) and stores the mapped columns of each into the slots.
fn drain<P: mysql::prelude::Protocol>(
    result: mysql::QueryResult<'_, '_, '_, P>,
    into: Option<Store<'_>>,
) -> DbResult<u64> {
    drain_counted(result, into, &mut 0)
}

/// [`drain`], counting in `sets` the result sets read in full: one per
/// statement of a multi-statement query (a CALL's procedure may add more).
fn drain_counted<P: mysql::prelude::Protocol>(
    mut result: mysql::QueryResult<'_, '_, '_, P>,
    mut into: Option<Store<'_>>,
    sets: &mut usize,
) -> DbResult<u64> {
    let mut n = 0u64;
    while let Some(set) = result.iter() {
        for row in set {
            let row = row.map_err(classify)?;
            n += 1;
            if let Some(into) = into.as_mut() {
                for &(col, slot) in into.map {
                    into.slots[slot] = match row.as_ref(col) {
                        Some(v) => variable(v)?,
                        None => Value::Null,
                    };
                }
            }
        }
        *sets += 1;
    }
    Ok(n)
}

impl Session for MySession {
    fn batch_execute(&mut self, sql: &str) -> DbResult<()> {
        // COM_QUERY runs `;`-separated statements when multi-statements are
        // on, which the crate sets; every result set must be read.
        let result = self.conn.query_iter(sql).map_err(classify)?;
        drain(result, None).map(|_| ())
    }

    fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = protocol;
    }

    fn prepare(&mut self, sql: &str, n_params: usize, parts: &[String]) -> DbResult<Vec<String>> {
        let stmt = self.conn.prep(sql).map_err(classify)?;
        if stmt.num_params() as usize != n_params {
            return Err(DbError::new(
                Status::Error,
                None,
                format!(
                    "statement has {} parameters but {} values are bound",
                    stmt.num_params(),
                    n_params
                ),
            ));
        }
        let columns = stmt
            .columns()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect();
        self.stmts.push(Prepared {
            text: sql.to_owned(),
            parts: parts.to_vec(),
            stmt: Some(stmt),
            compound: false,
            commits: vec![is_commit(sql)],
        });
        Ok(columns)
    }

    fn prepare_compound(&mut self, parts: &[String], statements: &[String]) -> DbResult<()> {
        self.stmts.push(Prepared {
            text: parts.concat(),
            parts: parts.to_vec(),
            stmt: None,
            compound: true,
            // The server counts each COMMIT of a multi-statement query in Com_commit.
            commits: statements.iter().map(|s| is_commit(s)).collect(),
        });
        Ok(())
    }

    fn execute(&mut self, stmt: usize, params: &[Value], into: Option<Store<'_>>) -> DbResult<u64> {
        // Statements that ran: a multi-statement query stops at the first
        // that fails, and those before it (a COMMIT among them) took effect.
        let mut ran = 0;
        let n = self.send(stmt, params, into, &mut ran);
        let ran = if n.is_ok() { usize::MAX } else { ran };
        let commits = &self.stmts[stmt].commits;
        self.commits += commits.iter().take(ran).filter(|&&c| c).count() as i64;
        n
    }

    fn copy_in(
        &mut self,
        spec: &crate::copy::CopySpec,
        range: Option<(i64, i64)>,
    ) -> DbResult<u64> {
        use crate::backend::copy_failed;
        let format = spec.format().map_err(copy_failed)?;
        let mut input = crate::copy::Counted {
            inner: spec.open(range).map_err(copy_failed)?,
            bytes: 0,
        };
        // One transaction for the load, as COPY is one statement. A script
        // that opened its own keeps it: START TRANSACTION would commit it.
        let own = !self.in_transaction()?;
        if own {
            self.conn
                .query_drop("START TRANSACTION")
                .map_err(classify)?;
        }
        let conn = &mut self.conn;
        let mut insert: Option<(usize, Statement)> = None;
        let mut rows = 0u64;
        let mut db_error: Option<DbError> = None;
        let read = crate::copy::read_rows(&mut input, &format, |fields| {
            if insert.as_ref().is_none_or(|(n, _)| *n != fields.len()) {
                let marks = vec!["?"; fields.len()].join(", ");
                match conn.prep(format!("INSERT INTO {} VALUES ({marks})", spec.target())) {
                    Ok(st) => insert = Some((fields.len(), st)),
                    Err(e) => {
                        db_error = Some(classify(e));
                        return Err(String::new());
                    }
                }
            }
            let (_, st) = insert.as_ref().expect("prepared above");
            let values: Vec<mysql::Value> = fields
                .iter()
                .map(|f| match f {
                    Some(t) => mysql::Value::Bytes(t.as_bytes().to_vec()),
                    None => mysql::Value::NULL,
                })
                .collect();
            match conn.exec_drop(st, Params::Positional(values)) {
                Ok(()) => {
                    rows += 1;
                    Ok(())
                }
                Err(e) => {
                    db_error = Some(classify(e));
                    Err(String::new())
                }
            }
        });
        if let Some((_, st)) = insert {
            let _ = self.conn.close(st);
        }
        let result = match (read, db_error) {
            (_, Some(e)) => Err(e),
            (Err(m), None) => Err(copy_failed(m)),
            (Ok(()), None) => Ok(rows),
        };
        if own {
            let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
            let ended = self.conn.query_drop(end).map_err(classify);
            if result.is_ok() {
                ended?;
            }
        }
        let rows = result?;
        self.copied.0 += rows as i64;
        self.copied.1 += input.bytes as i64;
        Ok(rows)
    }

    fn rollback_if_needed(&mut self) -> DbResult<()> {
        // The server's status flags are not exposed by the crate; ROLLBACK
        // outside a transaction is a harmless round trip, and only failures
        // come here.
        self.conn.query_drop("ROLLBACK").map_err(classify)
    }

    fn reset_counters(&mut self) {
        self.copied = (0, 0);
        self.commits = 0;
    }

    fn counters(&self) -> Vec<(&'static str, i64)> {
        // Named as PostgreSQL's: what the server's own commit count should show.
        let mut out = vec![("server_commits", self.commits)];
        if let Some(tls) = self.tls {
            out.push((tls, 1));
        }
        if self.copied != (0, 0) {
            out.push(("copy_rows", self.copied.0));
            out.push(("copy_bytes", self.copied.1));
        }
        out
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Option<String>>>> {
        let mut result = self.conn.query_iter(sql).map_err(classify)?;
        let mut out = Vec::new();
        while let Some(set) = result.iter() {
            for row in set {
                let row = row.map_err(classify)?;
                out.push(
                    (0..row.len())
                        .map(|i| row.as_ref(i).and_then(text))
                        .collect(),
                );
            }
        }
        Ok(out)
    }
}

impl MySession {
    /// Sends a statement as the protocol says and reads its rows, counting in
    /// `ran` the statements that completed when it fails.
    fn send(
        &mut self,
        stmt: usize,
        params: &[Value],
        into: Option<Store<'_>>,
        ran: &mut usize,
    ) -> DbResult<u64> {
        let p = &self.stmts[stmt];
        if p.compound || self.protocol == Protocol::Simple {
            inline_values(&p.parts, params, &mut self.inline);
            let result = self.conn.query_iter(&self.inline).map_err(classify)?;
            return drain_counted(result, into, ran);
        }
        self.values.clear();
        self.values.extend(params.iter().map(bind));
        let values = Params::Positional(std::mem::take(&mut self.values));
        if self.protocol == Protocol::Prepared {
            let st = p.stmt.as_ref().expect("prepared");
            let result = self.conn.exec_iter(st, values).map_err(classify)?;
            return drain(result, into);
        }
        let st = self.conn.prep(&p.text).map_err(classify)?;
        let n = {
            let result = self.conn.exec_iter(&st, values).map_err(classify)?;
            drain(result, into)
        };
        self.conn.close(st).map_err(classify)?;
        n
    }
}

impl MySession {
    fn in_transaction(&mut self) -> DbResult<bool> {
        let rows: Vec<i64> = self
            .conn
            .query("SELECT @@in_transaction")
            .map_err(classify)?;
        Ok(rows.first().copied().unwrap_or(0) != 0)
    }
}

/// Error numbers a re-run of the transaction can fix, as sysbench's
/// `--mysql-ignore-errors` default (1213, 1020, 1205) and MariaDB's
/// "record has changed" under snapshot isolation.
pub fn classify(e: mysql::Error) -> DbError {
    match e {
        mysql::Error::MySqlError(m) => {
            let status = match m.code {
                1213 => Status::Deadlock,
                1205 => Status::Lock,
                1020 => Status::Serialization,
                // duplicate key, foreign key, NOT NULL, CHECK
                1062 | 1451 | 1452 | 1048 | 3819 | 4025 => Status::Constraint,
                // server gone, lost connection, shutdown, killed connection
                1053 | 1927 | 2006 | 2013 => Status::Connection,
                _ => Status::Error,
            };
            let code = m.code.to_string();
            DbError::new(status, Some(code), m.message)
        }
        mysql::Error::IoError(e) => DbError::new(Status::Connection, None, e.to_string()),
        mysql::Error::CodecError(e) => DbError::new(Status::Connection, None, e.to_string()),
        mysql::Error::DriverError(d) => {
            let status = match d {
                mysql::DriverError::ConnectTimeout
                | mysql::DriverError::CouldNotConnect(_)
                | mysql::DriverError::TlsNotSupported => Status::Connection,
                _ => Status::Error,
            };
            DbError::new(status, None, d.to_string())
        }
        other => DbError::new(Status::Error, None, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_keys() {
        let t = parse("mariadb://u:pw@127.0.0.1:3307/db?ssl-mode=required").unwrap();
        assert_eq!(t.ssl, SslMode::Required);
        assert_eq!(t.opts.get_tcp_port(), 3307);
        assert_eq!(t.opts.get_db_name(), Some("db"));
        assert_eq!(t.opts.get_pass(), Some("pw"));
        assert_eq!(
            t.opts.get_tcp_connect_timeout(),
            Some(super::super::DEFAULT_CONNECT_TIMEOUT)
        );
        let t = parse("mysql://u@h/db?connect_timeout=0&ssl_mode=disabled").unwrap();
        assert_eq!(t.ssl, SslMode::Disabled);
        assert_eq!(t.opts.get_tcp_connect_timeout(), None);
        let e = parse("mysql://u:secret@h/db?ssl-mode=sometimes")
            .err()
            .unwrap();
        assert!(e.message.contains("ssl-mode=sometimes"), "{}", e.message);
        let e = parse("mysql://u@h/db?ssl-mode=VERIFY_CA").err().unwrap();
        assert!(e.message.contains("need ssl-ca"), "{}", e.message);
        let e = parse("mysql://u:secret@h/db?nonsense=1").err().unwrap();
        assert!(!e.message.contains("secret"), "{}", e.message);
    }

    #[test]
    fn commits_are_recognised() {
        for yes in ["COMMIT", "  commit;", "Commit Work", "COMMIT AND NO CHAIN"] {
            assert!(is_commit(yes), "{yes}");
        }
        for no in ["COMMITTED", "commit_log()", "SELECT 1", "ROLLBACK", "com"] {
            assert!(!is_commit(no), "{no}");
        }
    }

    #[test]
    fn classify_maps_retryable_errors() {
        let e = |code| {
            classify(mysql::Error::MySqlError(mysql::MySqlError {
                state: "40001".into(),
                message: "m".into(),
                code,
            }))
        };
        assert_eq!(e(1213).status, Status::Deadlock);
        assert_eq!(e(1205).status, Status::Lock);
        assert!(e(1213).status.retryable() && e(1205).status.retryable());
        assert_eq!(e(1062).status, Status::Constraint);
        assert_eq!(e(1064).status, Status::Error);
    }
}
