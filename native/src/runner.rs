//! One sample: a thread per session, a shared start line, one clock, and
//! per-thread columnar records merged at the end.

use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::backend::{self, Canceller, DbError, Session, Status, Target, WithSession};
use crate::script::{eval, Expr, Prng, ScriptError, Value};

// ---------------------------------------------------------------------------
// Plan: the workload, converted once from Python before anything starts.

pub enum Command {
    Set(usize, Expr),
    Sleep(Expr, u64),
    /// Index into `Plan::sqls` and the slots whose values are the parameters.
    Sql(usize, Vec<usize>),
}

pub struct Transaction {
    pub name: String,
    pub weight: u64,
    pub commands: Vec<Command>,
}

/// A distinct SQL text, prepared once per connection.
pub struct SqlText {
    pub text: String,
    pub n_params: usize,
    /// Where it first appears, for error messages: (transaction, 1-based statement number).
    pub origin: (usize, usize),
}

pub struct Plan {
    pub transactions: Vec<Transaction>,
    pub sqls: Vec<SqlText>,
    pub session_sql: Vec<String>,
    pub slots: Vec<Value>,
    pub client_id_slot: Option<usize>,
    pub sessions: usize,
    pub duration_ns: u64,
    pub max_transactions: u64,
    pub seed: u64,
    pub abort_on_error: bool,
    pub max_tries: u32,
    pub rate: f64,
}

const STREAM_CHOOSE: u64 = 0;
const STREAM_FUNC: u64 = 1;
const STREAM_THROTTLE: u64 = 2;

// ---------------------------------------------------------------------------
// Progress: per-thread log-linear latency histograms made of atomics.

/// 16 linear sub-buckets per power of two: <= 6.25% relative error.
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

fn bucket_of(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let k = 63 - ns.leading_zeros(); // k >= SUB_BITS
    let sub = (ns >> (k - SUB_BITS)) as usize & (SUB - 1);
    (k - SUB_BITS + 1) as usize * SUB + sub
}

/// Midpoint of a bucket, in ns.
fn bucket_value(b: usize) -> f64 {
    if b < SUB {
        return b as f64;
    }
    let k = (b / SUB) as u32 + SUB_BITS - 1;
    let sub = (b % SUB) as u64;
    let lo = (1u64 << k) + (sub << (k - SUB_BITS));
    lo as f64 + (1u64 << (k - SUB_BITS)) as f64 / 2.0
}

/// Written by exactly one session thread, read by the waiter; the single
/// writer makes load+store as good as fetch_add, without the locked instruction.
pub struct ThreadStats {
    ok: AtomicU64,
    errors: AtomicU64,
    hist: Box<[AtomicU64]>,
}

impl ThreadStats {
    fn new() -> Self {
        ThreadStats {
            ok: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            hist: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    #[inline]
    fn bump(a: &AtomicU64) {
        a.store(a.load(Relaxed) + 1, Relaxed);
    }

    #[inline]
    fn record(&self, ok: bool, latency_ns: u64) {
        if ok {
            Self::bump(&self.ok);
            Self::bump(&self.hist[bucket_of(latency_ns)]);
        } else {
            Self::bump(&self.errors);
        }
    }
}

pub struct Progress {
    pub ok: u64,
    pub errors: u64,
    pub elapsed_s: f64,
    pub p99_ms: f64,
}

// ---------------------------------------------------------------------------
// Start line

/// A barrier that a failing or panicking thread can break, so that nobody waits
/// forever for a session that will never arrive. The last arrival captures t0.
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

struct GateState {
    arrived: usize,
    broken: bool,
    t0: Option<Anchor>,
}

/// The one mapping from the monotonic clock to wall time for this sample.
#[derive(Clone, Copy)]
pub struct Anchor {
    pub instant: Instant,
    pub wall_ns: i64,
}

impl Anchor {
    fn now() -> Anchor {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Anchor {
            instant: Instant::now(),
            wall_ns: wall.as_nanos() as i64,
        }
    }

    #[inline]
    pub fn ns(&self, t: Instant) -> i64 {
        self.wall_ns + t.saturating_duration_since(self.instant).as_nanos() as i64
    }
}

impl Gate {
    fn arrive(&self, n: usize) -> Option<Anchor> {
        let mut st = self.state.lock().unwrap();
        st.arrived += 1;
        if st.arrived == n && !st.broken {
            st.t0 = Some(Anchor::now());
            self.cv.notify_all();
        }
        while st.t0.is_none() && !st.broken {
            st = self.cv.wait(st).unwrap();
        }
        if st.broken {
            None
        } else {
            st.t0
        }
    }

    fn breakdown(&self) {
        let mut st = self.state.lock().unwrap();
        st.broken = true;
        self.cv.notify_all();
    }

    fn t0(&self) -> Option<Anchor> {
        let st = self.state.lock().unwrap();
        if st.broken {
            None
        } else {
            st.t0
        }
    }
}

/// Breaks the gate if the thread leaves (error or panic) before arriving.
struct Arrival<'a> {
    gate: &'a Gate,
    arrived: bool,
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        if !self.arrived {
            self.gate.breakdown();
        }
    }
}

// ---------------------------------------------------------------------------
// Shared state and results

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

struct Shared {
    plan: Plan,
    target: Target,
    /// Set when the sample's data will be discarded: abort, Ctrl-C, callback error.
    stop: AtomicBool,
    claimed: AtomicU64,
    gate: Gate,
    stats: Vec<ThreadStats>,
    fatal: Mutex<Option<Fatal>>,
    finished: Mutex<usize>,
    finished_cv: Condvar,
    /// Every session registers here so a stop can cancel in-flight statements.
    cancel: Canceller,
}

impl Shared {
    /// Records the first fatal error and stops everybody, cancelling the
    /// statements other sessions are running: a session in a long statement
    /// would otherwise hold the failed sample open until it returned.
    fn fail(&self, f: Fatal) {
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
struct Rec {
    intended: i64,
    start: i64,
    end: i64,
    error_code: i32,
    retries: i32,
    txn: i16,
    status: i8,
}

/// Rows in fixed-size chunks: growth never copies what is already recorded,
/// so no transaction pays for a large reallocation.
const CHUNK: usize = 1 << 16;
/// How long a failing session spends cancelling the others' statements (an
/// unreachable server must not hold up the error).
const FAIL_CANCEL_GRACE: Duration = Duration::from_secs(2);

#[derive(Default)]
struct ThreadOut {
    chunks: Vec<Vec<Rec>>,
    /// Local code table; recs refer to it and are remapped at merge time.
    codes: Vec<String>,
    code_index: HashMap<String, i32>,
    messages: Vec<(String, String)>,
    lost: bool,
    finished: Option<Instant>,
    /// CPU time of this session's thread while it ran transactions.
    cpu_ns: u64,
    /// The client's counters of the database's work (see Session::counters).
    counters: Vec<(&'static str, i64)>,
}

impl ThreadOut {
    #[inline]
    fn push(&mut self, r: Rec) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < c.capacity() => c.push(r),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(r);
                self.chunks.push(c);
            }
        }
    }

    /// Error path only: allocation is fine here.
    fn code_of(&mut self, e: &DbError) -> i32 {
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
    pub columns: Columns,
    pub error_codes: Vec<String>,
    /// First message per code, in first-seen order.
    pub error_messages: Vec<(String, String)>,
    pub sessions_lost: u64,
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

// ---------------------------------------------------------------------------
// The sample

pub struct Sample {
    shared: Arc<Shared>,
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

    pub fn progress(&self) -> Option<Progress> {
        let t0 = self.shared.gate.t0()?;
        let mut hist = vec![0u64; BUCKETS];
        let (mut ok, mut errors) = (0, 0);
        for s in &self.shared.stats {
            ok += s.ok.load(Relaxed);
            errors += s.errors.load(Relaxed);
            for (h, a) in hist.iter_mut().zip(s.hist.iter()) {
                *h += a.load(Relaxed);
            }
        }
        let total: u64 = hist.iter().sum();
        let mut p99_ms = 0.0;
        if total > 0 {
            let rank = (total as f64 * 0.99).ceil() as u64;
            let mut seen = 0;
            for (b, &c) in hist.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    p99_ms = bucket_value(b) / 1e6;
                    break;
                }
            }
        }
        Some(Progress {
            ok,
            errors,
            elapsed_s: t0.instant.elapsed().as_secs_f64(),
            p99_ms,
        })
    }

    /// Joins every thread (they must have finished or been stopped) and
    /// merges their records.
    pub fn finish(self) -> Result<SampleResult, Fatal> {
        let mut outs = Vec::with_capacity(self.handles.len());
        let mut panic_msg = None;
        for h in self.handles {
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
        Ok(merge(outs, anchor))
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    let m = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("engine thread panicked: {m}")
}

fn merge(outs: Vec<ThreadOut>, anchor: Anchor) -> SampleResult {
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
        error_codes: codes,
        error_messages: messages,
        sessions_lost: lost,
        session_cpu_ns,
        counters,
    }
}

// ---------------------------------------------------------------------------
// Session threads

/// Counts the thread as finished however it exits, so the waiter never hangs.
struct FinishGuard<'a>(&'a Shared);

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        let mut d = self.0.finished.lock().unwrap_or_else(|e| e.into_inner());
        *d += 1;
        self.0.finished_cv.notify_all();
    }
}

fn thread_main(sh: Arc<Shared>, idx: usize) -> ThreadOut {
    let _done = FinishGuard(&sh);
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut out = ThreadOut::default();
        let job = SessionJob {
            sh: &sh,
            idx,
            out: &mut out,
        };
        if let Err(e) = backend::with_session_cancellable(&sh.target, &sh.cancel, job) {
            // A ConnectError gets its context ("cannot connect to ...") from
            // the Python side; anything else keeps ours.
            let (kind, message) = if e.status == Status::Connection {
                (FatalKind::Connect, e.message)
            } else {
                (FatalKind::Query, format!("cannot connect: {}", e.message))
            };
            sh.fail(Fatal {
                kind,
                message,
                code: e.code,
                prepare: None,
            });
        }
        // `out.finished` is set by run_loop: it must not include the session
        // teardown (PostgreSQL Terminate, SQLite close/WAL checkpoint).
        out
    }));
    match r {
        Ok(out) => out,
        Err(p) => {
            sh.fail(Fatal {
                kind: FatalKind::Panic,
                message: panic_text(&p),
                code: None,
                prepare: None,
            });
            ThreadOut::default()
        }
    }
}

struct SessionJob<'a> {
    sh: &'a Shared,
    idx: usize,
    out: &'a mut ThreadOut,
}

impl WithSession for SessionJob<'_> {
    type Output = ();
    fn run<S: Session>(self, s: &mut S) {
        let mut arrival = Arrival {
            gate: &self.sh.gate,
            arrived: false,
        };
        if setup(s, self.sh) {
            arrival.arrived = true;
            if let Some(t0) = self.sh.gate.arrive(self.sh.plan.sessions) {
                run_loop(s, self.sh, self.idx, self.out, t0);
            }
        }
    }
}

/// Session SQL and prepares, before the clock starts. False on failure
/// (already reported).
fn setup<S: Session>(s: &mut S, sh: &Shared) -> bool {
    let plan = &sh.plan;
    for sql in &plan.session_sql {
        if let Err(e) = s.batch_execute(sql) {
            let kind = if e.status == Status::Connection {
                FatalKind::Connect
            } else {
                FatalKind::Query
            };
            sh.fail(Fatal {
                kind,
                message: format!("session SQL failed: {}", e.message),
                code: e.code,
                prepare: None,
            });
            return false;
        }
    }
    for q in &plan.sqls {
        if sh.stop.load(Relaxed) {
            return false;
        }
        if let Err(e) = s.prepare(&q.text, q.n_params) {
            let (t, k) = q.origin;
            let kind = if e.status == Status::Connection {
                FatalKind::Connect
            } else {
                FatalKind::Query
            };
            let name = &plan.transactions[t].name;
            sh.fail(Fatal {
                kind,
                message: format!(
                    "prepare failed for statement {k} of transaction '{name}': {}",
                    e.message
                ),
                code: e.code,
                prepare: Some(PrepareFailure {
                    transaction_index: t,
                    transaction: name.clone(),
                    statement: k,
                    reason: e.message,
                }),
            });
            return false;
        }
    }
    !sh.stop.load(Relaxed)
}

/// Sleeps until `t`, in slices so a stop request is noticed; false if stopped.
fn sleep_until(t: Instant, stop: &AtomicBool) -> bool {
    const SLICE: Duration = Duration::from_millis(50);
    loop {
        if stop.load(Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= t {
            return true;
        }
        std::thread::sleep((t - now).min(SLICE));
    }
}

fn script_err(e: ScriptError) -> DbError {
    DbError::new(Status::Script, None, e.0)
}

/// Runs one transaction's commands once. Nothing here allocates unless
/// something fails.
fn run_script<S: Session>(
    s: &mut S,
    txn: &Transaction,
    slots: &mut [Value],
    params: &mut Vec<Value>,
    rng: &mut Prng,
    stop: &AtomicBool,
) -> Result<(), DbError> {
    for cmd in &txn.commands {
        match cmd {
            Command::Set(slot, e) => slots[*slot] = eval(e, slots, rng).map_err(script_err)?,
            Command::Sleep(e, unit_ns) => {
                let v = eval(e, slots, rng).map_err(script_err)?;
                let ns = match v {
                    Value::Int(i) => (i.max(0) as u64).saturating_mul(*unit_ns),
                    Value::Float(f) => (f.max(0.0) * *unit_ns as f64) as u64,
                    Value::Unset => return Err(script_err(crate::script::UNSET)),
                };
                if !sleep_until(Instant::now() + Duration::from_nanos(ns), stop) {
                    return Err(DbError::new(Status::Script, None, "interrupted"));
                }
            }
            Command::Sql(stmt, param_slots) => {
                params.clear();
                for &p in param_slots {
                    match slots[p] {
                        Value::Unset => return Err(script_err(crate::script::UNSET)),
                        v => params.push(v),
                    }
                }
                s.execute(*stmt, params)?;
            }
        }
    }
    Ok(())
}

fn run_loop<S: Session>(s: &mut S, sh: &Shared, idx: usize, out: &mut ThreadOut, t0: Anchor) {
    let plan = &sh.plan;
    let stats = &sh.stats[idx];
    let mut slots = plan.slots.clone();
    if let Some(c) = plan.client_id_slot {
        slots[c] = Value::Int(idx as i64);
    }
    // A retry replays the transaction from the state it started in: the
    // random stream and the variables (`\set x :x + 1` must not advance twice).
    // Preallocated once; each transaction only copies into it.
    let retrying = plan.max_tries > 1;
    let mut saved_slots = slots.clone();
    let max_params = plan.sqls.iter().map(|q| q.n_params).max().unwrap_or(0);
    let mut params: Vec<Value> = Vec::with_capacity(max_params);
    let mut rng_choose = Prng::new(plan.seed, idx as u64, STREAM_CHOOSE);
    let mut rng_func = Prng::new(plan.seed, idx as u64, STREAM_FUNC);
    let mut rng_throttle = Prng::new(plan.seed, idx as u64, STREAM_THROTTLE);

    let total_weight: u64 = plan.transactions.iter().map(|t| t.weight).sum();
    let deadline =
        (plan.duration_ns > 0).then(|| t0.instant + Duration::from_nanos(plan.duration_ns));
    // Open loop: each session gets an equal share of the target rate.
    let mean_gap_ns = (plan.rate > 0.0).then(|| plan.sessions as f64 / plan.rate * 1e9);
    let mut next_intended = t0.instant;
    // End of this session's last transaction: the sample's end is the latest
    // of these, not when the threads got round to exiting.
    let mut last_end: Option<Instant> = None;

    // Reserve for the expected share before the clock matters.
    let expect = if plan.max_transactions > 0 {
        plan.max_transactions as usize / plan.sessions + 1
    } else if let Some(gap) = mean_gap_ns {
        (plan.duration_ns as f64 / gap * 1.1) as usize + 16
    } else {
        CHUNK
    };
    out.chunks.push(Vec::with_capacity(expect.clamp(16, CHUNK)));
    s.reset_counters();
    let cpu0 = thread_cpu_ns();

    loop {
        if sh.stop.load(Relaxed) {
            return;
        }
        let intended = mean_gap_ns.map(|gap| {
            next_intended += Duration::from_nanos(rng_throttle.exponential(gap) as u64);
            next_intended
        });
        if let Some(d) = deadline {
            if Instant::now() >= d || intended.is_some_and(|i| i >= d) {
                break;
            }
        }
        if plan.max_transactions > 0 && sh.claimed.fetch_add(1, Relaxed) >= plan.max_transactions {
            break;
        }
        if let Some(i) = intended {
            // Early: wait. Late: start now; latency still counts from `i`.
            if !sleep_until(i, &sh.stop) {
                return;
            }
        }

        // Weighted pick; a linear scan beats anything clever for a handful of types.
        let mut pick = rng_choose.below_inclusive(total_weight - 1);
        let mut t = 0;
        while pick >= plan.transactions[t].weight {
            pick -= plan.transactions[t].weight;
            t += 1;
        }
        let txn = &plan.transactions[t];

        let start = Instant::now();
        // Closed loop: a thread preempted between the deadline check and here must not
        // start a transaction after the deadline. (An open loop's late transaction was due
        // before it, and dropping it would hide the lag.)
        if intended.is_none() && deadline.is_some_and(|d| start >= d) {
            break;
        }
        let intended = intended.unwrap_or(start);
        // pgbench replays the same random values when it retries.
        let saved_rng = rng_func.clone();
        if retrying {
            saved_slots.copy_from_slice(&slots);
        }
        let mut retries: u32 = 0;
        let (result, end) = loop {
            match run_script(s, txn, &mut slots, &mut params, &mut rng_func, &sh.stop) {
                Ok(()) => break (Ok(()), Instant::now()),
                Err(e) => {
                    // The failed transaction ends when its error arrives; the
                    // clean-up ROLLBACK below is not part of it.
                    let failed_at = Instant::now();
                    if sh.stop.load(Relaxed) {
                        return; // sample is being discarded
                    }
                    if e.status == Status::Connection {
                        break (Err(e), failed_at);
                    }
                    if let Err(re) = s.rollback_if_needed() {
                        if re.status == Status::Connection {
                            break (Err(re), failed_at);
                        }
                    }
                    // Like pgbench, no retry once the run's time is up.
                    let time_left = deadline.is_none_or(|d| Instant::now() < d);
                    if e.status.retryable() && retries + 1 < plan.max_tries && time_left {
                        retries += 1;
                        rng_func = saved_rng.clone();
                        slots.copy_from_slice(&saved_slots);
                        continue;
                    }
                    break (Err(e), failed_at);
                }
            }
        };
        last_end = Some(end);

        let (status, code) = match &result {
            Ok(()) => (Status::Ok, -1),
            Err(e) => (e.status, out.code_of(e)),
        };
        out.push(Rec {
            intended: t0.ns(intended),
            start: t0.ns(start),
            end: t0.ns(end),
            error_code: code,
            retries: retries as i32,
            txn: t as i16,
            status: status as i8,
        });
        stats.record(
            status == Status::Ok,
            end.saturating_duration_since(intended).as_nanos() as u64,
        );

        if let Err(e) = result {
            if plan.abort_on_error {
                let kind = if e.status == Status::Connection {
                    FatalKind::Connect
                } else {
                    FatalKind::Query
                };
                sh.fail(Fatal {
                    kind,
                    message: e.message,
                    code: e.code,
                    prepare: None,
                });
                return;
            }
            if e.status == Status::Connection {
                out.lost = true;
                break;
            }
        }
    }
    out.finished = last_end;
    out.cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
    out.counters = s.counters();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets() {
        let mut last = 0;
        for v in [
            0u64,
            1,
            15,
            16,
            17,
            31,
            32,
            1000,
            1_000_000,
            123_456_789,
            u64::MAX,
        ] {
            let b = bucket_of(v);
            assert!(b >= last && b < BUCKETS, "{v} -> {b}");
            last = b;
            let mid = bucket_value(b);
            if v > 0 {
                assert!((mid - v as f64).abs() / (v as f64) < 0.07, "{v}: {mid}");
            }
        }
    }

    fn plan(sessions: usize, sql: Vec<(&str, usize)>, commands: Vec<Command>) -> Plan {
        Plan {
            transactions: vec![Transaction {
                name: "t".into(),
                weight: 1,
                commands,
            }],
            sqls: sql
                .into_iter()
                .enumerate()
                .map(|(i, (t, n))| SqlText {
                    text: t.into(),
                    n_params: n,
                    origin: (0, i + 1),
                })
                .collect(),
            session_sql: vec![],
            slots: vec![Value::Unset; 2],
            client_id_slot: Some(1),
            sessions,
            duration_ns: 0,
            max_transactions: 500,
            seed: 1,
            abort_on_error: false,
            max_tries: 1,
            rate: 0.0,
        }
    }

    #[test]
    fn sqlite_sample() {
        let dir = std::env::temp_dir().join(format!("wb-runner-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("t.db");
        let _ = std::fs::remove_file(&db);
        let target = format!("sqlite://{}", db.display());
        let t = Target::parse(&target).unwrap();
        backend::with_session(&t, Setup).unwrap();
        let cmds = vec![
            Command::Set(
                0,
                Expr::Call(
                    crate::script::Func::Random,
                    vec![Expr::Int(1), Expr::Int(10)],
                ),
            ),
            Command::Sql(0, vec![0]),
            Command::Sql(1, vec![1]),
        ];
        let p = plan(
            2,
            vec![
                ("UPDATE a SET n = n + 1 WHERE id = ?1", 1),
                ("INSERT INTO u VALUES (?1)", 1),
            ],
            cmds,
        );
        let sample = Sample::start(p, Target::parse(&target).unwrap()).unwrap();
        while !sample.wait(Duration::from_millis(100)) {}
        let pr = sample.progress().unwrap();
        let r = sample.finish().unwrap();
        let c = &r.columns;
        assert_eq!(c.session.len(), 500);
        // Each session inserts its id once; every later insert is a unique violation.
        let ok = c.status.iter().filter(|&&s| s == 0).count();
        assert_eq!(ok, 2);
        assert_eq!(pr.ok, 2);
        assert_eq!(pr.errors, 498);
        assert!(c
            .status
            .iter()
            .all(|&s| s == 0 || s == Status::Constraint as i8));
        assert_eq!(
            r.error_codes,
            vec!["SQLITE_CONSTRAINT_PRIMARYKEY".to_string()]
        );
        assert!(c.end_ns.iter().zip(&c.start_ns).all(|(e, s)| e >= s));
        assert!(r.end_ns >= r.t0_ns);
        // Updates ran before the failing insert in every transaction.
        let t = Target::parse(&target).unwrap();
        let total = backend::with_session(&t, Query("SELECT sum(n) FROM a")).unwrap();
        assert_eq!(total, "500");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    struct Setup;
    impl WithSession for Setup {
        type Output = ();
        fn run<S: Session>(self, s: &mut S) {
            s.batch_execute(
                "CREATE TABLE a (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
                 WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10)
                 INSERT INTO a SELECT x, 0 FROM c;
                 CREATE TABLE u (id INTEGER PRIMARY KEY);",
            )
            .unwrap();
        }
    }

    struct Query(&'static str);
    impl WithSession for Query {
        type Output = String;
        fn run<S: Session>(self, s: &mut S) -> String {
            s.query_text(self.0).unwrap()[0][0].clone().unwrap()
        }
    }

    #[test]
    fn prepare_failure_is_reported() {
        let t = Target::parse("sqlite:///nonexistent-dir-xyz/t.db").unwrap();
        let p = plan(2, vec![], vec![]);
        let sample = Sample::start(p, t).unwrap();
        while !sample.wait(Duration::from_millis(100)) {}
        let f = sample.finish().err().unwrap();
        assert_eq!(f.kind, FatalKind::Connect);
        assert!(
            f.message.starts_with("cannot open SQLite database"),
            "{}",
            f.message
        );

        let dir = std::env::temp_dir();
        let t = Target::parse(&format!(
            "sqlite://{}/wb-empty-{}.db",
            dir.display(),
            std::process::id()
        ))
        .unwrap();
        let p = plan(
            2,
            vec![("SELECT * FROM missing WHERE x = ?1", 1)],
            vec![Command::Sql(0, vec![0])],
        );
        let sample = Sample::start(p, t).unwrap();
        while !sample.wait(Duration::from_millis(100)) {}
        let f = sample.finish().err().unwrap();
        assert_eq!(f.kind, FatalKind::Query);
        assert!(
            f.message
                .contains("prepare failed for statement 1 of transaction 't'"),
            "{}",
            f.message
        );
        let _ = std::fs::remove_file(dir.join(format!("wb-empty-{}.db", std::process::id())));
    }
}
