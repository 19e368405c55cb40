//! One sample: a thread per session, its shared state and first fatal
//! error, the per-thread records and their merge into columns.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::gate::{Anchor, Gate, GateState};
use super::plan::Plan;
use super::progress::ThreadStats;
use super::session::thread_main;
use super::summary::{merge_sessions, SessionSummary, Summaries};
use crate::backend::{Canceller, DbError, Target};
use crate::script::Prng;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FatalKind {
    Connect,
    Query,
    Panic,
}

#[derive(Clone, Debug)]
pub struct Fatal {
    pub kind: FatalKind,
    pub message: String,
    pub code: Option<String>,
    /// Set when the database refused to prepare one of the workload's statements.
    pub prepare: Option<PrepareFailure>,
}

/// Which statement a refused prepare was, for the caller to point at the
/// line of the experiment file, and the driver's own words.
#[derive(Clone, Debug)]
pub struct PrepareFailure {
    /// Index of the transaction type in the plan.
    pub transaction_index: usize,
    pub transaction: String,
    /// The statement's number within its transaction's script, from 1.
    pub statement: usize,
    /// The driver's message.
    pub reason: String,
}

pub(super) struct Shared {
    pub(super) plan: Plan,
    pub(super) target: Target,
    /// Set when the sample's data will be discarded: abort, Ctrl-C, callback error.
    pub(super) stop: AtomicBool,
    /// Set when the sample ran past its deadline and grace: sessions start nothing more,
    /// and what their cancelled statements return is recorded as `timeout`.
    pub(super) expired: AtomicBool,
    pub(super) claimed: AtomicU64,
    pub(super) gate: Gate,
    pub(super) stats: Vec<ThreadStats>,
    fatal: Mutex<Option<Fatal>>,
    pub(super) finished: Mutex<usize>,
    pub(super) finished_cv: Condvar,
    /// Per session: its work is over (the last transaction ended, or the thread exits).
    /// What follows is teardown (closing the connection: a SQLite close may checkpoint the
    /// whole WAL), which is not the sample's and so not held to its deadline.
    pub(super) work_ended: Mutex<Vec<bool>>,
    /// Every session registers here so a stop can cancel in-flight statements.
    pub(super) cancel: Canceller,
}

impl Shared {
    /// Records the first fatal error and stops everybody, cancelling the
    /// statements other sessions are running: a session in a long statement
    /// would otherwise hold the failed sample open until it returned.
    /// Session `idx`'s work is over; what remains is its teardown.
    pub(super) fn end_work(&self, idx: usize) {
        let mut ended = self.work_ended.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = ended.get_mut(idx) {
            *e = true;
        }
    }

    pub(super) fn fail(&self, f: Fatal) {
        let mut slot = self.fatal.lock().unwrap();
        let first = slot.is_none();
        if first {
            *slot = Some(f);
        }
        drop(slot);
        self.stop.store(true, Relaxed);
        self.gate.breakdown();
        if first {
            self.cancel.cancel(Instant::now() + FAIL_CANCEL_GRACE);
        }
    }
}

/// One attempt group; 40 bytes, stored row-wise per thread and split into
/// columns once at the end.
#[derive(Clone, Copy)]
pub(super) struct Rec {
    pub(super) intended: i64,
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) error_code: i32,
    pub(super) retries: i32,
    pub(super) txn: i16,
    pub(super) status: i8,
}

/// Rows in fixed-size chunks: growth never copies what is already recorded,
/// so no transaction pays for a large reallocation.
pub(super) const CHUNK: usize = 1 << 16;
/// How long a failing session spends cancelling the others' statements (an
/// unreachable server must not hold up the error).
const FAIL_CANCEL_GRACE: Duration = Duration::from_secs(2);

#[derive(Default)]
pub(super) struct ThreadOut {
    pub(super) chunks: Vec<Vec<Rec>>,
    /// Local code table; recs refer to it and are remapped at merge time.
    codes: Vec<String>,
    code_index: HashMap<String, i32>,
    pub(super) messages: Vec<(String, String)>,
    pub(super) lost: bool,
    /// Times the session got its connection back after it dropped (plan.reconnect_ns).
    pub(super) reconnects: u64,
    pub(super) finished: Option<Instant>,
    /// CPU time of this session's thread while it ran transactions.
    pub(super) cpu_ns: u64,
    /// The client's counters of the database's work (see Session::counters).
    pub(super) counters: Vec<(&'static str, i64)>,
    /// Every transaction of this session, recorded as a row or not.
    pub(super) summary: SessionSummary,
    /// Rows offered to the reservoir (see `keep`), kept or not.
    offered: u64,
}

impl ThreadOut {
    #[inline]
    pub(super) fn push(&mut self, r: Rec) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < c.capacity() => c.push(r),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(r);
                self.chunks.push(c);
            }
        }
    }

    /// Keep `r` as a row, holding at most `cap` rows (0: no limit): beyond `cap`, the
    /// i-th row offered replaces a uniformly chosen kept row with probability cap / i
    /// (Vitter's algorithm R), so the rows kept are a uniform random subset of those
    /// offered whatever the sample's length.
    #[inline]
    pub(super) fn keep(&mut self, r: Rec, cap: usize, rng: &mut Prng) {
        self.offered += 1;
        if cap == 0 || self.offered <= cap as u64 {
            self.push(r);
            return;
        }
        let j = rng.below_inclusive(self.offered - 1) as usize;
        if j < cap {
            // Chunks after the first are full CHUNK-sized ones, up to the last.
            let first = self.chunks[0].len();
            if j < first {
                self.chunks[0][j] = r;
            } else {
                let k = j - first;
                self.chunks[1 + k / CHUNK][k % CHUNK] = r;
            }
        }
    }

    /// After a reservoir replaced rows, put them back in start order (the order the store
    /// and the analysis expect of a session's rows).
    pub(super) fn restore_order(&mut self, cap: usize) {
        if cap == 0 || self.offered <= cap as u64 {
            return;
        }
        let mut rows: Vec<Rec> = std::mem::take(&mut self.chunks)
            .into_iter()
            .flatten()
            .collect();
        rows.sort_by_key(|r| r.start);
        self.chunks.push(rows);
    }

    /// Error path only: allocation is fine here.
    pub(super) fn code_of(&mut self, e: &DbError) -> i32 {
        let key = match &e.code {
            Some(c) => c.clone(),
            None => {
                // Code-less failures still keep their first message, keyed by status.
                let k = e.status.name();
                if !self.messages.iter().any(|(c, _)| c == k) {
                    self.messages.push((k.to_string(), e.message.clone()));
                }
                return -1;
            }
        };
        if let Some(&i) = self.code_index.get(&key) {
            return i;
        }
        let i = self.codes.len() as i32;
        self.codes.push(key.clone());
        self.messages.push((key.clone(), e.message.clone()));
        self.code_index.insert(key, i);
        i
    }
}

pub struct Columns {
    pub session: Vec<i32>,
    pub txn_type: Vec<i16>,
    pub intended_start_ns: Vec<i64>,
    pub start_ns: Vec<i64>,
    pub end_ns: Vec<i64>,
    pub status: Vec<i8>,
    pub error_code: Vec<i32>,
    pub retries: Vec<i32>,
}

pub struct SampleResult {
    pub t0_ns: i64,
    pub end_ns: i64,
    /// The rows kept (all of them unless the plan's `record` is below 1).
    pub columns: Columns,
    /// Every transaction's contribution, whether its row was kept or not.
    pub summaries: Summaries,
    pub error_codes: Vec<String>,
    /// First message per code, in first-seen order.
    pub error_messages: Vec<(String, String)>,
    pub sessions_lost: u64,
    /// Sessions that had not returned when the sample was given up on (see
    /// `Sample::expire`); their transactions are not in the result.
    pub sessions_stuck: u64,
    /// Reconnects of the sessions whose connection dropped, summed.
    pub reconnects: u64,
    /// The sample ran past its deadline and grace (`Sample::expire`).
    pub overran: bool,
    /// Per session: thread CPU time of the transaction loop.
    pub session_cpu_ns: Vec<u64>,
    /// Summed over sessions, in first-seen order.
    pub counters: Vec<(String, i64)>,
}

/// CPU time consumed by the calling thread (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

// The sample

pub struct Sample {
    pub(super) shared: Arc<Shared>,
    handles: Vec<JoinHandle<ThreadOut>>,
}

impl Sample {
    pub fn start(plan: Plan, target: Target) -> Result<Sample, Fatal> {
        let n = plan.sessions;
        let shared = Arc::new(Shared {
            stats: (0..n).map(|_| ThreadStats::new()).collect(),
            plan,
            target,
            stop: AtomicBool::new(false),
            expired: AtomicBool::new(false),
            claimed: AtomicU64::new(0),
            gate: Gate {
                state: Mutex::new(GateState {
                    arrived: 0,
                    broken: false,
                    t0: None,
                }),
                cv: Condvar::new(),
            },
            fatal: Mutex::new(None),
            finished: Mutex::new(0),
            finished_cv: Condvar::new(),
            work_ended: Mutex::new(vec![false; n]),
            cancel: Canceller::default(),
        });
        let mut handles = Vec::with_capacity(n);
        for idx in 0..n {
            let sh = Arc::clone(&shared);
            let h = std::thread::Builder::new()
                .name(format!("wannabet-session-{idx}"))
                .spawn(move || thread_main(sh, idx));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    shared.fail(Fatal {
                        kind: FatalKind::Panic,
                        message: format!("cannot start session thread: {e}"),
                        code: None,
                        prepare: None,
                    });
                    break;
                }
            }
        }
        Ok(Sample { shared, handles })
    }

    /// Waits up to `timeout` for all sessions to finish; true when they have.
    pub fn wait(&self, timeout: Duration) -> bool {
        let n = self.handles.len();
        let done = self.shared.finished.lock().unwrap();
        let (done, _) = self
            .shared
            .finished_cv
            .wait_timeout_while(done, timeout, |d| *d < n)
            .unwrap();
        *done >= n
    }

    /// Every session's work is over (only teardown may remain): the deadline no longer
    /// applies.
    pub fn work_over(&self) -> bool {
        let ended = self.shared.work_ended.lock().unwrap();
        ended.iter().all(|&e| e)
    }

    /// Asks every session to stop; what they recorded will be discarded.
    pub fn stop(&self) {
        self.shared.stop.store(true, Relaxed);
        self.shared.gate.breakdown();
    }

    /// After `stop`: cancels the statements sessions are running (e.g. a long
    /// pg_sleep) so the server does not keep running them; gives up at `deadline`.
    /// False if no session had connected yet.
    pub fn cancel_running(&self, deadline: Instant) -> bool {
        self.shared.cancel.cancel(deadline)
    }

    pub fn started(&self) -> bool {
        self.shared.gate.t0().is_some()
    }

    /// When the sample's clock started (None before every session arrived).
    pub fn t0(&self) -> Option<Instant> {
        self.shared.gate.t0().map(|a| a.instant)
    }

    /// The sample ran past its deadline and grace: sessions start nothing more, and the
    /// statements they are still running are cancelled (what those return is recorded
    /// as `timeout`); gives up on the cancel requests at `deadline`. Unlike `stop`, what
    /// the sessions recorded is kept.
    pub fn expire(&self, deadline: Instant) {
        self.shared.expired.store(true, Relaxed);
        let _ = self.shared.cancel.cancel(deadline);
    }

    /// Joins the threads and merges their records. They must have finished or been
    /// stopped, except after `expire`: a session still stuck then (a frozen server does
    /// not answer even a cancel) is left to end on its own, its rows lost and counted
    /// in `sessions_stuck`, so a stuck server cannot hold the run.
    pub fn finish(self) -> Result<SampleResult, Fatal> {
        let mut outs = Vec::with_capacity(self.handles.len());
        let mut panic_msg = None;
        let expired = self.shared.expired.load(Relaxed);
        let mut stuck = 0;
        for h in self.handles {
            if expired && !h.is_finished() {
                // A session that just counted itself finished is still returning.
                std::thread::sleep(Duration::from_millis(20));
                if !h.is_finished() {
                    stuck += 1;
                    continue;
                }
            }
            match h.join() {
                Ok(o) => outs.push(o),
                Err(p) => panic_msg = Some(panic_text(&p)),
            }
        }
        if let Some(f) = self.shared.fatal.lock().unwrap().take() {
            return Err(f);
        }
        if let Some(m) = panic_msg {
            return Err(Fatal {
                kind: FatalKind::Panic,
                message: m,
                code: None,
                prepare: None,
            });
        }
        let Some(anchor) = self.shared.gate.t0() else {
            return Err(Fatal {
                kind: FatalKind::Panic,
                message: "sample stopped before it started".into(),
                code: None,
                prepare: None,
            });
        };
        let mut result = merge(outs, anchor);
        result.sessions_stuck = stuck;
        result.overran = expired;
        Ok(result)
    }
}

pub(super) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    let m = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("engine thread panicked: {m}")
}

fn merge(outs: Vec<ThreadOut>, anchor: Anchor) -> SampleResult {
    let summaries = merge_sessions(outs.iter().map(|o| &o.summary));
    let n: usize = outs
        .iter()
        .flat_map(|o| o.chunks.iter())
        .map(Vec::len)
        .sum();
    let mut c = Columns {
        session: Vec::with_capacity(n),
        txn_type: Vec::with_capacity(n),
        intended_start_ns: Vec::with_capacity(n),
        start_ns: Vec::with_capacity(n),
        end_ns: Vec::with_capacity(n),
        status: Vec::with_capacity(n),
        error_code: Vec::with_capacity(n),
        retries: Vec::with_capacity(n),
    };
    let mut codes: Vec<String> = Vec::new();
    let mut messages: Vec<(String, String)> = Vec::new();
    let mut end = anchor.instant;
    let mut lost = 0;
    let mut reconnects = 0;
    let mut session_cpu_ns = Vec::with_capacity(outs.len());
    let mut counters: Vec<(String, i64)> = Vec::new();
    for (session, o) in outs.into_iter().enumerate() {
        session_cpu_ns.push(o.cpu_ns);
        for &(name, v) in &o.counters {
            match counters.iter_mut().find(|(n, _)| n == name) {
                Some((_, total)) => *total += v,
                None => counters.push((name.to_string(), v)),
            }
        }
        let remap: Vec<i32> = o
            .codes
            .iter()
            .map(|code| match codes.iter().position(|c| c == code) {
                Some(i) => i as i32,
                None => {
                    codes.push(code.clone());
                    codes.len() as i32 - 1
                }
            })
            .collect();
        for (k, m) in o.messages {
            if !messages.iter().any(|(c, _)| *c == k) {
                messages.push((k, m));
            }
        }
        if o.lost {
            lost += 1;
        }
        reconnects += o.reconnects;
        if let Some(f) = o.finished {
            end = end.max(f);
        }
        for r in o.chunks.iter().flatten() {
            c.session.push(session as i32);
            c.txn_type.push(r.txn);
            c.intended_start_ns.push(r.intended);
            c.start_ns.push(r.start);
            c.end_ns.push(r.end);
            c.status.push(r.status);
            c.error_code.push(if r.error_code < 0 {
                -1
            } else {
                remap[r.error_code as usize]
            });
            c.retries.push(r.retries);
        }
    }
    SampleResult {
        t0_ns: anchor.wall_ns,
        end_ns: anchor.ns(end),
        columns: c,
        summaries,
        error_codes: codes,
        error_messages: messages,
        sessions_lost: lost,
        sessions_stuck: 0,
        reconnects,
        overran: false,
        session_cpu_ns,
        counters,
    }
}
