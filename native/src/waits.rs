//! Wait-event sampling of a run's PostgreSQL sessions (ASH-like), on a thread
//! of its own with its own connection.
//!
//! Every step (jittered around the interval, so it cannot phase-lock with
//! periodic server activity) one prepared statement reads the server's
//! backend status array through `pg_stat_get_activity(NULL)`, aggregated on
//! the server by wait event: a few rows per poll however many sessions run.
//! The poll costs the server's backend the same as any client's, but here no
//! interpreter runs per poll, so the client side of the cost is a few
//! microseconds instead of a fraction of a millisecond.
//!
//! The Python sampler owns the arithmetic (counts × measured interval =
//! estimated time); this module only counts.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_postgres::{Config, Statement};

use crate::backend::postgres::PgSession;
use crate::backend::tls::Tls;
use crate::backend::{DbError, DbResult, Status};
use crate::runner::thread_cpu_ns;
use crate::script::Prng;

/// Sessions named `app`, except the poller's own backend, grouped by what
/// they wait on. Columns: wait_event_type, wait_event, active sessions, all
/// sessions, their pids.
const POLL_SQL: &str = "SELECT wait_event_type, wait_event, \
     count(*) FILTER (WHERE state = 'active'), count(*), array_agg(pid) \
     FROM pg_stat_get_activity(NULL) \
     WHERE application_name = $1::text AND pid <> pg_backend_pid() GROUP BY 1, 2";

/// What the polls of one sample saw.
#[derive(Debug, Default)]
pub struct Counts {
    pub polls: u64,
    /// From the first poll to the stop request.
    pub elapsed: Duration,
    /// (wait_event_type, wait_event) → active sessions seen waiting on it.
    pub events: HashMap<(String, String), u64>,
    /// Active sessions seen without a wait event (on CPU, or runnable).
    pub on_cpu: u64,
    pub active: u64,
    /// Sum over polls of the run's sessions seen, and the most in one poll.
    pub sessions: u64,
    pub max_sessions: u64,
    pub pids: BTreeSet<i32>,
    /// CPU time of the polling thread (the client side of the cost).
    pub cpu_ns: u64,
    /// Why polling stopped early; counts are then partial.
    pub error: Option<String>,
}

/// The poller's connection and its prepared statement.
pub struct Conn {
    session: PgSession,
    stmt: Statement,
    pub backend_pid: i32,
}

impl Conn {
    /// Connects as `<app>-waits` with a server-side statement timeout, and
    /// prepares the poll.
    pub fn open(cfg: &Config, tls: &Tls, app: &str, timeout: Duration) -> DbResult<Conn> {
        let mut cfg = cfg.clone();
        cfg.application_name(format!("{app}-waits"));
        // The server cancels a poll that takes too long; the client deadline
        // (`timeout`) catches a server or network that stopped answering.
        let ms = timeout.as_millis().max(1);
        let options = match cfg.get_options() {
            Some(o) if !o.is_empty() => format!("{o} -c statement_timeout={ms}"),
            _ => format!("-c statement_timeout={ms}"),
        };
        cfg.options(options);
        let mut session = PgSession::connect(&cfg, tls)?;
        let pid = session
            .query_text_within("SELECT pg_backend_pid()", timeout)?
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|v| v.parse::<i32>().ok())
            .ok_or_else(|| {
                DbError::new(Status::Error, None, "pg_backend_pid() returned nothing")
            })?;
        let stmt = session.prepare_raw(POLL_SQL, timeout)?;
        Ok(Conn {
            session,
            stmt,
            backend_pid: pid,
        })
    }

    pub fn query_text(
        &mut self,
        sql: &str,
        timeout: Duration,
    ) -> DbResult<Vec<Vec<Option<String>>>> {
        self.session.query_text_within(sql, timeout)
    }

    pub fn is_closed(&self) -> bool {
        self.session.is_closed()
    }

    /// One poll, added to `counts`.
    fn poll(
        &mut self,
        app: &str,
        foreign: &HashSet<i32>,
        counts: &mut Counts,
        timeout: Duration,
    ) -> DbResult<()> {
        let rows = self.session.query_prepared(&self.stmt, &[&app], timeout)?;
        let bad = |e: tokio_postgres::Error| {
            DbError::new(Status::Error, None, format!("unexpected poll result: {e}"))
        };
        let mut sessions = 0u64;
        for row in rows {
            let wtype: Option<String> = row.try_get(0).map_err(bad)?;
            let wevent: Option<String> = row.try_get(1).map_err(bad)?;
            let active: i64 = row.try_get(2).map_err(bad)?;
            let total: i64 = row.try_get(3).map_err(bad)?;
            let pids: Vec<i32> = row.try_get(4).map_err(bad)?;
            // Another client sharing the application name (a URL parameter):
            // its group is skipped rather than guessed apart.
            if pids.iter().any(|p| foreign.contains(p)) {
                continue;
            }
            counts.pids.extend(pids);
            sessions += total as u64;
            let active = active as u64;
            if active == 0 {
                continue;
            }
            counts.active += active;
            match wevent {
                None => counts.on_cpu += active,
                Some(e) => {
                    *counts
                        .events
                        .entry((wtype.unwrap_or_default(), e))
                        .or_default() += active
                }
            }
        }
        counts.polls += 1;
        counts.sessions += sessions;
        counts.max_sessions = counts.max_sessions.max(sessions);
        Ok(())
    }
}

/// A polling thread: started per sample, handing the connection back on stop.
pub struct Running {
    stop: Sender<()>,
    handle: JoinHandle<(Conn, Counts)>,
}

impl Running {
    pub fn start(
        mut conn: Conn,
        app: String,
        foreign: HashSet<i32>,
        interval: Duration,
        timeout: Duration,
    ) -> std::io::Result<Running> {
        let (stop, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("wannabet-waits".into())
            .spawn(move || {
                let counts = poll_until_stopped(&mut conn, &app, &foreign, interval, timeout, &rx);
                (conn, counts)
            })?;
        Ok(Running { stop, handle })
    }

    /// Asks the thread to stop and waits for it (at most one poll, which the
    /// deadline bounds). None if the thread panicked.
    pub fn stop(self) -> Option<(Conn, Counts)> {
        let _ = self.stop.send(());
        self.handle.join().ok()
    }
}

fn poll_until_stopped(
    conn: &mut Conn,
    app: &str,
    foreign: &HashSet<i32>,
    interval: Duration,
    timeout: Duration,
    stop: &Receiver<()>,
) -> Counts {
    let cpu0 = thread_cpu_ns();
    let t0 = Instant::now();
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut rng = Prng::new(seed, std::process::id() as u64, 0);
    let mut counts = Counts::default();
    let mut next_at = t0;
    loop {
        if let Err(e) = conn.poll(app, foreign, &mut counts, timeout) {
            counts.error = Some(e.message);
            break;
        }
        // Jittered steps (±50%); a late poll skips the missed ticks instead
        // of firing them back to back. The measured mean interval converts
        // counts into time.
        let now = Instant::now();
        next_at = (next_at + interval.mul_f64(0.5 + rng.double())).max(now);
        match stop.recv_timeout(next_at - now) {
            Err(RecvTimeoutError::Timeout) => continue,
            _ => break,
        }
    }
    counts.elapsed = t0.elapsed();
    counts.cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
    counts
}
