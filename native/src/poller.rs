//! `WaitPoller`, the Python class over `waits`: wait-event sampling on a
//! thread and a connection of its own, its state kept safe across Python
//! threads.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::backend::Target;
use crate::decode::bad;
use crate::errors::{db_err, engine_err, parse_target, EngineError};
use crate::waits;

/// Wait-event sampling of the run's sessions, on a thread and a connection of
/// its own (see `waits`): `start()` before a sample, `stop()` after it returns
/// the counts. The connection lives across samples, so its own server
/// transactions are known exactly (one per poll, plus what `query` runs).
#[pyclass(module = "wannabet._engine", name = "WaitPoller")]
pub(crate) struct WaitPoller {
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
            Target::Sqlite(_) | Target::Mysql(_) | Target::Python(_) => {
                return Err(bad("wait-event sampling needs a PostgreSQL target"))
            }
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
