//! `wannabet._engine`: the Python glue. Everything here converts arguments,
//! releases the GIL while the sample runs, and converts results and errors.
//! The engine itself lives in `runner`, `script` and `backend`.

pub mod backend;
pub mod histogram;
pub mod runner;
pub mod script;
pub mod waits;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use numpy::PyArray1;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyTuple};
use pyo3::PyTypeInfo;

use backend::{Canceller, DbError, DbResult, Session, Target, WithSession, STATUS_NAMES};
use runner::{Command, Fatal, FatalKind, Plan, Sample, SqlText, Transaction};
use script::{Expr, Func, Op, Value};

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
    "A statement failed."
);

fn engine_err<T: PyTypeInfo>(py: Python<'_>, message: String, code: Option<String>) -> PyErr {
    let err = PyErr::from_type(T::type_object(py), message);
    // Every instance carries `.code`, so callers never need getattr defaults.
    if let Err(e) = err.value(py).setattr("code", code) {
        return e;
    }
    err
}

fn connect_err(py: Python<'_>, e: DbError) -> PyErr {
    // No "cannot connect" prefix: the Python wrapper adds it with the target.
    engine_err::<ConnectError>(py, e.message, e.code)
}

fn query_err(py: Python<'_>, e: DbError) -> PyErr {
    engine_err::<QueryError>(py, e.message, e.code)
}

fn fatal_err(py: Python<'_>, f: Fatal) -> PyErr {
    match f.kind {
        FatalKind::Connect => engine_err::<ConnectError>(py, f.message, f.code),
        FatalKind::Query => engine_err::<QueryError>(py, f.message, f.code),
        FatalKind::Panic => engine_err::<EngineError>(py, f.message, f.code),
    }
}

fn parse_target(py: Python<'_>, target: &str) -> PyResult<Target> {
    Target::parse(target).map_err(|e| engine_err::<ConnectError>(py, e.message, e.code))
}

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
    use std::sync::mpsc::RecvTimeoutError;
    // A Receiver is not Sync, which `detach` requires of what it borrows.
    let rx = std::sync::Mutex::new(rx);
    let recv = |t: Duration| rx.lock().unwrap_or_else(|e| e.into_inner()).recv_timeout(t);
    loop {
        match py.detach(|| recv(TICK)) {
            Ok(r) => return Ok(r),
            Err(RecvTimeoutError::Disconnected) => {
                return Err(engine_err::<EngineError>(
                    py,
                    "engine worker thread panicked".into(),
                    None,
                ))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Err(e) = py.check_signals() {
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

/// One statement; every value as text, None for NULL.
#[pyfunction]
fn query<'py>(py: Python<'py>, target: &str, sql: &str) -> PyResult<Vec<Bound<'py, PyTuple>>> {
    let t = parse_target(py, target)?;
    let rows = match run_interruptible(py, t, QueryText(sql.to_owned()))? {
        Err(e) => return Err(connect_err(py, e)),
        Ok(r) => r.map_err(|e| query_err(py, e))?,
    };
    rows.into_iter().map(|r| PyTuple::new(py, r)).collect()
}

// ---------------------------------------------------------------------------
// Plan conversion: done once per call, never per transaction.

fn bad(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

fn tuple<'py>(o: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyTuple>> {
    o.cast::<PyTuple>()
        .cloned()
        .map_err(|_| bad(format!("{what} must be a tuple")))
}

fn slot_index(o: &Bound<'_, PyAny>, n_slots: usize) -> PyResult<usize> {
    let i: i64 = o.extract()?;
    if i < 0 || i as usize >= n_slots {
        return Err(bad(format!(
            "slot index {i} out of range (have {n_slots} slots)"
        )));
    }
    Ok(i as usize)
}

fn parse_expr(o: &Bound<'_, PyAny>, n_slots: usize) -> PyResult<Expr> {
    let t = tuple(o, "expression")?;
    let tag: String = t.get_item(0)?.extract()?;
    Ok(match tag.as_str() {
        "int" => Expr::Int(t.get_item(1)?.extract()?),
        "float" => Expr::Float(t.get_item(1)?.extract()?),
        "var" => Expr::Var(slot_index(&t.get_item(1)?, n_slots)?),
        "neg" => Expr::Neg(Box::new(parse_expr(&t.get_item(1)?, n_slots)?)),
        "op" => {
            let op: String = t.get_item(1)?.extract()?;
            let op = Op::parse(&op).ok_or_else(|| bad(format!("unknown operator {op:?}")))?;
            Expr::Op(
                op,
                Box::new(parse_expr(&t.get_item(2)?, n_slots)?),
                Box::new(parse_expr(&t.get_item(3)?, n_slots)?),
            )
        }
        "call" => {
            let name: String = t.get_item(1)?.extract()?;
            let f = Func::parse(&name).ok_or_else(|| bad(format!("unknown function {name:?}")))?;
            let args = t
                .get_item(2)?
                .try_iter()?
                .map(|a| parse_expr(&a?, n_slots))
                .collect::<PyResult<Vec<_>>>()?;
            let (lo, hi) = f.arity();
            if args.len() < lo || args.len() > hi {
                return Err(bad(format!("wrong number of arguments for {name}()")));
            }
            Expr::Call(f, args)
        }
        _ => return Err(bad(format!("unknown expression tag {tag:?}"))),
    })
}

fn parse_value(o: &Bound<'_, PyAny>) -> PyResult<Value> {
    if o.is_none() {
        Ok(Value::Unset)
    } else if o.is_instance_of::<PyFloat>() {
        Ok(Value::Float(o.extract()?))
    } else if o.is_instance_of::<PyInt>() {
        Ok(Value::Int(o.extract()?))
    } else {
        Err(bad("slot values must be int, float or None"))
    }
}

struct SqlDedup {
    sqls: Vec<SqlText>,
    index: HashMap<String, usize>,
}

fn parse_command(
    o: &Bound<'_, PyAny>,
    n_slots: usize,
    dedup: &mut SqlDedup,
    origin: (usize, usize),
) -> PyResult<Command> {
    let t = tuple(o, "command")?;
    let tag: String = t.get_item(0)?.extract()?;
    Ok(match tag.as_str() {
        "set" => Command::Set(
            slot_index(&t.get_item(1)?, n_slots)?,
            parse_expr(&t.get_item(2)?, n_slots)?,
        ),
        "sleep" => {
            let unit: i64 = t.get_item(2)?.extract()?;
            if unit < 0 {
                return Err(bad("sleep unit must be >= 0"));
            }
            Command::Sleep(parse_expr(&t.get_item(1)?, n_slots)?, unit as u64)
        }
        "sql" => {
            let text: String = t.get_item(1)?.extract()?;
            let params = t
                .get_item(2)?
                .try_iter()?
                .map(|p| slot_index(&p?, n_slots))
                .collect::<PyResult<Vec<_>>>()?;
            let next = dedup.sqls.len();
            let id = *dedup.index.entry(text.clone()).or_insert(next);
            if id == next {
                dedup.sqls.push(SqlText {
                    text,
                    n_params: params.len(),
                    origin,
                });
            } else if dedup.sqls[id].n_params != params.len() {
                return Err(bad(
                    "the same SQL text is used with different parameter counts",
                ));
            }
            Command::Sql(id, params)
        }
        _ => return Err(bad(format!("unknown command tag {tag:?}"))),
    })
}

fn parse_transactions(
    o: &Bound<'_, PyAny>,
    n_slots: usize,
) -> PyResult<(Vec<Transaction>, Vec<SqlText>)> {
    let mut dedup = SqlDedup {
        sqls: Vec::new(),
        index: HashMap::new(),
    };
    let mut txns = Vec::new();
    for (ti, item) in o.try_iter()?.enumerate() {
        let t = tuple(&item?, "transaction")?;
        let name: String = t.get_item(0)?.extract()?;
        let weight: u64 = t.get_item(1)?.extract()?;
        let mut commands = Vec::new();
        let mut n_sql = 0;
        for c in t.get_item(2)?.try_iter()? {
            let c = c?;
            let is_sql = tuple(&c, "command")?.get_item(0)?.extract::<String>()? == "sql";
            if is_sql {
                n_sql += 1;
            }
            commands.push(parse_command(&c, n_slots, &mut dedup, (ti, n_sql))?);
        }
        txns.push(Transaction {
            name,
            weight,
            commands,
        });
    }
    if txns.is_empty() {
        return Err(bad("no transactions"));
    }
    if txns.len() > i16::MAX as usize {
        return Err(bad("too many transaction types"));
    }
    let total = txns
        .iter()
        .try_fold(0u64, |acc, t| acc.checked_add(t.weight));
    if total.is_none_or(|w| w == 0) {
        return Err(bad("transaction weights must add up to a positive number"));
    }
    Ok((txns, dedup.sqls))
}

fn parse_seed(o: &Bound<'_, PyAny>) -> PyResult<u64> {
    // Any int is a fine seed; negative ones wrap.
    match o.extract::<u64>() {
        Ok(v) => Ok(v),
        Err(_) => Ok(o.extract::<i64>()? as u64),
    }
}

/// Runs one sample and returns its columns.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (target, sessions, transactions, session_sql, slots, client_id_slot,
                    duration_ns, max_transactions, seed, on_error, max_tries, rate, progress))]
fn run_sample<'py>(
    py: Python<'py>,
    target: &str,
    sessions: usize,
    transactions: &Bound<'py, PyAny>,
    session_sql: Vec<String>,
    slots: &Bound<'py, PyAny>,
    client_id_slot: i64,
    duration_ns: u64,
    max_transactions: u64,
    seed: &Bound<'py, PyAny>,
    on_error: &str,
    max_tries: u32,
    rate: f64,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let slots = slots
        .try_iter()?
        .map(|v| parse_value(&v?))
        .collect::<PyResult<Vec<_>>>()?;
    let (transactions, sqls) = parse_transactions(transactions, slots.len())?;
    if sessions == 0 {
        return Err(bad("sessions must be >= 1"));
    }
    if duration_ns == 0 && max_transactions == 0 {
        return Err(bad("need a duration or a transaction count"));
    }
    let abort_on_error = match on_error {
        "continue" => false,
        "abort" => true,
        _ => return Err(bad("on_error must be 'continue' or 'abort'")),
    };
    if !(rate >= 0.0 && rate.is_finite()) {
        return Err(bad("rate must be >= 0"));
    }
    let client_id_slot = match client_id_slot {
        -1 => None,
        i if i >= 0 && (i as usize) < slots.len() => Some(i as usize),
        _ => return Err(bad("client_id_slot out of range")),
    };
    let plan = Plan {
        transactions,
        sqls,
        session_sql,
        slots,
        client_id_slot,
        sessions,
        duration_ns,
        max_transactions,
        seed: parse_seed(seed)?,
        abort_on_error,
        max_tries: max_tries.max(1),
        rate,
    };
    let target = parse_target(py, target)?;
    let sample = Sample::start(plan, target).map_err(|f| fatal_err(py, f))?;

    const PROGRESS_EVERY: Duration = Duration::from_millis(250);
    let mut last_progress = Instant::now();
    let waited: PyResult<()> = loop {
        let done = py.detach(|| sample.wait(TICK));
        if let Err(e) = py.check_signals() {
            break Err(e);
        }
        if done {
            break Ok(());
        }
        if let Some(cb) = &progress {
            if last_progress.elapsed() >= PROGRESS_EVERY {
                if let Some(p) = sample.progress() {
                    last_progress = Instant::now();
                    if let Err(e) = cb.call1((p.ok, p.errors, p.elapsed_s, p.p99_ms)) {
                        break Err(e);
                    }
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
    out.set_item("session_cpu_ns", result.session_cpu_ns)?;
    let counters = PyDict::new(py);
    for (k, v) in result.counters {
        counters.set_item(k, v)?;
    }
    out.set_item("counters", counters)?;
    Ok(out)
}

/// Wait-event sampling of the run's sessions, on a thread and a connection of
/// its own (see `waits`): `start()` before a sample, `stop()` after it returns
/// the counts. The connection lives across samples, so its own server
/// transactions are known exactly (one per poll, plus what `query` runs).
#[pyclass(module = "wannabet._engine", name = "WaitPoller")]
struct WaitPoller {
    // Never held while the GIL is released: a blocking call takes what it
    // needs out of the state first, so another Python thread touching the
    // poller meanwhile gets an error ("busy"), not a deadlock.
    state: std::sync::Mutex<PollerState>,
}

struct PollerState {
    idle: Option<waits::Conn>,
    running: Option<waits::Running>,
    /// A call has the connection out of the state (a query, a stop).
    busy: bool,
    /// close() was called: a connection coming back from a call is dropped.
    closing: bool,
    backend_pid: i32,
    app: String,
    interval: Duration,
    timeout: Duration,
}

impl WaitPoller {
    fn state(&self) -> std::sync::MutexGuard<'_, PollerState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts a connection back after a call, unless close() came meanwhile.
    fn give_back(&self, conn: waits::Conn) {
        let mut st = self.state();
        st.busy = false;
        if !st.closing {
            st.idle = Some(conn);
        }
    }
}

fn db_err(py: Python<'_>, e: DbError) -> PyErr {
    match e.status {
        backend::Status::Connection => connect_err(py, e),
        _ => query_err(py, e),
    }
}

fn idle_err(st: &PollerState) -> PyErr {
    bad(if st.busy {
        "the wait poller is busy in another call"
    } else if st.running.is_some() {
        "the wait poller is running"
    } else {
        "the wait poller is closed"
    })
}

#[pymethods]
impl WaitPoller {
    /// Connects to `target` as `<application_name>-waits` and prepares the
    /// poll; `timeout_s` bounds every statement, on the server and here.
    #[new]
    fn new(
        py: Python<'_>,
        target: &str,
        application_name: String,
        interval_s: f64,
        timeout_s: f64,
    ) -> PyResult<Self> {
        let positive = |x: f64, name: &str| {
            if x.is_finite() && x > 0.0 {
                Ok(Duration::from_secs_f64(x))
            } else {
                Err(bad(format!("{name} must be a positive number of seconds")))
            }
        };
        let interval = positive(interval_s, "interval_s")?;
        let timeout = positive(timeout_s, "timeout_s")?;
        let cfg = match parse_target(py, target)? {
            Target::Postgres(cfg, tls) => (cfg, tls),
            Target::Sqlite(_) => return Err(bad("wait-event sampling needs a PostgreSQL target")),
        };
        let app = application_name.clone();
        let (cfg, tls) = cfg;
        let conn = py
            .detach(move || waits::Conn::open(&cfg, &tls, &app, timeout))
            .map_err(|e| db_err(py, e))?;
        Ok(WaitPoller {
            state: std::sync::Mutex::new(PollerState {
                backend_pid: conn.backend_pid,
                idle: Some(conn),
                running: None,
                busy: false,
                closing: false,
                app: application_name,
                interval,
                timeout,
            }),
        })
    }

    /// The server process of the poller's connection.
    #[getter]
    fn backend_pid(&self) -> i32 {
        self.state().backend_pid
    }

    /// True once closed, or when the connection was found dead (a call
    /// failed on it: an idle connection is not watched).
    #[getter]
    fn closed(&self) -> bool {
        let st = self.state();
        st.closing
            || (!st.busy && st.running.is_none() && st.idle.as_ref().is_none_or(|c| c.is_closed()))
    }

    /// Runs `sql` on the poller's connection between samples; rows as text.
    fn query(&self, py: Python<'_>, sql: &str) -> PyResult<Vec<Vec<Option<String>>>> {
        let (mut conn, timeout) = {
            let mut st = self.state();
            let conn = st.idle.take().ok_or_else(|| idle_err(&st))?;
            st.busy = true;
            (conn, st.timeout)
        };
        let (conn, r) = py.detach(move || {
            let r = conn.query_text(sql, timeout);
            (conn, r)
        });
        self.give_back(conn);
        r.map_err(|e| db_err(py, e))
    }

    /// Starts polling; sessions whose pid is in `foreign` belong to another
    /// client with the same application name and are left out.
    #[pyo3(signature = (foreign=Vec::new()))]
    fn start(&self, py: Python<'_>, foreign: Vec<i32>) -> PyResult<()> {
        let mut st = self.state();
        let conn = st.idle.take().ok_or_else(|| idle_err(&st))?;
        let (app, interval, timeout) = (st.app.clone(), st.interval, st.timeout);
        // Spawning a thread does not block: no need to let go of the lock.
        let running =
            waits::Running::start(conn, app, foreign.into_iter().collect(), interval, timeout)
                .map_err(|e| {
                    engine_err::<EngineError>(py, format!("cannot start the poller: {e}"), None)
                })?;
        st.running = Some(running);
        Ok(())
    }

    /// Stops polling and returns what the polls saw: polls, elapsed_s,
    /// events [(type, event, count)], active, on_cpu, sessions,
    /// max_sessions, pids, cpu_s, error.
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let running = {
            let mut st = self.state();
            let running = st
                .running
                .take()
                .ok_or_else(|| bad("the wait poller is not running"))?;
            st.busy = true;
            running
        };
        let Some((conn, counts)) = py.detach(move || running.stop()) else {
            self.state().busy = false;
            return Err(engine_err::<EngineError>(
                py,
                "the poller thread panicked".into(),
                None,
            ));
        };
        self.give_back(conn);
        let d = PyDict::new(py);
        let mut events: Vec<((String, String), u64)> = counts.events.into_iter().collect();
        events.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let events: Vec<(String, String, u64)> =
            events.into_iter().map(|((t, e), n)| (t, e, n)).collect();
        d.set_item("polls", counts.polls)?;
        d.set_item("elapsed_s", counts.elapsed.as_secs_f64())?;
        d.set_item("events", events)?;
        d.set_item("active", counts.active)?;
        d.set_item("on_cpu", counts.on_cpu)?;
        d.set_item("sessions", counts.sessions)?;
        d.set_item("max_sessions", counts.max_sessions)?;
        d.set_item("pids", counts.pids.into_iter().collect::<Vec<i32>>())?;
        d.set_item("cpu_s", counts.cpu_ns as f64 / 1e9)?;
        d.set_item("error", counts.error)?;
        Ok(d)
    }

    /// Stops polling if it runs and closes the connection (one in use by
    /// another call is closed when that call returns).
    fn close(&self, py: Python<'_>) {
        let (running, idle) = {
            let mut st = self.state();
            st.closing = true;
            (st.running.take(), st.idle.take())
        };
        py.detach(move || {
            drop(running.and_then(waits::Running::stop));
            drop(idle);
        });
    }
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(execute, m)?)?;
    m.add_function(wrap_pyfunction!(execute_many, m)?)?;
    m.add_function(wrap_pyfunction!(query, m)?)?;
    m.add_function(wrap_pyfunction!(run_sample, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram_of, m)?)?;
    m.add_class::<WaitPoller>()?;
    m.add("STATUS_NAMES", STATUS_NAMES.to_vec())?;
    m.add("APPLICATION_NAME", backend::application_name())?;
    let base = py.get_type::<EngineError>();
    base.setattr("code", py.None())?;
    m.add("EngineError", base)?;
    m.add("ConnectError", py.get_type::<ConnectError>())?;
    let query_error = py.get_type::<QueryError>();
    // Set on instances only by execute_many.
    query_error.setattr("index", py.None())?;
    m.add("QueryError", query_error)?;
    Ok(())
}
