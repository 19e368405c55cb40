use std::path::Path;
use std::time::Duration;

use rusqlite::{ffi, Connection, ErrorCode, Statement};

use super::{inline_values, value_from_text, DbError, DbResult, Protocol, Session, Status, Store};
use crate::script::Value;

/// Lock waits are part of what we measure: with a busy timeout a writer that
/// has to queue behind another one shows up as latency, not as a flood of
/// instant SQLITE_BUSY errors. Ten seconds is far beyond any sane lock wait.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub fn open(path: &Path) -> DbResult<Connection> {
    let conn = Connection::open(path).map_err(|e| {
        let mut err = classify(e);
        err.status = Status::Connection;
        err.message = format!("cannot open SQLite database: {}", err.message);
        err
    })?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(classify)?;
    Ok(conn)
}

pub struct SqliteSession<'c> {
    conn: &'c Connection,
    stmts: Vec<Statement<'c>>,
    /// Per statement: its text and the text around its parameters.
    texts: Vec<(String, Vec<String>)>,
    protocol: Protocol,
    /// Reused for simple-protocol statement text.
    inline: String,
    /// `\\copy` rows and bytes loaded since the counters were reset.
    copied: (i64, i64),
}

impl<'c> SqliteSession<'c> {
    pub fn new(conn: &'c Connection) -> Self {
        SqliteSession {
            conn,
            stmts: Vec::new(),
            texts: Vec::new(),
            protocol: Protocol::Prepared,
            inline: String::new(),
            copied: (0, 0),
        }
    }
}

/// Binds, steps through every row (reads cost what they would in an
/// application) and stores the mapped columns of each into the slots.
fn run(st: &mut Statement<'_>, params: &[Value], into: Option<Store<'_>>) -> DbResult<u64> {
    for (i, v) in params.iter().enumerate() {
        // Placeholders are ?1..?n, so parameter i binds at index i + 1.
        let r = match *v {
            Value::Int(x) => st.raw_bind_parameter(i + 1, x),
            Value::Float(x) => st.raw_bind_parameter(i + 1, x),
            Value::Bool(b) => st.raw_bind_parameter(i + 1, b as i64),
            Value::Null => st.raw_bind_parameter(i + 1, rusqlite::types::Null),
            Value::Unset => unreachable!("runner checks for unset values"),
        };
        r.map_err(classify)?;
    }
    let mut rows = st.raw_query();
    let mut n = 0;
    match into {
        None => {
            while rows.next().map_err(classify)?.is_some() {
                n += 1;
            }
        }
        Some(into) => {
            use rusqlite::types::ValueRef;
            while let Some(row) = rows.next().map_err(classify)? {
                n += 1;
                for &(col, slot) in into.map {
                    into.slots[slot] = match row.get_ref(col).map_err(classify)? {
                        ValueRef::Null => Value::Null,
                        ValueRef::Integer(x) => Value::Int(x),
                        ValueRef::Real(x) => Value::Float(x),
                        ValueRef::Text(t) => value_from_text(Some(&String::from_utf8_lossy(t)))?,
                        ValueRef::Blob(_) => value_from_text(Some("<blob>"))?,
                    };
                }
            }
        }
    }
    Ok(n)
}

impl Session for SqliteSession<'_> {
    fn batch_execute(&mut self, sql: &str) -> DbResult<()> {
        self.conn.execute_batch(sql).map_err(classify)
    }

    fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = protocol;
    }

    fn prepare(&mut self, sql: &str, n_params: usize, parts: &[String]) -> DbResult<Vec<String>> {
        let stmt = self.conn.prepare(sql).map_err(classify)?;
        if stmt.parameter_count() != n_params {
            return Err(DbError::new(
                Status::Error,
                None,
                format!(
                    "statement has {} parameters but {} values are bound",
                    stmt.parameter_count(),
                    n_params
                ),
            ));
        }
        let columns = stmt.column_names().iter().map(|c| c.to_string()).collect();
        self.stmts.push(stmt);
        self.texts.push((sql.to_owned(), parts.to_vec()));
        Ok(columns)
    }

    fn execute(&mut self, stmt: usize, params: &[Value], into: Option<Store<'_>>) -> DbResult<u64> {
        match self.protocol {
            Protocol::Prepared => run(&mut self.stmts[stmt], params, into),
            // SQLite has no protocol: "extended" compiles the statement each
            // time, "simple" also writes the values into its text.
            Protocol::Extended => {
                let mut st = self.conn.prepare(&self.texts[stmt].0).map_err(classify)?;
                run(&mut st, params, into)
            }
            Protocol::Simple => {
                inline_values(&self.texts[stmt].1, params, &mut self.inline);
                let mut st = self.conn.prepare(&self.inline).map_err(classify)?;
                run(&mut st, &[], into)
            }
        }
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
        // One transaction for the load, as COPY is one statement; inside the
        // script's own transaction, that one.
        let own = self.conn.is_autocommit();
        if own {
            self.conn.execute_batch("BEGIN").map_err(classify)?;
        }
        let conn = self.conn;
        let mut insert: Option<(usize, Statement<'_>)> = None;
        let mut rows = 0u64;
        let mut db_error: Option<DbError> = None;
        let read = crate::copy::read_rows(&mut input, &format, |fields| {
            if insert.as_ref().is_none_or(|(n, _)| *n != fields.len()) {
                let st = conn.prepare(&spec.insert_sql(fields.len()));
                match st {
                    Ok(st) => insert = Some((fields.len(), st)),
                    Err(e) => {
                        db_error = Some(classify(e));
                        return Err(String::new());
                    }
                }
            }
            let (_, st) = insert.as_mut().expect("prepared above");
            for (i, f) in fields.iter().enumerate() {
                let r = match f {
                    Some(text) => st.raw_bind_parameter(i + 1, *text),
                    None => st.raw_bind_parameter(i + 1, rusqlite::types::Null),
                };
                if let Err(e) = r {
                    db_error = Some(classify(e));
                    return Err(String::new());
                }
            }
            match st.raw_execute() {
                Ok(_) => {
                    rows += 1;
                    Ok(())
                }
                Err(e) => {
                    db_error = Some(classify(e));
                    Err(String::new())
                }
            }
        });
        drop(insert);
        let result = match (read, db_error) {
            (_, Some(e)) => Err(e),
            (Err(m), None) => Err(copy_failed(m)),
            (Ok(()), None) => Ok(rows),
        };
        if own {
            let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
            let ended = self.conn.execute_batch(end).map_err(classify);
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
        if self.conn.is_autocommit() {
            return Ok(());
        }
        self.conn.execute_batch("ROLLBACK").map_err(classify)
    }

    fn reset_counters(&mut self) {
        for (_, op) in DB_STATUS {
            db_status(self.conn, op, true);
        }
        self.copied = (0, 0);
    }

    fn counters(&self) -> Vec<(&'static str, i64)> {
        let mut out: Vec<(&'static str, i64)> = DB_STATUS
            .iter()
            .filter_map(|&(name, op)| db_status(self.conn, op, false).map(|v| (name, v)))
            .collect();
        if self.copied != (0, 0) {
            out.push(("copy_rows", self.copied.0));
            out.push(("copy_bytes", self.copied.1));
        }
        out
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Option<String>>>> {
        use rusqlite::types::ValueRef;
        let mut st = self.conn.prepare(sql).map_err(classify)?;
        let n = st.column_count();
        let mut rows = st.raw_query();
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(classify)? {
            let mut r = Vec::with_capacity(n);
            for i in 0..n {
                r.push(match row.get_ref(i).map_err(classify)? {
                    ValueRef::Null => None,
                    ValueRef::Integer(x) => Some(x.to_string()),
                    ValueRef::Real(x) => Some(format!("{x:?}")),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Some(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            out.push(r);
        }
        Ok(out)
    }
}

/// Per-connection page-cache counters (sqlite3_db_status), cumulative since
/// the last reset.
const DB_STATUS: [(&str, i32); 4] = [
    ("cache_hit", ffi::SQLITE_DBSTATUS_CACHE_HIT),
    ("cache_miss", ffi::SQLITE_DBSTATUS_CACHE_MISS),
    ("cache_write", ffi::SQLITE_DBSTATUS_CACHE_WRITE),
    ("cache_spill", ffi::SQLITE_DBSTATUS_CACHE_SPILL),
];

fn db_status(conn: &Connection, op: i32, reset: bool) -> Option<i64> {
    let (mut cur, mut hi) = (0, 0);
    // SAFETY: the handle is valid while `conn` is borrowed; sqlite3_db_status
    // only reads counters of that connection.
    let rc = unsafe { ffi::sqlite3_db_status(conn.handle(), op, &mut cur, &mut hi, reset as i32) };
    (rc == ffi::SQLITE_OK).then_some(cur as i64)
}

pub fn classify(e: rusqlite::Error) -> DbError {
    // `bundled` implies `modern_sqlite`, which reports syntax errors with
    // their token position as SqlInputError.
    let f = match &e {
        rusqlite::Error::SqliteFailure(f, _) | rusqlite::Error::SqlInputError { error: f, .. } => {
            *f
        }
        _ => return DbError::new(Status::Error, None, e.to_string()),
    };
    let status = match f.code {
        ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => Status::Lock,
        ErrorCode::ConstraintViolation => Status::Constraint,
        _ => Status::Error,
    };
    let message = match e {
        rusqlite::Error::SqliteFailure(_, Some(m)) => m,
        other => other.to_string(),
    };
    DbError::new(status, Some(code_name(f.extended_code)), message)
}

/// The C macro name of a result code, e.g. 2067 -> "SQLITE_CONSTRAINT_UNIQUE".
pub fn code_name(extended: i32) -> String {
    let name = match extended {
        ffi::SQLITE_CONSTRAINT_CHECK => "SQLITE_CONSTRAINT_CHECK",
        ffi::SQLITE_CONSTRAINT_COMMITHOOK => "SQLITE_CONSTRAINT_COMMITHOOK",
        ffi::SQLITE_CONSTRAINT_FOREIGNKEY => "SQLITE_CONSTRAINT_FOREIGNKEY",
        ffi::SQLITE_CONSTRAINT_FUNCTION => "SQLITE_CONSTRAINT_FUNCTION",
        ffi::SQLITE_CONSTRAINT_NOTNULL => "SQLITE_CONSTRAINT_NOTNULL",
        ffi::SQLITE_CONSTRAINT_PRIMARYKEY => "SQLITE_CONSTRAINT_PRIMARYKEY",
        ffi::SQLITE_CONSTRAINT_TRIGGER => "SQLITE_CONSTRAINT_TRIGGER",
        ffi::SQLITE_CONSTRAINT_UNIQUE => "SQLITE_CONSTRAINT_UNIQUE",
        ffi::SQLITE_CONSTRAINT_VTAB => "SQLITE_CONSTRAINT_VTAB",
        ffi::SQLITE_CONSTRAINT_ROWID => "SQLITE_CONSTRAINT_ROWID",
        ffi::SQLITE_CONSTRAINT_PINNED => "SQLITE_CONSTRAINT_PINNED",
        ffi::SQLITE_CONSTRAINT_DATATYPE => "SQLITE_CONSTRAINT_DATATYPE",
        ffi::SQLITE_BUSY_RECOVERY => "SQLITE_BUSY_RECOVERY",
        ffi::SQLITE_BUSY_SNAPSHOT => "SQLITE_BUSY_SNAPSHOT",
        ffi::SQLITE_BUSY_TIMEOUT => "SQLITE_BUSY_TIMEOUT",
        ffi::SQLITE_LOCKED_SHAREDCACHE => "SQLITE_LOCKED_SHAREDCACHE",
        ffi::SQLITE_LOCKED_VTAB => "SQLITE_LOCKED_VTAB",
        ffi::SQLITE_READONLY_DBMOVED => "SQLITE_READONLY_DBMOVED",
        ffi::SQLITE_READONLY_RECOVERY => "SQLITE_READONLY_RECOVERY",
        ffi::SQLITE_READONLY_CANTLOCK => "SQLITE_READONLY_CANTLOCK",
        ffi::SQLITE_READONLY_ROLLBACK => "SQLITE_READONLY_ROLLBACK",
        ffi::SQLITE_CANTOPEN_ISDIR => "SQLITE_CANTOPEN_ISDIR",
        ffi::SQLITE_CANTOPEN_FULLPATH => "SQLITE_CANTOPEN_FULLPATH",
        _ => {
            let primary = match extended & 0xff {
                ffi::SQLITE_ERROR => "SQLITE_ERROR",
                ffi::SQLITE_INTERNAL => "SQLITE_INTERNAL",
                ffi::SQLITE_PERM => "SQLITE_PERM",
                ffi::SQLITE_ABORT => "SQLITE_ABORT",
                ffi::SQLITE_BUSY => "SQLITE_BUSY",
                ffi::SQLITE_LOCKED => "SQLITE_LOCKED",
                ffi::SQLITE_NOMEM => "SQLITE_NOMEM",
                ffi::SQLITE_READONLY => "SQLITE_READONLY",
                ffi::SQLITE_INTERRUPT => "SQLITE_INTERRUPT",
                ffi::SQLITE_IOERR => "SQLITE_IOERR",
                ffi::SQLITE_CORRUPT => "SQLITE_CORRUPT",
                ffi::SQLITE_NOTFOUND => "SQLITE_NOTFOUND",
                ffi::SQLITE_FULL => "SQLITE_FULL",
                ffi::SQLITE_CANTOPEN => "SQLITE_CANTOPEN",
                ffi::SQLITE_PROTOCOL => "SQLITE_PROTOCOL",
                ffi::SQLITE_EMPTY => "SQLITE_EMPTY",
                ffi::SQLITE_SCHEMA => "SQLITE_SCHEMA",
                ffi::SQLITE_TOOBIG => "SQLITE_TOOBIG",
                ffi::SQLITE_CONSTRAINT => "SQLITE_CONSTRAINT",
                ffi::SQLITE_MISMATCH => "SQLITE_MISMATCH",
                ffi::SQLITE_MISUSE => "SQLITE_MISUSE",
                ffi::SQLITE_NOLFS => "SQLITE_NOLFS",
                ffi::SQLITE_AUTH => "SQLITE_AUTH",
                ffi::SQLITE_FORMAT => "SQLITE_FORMAT",
                ffi::SQLITE_RANGE => "SQLITE_RANGE",
                ffi::SQLITE_NOTADB => "SQLITE_NOTADB",
                _ => return format!("SQLITE_{extended}"),
            };
            if extended > 0xff {
                // An extended code we have no name for: keep it distinguishable.
                return format!("{primary}_{}", extended >> 8);
            }
            primary
        }
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_names() {
        assert_eq!(code_name(2067), "SQLITE_CONSTRAINT_UNIQUE");
        assert_eq!(code_name(5), "SQLITE_BUSY");
        assert_eq!(code_name(517), "SQLITE_BUSY_SNAPSHOT");
        assert_eq!(code_name(1), "SQLITE_ERROR");
    }

    fn parts(n: usize) -> Vec<String> {
        vec![String::new(); n + 1]
    }

    #[test]
    fn every_protocol_stores_the_last_row() {
        let conn = Connection::open_in_memory().unwrap();
        let mut s = SqliteSession::new(&conn);
        s.batch_execute("CREATE TABLE t (id INTEGER, v REAL, s TEXT, n INTEGER)")
            .unwrap();
        s.batch_execute("INSERT INTO t VALUES (1, 1.5, '7', NULL), (2, 2.5, 'x', 3)")
            .unwrap();
        let sql = "SELECT id, v, s, n FROM t WHERE id <= ?1 ORDER BY id";
        let text = vec![
            "SELECT id, v, s, n FROM t WHERE id <= ".into(),
            " ORDER BY id".into(),
        ];
        let cols = s.prepare(sql, 1, &text).unwrap();
        assert_eq!(cols, ["id", "v", "s", "n"]);
        for p in [Protocol::Prepared, Protocol::Extended, Protocol::Simple] {
            s.set_protocol(p);
            let mut slots = [Value::Unset; 4];
            let map = [(0, 0), (1, 1), (2, 2), (3, 3)];
            let into = Store {
                map: &map,
                slots: &mut slots,
            };
            assert_eq!(s.execute(0, &[Value::Int(1)], Some(into)).unwrap(), 1);
            let want = [Value::Int(1), Value::Float(1.5), Value::Int(7), Value::Null];
            assert_eq!(slots, want, "{p:?}");
            let into = Store {
                map: &map[..2],
                slots: &mut slots,
            };
            assert_eq!(s.execute(0, &[Value::Int(5)], Some(into)).unwrap(), 2);
            assert_eq!(slots[..2], [Value::Int(2), Value::Float(2.5)], "{p:?}");
            // Text that is not a number cannot become a variable.
            let into = Store {
                map: &map[2..3],
                slots: &mut slots,
            };
            let e = s.execute(0, &[Value::Int(5)], Some(into)).unwrap_err();
            assert_eq!(e.status, Status::Script, "{p:?}");
            assert!(e.message.contains("\"x\""), "{}", e.message);
            // No rows: nothing is stored.
            let into = Store {
                map: &map,
                slots: &mut slots,
            };
            assert_eq!(s.execute(0, &[Value::Int(0)], Some(into)).unwrap(), 0);
            assert_eq!(slots[0], Value::Int(2));
        }
    }

    #[test]
    fn classify_and_execute() {
        let conn = Connection::open_in_memory().unwrap();
        let mut s = SqliteSession::new(&conn);
        s.batch_execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v REAL)")
            .unwrap();
        s.prepare("INSERT INTO t VALUES (?1, ?2)", 2, &parts(2))
            .unwrap();
        s.prepare("SELECT * FROM t WHERE id >= ?1", 1, &parts(1))
            .unwrap();
        assert!(s.prepare("SELECT ?1, ?2", 1, &parts(1)).is_err());
        s.execute(0, &[Value::Int(1), Value::Float(1.5)], None)
            .unwrap();
        s.execute(1, &[Value::Int(0)], None).unwrap();
        let e = s
            .execute(0, &[Value::Int(1), Value::Int(2)], None)
            .unwrap_err();
        assert_eq!(e.status, Status::Constraint);
        assert_eq!(e.code.as_deref(), Some("SQLITE_CONSTRAINT_PRIMARYKEY"));
        // The failed statement must not poison the next execution.
        s.execute(0, &[Value::Int(2), Value::Int(2)], None).unwrap();
        s.batch_execute("BEGIN").unwrap();
        s.execute(0, &[Value::Int(3), Value::Int(2)], None).unwrap();
        s.rollback_if_needed().unwrap();
        s.rollback_if_needed().unwrap();
        let rows = s
            .query_text("SELECT id, v, NULL FROM t ORDER BY id")
            .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![Some("1".into()), Some("1.5".into()), None],
                vec![Some("2".into()), Some("2.0".into()), None],
            ]
        );
        let e = s.batch_execute("SELECT * FROM missing").unwrap_err();
        assert_eq!(e.status, Status::Error);
        assert!(e.message.contains("missing"), "{}", e.message);
        let e = s.prepare("SELEC 1", 0, &parts(0)).unwrap_err();
        assert_eq!(e.code.as_deref(), Some("SQLITE_ERROR"));
    }

    #[test]
    fn cache_counters() {
        let conn = Connection::open_in_memory().unwrap();
        let mut s = SqliteSession::new(&conn);
        s.batch_execute("CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)")
            .unwrap();
        s.reset_counters();
        let zero: Vec<_> = s.counters();
        assert!(zero.iter().all(|&(_, v)| v == 0), "{zero:?}");
        s.prepare("SELECT * FROM t", 0, &parts(0)).unwrap();
        s.execute(0, &[], None).unwrap();
        let c = s.counters();
        let hit = c.iter().find(|(n, _)| *n == "cache_hit").unwrap().1;
        assert!(hit > 0, "{c:?}");
    }
}
