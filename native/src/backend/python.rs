//! Sessions on a Python DB-API driver (`wannabet.engine.dbapi`): the runner's
//! loop, scripts, timing and summaries stay here, and each statement is one
//! call into a Python session object that owns a DB-API connection.
//!
//! The Python side does what differs between drivers (connecting, the
//! paramstyle, describing a statement's columns, naming errors); this side
//! only moves values across. Every call takes the GIL for its duration; a
//! driver that releases it while the database works (DuckDB, python-oracledb,
//! sqlite3) lets sessions overlap as they would in an application.
//!
//! The session object's methods (see `wannabet.engine.dbapi.DbapiSession`):
//! `batch(sql)`, `set_fetch_size(rows)`, `prepare(parts, n_params) -> [column names]`,
//! `execute(stmt, params, capture) -> (rows, last row or None)`,
//! `rollback()`, `query_text(sql) -> [[str | None]]`, `cancel()`, `close()`.
//! A failure raises an exception carrying `status` (an index into
//! `STATUS_NAMES`) and `code` (the driver's error code or None).

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use pyo3::IntoPyObjectExt;

use super::{value_from_text, DbError, DbResult, Protocol, Session, Status, Store};
use crate::script::Value;

/// Makes a session: `connector.connect()` returns a session object.
pub struct Connector(pub Py<PyAny>);

/// What `CancelHandle::Python` calls: the session's `cancel()`.
pub struct CancelInfo(Py<PyAny>);

impl CancelInfo {
    pub fn cancel(&self) {
        Python::attach(|py| {
            // A driver that cannot cancel, or a session already closed: the
            // statement then ends on its own.
            let _ = self.0.call_method0(py, "cancel");
        });
    }
}

pub struct PySession {
    obj: Py<PyAny>,
    /// Parameters per prepared statement, checked on every execute.
    n_params: Vec<usize>,
}

const STATUSES: [Status; 8] = [
    Status::Ok,
    Status::Error,
    Status::Serialization,
    Status::Deadlock,
    Status::Lock,
    Status::Constraint,
    Status::Connection,
    Status::Script,
];

/// A Python exception as a database error: its `status` and `code`
/// attributes where the session set them, otherwise a plain error.
fn db_error(py: Python<'_>, e: PyErr) -> DbError {
    let value = e.value(py);
    let status = value
        .getattr("status")
        .ok()
        .and_then(|s| s.extract::<usize>().ok())
        .and_then(|i| STATUSES.get(i).copied())
        .filter(|s| *s != Status::Ok)
        .unwrap_or(Status::Error);
    let code = value
        .getattr("code")
        .ok()
        .and_then(|c| c.extract::<Option<String>>().ok())
        .flatten();
    let message = value
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| e.to_string());
    DbError::new(status, code, message)
}

impl Connector {
    pub fn connect(&self) -> DbResult<PySession> {
        Python::attach(|py| {
            let obj = self.0.call_method0(py, "connect").map_err(|e| {
                let mut err = db_error(py, e);
                err.status = Status::Connection;
                err
            })?;
            Ok(PySession {
                obj,
                n_params: Vec::new(),
            })
        })
    }
}

impl PySession {
    pub fn cancel_info(&self) -> CancelInfo {
        Python::attach(|py| CancelInfo(self.obj.clone_ref(py)))
    }
}

impl Drop for PySession {
    fn drop(&mut self) {
        Python::attach(|py| {
            let _ = self.obj.call_method0(py, "close");
        });
    }
}

/// A result value as a script value: numbers and booleans as they are, text
/// that reads as one, anything else (Decimal, numpy scalars) through float().
fn to_value(v: &Bound<'_, PyAny>) -> DbResult<Value> {
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = v.cast::<pyo3::types::PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(s) = v.extract::<String>() {
        return value_from_text(Some(&s));
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(Value::Float(f));
    }
    let shown = v.repr().map(|r| r.to_string()).unwrap_or_default();
    value_from_text(Some(&shown))
}

impl Session for PySession {
    fn batch_execute(&mut self, sql: &str) -> DbResult<()> {
        Python::attach(|py| {
            self.obj
                .call_method1(py, "batch", (sql,))
                .map(|_| ())
                .map_err(|e| db_error(py, e))
        })
    }

    /// DB-API has no protocol choice; the runner refuses one for these targets.
    fn set_protocol(&mut self, _protocol: Protocol) {}

    fn set_fetch_size(&mut self, rows: u32) {
        // `DbapiSession.set_fetch_size` only keeps the number (and sets the cursor's
        // arraysize), which cannot fail.
        Python::attach(|py| {
            let _ = self.obj.call_method1(py, "set_fetch_size", (rows,));
        });
    }

    fn prepare(&mut self, _sql: &str, n_params: usize, parts: &[String]) -> DbResult<Vec<String>> {
        let columns = Python::attach(|py| {
            self.obj
                .call_method1(py, "prepare", (parts.to_vec(), n_params))
                .and_then(|c| c.extract::<Vec<String>>(py))
                .map_err(|e| db_error(py, e))
        })?;
        self.n_params.push(n_params);
        Ok(columns)
    }

    fn execute(&mut self, stmt: usize, params: &[Value], into: Option<Store<'_>>) -> DbResult<u64> {
        Python::attach(|py| {
            let values = params.iter().map(|v| match *v {
                Value::Int(x) => x.into_bound_py_any(py),
                Value::Float(x) => x.into_bound_py_any(py),
                Value::Bool(b) => b.into_bound_py_any(py),
                Value::Null | Value::Unset => Ok(py.None().into_bound(py)),
            });
            let values = values
                .collect::<PyResult<Vec<_>>>()
                .and_then(|v| PyTuple::new(py, v))
                .map_err(|e| db_error(py, e))?;
            let out = self
                .obj
                .call_method1(py, "execute", (stmt, values, into.is_some()))
                .map_err(|e| db_error(py, e))?;
            let (n, last): (u64, Option<Bound<'_, PyAny>>) =
                out.extract(py).map_err(|e| db_error(py, e))?;
            if let (Some(into), Some(row)) = (into, last) {
                for &(col, slot) in into.map {
                    let v = row.get_item(col).map_err(|e| db_error(py, e))?;
                    into.slots[slot] = to_value(&v)?;
                }
            }
            Ok(n)
        })
    }

    fn copy_in(
        &mut self,
        _spec: &crate::copy::CopySpec,
        _range: Option<(i64, i64)>,
    ) -> DbResult<u64> {
        Err(DbError::new(
            Status::Script,
            None,
            "\\copy needs PostgreSQL, MySQL or SQLite; with a DB-API driver, load with the \
             database's own SQL (DuckDB: COPY table FROM 'file.csv')",
        ))
    }

    fn rollback_if_needed(&mut self) -> DbResult<()> {
        Python::attach(|py| {
            self.obj
                .call_method0(py, "rollback")
                .map(|_| ())
                .map_err(|e| db_error(py, e))
        })
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Option<String>>>> {
        Python::attach(|py| {
            let rows = self
                .obj
                .call_method1(py, "query_text", (sql,))
                .map_err(|e| db_error(py, e))?;
            let rows = rows
                .bind(py)
                .cast::<PyList>()
                .map_err(|e| DbError::new(Status::Error, None, format!("query_text: {e}")))?;
            rows.iter()
                .map(|r| r.extract::<Vec<Option<String>>>())
                .collect::<PyResult<_>>()
                .map_err(|e| db_error(py, e))
        })
    }
}
