//! A session thread: connect, run the session SQL and the prepares, wait at
//! the start line, then the transaction loop (choice, script, retries,
//! records) until the sample's time or count is reached.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::gate::{Anchor, Arrival};
use super::plan::{
    Capture, Command, PipelineOp, Plan, Transaction, STREAM_CHOOSE, STREAM_FUNC, STREAM_RECORD,
    STREAM_THROTTLE,
};
use super::sample::{
    panic_text, thread_cpu_ns, Fatal, FatalKind, PrepareFailure, Rec, Shared, ThreadOut, CHUNK,
};
use super::summary::SessionSummary;
use crate::backend::{self, DbError, Session, Status, Store, WithSession};
use crate::script::{eval, Prng, ScriptError, Value};

/// Counts the thread as finished however it exits, so the waiter never hangs.
struct FinishGuard<'a>(&'a Shared, usize);

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        self.0.end_work(self.1);
        let mut d = self.0.finished.lock().unwrap_or_else(|e| e.into_inner());
        *d += 1;
        self.0.finished_cv.notify_all();
    }
}

/// The first wait before a reconnect, doubled after each failed attempt up to the last.
const RECONNECT_FIRST_WAIT: Duration = Duration::from_millis(100);
const RECONNECT_MAX_WAIT: Duration = Duration::from_secs(2);

pub(super) fn thread_main(sh: Arc<Shared>, idx: usize) -> ThreadOut {
    let _done = FinishGuard(&sh, idx);
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut out = ThreadOut::default();
        let mut state: Option<LoopState> = None;
        // While the server cannot be reached (the plan reconnects): since when, and the
        // next wait.
        let mut down_since: Option<Instant> = None;
        let mut wait = RECONNECT_FIRST_WAIT;
        loop {
            let job = SessionJob {
                sh: &sh,
                idx,
                out: &mut out,
                state: &mut state,
            };
            let failed = match backend::with_session_cancellable(&sh.target, &sh.cancel, job) {
                Ok(Ended::Lost) => {
                    // A connection that had worked dropped: a new outage.
                    down_since = None;
                    wait = RECONNECT_FIRST_WAIT;
                    None
                }
                Ok(_) => break,
                Err(e) => Some(e),
            };
            let since = *down_since.get_or_insert_with(Instant::now);
            if reconnect_again(&sh, failed.as_ref(), state.as_ref(), since) {
                if !sleep_until(Instant::now() + wait, &sh) {
                    break;
                }
                wait = (wait * 2).min(RECONNECT_MAX_WAIT);
                continue;
            }
            match failed {
                // The session ran and could not get its connection back: lost.
                None => out.lost = true,
                Some(e) if state.is_some() && e.status == Status::Connection => out.lost = true,
                Some(e) => {
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
            }
            break;
        }
        // `out.finished` is the end of the last transaction: it must not include the
        // session teardown (PostgreSQL Terminate, SQLite close/WAL checkpoint).
        if let Some(st) = state {
            st.finish(&sh.plan, &mut out);
        }
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

/// Whether a session whose connection dropped (`failed` None) or could not be made
/// (`failed`) tries again: the plan reconnects, the failure is the connection's, the
/// sample still runs and wants it, and the outage that began at `since` is within the
/// plan's bound.
fn reconnect_again(
    sh: &Shared,
    failed: Option<&DbError>,
    state: Option<&LoopState>,
    since: Instant,
) -> bool {
    let plan = &sh.plan;
    if plan.reconnect_ns == 0
        || failed.is_some_and(|e| e.status != Status::Connection)
        || sh.stop.load(Relaxed)
        || sh.expired.load(Relaxed)
    {
        return false;
    }
    let now = Instant::now();
    let over = state.is_some_and(|st| {
        plan.duration_ns > 0 && now >= st.t0.instant + Duration::from_nanos(plan.duration_ns)
    });
    !over && now < since + Duration::from_nanos(plan.reconnect_ns)
}

struct SessionJob<'a> {
    pub(super) sh: &'a Shared,
    pub(super) idx: usize,
    out: &'a mut ThreadOut,
    /// None until the sample's clock starts; then what a reconnect goes on with.
    state: &'a mut Option<LoopState>,
}

impl WithSession for SessionJob<'_> {
    type Output = Ended;
    fn run<S: Session>(self, s: &mut S) -> Ended {
        let sh = self.sh;
        if let Some(st) = self.state.as_mut() {
            // A reconnect: set the session up again and go on where it was, without the
            // start line (the clock has started).
            let maps = match setup(s, sh, true) {
                Ok(maps) => maps,
                Err(ended) => return ended,
            };
            self.out.reconnects += 1;
            return end_work(sh, self.idx, run_loop(s, sh, self.idx, self.out, st, &maps));
        }
        let mut arrival = Arrival {
            gate: &sh.gate,
            arrived: false,
        };
        let maps = match setup(s, sh, false) {
            Ok(maps) => maps,
            Err(ended) => return ended,
        };
        arrival.arrived = true;
        let Some(t0) = sh.gate.arrive(sh.plan.sessions) else {
            return Ended::Stopped;
        };
        let st = self
            .state
            .insert(LoopState::new(&sh.plan, self.idx, t0, self.out));
        end_work(sh, self.idx, run_loop(s, sh, self.idx, self.out, st, &maps))
    }
}

/// A session whose loop ended for good (not `Lost`: a reconnect may go on) has done its
/// work before its connection is closed: the close is teardown, outside the deadline.
fn end_work(sh: &Shared, idx: usize, ended: Ended) -> Ended {
    if !matches!(ended, Ended::Lost) {
        sh.end_work(idx);
    }
    ended
}

/// Per capture: (result column, slot) pairs.
type CaptureMaps = Vec<Vec<(usize, usize)>>;

/// Session SQL and prepares, before the clock starts (or after a reconnect); returns where
/// each capture's columns go. A failure is reported (`Stopped`), except that a reconnected
/// session whose connection drops again is `Lost`.
fn setup<S: Session>(s: &mut S, sh: &Shared, reconnecting: bool) -> Result<CaptureMaps, Ended> {
    let plan = &sh.plan;
    s.set_protocol(plan.protocol);
    s.set_fetch_size(plan.fetch_size);
    let lost = |e: &DbError| reconnecting && e.status == Status::Connection;
    for sql in &plan.session_sql {
        if let Err(e) = s.batch_execute(sql) {
            if lost(&e) {
                return Err(Ended::Lost);
            }
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
            return Err(Ended::Stopped);
        }
    }
    let mut columns = Vec::with_capacity(plan.sqls.len());
    for q in &plan.sqls {
        if sh.stop.load(Relaxed) {
            return Err(Ended::Stopped);
        }
        let prepared = if q.compound {
            s.prepare_compound(&q.parts, &q.statements)
                .map(|()| Vec::new())
        } else {
            s.prepare(&q.text, q.n_params, &q.parts)
        };
        if let Ok(names) = prepared {
            columns.push(names);
            continue;
        }
        if let Err(e) = prepared {
            if lost(&e) {
                return Err(Ended::Lost);
            }
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
            return Err(Ended::Stopped);
        }
    }
    let maps = capture_maps(plan, &columns);
    if let Some(message) = no_result(plan, &columns).or_else(|| uncaptured(plan, &maps, &columns)) {
        sh.fail(Fatal {
            kind: FatalKind::Query,
            message,
            code: None,
            prepare: None,
        });
        return Err(Ended::Stopped);
    }
    if sh.stop.load(Relaxed) {
        return Err(Ended::Stopped);
    }
    Ok(maps)
}

/// Each capture's columns whose prefixed names are variables of the plan;
/// a column nobody reads is not stored.
fn capture_maps(plan: &Plan, columns: &[Vec<String>]) -> CaptureMaps {
    plan.captures
        .iter()
        .map(|c| {
            let named = columns[c.stmt]
                .iter()
                .enumerate()
                .filter(|_| c.names)
                .filter_map(|(col, name)| {
                    let var = format!("{}{name}", c.prefix);
                    let slot = plan.slot_names.iter().position(|n| *n == var)?;
                    Some((col, slot))
                });
            let result = c
                .result_slot
                .filter(|_| !columns[c.stmt].is_empty())
                .map(|slot| (0, slot));
            named.chain(result).collect()
        })
        .collect()
}

/// A transaction that records its result but whose last statement returns
/// no column to record.
fn no_result(plan: &Plan, columns: &[Vec<String>]) -> Option<String> {
    let c = plan
        .captures
        .iter()
        .find(|c| c.result_slot.is_some() && columns[c.stmt].is_empty())?;
    let (t, k) = plan.sqls[c.stmt].origin;
    let name = &plan.transactions[t].name;
    Some(format!(
        "transaction '{name}' records its result, but its last statement (statement {k}) \
         returns no column; end the script with a SELECT of the value, or remove result = true"
    ))
}

/// A variable that the scripts read, that only a `\gset`/`\aset` could set,
/// and that no captured result has a column for.
fn uncaptured(plan: &Plan, maps: &CaptureMaps, columns: &[Vec<String>]) -> Option<String> {
    let missing = plan
        .captured_slots
        .iter()
        .find(|&&slot| !maps.iter().flatten().any(|&(_, s)| s == slot))?;
    let offered: Vec<String> = plan
        .captures
        .iter()
        .filter(|c| c.names)
        .flat_map(|c| columns[c.stmt].iter().map(|n| format!("{}{n}", c.prefix)))
        .collect();
    Some(format!(
        "variable :{} is used but no \\gset or \\aset result has a column of that name \
         (their columns give: {})",
        plan.slot_names[*missing],
        if offered.is_empty() {
            "nothing".to_string()
        } else {
            offered.join(", ")
        }
    ))
}

/// Sleeps until `t`, in slices so a stop or an expired deadline is noticed; false then.
fn sleep_until(t: Instant, sh: &Shared) -> bool {
    const SLICE: Duration = Duration::from_millis(50);
    loop {
        if sh.stop.load(Relaxed) || sh.expired.load(Relaxed) {
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
#[allow(clippy::too_many_arguments)]
fn run_script<S: Session>(
    s: &mut S,
    txn: &Transaction,
    captures: &[Capture],
    copies: &[crate::copy::CopySpec],
    maps: &CaptureMaps,
    slots: &mut [Value],
    params: &mut Vec<Value>,
    rng: &mut Prng,
    sh: &Shared,
) -> Result<(), DbError> {
    let mut pc = 0;
    while let Some(cmd) = txn.commands.get(pc) {
        pc += 1;
        match cmd {
            Command::Set(slot, e) => slots[*slot] = eval(e, slots, rng).map_err(script_err)?,
            Command::Sleep(e, unit_ns) => {
                let v = eval(e, slots, rng).map_err(script_err)?;
                let ns = match v {
                    Value::Int(i) => (i.max(0) as u64).saturating_mul(*unit_ns),
                    Value::Float(f) => (f.max(0.0) * *unit_ns as f64) as u64,
                    _ => return Err(script_err(ScriptError("\\sleep needs a number"))),
                };
                if !sleep_until(Instant::now() + Duration::from_nanos(ns), sh) {
                    return Err(DbError::new(Status::Script, None, "interrupted"));
                }
            }
            Command::Sql {
                stmt,
                params: param_slots,
                capture,
            } => {
                params.clear();
                for &p in param_slots {
                    match slots[p] {
                        Value::Unset => return Err(script_err(crate::script::UNSET)),
                        v => params.push(v),
                    }
                }
                match capture {
                    None => {
                        s.execute(*stmt, params, None)?;
                    }
                    Some(c) => {
                        let into = Store {
                            map: &maps[*c],
                            slots,
                        };
                        let rows = s.execute(*stmt, params, Some(into))?;
                        // As pgbench: \gset wants exactly one row; \aset takes any number.
                        if !captures[*c].any_rows && rows != 1 {
                            return Err(DbError::new(
                                Status::Script,
                                None,
                                format!("\\gset expects one row, got {rows}"),
                            ));
                        }
                    }
                }
            }
            Command::Copy(spec, series) => {
                let range = match series {
                    None => None,
                    Some((first, last)) => {
                        let first = eval(first, slots, rng).and_then(crate::script::to_int);
                        let last = eval(last, slots, rng).and_then(crate::script::to_int);
                        Some((first.map_err(script_err)?, last.map_err(script_err)?))
                    }
                };
                s.copy_in(&copies[*spec], range)?;
            }
            Command::JumpUnless(cond, to) => {
                if !eval(cond, slots, rng)
                    .and_then(Value::truth)
                    .map_err(script_err)?
                {
                    pc = *to;
                }
            }
            Command::Jump(to) => pc = *to,
            Command::Pipeline(op) => match op {
                PipelineOp::Start => s.pipeline_start()?,
                PipelineOp::Sync => s.pipeline_sync(false)?,
                PipelineOp::End => s.pipeline_sync(true)?,
            },
        }
    }
    Ok(())
}

/// How a session's transaction loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ended {
    /// The sample's time or count was reached, or it expired: the session is done.
    Done,
    /// The sample is being discarded (stop, abort): what was recorded does not matter.
    Stopped,
    /// The connection dropped and the plan reconnects: connect again and go on.
    Lost,
}

/// What a session's transaction loop carries from one connection to the next, so that a
/// session that reconnects goes on where it was: its variables, random streams, schedule.
pub(super) struct LoopState {
    t0: Anchor,
    pub(super) slots: Vec<Value>,
    saved_slots: Vec<Value>,
    params: Vec<Value>,
    rng_choose: Prng,
    rng_func: Prng,
    rng_throttle: Prng,
    rng_record: Prng,
    next_intended: Instant,
    /// End of this session's last transaction: the sample's end is the latest of these, not
    /// when the threads got round to exiting.
    last_end: Option<Instant>,
    /// CPU time and client counters of the connections before the current one.
    cpu_ns: u64,
    counters: Vec<(&'static str, i64)>,
}

impl LoopState {
    /// The session's state when the sample's clock starts; reserves its rows.
    pub(super) fn new(plan: &Plan, idx: usize, t0: Anchor, out: &mut ThreadOut) -> LoopState {
        let mut slots = plan.slots.clone();
        if let Some(c) = plan.client_id_slot {
            slots[c] = Value::Int((plan.first_session + idx as u64) as i64);
        }
        if let Some(d) = plan.default_seed_slot {
            // One value for every session of the sample, as pgbench has one per run.
            slots[d] = Value::Int(Prng::new(plan.seed, u64::MAX, STREAM_FUNC).next_u64() as i64);
        }
        let max_params = plan.sqls.iter().map(|q| q.n_params).max().unwrap_or(0);
        out.summary = SessionSummary::new(plan.transactions.len());
        // Reserve for the expected share before the clock matters.
        let mean_gap_ns = (plan.rate > 0.0).then(|| plan.sessions as f64 / plan.rate * 1e9);
        let expect = if plan.max_transactions > 0 {
            plan.max_transactions as usize / plan.sessions + 1
        } else if let Some(gap) = mean_gap_ns {
            (plan.duration_ns as f64 / gap * 1.1) as usize + 16
        } else {
            CHUNK
        };
        let mut expect = (expect as f64 * plan.record.clamp(0.0, 1.0)).ceil() as usize;
        let cap = row_cap(plan);
        if cap > 0 {
            expect = expect.min(cap);
        }
        out.chunks.push(Vec::with_capacity(expect.clamp(16, CHUNK)));
        LoopState {
            t0,
            saved_slots: slots.clone(),
            slots,
            params: Vec::with_capacity(max_params),
            rng_choose: Prng::new(plan.seed, idx as u64, STREAM_CHOOSE),
            rng_func: Prng::new(plan.seed, idx as u64, STREAM_FUNC),
            rng_throttle: Prng::new(plan.seed, idx as u64, STREAM_THROTTLE),
            // Which rows are kept: a Bernoulli draw per transaction (pgbench's
            // --sampling-rate), on a stream of its own so the workload's random choices are
            // the same whatever the rate.
            rng_record: Prng::new(plan.seed, idx as u64, STREAM_RECORD),
            next_intended: t0.instant,
            last_end: None,
            cpu_ns: 0,
            counters: Vec::new(),
        }
    }

    /// A connection ends: keep its CPU time and counters.
    fn leave<S: Session>(&mut self, s: &S, cpu0: u64) {
        self.cpu_ns += thread_cpu_ns().saturating_sub(cpu0);
        for (name, v) in s.counters() {
            match self.counters.iter_mut().find(|(n, _)| *n == name) {
                Some((_, total)) => *total += v,
                None => self.counters.push((name, v)),
            }
        }
    }

    /// The session is done: its rows in start order, its end, CPU time and counters.
    pub(super) fn finish(self, plan: &Plan, out: &mut ThreadOut) {
        out.restore_order(row_cap(plan));
        out.finished = self.last_end;
        out.cpu_ns = self.cpu_ns;
        out.counters = self.counters;
    }
}

/// The most rows each session keeps (0: no limit).
fn row_cap(plan: &Plan) -> usize {
    if plan.max_rows > 0 {
        plan.max_rows.div_ceil(plan.sessions as u64) as usize
    } else {
        0
    }
}

pub(super) fn run_loop<S: Session>(
    s: &mut S,
    sh: &Shared,
    idx: usize,
    out: &mut ThreadOut,
    st: &mut LoopState,
    maps: &CaptureMaps,
) -> Ended {
    s.reset_counters();
    let cpu0 = thread_cpu_ns();
    let ended = transactions(s, sh, idx, out, st, maps);
    st.leave(s, cpu0);
    ended
}

fn transactions<S: Session>(
    s: &mut S,
    sh: &Shared,
    idx: usize,
    out: &mut ThreadOut,
    st: &mut LoopState,
    maps: &CaptureMaps,
) -> Ended {
    let plan = &sh.plan;
    let stats = &sh.stats[idx];
    let t0 = st.t0;
    // A retry replays the transaction from the state it started in: the
    // random stream and the variables (`\set x :x + 1` must not advance twice).
    // Preallocated once; each transaction only copies into it.
    let retrying = plan.max_tries > 1;
    let LoopState {
        slots,
        saved_slots,
        params,
        rng_choose,
        rng_func,
        rng_throttle,
        rng_record,
        next_intended,
        last_end,
        ..
    } = st;
    let record = plan.record;
    let cap = row_cap(plan);
    let warmup_end_ns = t0
        .wall_ns
        .saturating_add(plan.warmup_ns.min(i64::MAX as u64) as i64);
    let total_weight: u64 = plan.transactions.iter().map(|t| t.weight).sum();
    let deadline =
        (plan.duration_ns > 0).then(|| t0.instant + Duration::from_nanos(plan.duration_ns));
    // Open loop: each session gets an equal share of the target rate.
    let mean_gap_ns = (plan.rate > 0.0).then(|| plan.sessions as f64 / plan.rate * 1e9);

    loop {
        if sh.stop.load(Relaxed) {
            return Ended::Stopped;
        }
        if sh.expired.load(Relaxed) {
            break;
        }
        let intended = mean_gap_ns.map(|gap| {
            *next_intended += Duration::from_nanos(rng_throttle.exponential(gap) as u64);
            *next_intended
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
            if !sleep_until(i, sh) {
                if sh.stop.load(Relaxed) {
                    return Ended::Stopped;
                }
                break;
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
            saved_slots.copy_from_slice(slots);
        }
        let mut retries: u32 = 0;
        if let Some(r) = txn.result_slot {
            slots[r] = Value::Unset;
        }
        let (result, end) = loop {
            let r = run_script(
                s,
                txn,
                &plan.captures,
                &plan.copies,
                maps,
                slots,
                params,
                rng_func,
                sh,
            );
            match r {
                Ok(()) => break (Ok(()), Instant::now()),
                Err(e) => {
                    // The failed transaction ends when its error arrives; the
                    // clean-up ROLLBACK below is not part of it.
                    let failed_at = Instant::now();
                    if sh.stop.load(Relaxed) {
                        return Ended::Stopped; // sample is being discarded
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
                        *rng_func = saved_rng.clone();
                        slots.copy_from_slice(saved_slots);
                        continue;
                    }
                    break (Err(e), failed_at);
                }
            }
        };
        *last_end = Some(end);

        // Past the deadline and grace the sample cancelled what was still running: the
        // error is the cancel's, whatever the driver calls it.
        let expired = sh.expired.load(Relaxed);
        let (status, code) = match &result {
            Ok(()) => (Status::Ok, -1),
            Err(e) if expired => (Status::Timeout, out.code_of(e)),
            Err(e) => (e.status, out.code_of(e)),
        };
        let rec = Rec {
            intended: t0.ns(intended),
            start: t0.ns(start),
            end: t0.ns(end),
            error_code: code,
            retries: retries as i32,
            txn: t as i16,
            status: status as i8,
        };
        // The same wall-clock values as the row, so the summaries equal those computed from
        // the rows (`wannabet.store.summaries.from_columns`).
        out.summary.record(
            t,
            rec.start < warmup_end_ns,
            rec.status,
            rec.intended,
            rec.end,
        );
        if let (Some(r), Ok(())) = (txn.result_slot, &result) {
            let value = match slots[r] {
                Value::Int(i) => i as f64,
                Value::Float(f) => f,
                Value::Bool(b) => b as i64 as f64,
                Value::Null | Value::Unset => f64::NAN,
            };
            out.summary
                .record_result(t, rec.start < warmup_end_ns, value);
        }
        let keep = record >= 1.0 || (record > 0.0 && rng_record.double() < record);
        if keep {
            out.keep(rec, cap, rng_record);
        }
        stats.record(
            status == Status::Ok,
            end.saturating_duration_since(intended).as_nanos() as u64,
        );

        if expired {
            break;
        }
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
                return Ended::Stopped;
            }
            if e.status == Status::Connection {
                if plan.reconnect_ns > 0 {
                    return Ended::Lost;
                }
                out.lost = true;
                break;
            }
        }
    }
    Ended::Done
}
