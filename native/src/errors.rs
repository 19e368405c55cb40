//! The engine's Python exceptions and the conversion of engine errors into
//! them: every error leaving the extension is built here.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::PyTypeInfo;

use crate::backend::{self, DbError, Target};
use crate::runner::{Fatal, FatalKind};

pyo3::create_exception!(
    wannabet._engine,
    EngineError,
    PyException,
    "Base class of engine errors; `.code` is the SQLSTATE / SQLite code or None."
);
pyo3::create_exception!(
    wannabet._engine,
    ConnectError,
    EngineError,
    "Cannot connect or authenticate."
);
pyo3::create_exception!(
    wannabet._engine,
    QueryError,
    EngineError,
    "A statement failed; a refused prepare also names the statement (`.statement`, from 1), its transaction (`.transaction`, `.transaction_index`) and the driver's message (`.reason`)."
);

pub(crate) fn engine_err<T: PyTypeInfo>(
    py: Python<'_>,
    message: String,
    code: Option<String>,
) -> PyErr {
    let err = PyErr::from_type(T::type_object(py), message);
    // Every instance carries `.code`, so callers never need getattr defaults.
    if let Err(e) = err.value(py).setattr("code", code) {
        return e;
    }
    err
}

pub(crate) fn connect_err(py: Python<'_>, e: DbError) -> PyErr {
    // No "cannot connect" prefix: the Python wrapper adds it with the target.
    engine_err::<ConnectError>(py, e.message, e.code)
}

pub(crate) fn query_err(py: Python<'_>, e: DbError) -> PyErr {
    engine_err::<QueryError>(py, e.message, e.code)
}

pub(crate) fn fatal_err(py: Python<'_>, f: Fatal) -> PyErr {
    match f.kind {
        FatalKind::Connect => engine_err::<ConnectError>(py, f.message, f.code),
        FatalKind::Query => {
            let err = engine_err::<QueryError>(py, f.message, f.code);
            if let Some(p) = f.prepare {
                let v = err.value(py);
                let set = v
                    .setattr("statement", p.statement)
                    .and_then(|()| v.setattr("transaction", p.transaction))
                    .and_then(|()| v.setattr("transaction_index", p.transaction_index))
                    .and_then(|()| v.setattr("reason", p.reason));
                if let Err(e) = set {
                    return e;
                }
            }
            err
        }
        FatalKind::Panic => engine_err::<EngineError>(py, f.message, f.code),
    }
}

pub(crate) fn parse_target(py: Python<'_>, target: &str) -> PyResult<Target> {
    Target::parse(target).map_err(|e| engine_err::<ConnectError>(py, e.message, e.code))
}

pub(crate) fn db_err(py: Python<'_>, e: DbError) -> PyErr {
    match e.status {
        backend::Status::Connection => connect_err(py, e),
        _ => query_err(py, e),
    }
}
