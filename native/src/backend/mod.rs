//! The small surface the runner needs from a database client.

pub mod postgres;
pub mod sqlite;

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
}

pub const STATUS_NAMES: [&str; 8] = [
    "ok",
    "error",
    "serialization",
    "deadlock",
    "lock",
    "constraint",
    "connection",
    "script",
];

impl Status {
    pub fn name(self) -> &'static str {
        STATUS_NAMES[self as usize]
    }

    /// Failures that a plain re-run of the transaction can fix.
    pub fn retryable(self) -> bool {
        matches!(self, Status::Serialization | Status::Deadlock | Status::Lock)
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
        DbError { status, code, message: message.into() }
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub type DbResult<T> = Result<T, DbError>;

/// One open connection. Statements are addressed by the order they were prepared in.
pub trait Session {
    /// Runs `;`-separated statements without parameters (setup and session SQL).
    fn batch_execute(&mut self, sql: &str) -> DbResult<()>;
    /// Prepares a statement expecting `n_params` parameters; its id is the
    /// number of statements prepared before it.
    fn prepare(&mut self, sql: &str, n_params: usize) -> DbResult<()>;
    /// Executes a prepared statement and discards its rows.
    fn execute(&mut self, stmt: usize, params: &[Value]) -> DbResult<()>;
    /// Rolls back an open transaction after a failure, if there is one.
    fn rollback_if_needed(&mut self) -> DbResult<()>;
    /// One statement, every value as text (None for NULL).
    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Option<String>>>>;
}

/// Where to connect, parsed once per call.
pub enum Target {
    Sqlite(std::path::PathBuf),
    Postgres(Box<tokio_postgres::Config>),
}

impl Target {
    pub fn parse(target: &str) -> DbResult<Target> {
        if let Some(path) = target.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(DbError::new(Status::Connection, None, "empty SQLite path in target"));
            }
            return Ok(Target::Sqlite(path.into()));
        }
        if target.starts_with("postgresql://") || target.starts_with("postgres://") {
            // Never echo the target: it may carry a password.
            let cfg = target.parse::<tokio_postgres::Config>().map_err(|e| {
                DbError::new(Status::Connection, None, format!("invalid PostgreSQL URL: {e}"))
            })?;
            return Ok(Target::Postgres(Box::new(cfg)));
        }
        Err(DbError::new(
            Status::Connection,
            None,
            "unsupported target: expected sqlite:///path or postgresql://...",
        ))
    }
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
    match target {
        Target::Sqlite(path) => {
            let conn = sqlite::open(path)?;
            let mut s = sqlite::SqliteSession::new(&conn);
            Ok(f.run(&mut s))
        }
        Target::Postgres(cfg) => {
            let mut s = postgres::PgSession::connect(cfg)?;
            Ok(f.run(&mut s))
        }
    }
}
