//! A session thread: connect, run the session SQL and the prepares, wait at
//! the start line, then the transaction loop (choice, script, retries,
//! records) until the sample's time or count is reached.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
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
struct FinishGuard<'a>(&'a Shared);

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        let mut d = self.0.finished.lock().unwrap_or_else(|e| e.into_inner());
        *d += 1;
        self.0.finished_cv.notify_all();
    }
}

pub(super) fn thread_main(sh: Arc<Shared>, idx: usize) -> ThreadOut {
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
    pub(super) sh: &'a Shared,
    pub(super) idx: usize,
    out: &'a mut ThreadOut,
}

impl WithSession for SessionJob<'_> {
    type Output = ();
    fn run<S: Session>(self, s: &mut S) {
        let mut arrival = Arrival {
            gate: &self.sh.gate,
            arrived: false,
        };
        if let Some(maps) = setup(s, self.sh) {
            arrival.arrived = true;
            if let Some(t0) = self.sh.gate.arrive(self.sh.plan.sessions) {
                run_loop(s, self.sh, self.idx, self.out, t0, &maps);
            }
        }
    }
}

/// Per capture: (result column, slot) pairs.
type CaptureMaps = Vec<Vec<(usize, usize)>>;

/// Session SQL and prepares, before the clock starts; returns where each
/// capture's columns go. None on failure (already reported).
fn setup<S: Session>(s: &mut S, sh: &Shared) -> Option<CaptureMaps> {
    let plan = &sh.plan;
    s.set_protocol(plan.protocol);
    s.set_fetch_size(plan.fetch_size);
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
            return None;
        }
    }
    let mut columns = Vec::with_capacity(plan.sqls.len());
    for q in &plan.sqls {
        if sh.stop.load(Relaxed) {
            return None;
        }
        let prepared = if q.compound {
            s.prepare_compound(&q.parts).map(|()| Vec::new())
        } else {
            s.prepare(&q.text, q.n_params, &q.parts)
        };
        if let Ok(names) = prepared {
            columns.push(names);
            continue;
        }
        if let Err(e) = prepared {
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
            return None;
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
        return None;
    }
    (!sh.stop.load(Relaxed)).then_some(maps)
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
    stop: &AtomicBool,
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
                if !sleep_until(Instant::now() + Duration::from_nanos(ns), stop) {
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

fn run_loop<S: Session>(
    s: &mut S,
    sh: &Shared,
    idx: usize,
    out: &mut ThreadOut,
    t0: Anchor,
    maps: &CaptureMaps,
) {
    let plan = &sh.plan;
    let stats = &sh.stats[idx];
    let mut slots = plan.slots.clone();
    if let Some(c) = plan.client_id_slot {
        slots[c] = Value::Int(idx as i64);
    }
    if let Some(d) = plan.default_seed_slot {
        // One value for every session of the sample, as pgbench has one per run.
        slots[d] = Value::Int(Prng::new(plan.seed, u64::MAX, STREAM_FUNC).next_u64() as i64);
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
    // Which rows are kept: a Bernoulli draw per transaction (pgbench's --sampling-rate), on a
    // stream of its own so the workload's random choices are the same whatever the rate.
    let mut rng_record = Prng::new(plan.seed, idx as u64, STREAM_RECORD);
    let record = plan.record;
    let cap = if plan.max_rows > 0 {
        plan.max_rows.div_ceil(plan.sessions as u64) as usize
    } else {
        0
    };
    let warmup_end_ns = t0
        .wall_ns
        .saturating_add(plan.warmup_ns.min(i64::MAX as u64) as i64);
    out.summary = SessionSummary::new(plan.transactions.len());

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
    let mut expect = (expect as f64 * record.clamp(0.0, 1.0)).ceil() as usize;
    if cap > 0 {
        expect = expect.min(cap);
    }
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
                &mut slots,
                &mut params,
                &mut rng_func,
                &sh.stop,
            );
            match r {
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
            out.keep(rec, cap, &mut rng_record);
        }
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
    out.restore_order(cap);
    out.finished = last_end;
    out.cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
    out.counters = s.counters();
}
