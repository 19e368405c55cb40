//! `HeldSession`, a connection the runner keeps open across samples: SQL run
//! on it (typically a transaction left open, `BEGIN; UPDATE ...`) holds its
//! locks and row versions while the measured sessions run, until the runner
//! ends it. The seed experiment is read consistency: how much slower a scan
//! gets when another session holds uncommitted updates of the rows it reads.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::backend::{self, Canceller, DbError, DbResult, Session, WithSession};
use crate::decode::bad;
use crate::errors::{db_err, engine_err, parse_target, EngineError};
use crate::wait_interruptibly;

/// How long `close` waits for the connection to say goodbye.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

type Job = (String, Sender<DbResult<()>>);

/// Serves `execute` calls on one session until the sender is dropped.
struct Serve {
    jobs: Receiver<Job>,
    ready: Sender<DbResult<()>>,
}

impl WithSession for Serve {
    type Output = ();
    fn run<S: Session>(self, s: &mut S) {
        if self.ready.send(Ok(())).is_err() {
            return;
        }
        while let Ok((sql, reply)) = self.jobs.recv() {
            let _ = reply.send(s.batch_execute(&sql));
        }
    }
}

#[pyclass(module = "wannabet._engine", name = "HeldSession")]
pub(crate) struct HeldSession {
    jobs: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    cancel: Canceller,
}

fn gone() -> DbError {
    DbError::new(
        backend::Status::Connection,
        None,
        "the held session's connection is gone",
    )
}

#[pymethods]
impl HeldSession {
    /// Connects to `target`; the connection stays open until `close`.
    #[new]
    fn new(py: Python<'_>, target: &str) -> PyResult<Self> {
        let mut target = parse_target(py, target)?;
        // Not one of the run's sessions: the statistics sampler finds those by name and
        // waits for them to leave after each sample, which a held session never does.
        target.rename("held");
        let cancel = Canceller::default();
        let (jobs_tx, jobs) = channel::<Job>();
        let (ready_tx, ready) = channel();
        let worker_cancel = cancel.clone();
        let thread = std::thread::Builder::new()
            .name("wannabet-held".into())
            .spawn(move || {
                let failed = ready_tx.clone();
                let serve = Serve {
                    jobs,
                    ready: ready_tx,
                };
                if let Err(e) = backend::with_session_cancellable(&target, &worker_cancel, serve) {
                    let _ = failed.send(Err(e));
                }
            })
            .map_err(|e| {
                engine_err::<EngineError>(py, format!("cannot start a thread: {e}"), None)
            })?;
        let held = HeldSession {
            jobs: Mutex::new(Some(jobs_tx)),
            thread: Mutex::new(Some(thread)),
            cancel,
        };
        match wait_interruptibly(py, ready, &held.cancel)? {
            Some(Ok(())) => Ok(held),
            Some(Err(e)) => Err(db_err(py, e)),
            None => Err(engine_err::<EngineError>(
                py,
                "the held session's thread ended".into(),
                None,
            )),
        }
    }

    /// Runs `;`-separated statements on the held connection, in one message
    /// (on PostgreSQL, an open `BEGIN` stays open after it).
    fn execute(&self, py: Python<'_>, sql: &str) -> PyResult<()> {
        let (reply_tx, reply) = channel();
        let sent = self
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|jobs| jobs.send((sql.to_owned(), reply_tx)).is_ok());
        match sent {
            None => return Err(bad("the held session is closed")),
            Some(false) => return Err(db_err(py, gone())),
            Some(true) => {}
        }
        match wait_interruptibly(py, reply, &self.cancel)? {
            Some(r) => r.map_err(|e| db_err(py, e)),
            None => Err(db_err(py, gone())),
        }
    }

    /// Closes the connection (an open transaction is rolled back by the
    /// server). Idempotent.
    fn close(&self, py: Python<'_>) {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = thread {
            let deadline = Instant::now() + CLOSE_GRACE;
            py.detach(|| {
                while !t.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if t.is_finished() {
                    let _ = t.join();
                }
            });
        }
    }
}

impl Drop for HeldSession {
    fn drop(&mut self) {
        // Dropping the sender ends the worker, which closes the connection.
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}
