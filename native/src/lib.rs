//! `wannabet._engine`: the Python glue. Everything here converts arguments,
//! releases the GIL while the sample runs, and converts results and errors.
//! The engine itself lives in `runner`, `script` and `backend`; `decode`
//! reads a sample request, `errors` builds the exceptions, `poller` is the
//! `WaitPoller` class.

pub mod backend;
pub mod copy;
mod decode;
pub mod distributions;
mod errors;
pub mod flame;
mod held;
pub mod histogram;
pub mod pgfuncs;
mod poller;
pub mod runner;
pub mod script;
pub mod waits;

use std::time::{Duration, Instant};

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use backend::{Canceller, DbError, DbResult, Session, Target, WithSession, STATUS_NAMES};
use decode::SampleCall;
use errors::{
    connect_err, engine_err, fatal_err, parse_target, query_err, ConnectError, EngineError,
    QueryError,
};
use runner::{Progress, Sample};
use script::{Func, MAX_ZIPFIAN_PARAM, MIN_GAUSSIAN_PARAM, MIN_ZIPFIAN_PARAM};

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// How often a waiting Python thread wakes up to look for Ctrl-C.
const TICK: Duration = Duration::from_millis(100);
/// Longest we keep Python waiting after Ctrl-C: cancel requests plus a
/// chance for the session to wind down cleanly.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// Runs `job` on a session in a worker thread while this thread, without the
/// GIL, wakes every TICK to run Python's signal handlers. On an exception
/// (KeyboardInterrupt) the running statement is cancelled, we wait at most
/// INTERRUPT_GRACE for the worker, and the exception is returned; a worker
/// still stuck after that is left to finish on its own.
fn run_interruptible<W>(py: Python<'_>, target: Target, job: W) -> PyResult<DbResult<W::Output>>
where
    W: WithSession + Send + 'static,
    W::Output: Send + 'static,
{
    run_within(py, target, job, None)
}

/// `run_interruptible` with a time limit: at `limit` the statement is cancelled and a
/// QueryError (code `timeout`) raised, so a server that accepts a connection and never
/// answers cannot hold the caller (the statistics samplers) for ever.
fn run_within<W>(
    py: Python<'_>,
    target: Target,
    job: W,
    limit: Option<Instant>,
) -> PyResult<DbResult<W::Output>>
where
    W: WithSession + Send + 'static,
    W::Output: Send + 'static,
{
    let cancel = Canceller::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let worker_cancel = cancel.clone();
    std::thread::Builder::new()
        .name("wannabet-call".into())
        .spawn(move || {
            let _ = tx.send(backend::with_session_cancellable(
                &target,
                &worker_cancel,
                job,
            ));
        })
        .map_err(|e| {
            engine_err::<EngineError>(py, format!("cannot start worker thread: {e}"), None)
        })?;
    match wait_within(py, rx, &cancel, limit)? {
        Some(r) => Ok(r),
        None => Err(engine_err::<EngineError>(
            py,
            "engine worker thread panicked".into(),
            None,
        )),
    }
}

/// Waits for what a worker thread sends on `rx`, without the GIL, waking
/// every TICK to run Python's signal handlers. On an exception
/// (KeyboardInterrupt) `cancel` stops the running statement, we wait at most
/// INTERRUPT_GRACE for the worker's answer, and the exception is returned.
/// None: the worker is gone without answering.
pub(crate) fn wait_interruptibly<T: Send>(
    py: Python<'_>,
    rx: std::sync::mpsc::Receiver<T>,
    cancel: &Canceller,
) -> PyResult<Option<T>> {
    wait_within(py, rx, cancel, None)
}

/// `wait_interruptibly` that gives up at `limit`: the statement is cancelled as on Ctrl-C
/// and a QueryError (code `timeout`) is returned.
fn wait_within<T: Send>(
    py: Python<'_>,
    rx: std::sync::mpsc::Receiver<T>,
    cancel: &Canceller,
    limit: Option<Instant>,
) -> PyResult<Option<T>> {
    use std::sync::mpsc::RecvTimeoutError;
    let started = Instant::now();
    // A Receiver is not Sync, which `detach` requires of what it borrows.
    let rx = std::sync::Mutex::new(rx);
    let recv = |t: Duration| rx.lock().unwrap_or_else(|e| e.into_inner()).recv_timeout(t);
    loop {
        match py.detach(|| recv(TICK)) {
            Ok(r) => return Ok(Some(r)),
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
            Err(RecvTimeoutError::Timeout) => {}
        }
        let timed_out = limit.is_some_and(|l| Instant::now() >= l);
        let signalled = py.check_signals();
        if timed_out || signalled.is_err() {
            let e = signalled.err().unwrap_or_else(|| {
                engine_err::<QueryError>(
                    py,
                    format!(
                        "no answer within {:.1} s; the statement was cancelled",
                        started.elapsed().as_secs_f64()
                    ),
                    Some("timeout".into()),
                )
            });
            let deadline = Instant::now() + INTERRUPT_GRACE;
            py.detach(|| {
                // Let a cancelled statement's session close cleanly; one still
                // connecting has nothing to wind down, so don't wait for it.
                if cancel.cancel(deadline) {
                    let _ = recv(deadline.saturating_duration_since(Instant::now()));
                }
            });
            return Err(e);
        }
    }
}

struct Batch(String);
impl WithSession for Batch {
    type Output = Result<(), DbError>;
    fn run<S: Session>(self, s: &mut S) -> Self::Output {
        s.batch_execute(&self.0)
    }
}

struct QueryText(String);
impl WithSession for QueryText {
    type Output = Result<Vec<Vec<Option<String>>>, DbError>;
    fn run<S: Session>(self, s: &mut S) -> Self::Output {
        s.query_text(&self.0)
    }
}

/// Each statement on its own (one simple-query message on PostgreSQL, so no
/// implicit transaction block around it); the error carries the index.
struct Many(Vec<String>);
impl WithSession for Many {
    type Output = Result<(), (usize, DbError)>;
    fn run<S: Session>(self, s: &mut S) -> Self::Output {
        for (i, sql) in self.0.iter().enumerate() {
            s.batch_execute(sql).map_err(|e| (i, e))?;
        }
        Ok(())
    }
}

/// What the dry run of `check --target` found for one statement.
enum Checked {
    Ok(Vec<String>),
    Failed(DbError),
}

/// `wannabet check --target`: inside one transaction that is rolled back at
/// the end, run the set-up, then per condition (each in a savepoint) its SQL
/// and a prepare of every statement. Every statement is tried, so every
/// refusal is reported, not just the first.
/// Per condition: SQL to run first, then (text, parameter count) to prepare.
type DryCondition = (Vec<String>, Vec<(String, usize)>);

struct DryRun {
    setup: Vec<String>,
    conditions: Vec<DryCondition>,
}

impl DryRun {
    /// Runs `sql` in a savepoint; on failure rolls back to it and returns the error.
    fn attempt<S: Session>(s: &mut S, f: impl FnOnce(&mut S) -> DbResult<Vec<String>>) -> Checked {
        if let Err(e) = s.batch_execute("SAVEPOINT wannabet_check") {
            return Checked::Failed(e);
        }
        match f(s) {
            Ok(columns) => {
                let _ = s.batch_execute("RELEASE SAVEPOINT wannabet_check");
                Checked::Ok(columns)
            }
            Err(e) => {
                let _ = s.batch_execute("ROLLBACK TO SAVEPOINT wannabet_check");
                Checked::Failed(e)
            }
        }
    }
}

type DryRunOutput = (Vec<Checked>, Vec<(Vec<Checked>, Vec<Checked>)>);

impl WithSession for DryRun {
    type Output = DbResult<DryRunOutput>;
    fn run<S: Session>(self, s: &mut S) -> Self::Output {
        s.batch_execute("BEGIN")?;
        let setup = self
            .setup
            .iter()
            .map(|sql| DryRun::attempt(s, |s| s.batch_execute(sql).map(|()| Vec::new())))
            .collect();
        let mut conditions = Vec::with_capacity(self.conditions.len());
        for (before, statements) in &self.conditions {
            s.batch_execute("SAVEPOINT wannabet_condition")?;
            let ran = before
                .iter()
                .map(|sql| DryRun::attempt(s, |s| s.batch_execute(sql).map(|()| Vec::new())))
                .collect();
            let prepared = statements
                .iter()
                .map(|(sql, n)| {
                    let parts = vec![String::new(); n + 1];
                    DryRun::attempt(s, |s| s.prepare(sql, *n, &parts))
                })
                .collect();
            s.batch_execute("ROLLBACK TO SAVEPOINT wannabet_condition")?;
            conditions.push((ran, prepared));
        }
        s.batch_execute("ROLLBACK")?;
        Ok((setup, conditions))
    }
}

fn checked_tuple<'py>(py: Python<'py>, c: Checked) -> PyResult<Bound<'py, PyTuple>> {
    match c {
        Checked::Ok(columns) => PyTuple::new(
            py,
            [py.None(), columns.into_pyobject(py)?.into_any().unbind()],
        ),
        Checked::Failed(e) => PyTuple::new(
            py,
            [
                e.message.into_pyobject(py)?.into_any().unbind(),
                e.code.into_pyobject(py)?.into_any().unbind(),
            ],
        ),
    }
}

/// The dry run of `check --target`; per item (error message or None, columns
/// or the error's code). Nothing it does is committed.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn dry_run<'py>(
    py: Python<'py>,
    target: &str,
    setup: Vec<String>,
    conditions: Vec<DryCondition>,
) -> PyResult<(
    Vec<Bound<'py, PyTuple>>,
    Vec<(Vec<Bound<'py, PyTuple>>, Vec<Bound<'py, PyTuple>>)>,
)> {
    let t = parse_target(py, target)?;
    let (setup, conditions) = match run_interruptible(py, t, DryRun { setup, conditions })? {
        Err(e) => return Err(connect_err(py, e)),
        Ok(r) => r.map_err(|e| query_err(py, e))?,
    };
    let setup = setup
        .into_iter()
        .map(|c| checked_tuple(py, c))
        .collect::<PyResult<_>>()?;
    let conditions = conditions
        .into_iter()
        .map(|(ran, prepared)| {
            Ok((
                ran.into_iter()
                    .map(|c| checked_tuple(py, c))
                    .collect::<PyResult<_>>()?,
                prepared
                    .into_iter()
                    .map(|c| checked_tuple(py, c))
                    .collect::<PyResult<_>>()?,
            ))
        })
        .collect::<PyResult<_>>()?;
    Ok((setup, conditions))
}

/// Runs `;`-separated statements on one autocommit connection.
#[pyfunction]
fn execute(py: Python<'_>, target: &str, sql: &str) -> PyResult<()> {
    let t = parse_target(py, target)?;
    match run_interruptible(py, t, Batch(sql.to_owned()))? {
        Err(e) => Err(connect_err(py, e)),
        Ok(r) => r.map_err(|e| query_err(py, e)),
    }
}

/// Runs statements in order on one autocommit connection, each sent on its
/// own; a failure raises QueryError with `.index` = the failing statement.
#[pyfunction]
fn execute_many(py: Python<'_>, target: &str, statements: Vec<String>) -> PyResult<()> {
    let t = parse_target(py, target)?;
    match run_interruptible(py, t, Many(statements))? {
        Err(e) => Err(connect_err(py, e)),
        Ok(Ok(())) => Ok(()),
        Ok(Err((i, e))) => {
            let err = query_err(py, e);
            err.value(py).setattr("index", i)?;
            Err(err)
        }
    }
}

/// One statement; every value as text, None for NULL. With `timeout_s`, a statement with
/// no answer by then is cancelled and QueryError (code `timeout`) raised.
#[pyfunction]
#[pyo3(signature = (target, sql, timeout_s=None))]
fn query<'py>(
    py: Python<'py>,
    target: &str,
    sql: &str,
    timeout_s: Option<f64>,
) -> PyResult<Vec<Bound<'py, PyTuple>>> {
    let limit = match timeout_s {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 => Some(Instant::now() + Duration::from_secs_f64(s)),
        Some(s) => {
            return Err(crate::decode::bad(format!(
                "timeout_s must be > 0, got {s}"
            )))
        }
    };
    let t = parse_target(py, target)?;
    let rows = match run_within(py, t, QueryText(sql.to_owned()), limit)? {
        Err(e) => return Err(connect_err(py, e)),
        Ok(r) => r.map_err(|e| query_err(py, e))?,
    };
    rows.into_iter().map(|r| PyTuple::new(py, r)).collect()
}

/// Runs one sample and returns its columns. `request` is read by attribute
/// (see `decode::SampleCall`); `progress(ok, errors, elapsed_s, p99_ms)` is
/// called about every 250 ms and once at the end.
#[pyfunction]
#[pyo3(signature = (request, progress=None))]
fn run_sample<'py>(
    py: Python<'py>,
    request: SampleCall<'py>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let plan = request.plan()?;
    let mut target = match &request.connector {
        Some(c) => Target::Python(backend::python::Connector(c.clone_ref(py))),
        None => parse_target(py, &request.target)?,
    };
    if !request.role.is_empty() {
        target.rename(&request.role);
    }
    let sample = Sample::start(plan, target).map_err(|f| fatal_err(py, f))?;

    const PROGRESS_EVERY: Duration = Duration::from_millis(250);
    let mut last_progress = Instant::now();
    // Past deadline + grace/2 the statements still running are cancelled; at deadline +
    // grace sessions that have not returned (a frozen server ignores the cancel too) are
    // given up on, so no sample outlasts its deadline and grace.
    let deadline = Duration::from_nanos(request.deadline_ns);
    let grace = Duration::from_nanos(request.grace_ns);
    let mut give_up: Option<Instant> = None;
    let waited: PyResult<()> = loop {
        let done = py.detach(|| sample.wait(TICK));
        if let Err(e) = py.check_signals() {
            break Err(e);
        }
        if done {
            break Ok(());
        }
        // Once every session's work is over only teardown remains (a SQLite close may
        // checkpoint a large WAL): that is not the sample's and is not held to its deadline.
        let held = give_up.is_some() || !sample.work_over();
        if let (false, Some(t0), true) = (deadline.is_zero(), sample.t0(), held) {
            let now = Instant::now();
            match give_up {
                Some(at) if now >= at => break Ok(()),
                None if now >= t0 + deadline + grace / 2 => {
                    let at = t0 + deadline + grace;
                    py.detach(|| sample.expire(at));
                    give_up = Some(at);
                }
                _ => {}
            }
        }
        if let Some(cb) = &progress {
            if last_progress.elapsed() >= PROGRESS_EVERY {
                last_progress = Instant::now();
                // Before every session has connected there is nothing to count, but the
                // callback is also where the caller stops the sample (Ctrl-C): a session
                // connecting to a server that does not answer must not hold that for its
                // connect timeout. Zeros until the sample's clock starts.
                let p = sample.progress().unwrap_or(Progress {
                    ok: 0,
                    errors: 0,
                    elapsed_s: 0.0,
                    p99_ms: 0.0,
                });
                if let Err(e) = cb.call1((p.ok, p.errors, p.elapsed_s, p.p99_ms)) {
                    break Err(e);
                }
            }
        }
    };
    if let Err(e) = waited {
        sample.stop();
        // Cancel in-flight statements so the server stops working on them, then
        // give sessions the rest of the grace period to notice; one still stuck
        // is left to finish on its own rather than hanging the interpreter.
        let deadline = Instant::now() + INTERRUPT_GRACE;
        let all_done = py.detach(|| {
            let _ = sample.cancel_running(deadline);
            sample.wait(deadline.saturating_duration_since(Instant::now()))
        });
        if all_done {
            let _ = py.detach(move || sample.finish());
        }
        return Err(e);
    }

    let last = sample.progress();
    let result = py
        .detach(move || sample.finish())
        .map_err(|f| fatal_err(py, f))?;
    if let (Some(cb), Some(p)) = (&progress, last) {
        cb.call1((p.ok, p.errors, p.elapsed_s, p.p99_ms))?;
    }

    let summaries = summaries_dict(py, result.summaries)?;
    let c = result.columns;
    let cols = PyDict::new(py);
    cols.set_item("session", PyArray1::from_vec(py, c.session))?;
    cols.set_item("txn_type", PyArray1::from_vec(py, c.txn_type))?;
    cols.set_item(
        "intended_start_ns",
        PyArray1::from_vec(py, c.intended_start_ns),
    )?;
    cols.set_item("start_ns", PyArray1::from_vec(py, c.start_ns))?;
    cols.set_item("end_ns", PyArray1::from_vec(py, c.end_ns))?;
    cols.set_item("status", PyArray1::from_vec(py, c.status))?;
    cols.set_item("error_code", PyArray1::from_vec(py, c.error_code))?;
    cols.set_item("retries", PyArray1::from_vec(py, c.retries))?;
    let messages = PyDict::new(py);
    for (k, m) in result.error_messages {
        messages.set_item(k, m)?;
    }
    let out = PyDict::new(py);
    out.set_item("t0_ns", result.t0_ns)?;
    out.set_item("end_ns", result.end_ns)?;
    out.set_item("columns", cols)?;
    out.set_item("error_codes", result.error_codes)?;
    out.set_item("error_messages", messages)?;
    out.set_item("sessions_lost", result.sessions_lost)?;
    out.set_item("sessions_stuck", result.sessions_stuck)?;
    out.set_item("reconnects", result.reconnects)?;
    out.set_item("overran", result.overran)?;
    out.set_item("session_cpu_ns", result.session_cpu_ns)?;
    let counters = PyDict::new(py);
    for (k, v) in result.counters {
        counters.set_item(k, v)?;
    }
    out.set_item("counters", counters)?;
    out.set_item("summaries", summaries)?;
    Ok(out)
}

/// The sample's summaries as three dicts of columns (`wannabet.store.summaries`).
fn summaries_dict<'py>(py: Python<'py>, s: runner::Summaries) -> PyResult<Bound<'py, PyDict>> {
    let m = s.moments;
    let moments = PyDict::new(py);
    moments.set_item("txn_type", PyArray1::from_vec(py, m.txn_type))?;
    moments.set_item("warmup", PyArray1::from_vec(py, m.warmup))?;
    moments.set_item("count", PyArray1::from_vec(py, m.count))?;
    moments.set_item("sum_ms", PyArray1::from_vec(py, m.sum_ms))?;
    moments.set_item("sumsq_ms", PyArray1::from_vec(py, m.sumsq_ms))?;
    moments.set_item("sumlog_ms", PyArray1::from_vec(py, m.sumlog_ms))?;
    moments.set_item("sumlog2_ms", PyArray1::from_vec(py, m.sumlog2_ms))?;
    moments.set_item("min_ns", PyArray1::from_vec(py, m.min_ns))?;
    moments.set_item("max_ns", PyArray1::from_vec(py, m.max_ns))?;
    let st = s.statuses;
    let statuses = PyDict::new(py);
    statuses.set_item("txn_type", PyArray1::from_vec(py, st.txn_type))?;
    statuses.set_item("warmup", PyArray1::from_vec(py, st.warmup))?;
    statuses.set_item("status", PyArray1::from_vec(py, st.status))?;
    statuses.set_item("count", PyArray1::from_vec(py, st.count))?;
    let b = s.bins;
    let bins = PyDict::new(py);
    bins.set_item("txn_type", PyArray1::from_vec(py, b.txn_type))?;
    bins.set_item("warmup", PyArray1::from_vec(py, b.warmup))?;
    bins.set_item("lo_ns", PyArray1::from_vec(py, b.lo_ns))?;
    bins.set_item("hi_ns", PyArray1::from_vec(py, b.hi_ns))?;
    bins.set_item("count", PyArray1::from_vec(py, b.count))?;
    let r = s.results;
    let results = PyDict::new(py);
    results.set_item("txn_type", PyArray1::from_vec(py, r.txn_type))?;
    results.set_item("warmup", PyArray1::from_vec(py, r.warmup))?;
    results.set_item("count", PyArray1::from_vec(py, r.count))?;
    results.set_item("sum", PyArray1::from_vec(py, r.sum))?;
    results.set_item("sumsq", PyArray1::from_vec(py, r.sumsq))?;
    results.set_item("min", PyArray1::from_vec(py, r.min))?;
    results.set_item("max", PyArray1::from_vec(py, r.max))?;
    let d = PyDict::new(py);
    d.set_item("moments", moments)?;
    d.set_item("statuses", statuses)?;
    d.set_item("bins", bins)?;
    d.set_item("results", results)?;
    Ok(d)
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(execute, m)?)?;
    m.add_function(wrap_pyfunction!(execute_many, m)?)?;
    m.add_function(wrap_pyfunction!(query, m)?)?;
    m.add_function(wrap_pyfunction!(dry_run, m)?)?;
    m.add_function(wrap_pyfunction!(run_sample, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram_of, m)?)?;
    m.add_function(wrap_pyfunction!(flame::fold_perf, m)?)?;
    m.add_function(wrap_pyfunction!(flame::flame_graph, m)?)?;
    m.add_function(wrap_pyfunction!(distributions::distribution, m)?)?;
    m.add_class::<poller::WaitPoller>()?;
    m.add_class::<held::HeldSession>()?;
    m.add("STATUS_NAMES", PyTuple::new(py, STATUS_NAMES)?)?;
    let functions = PyDict::new(py);
    for f in Func::ALL {
        let (lo, hi) = f.arity();
        functions.set_item(f.name(), (lo, (hi != usize::MAX).then_some(hi)))?;
    }
    m.add("SCRIPT_FUNCTIONS", functions)?;
    m.add("GAUSSIAN_MIN_PARAMETER", MIN_GAUSSIAN_PARAM)?;
    m.add(
        "ZIPFIAN_PARAMETER_RANGE",
        (MIN_ZIPFIAN_PARAM, MAX_ZIPFIAN_PARAM),
    )?;
    m.add("ON_ERROR", PyTuple::new(py, decode::ON_ERROR)?)?;
    m.add("APPLICATION_NAME", backend::application_name())?;
    let base = py.get_type::<EngineError>();
    base.setattr("code", py.None())?;
    m.add("EngineError", base)?;
    m.add("ConnectError", py.get_type::<ConnectError>())?;
    let query_error = py.get_type::<QueryError>();
    // Set on instances only by execute_many.
    query_error.setattr("index", py.None())?;
    // Set on instances only for a refused prepare (see `errors::fatal_err`).
    for name in ["statement", "transaction", "transaction_index", "reason"] {
        query_error.setattr(name, py.None())?;
    }
    m.add("QueryError", query_error)?;
    Ok(())
}
