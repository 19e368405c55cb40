//! The small surface the runner needs from a database client.

pub mod mysql;
pub mod postgres;
pub mod python;
pub mod sqlite;
pub mod tls;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::script::Value;

/// Index into `STATUS_NAMES`; the order is part of the Python contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i8)]
pub enum Status {
    Ok = 0,
    Error = 1,
    Serialization = 2,
    Deadlock = 3,
    Lock = 4,
    Constraint = 5,
    Connection = 6,
    Script = 7,
    /// Still running when the sample's deadline and grace ran out: cancelled.
    Timeout = 8,
}

pub const STATUS_NAMES: [&str; 9] = [
    "ok",
    "error",
    "serialization",
    "deadlock",
    "lock",
    "constraint",
    "connection",
    "script",
    "timeout",
];

impl Status {
    pub fn name(self) -> &'static str {
        STATUS_NAMES[self as usize]
    }

    /// Failures that a plain re-run of the transaction can fix.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            Status::Serialization | Status::Deadlock | Status::Lock
        )
    }
}

#[derive(Clone, Debug)]
pub struct DbError {
    pub status: Status,
    /// SQLSTATE for PostgreSQL, SQLITE_* name for SQLite.
    pub code: Option<String>,
    pub message: String,
}

impl DbError {
    pub fn new(status: Status, code: Option<String>, message: impl Into<String>) -> DbError {
        DbError {
            status,
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub type DbResult<T> = Result<T, DbError>;

/// How statements are sent, as pgbench's `-M`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Parsed and planned each time, values inlined in the text (PostgreSQL's simple query).
    Simple,
    /// Parsed and planned each time, values bound (an unnamed statement).
    Extended,
    /// Parsed once per connection and then only bound and executed.
    Prepared,
}

impl Protocol {
    pub fn parse(s: &str) -> Option<Protocol> {
        Some(match s {
            "simple" => Protocol::Simple,
            "extended" => Protocol::Extended,
            "prepared" => Protocol::Prepared,
            _ => return None,
        })
    }
}

/// The simple protocol's statement: the values written into the text around
/// them (`parts` has one piece more than `values`), as pgbench -M simple does.
pub fn inline_values(parts: &[String], values: &[Value], out: &mut String) {
    use std::fmt::Write as _;
    out.clear();
    out.push_str(&parts[0]);
    for (v, part) in values.iter().zip(&parts[1..]) {
        let _ = write!(out, "{v}");
        out.push_str(part);
    }
}

/// A result value read as text (the simple protocol, SQLite text columns):
/// script variables are numbers, booleans or NULL.
pub fn value_from_text(text: Option<&str>) -> DbResult<Value> {
    let Some(t) = text else {
        return Ok(Value::Null);
    };
    let t = t.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(f) = t.parse::<f64>() {
        return Ok(Value::Float(f));
    }
    match t {
        "t" | "true" => Ok(Value::Bool(true)),
        "f" | "false" => Ok(Value::Bool(false)),
        _ => Err(not_a_number(t)),
    }
}

/// A `\\copy` failure on the client's side (the file, the data).
pub(crate) fn copy_failed(message: String) -> DbError {
    DbError::new(Status::Error, None, format!("\\copy: {message}"))
}

pub(crate) fn not_a_number(t: &str) -> DbError {
    let shown: String = t.chars().take(40).collect();
    DbError::new(
        Status::Script,
        None,
        format!("a \\gset or \\aset column holds {shown:?}, which is not a number or boolean"),
    )
}

/// Where `execute` stores a result: `map` pairs a column with the slot it sets.
pub struct Store<'a> {
    pub map: &'a [(usize, usize)],
    pub slots: &'a mut [Value],
}

/// One open connection. Statements are addressed by the order they were prepared in.
pub trait Session {
    /// Runs `;`-separated statements without parameters (setup and session SQL).
    fn batch_execute(&mut self, sql: &str) -> DbResult<()>;
    /// How `execute` sends statements from now on (until called: prepared).
    fn set_protocol(&mut self, protocol: Protocol);
    /// Rows per round trip of a result from now on (0: all at once). Only a
    /// backend whose server keeps a cursor open between round trips
    /// (PostgreSQL's portals) or whose driver reads in batches (DB-API's
    /// `arraysize` and `fetchmany`) does anything with it; the runner refuses
    /// the setting for the others.
    fn set_fetch_size(&mut self, _rows: u32) {}
    /// Prepares a statement expecting `n_params` parameters (`parts`: its text
    /// around them, for the simple protocol); its id is the number of
    /// statements prepared before it. Returns the names of its result columns.
    /// Every protocol prepares, so a statement the server refuses is found
    /// before the clock starts.
    fn prepare(&mut self, sql: &str, n_params: usize, parts: &[String]) -> DbResult<Vec<String>>;
    /// Registers statements joined with `\\;` (its text around its parameters)
    /// as the next statement: sent as one query with the values written in,
    /// never prepared, since a server prepares one statement at a time.
    /// `statements` are the texts it joins, as the script's lexer split them,
    /// for a backend that counts COMMITs itself.
    fn prepare_compound(&mut self, _parts: &[String], _statements: &[String]) -> DbResult<()> {
        Err(DbError::new(
            Status::Error,
            None,
            "statements joined with \\; need PostgreSQL".to_string(),
        ))
    }
    /// Executes a statement and reads its rows. Without `into` the rows are
    /// discarded; with it, each row's mapped columns are stored (the last row
    /// wins) and the number of rows is returned.
    fn execute(&mut self, stmt: usize, params: &[Value], into: Option<Store<'_>>) -> DbResult<u64>;
    /// `\\copy`: loads the spec's file (or the series `range`) into its table,
    /// in one transaction unless one is open; returns the rows loaded and
    /// adds them and the bytes read to the session's counters.
    fn copy_in(&mut self, spec: &crate::copy::CopySpec, range: Option<(i64, i64)>)
        -> DbResult<u64>;
    /// `\startpipeline`: statements from now on are sent without waiting for
    /// each other's results (their `execute` returns at once).
    fn pipeline_start(&mut self) -> DbResult<()> {
        Err(DbError::new(
            Status::Script,
            None,
            "pipelines need PostgreSQL".to_string(),
        ))
    }
    /// `\syncpipeline` (`end` false) and `\endpipeline` (`end` true): wait
    /// for the results of what the pipeline sent; the first error is returned.
    fn pipeline_sync(&mut self, _end: bool) -> DbResult<()> {
        Err(DbError::new(
            Status::Script,
            None,
            "pipelines need PostgreSQL".to_string(),
        ))
    }
    /// Rolls back an open transaction after a failure, if there is one (and
    /// leaves a pipeline the failure interrupted).
    fn rollback_if_needed(&mut self) -> DbResult<()>;
    /// One statement, every value as text (None for NULL).
    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Option<String>>>>;
    /// Starts the counters of `counters` from zero where the client can
    /// (SQLite's per-connection status); PostgreSQL counts from connect.
    fn reset_counters(&mut self) {}
    /// What the client counted about the database's work, by name.
    fn counters(&self) -> Vec<(&'static str, i64)> {
        Vec::new()
    }
}

/// Where to connect, parsed once per call.
pub enum Target {
    Sqlite(std::path::PathBuf),
    Postgres(Box<tokio_postgres::Config>, tls::Tls),
    Mysql(Box<mysql::Target>),
    /// A Python DB-API driver's sessions (`wannabet.engine.dbapi`), made by
    /// the request's connector rather than parsed from a URL.
    Python(python::Connector),
}

/// Whether every host of the target is a Unix-socket directory.
fn unix_only(cfg: &tokio_postgres::Config) -> bool {
    use tokio_postgres::config::Host;
    let hosts = cfg.get_hosts();
    !hosts.is_empty()
        && cfg.get_hostaddrs().is_empty()
        && hosts.iter().all(|h| matches!(h, Host::Unix(_)))
}

impl Target {
    pub fn parse(target: &str) -> DbResult<Target> {
        if let Some(path) = target.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(DbError::new(
                    Status::Connection,
                    None,
                    "empty SQLite path in target",
                ));
            }
            return Ok(Target::Sqlite(path.into()));
        }
        if target.starts_with("postgresql://") || target.starts_with("postgres://") {
            // The TLS keys as libpq reads them; the rest is tokio-postgres's.
            let (url, tls) = tls::Settings::from_url(target)
                .map_err(|m| DbError::new(Status::Connection, None, m))?;
            // Never echo the target: it may carry a password.
            let mut cfg = url.parse::<tokio_postgres::Config>().map_err(|e| {
                DbError::new(
                    Status::Connection,
                    None,
                    format!("invalid PostgreSQL URL: {e}"),
                )
            })?;
            // libpq would wait forever by default; a server that accepts TCP but
            // never answers must not hang us. An explicit connect_timeout
            // (even 0 = no limit) is left alone.
            if !target.contains("connect_timeout=") {
                cfg.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
            }
            // The statistics sampler finds this process's sessions in
            // pg_stat_activity by this name; one the user set is kept.
            if cfg.get_application_name().is_none() {
                cfg.application_name(application_name());
            }
            // tokio-postgres requires a user name; libpq defaults it (and the
            // database name) so that `postgresql:///db` works.
            // (`postgresql://:secret@host/db` parses as an empty user: same thing.)
            if cfg.get_user().is_none_or(str::is_empty) {
                match default_pg_user() {
                    Some(u) => {
                        cfg.user(u);
                    }
                    None => {
                        return Err(DbError::new(
                            Status::Connection,
                            None,
                            "no PostgreSQL user name in the URL, $PGUSER or the OS account",
                        ))
                    }
                }
            }
            if cfg.get_dbname().is_none_or(str::is_empty) {
                let db = std::env::var("PGDATABASE").ok().filter(|d| !d.is_empty());
                let db = db.unwrap_or_else(|| cfg.get_user().unwrap_or_default().to_string());
                cfg.dbname(db);
            }
            // libpq uses no TLS on a Unix socket, so a target reached only
            // that way needs none of the certificate files its URL may name.
            let tls = if unix_only(&cfg) {
                cfg.ssl_mode(tokio_postgres::config::SslMode::Disable);
                tls::Tls::disabled()
            } else {
                tls.load()
                    .map_err(|m| DbError::new(Status::Connection, None, m))?
            };
            return Ok(Target::Postgres(Box::new(cfg), tls));
        }
        if target.starts_with("mysql://") || target.starts_with("mariadb://") {
            return Ok(Target::Mysql(Box::new(mysql::parse(target)?)));
        }
        Err(DbError::new(
            Status::Connection,
            None,
            "unsupported target: expected sqlite:///path, postgresql://... or mysql://...",
        ))
    }
}

impl Target {
    /// Names PostgreSQL sessions `<application_name>-<role>`: sessions that are not the run's
    /// measured ones (held, background), which the statistics sampler finds by name.
    pub fn rename(&mut self, role: &str) {
        match self {
            Target::Postgres(cfg, _) => {
                let name = format!(
                    "{}-{role}",
                    cfg.get_application_name().unwrap_or("wannabet")
                );
                cfg.application_name(name);
            }
            Target::Mysql(t) => t.rename(role),
            Target::Sqlite(_) | Target::Python(_) => {}
        }
    }
}

/// `wannabet-<pid>`: the application_name of this process's connections
/// unless the URL names one. A load generator of a distributed run is given
/// its coordinator's name in `WANNABET_APPLICATION_NAME`, so the statistics
/// taken centrally find every generator's sessions under one name.
pub fn application_name() -> String {
    match std::env::var("WANNABET_APPLICATION_NAME") {
        Ok(name) if !name.is_empty() => name,
        _ => format!("wannabet-{}", std::process::id()),
    }
}

/// Applied when the URL has no `connect_timeout`: to the TCP connect and,
/// separately, to the startup/authentication handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The user name libpq would use: $PGUSER, else the OS account of the
/// effective uid (getpwuid, as libpq does), else $USER.
fn default_pg_user() -> Option<String> {
    if let Some(u) = std::env::var("PGUSER").ok().filter(|u| !u.is_empty()) {
        return Some(u);
    }
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: plain getpwuid_r with a caller-owned buffer; the name is
    // copied out before the buffer goes away.
    let name = unsafe {
        let mut pw: libc::passwd = std::mem::zeroed();
        let mut res: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::geteuid(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut res,
        );
        if rc == 0 && !res.is_null() && !pw.pw_name.is_null() {
            Some(
                std::ffi::CStr::from_ptr(pw.pw_name)
                    .to_string_lossy()
                    .into_owned(),
            )
        } else {
            None
        }
    };
    name.filter(|n| !n.is_empty())
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
}

/// What another thread needs to stop a session's running statement.
pub enum CancelHandle {
    /// A CancelRequest on a new socket to the same server.
    Postgres(postgres::CancelInfo),
    /// sqlite3_interrupt; safe to call even after the connection closed.
    Sqlite(rusqlite::InterruptHandle),
    /// KILL QUERY on a new connection to the same server.
    Mysql(Box<mysql::CancelInfo>),
    /// The Python session's `cancel()` (the driver's interrupt, where it has one).
    Python(python::CancelInfo),
}

#[derive(Default)]
struct CancelState {
    cancelled: bool,
    handles: Vec<CancelHandle>,
}

/// Shared between the sessions of one call and the thread that waits for
/// them (the Python thread), which uses it on Ctrl-C or stop.
#[derive(Clone, Default)]
pub struct Canceller(Arc<Mutex<CancelState>>);

impl Canceller {
    /// False once `cancel` was called: the session must not start work
    /// nobody waits for any more.
    fn register(&self, h: CancelHandle) -> bool {
        let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if st.cancelled {
            return false;
        }
        st.handles.push(h);
        true
    }

    /// Cancels whatever every registered session is running, giving up at
    /// `deadline` (an unreachable server must not hold up Ctrl-C). Handles of
    /// sessions that already ended are harmless: PostgreSQL ignores a cancel
    /// key it does not know, and interrupting a closed SQLite handle is a no-op.
    /// Returns false when no session had registered yet (still connecting:
    /// it will give up on its own when it tries to register).
    pub fn cancel(&self, deadline: Instant) -> bool {
        let handles = {
            let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
            st.cancelled = true;
            std::mem::take(&mut st.handles)
        };
        let any = !handles.is_empty();
        for h in handles {
            match h {
                CancelHandle::Postgres(info) => info.cancel(deadline),
                CancelHandle::Sqlite(i) => i.interrupt(),
                CancelHandle::Mysql(info) => info.cancel(deadline),
                CancelHandle::Python(info) => info.cancel(),
            }
        }
        any
    }
}

fn interrupted() -> DbError {
    DbError::new(Status::Connection, None, "interrupted")
}

/// Work to do with an open session, generic so the hot loop is monomorphized
/// per backend (a closure cannot be generic over the session type).
pub trait WithSession {
    type Output;
    fn run<S: Session>(self, s: &mut S) -> Self::Output;
}

/// Opens a session for `target` and hands it to `f`. SQLite statements borrow
/// their connection, so the session can only live inside this call.
pub fn with_session<F: WithSession>(target: &Target, f: F) -> DbResult<F::Output> {
    with_session_cancellable(target, &Canceller::default(), f)
}

/// Like `with_session`, registering the session with `cancel` before `f`
/// runs. Errs (status Connection, "interrupted") if `cancel` already fired.
pub fn with_session_cancellable<F: WithSession>(
    target: &Target,
    cancel: &Canceller,
    f: F,
) -> DbResult<F::Output> {
    match target {
        Target::Sqlite(path) => {
            let conn = sqlite::open(path)?;
            if !cancel.register(CancelHandle::Sqlite(conn.get_interrupt_handle())) {
                return Err(interrupted());
            }
            let mut s = sqlite::SqliteSession::new(&conn);
            Ok(f.run(&mut s))
        }
        Target::Postgres(cfg, tls) => {
            let mut s = postgres::PgSession::connect(cfg, tls)?;
            if !cancel.register(CancelHandle::Postgres(s.cancel_info())) {
                return Err(interrupted());
            }
            Ok(f.run(&mut s))
        }
        Target::Mysql(t) => {
            let mut s = mysql::MySession::connect(t)?;
            if !cancel.register(CancelHandle::Mysql(Box::new(s.cancel_info()))) {
                return Err(interrupted());
            }
            Ok(f.run(&mut s))
        }
        Target::Python(c) => {
            let mut s = c.connect()?;
            if !cancel.register(CancelHandle::Python(s.cancel_info())) {
                return Err(interrupted());
            }
            Ok(f.run(&mut s))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(url: &str) -> Box<tokio_postgres::Config> {
        match Target::parse(url) {
            Ok(Target::Postgres(c, _)) => c,
            _ => panic!("{url} did not parse"),
        }
    }

    #[test]
    fn postgres_defaults() {
        let c = pg("postgresql://someone@localhost/db");
        assert_eq!(c.get_user(), Some("someone"));
        assert_eq!(c.get_dbname(), Some("db"));
        assert_eq!(c.get_connect_timeout(), Some(&DEFAULT_CONNECT_TIMEOUT));
        assert_eq!(
            pg("postgres://u@h/d?connect_timeout=3").get_connect_timeout(),
            Some(&Duration::from_secs(3))
        );
        // connect_timeout=0 means "no limit", as in libpq.
        assert_eq!(
            pg("postgres://u@h/d?connect_timeout=0").get_connect_timeout(),
            None
        );
        // No user: libpq's default (env or OS account); no database: the user's name
        // unless $PGDATABASE says otherwise.
        for url in ["postgresql://localhost", "postgresql://:pw@localhost/"] {
            let c = pg(url);
            assert!(c.get_user().is_some_and(|u| !u.is_empty()), "{url}");
            if std::env::var_os("PGDATABASE").is_none() {
                assert_eq!(c.get_dbname(), c.get_user(), "{url}");
            }
        }
    }

    #[test]
    fn a_unix_socket_target_needs_no_certificate_files() {
        // libpq connects here (no TLS on a socket); the files are read only for TCP.
        let url = "postgresql://u@/db?host=/tmp&sslmode=verify-full&sslrootcert=/no/such.crt";
        match Target::parse(url) {
            Ok(Target::Postgres(cfg, tls)) => {
                assert_eq!(cfg.get_ssl_mode(), tokio_postgres::config::SslMode::Disable);
                assert_eq!(tls.mode, tls::Mode::Disable);
            }
            _ => panic!("{url} did not parse"),
        }
        let tcp = "postgresql://u@localhost/db?sslmode=verify-full&sslrootcert=/no/such.crt";
        let e = Target::parse(tcp).err().unwrap().message;
        assert!(e.contains("sslrootcert /no/such.crt"), "{e}");
    }
}
