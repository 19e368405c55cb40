//! Decoding of a sample request: the Python tuples of a compiled program
//! (`wannabet.engine.program`) into the runner's `Plan`, checked once per
//! call, never per transaction.

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyTuple};

use crate::runner::{Capture, Command, PipelineOp, Plan, Protocol, SqlText, Transaction};
use crate::script::{Expr, Func, Op, Value};

pub(crate) fn bad(msg: impl Into<String>) -> PyErr {
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
        "bool" => Expr::Bool(t.get_item(1)?.extract()?),
        "null" => Expr::Null,
        "var" => Expr::Var(slot_index(&t.get_item(1)?, n_slots)?),
        "neg" => Expr::Neg(Box::new(parse_expr(&t.get_item(1)?, n_slots)?)),
        "bitnot" => Expr::BitNot(Box::new(parse_expr(&t.get_item(1)?, n_slots)?)),
        "not" => Expr::Not(Box::new(parse_expr(&t.get_item(1)?, n_slots)?)),
        "is" => {
            let what = t.get_item(2)?;
            let what = if what.is_none() {
                Value::Null
            } else {
                Value::Bool(what.extract()?)
            };
            Expr::Is(Box::new(parse_expr(&t.get_item(1)?, n_slots)?), what)
        }
        "and" | "or" => {
            let a = Box::new(parse_expr(&t.get_item(1)?, n_slots)?);
            let b = Box::new(parse_expr(&t.get_item(2)?, n_slots)?);
            if tag == "and" {
                Expr::And(a, b)
            } else {
                Expr::Or(a, b)
            }
        }
        "case" => {
            let mut arms = Vec::new();
            for arm in t.get_item(1)?.try_iter()? {
                let arm = tuple(&arm?, "case arm")?;
                arms.push((
                    parse_expr(&arm.get_item(0)?, n_slots)?,
                    parse_expr(&arm.get_item(1)?, n_slots)?,
                ));
            }
            if arms.is_empty() {
                return Err(bad("CASE needs at least one WHEN"));
            }
            let otherwise = t.get_item(2)?;
            let otherwise = if otherwise.is_none() {
                None
            } else {
                Some(Box::new(parse_expr(&otherwise, n_slots)?))
            };
            Expr::Case(arms, otherwise)
        }
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
    captures: Vec<Capture>,
    copies: Vec<crate::copy::CopySpec>,
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
            let parts: Vec<String> = t.get_item(3)?.extract()?;
            if parts.len() != params.len() + 1 {
                return Err(bad("a statement needs one more text part than parameters"));
            }
            let compound = t.len() > 6 && t.get_item(6)?.extract::<bool>()?;
            let statements: Vec<String> = if t.len() > 7 {
                t.get_item(7)?.extract()?
            } else {
                Vec::new()
            };
            let next = dedup.sqls.len();
            let id = *dedup.index.entry(text.clone()).or_insert(next);
            if id == next {
                dedup.sqls.push(SqlText {
                    text,
                    n_params: params.len(),
                    parts,
                    origin,
                    compound,
                    statements,
                });
            } else if dedup.sqls[id].n_params != params.len() {
                return Err(bad(
                    "the same SQL text is used with different parameter counts",
                ));
            }
            let capture = t.get_item(4)?;
            // The transaction's result: this statement's first column goes to that slot.
            let result_slot = if t.len() > 5 {
                let r: i64 = t.get_item(5)?.extract()?;
                (r >= 0)
                    .then(|| slot_index(&t.get_item(5)?, n_slots))
                    .transpose()?
            } else {
                None
            };
            let capture = if capture.is_none() {
                result_slot.map(|slot| {
                    dedup.captures.push(Capture {
                        stmt: id,
                        any_rows: true,
                        prefix: String::new(),
                        names: false,
                        result_slot: Some(slot),
                    });
                    dedup.captures.len() - 1
                })
            } else {
                let c = tuple(&capture, "capture")?;
                let kind: String = c.get_item(0)?.extract()?;
                let any_rows = match kind.as_str() {
                    "gset" => false,
                    "aset" => true,
                    _ => return Err(bad(format!("unknown capture {kind:?}"))),
                };
                dedup.captures.push(Capture {
                    stmt: id,
                    any_rows,
                    prefix: c.get_item(1)?.extract()?,
                    names: true,
                    result_slot,
                });
                Some(dedup.captures.len() - 1)
            };
            Command::Sql {
                stmt: id,
                params,
                capture,
            }
        }
        "copy" => {
            let spec = tuple(&t.get_item(1)?, "copy")?;
            let columns: Vec<String> = spec.get_item(1)?.extract()?;
            let path: Option<String> = spec.get_item(2)?.extract()?;
            let series = t.get_item(2)?;
            let series = if series.is_none() {
                None
            } else {
                let b = tuple(&series, "series")?;
                Some((
                    parse_expr(&b.get_item(0)?, n_slots)?,
                    parse_expr(&b.get_item(1)?, n_slots)?,
                ))
            };
            if path.is_none() == series.is_none() {
                return Err(bad("a copy reads a file or a series, one of them"));
            }
            dedup.copies.push(crate::copy::CopySpec {
                table: spec.get_item(0)?.extract()?,
                columns,
                path,
                options: spec.get_item(3)?.extract()?,
                options_sql: spec.get_item(4)?.extract()?,
            });
            Command::Copy(dedup.copies.len() - 1, series)
        }
        "jump_unless" => Command::JumpUnless(
            parse_expr(&t.get_item(1)?, n_slots)?,
            t.get_item(2)?.extract()?,
        ),
        "jump" => Command::Jump(t.get_item(1)?.extract()?),
        "pipeline" => {
            let kind: String = t.get_item(1)?.extract()?;
            Command::Pipeline(match kind.as_str() {
                "start" => PipelineOp::Start,
                "sync" => PipelineOp::Sync,
                "end" => PipelineOp::End,
                _ => return Err(bad(format!("unknown pipeline command {kind:?}"))),
            })
        }
        _ => return Err(bad(format!("unknown command tag {tag:?}"))),
    })
}

type Parsed = (
    Vec<Transaction>,
    Vec<SqlText>,
    Vec<Capture>,
    Vec<crate::copy::CopySpec>,
);

fn parse_transactions(o: &Bound<'_, PyAny>, n_slots: usize) -> PyResult<Parsed> {
    let mut dedup = SqlDedup {
        sqls: Vec::new(),
        index: HashMap::new(),
        captures: Vec::new(),
        copies: Vec::new(),
    };
    let mut txns = Vec::new();
    for (ti, item) in o.try_iter()?.enumerate() {
        let t = tuple(&item?, "transaction")?;
        let name: String = t.get_item(0)?.extract()?;
        let weight: u64 = t.get_item(1)?.extract()?;
        let result_slot = if t.len() > 3 {
            let r: i64 = t.get_item(3)?.extract()?;
            (r >= 0)
                .then(|| slot_index(&t.get_item(3)?, n_slots))
                .transpose()?
        } else {
            None
        };
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
        let n = commands.len();
        let jumps_inside = commands.iter().all(|c| match c {
            Command::JumpUnless(_, to) | Command::Jump(to) => *to <= n,
            _ => true,
        });
        if !jumps_inside {
            return Err(bad("a jump leaves its transaction"));
        }
        txns.push(Transaction {
            name,
            weight,
            commands,
            result_slot,
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
    Ok((txns, dedup.sqls, dedup.captures, dedup.copies))
}

fn parse_seed(o: &Bound<'_, PyAny>) -> PyResult<u64> {
    // Any int is a fine seed; negative ones wrap.
    match o.extract::<u64>() {
        Ok(v) => Ok(v),
        Err(_) => Ok(o.extract::<i64>()? as u64),
    }
}

/// The `on_error` values a request may carry: go on after a failed
/// transaction, or stop the sample.
pub(crate) const ON_ERROR: [&str; 2] = ["continue", "abort"];

/// What `run_sample` needs, read from the attributes of one Python object
/// (`wannabet.engine.native._NativeRequest`, a frozen dataclass).
#[derive(FromPyObject)]
pub(crate) struct SampleCall<'py> {
    #[pyo3(attribute)]
    pub target: String,
    /// Not None: the sessions are a Python DB-API driver's, made by its
    /// `connect()` (`wannabet.engine.dbapi`), and `target` is only shown.
    #[pyo3(attribute)]
    pub connector: Option<Py<PyAny>>,
    #[pyo3(attribute)]
    sessions: usize,
    #[pyo3(attribute)]
    transactions: Bound<'py, PyAny>,
    #[pyo3(attribute)]
    session_sql: Vec<String>,
    #[pyo3(attribute)]
    slots: Bound<'py, PyAny>,
    #[pyo3(attribute)]
    slot_names: Vec<String>,
    #[pyo3(attribute)]
    captured_slots: Vec<usize>,
    #[pyo3(attribute)]
    protocol: String,
    #[pyo3(attribute)]
    fetch_size: u32,
    #[pyo3(attribute)]
    client_id_slot: i64,
    /// The first session's `:client_id` (a load generator's sessions follow the ones before).
    #[pyo3(attribute)]
    first_session: u64,
    #[pyo3(attribute)]
    default_seed_slot: i64,
    /// Not empty: on PostgreSQL the sessions are named `<application_name>-<role>`.
    #[pyo3(attribute)]
    pub role: String,
    #[pyo3(attribute)]
    duration_ns: u64,
    #[pyo3(attribute)]
    max_transactions: u64,
    #[pyo3(attribute)]
    seed: Bound<'py, PyAny>,
    #[pyo3(attribute)]
    on_error: String,
    #[pyo3(attribute)]
    max_tries: u32,
    #[pyo3(attribute)]
    rate: f64,
    #[pyo3(attribute)]
    warmup_ns: u64,
    #[pyo3(attribute)]
    record: f64,
    #[pyo3(attribute)]
    max_rows: u64,
    #[pyo3(attribute)]
    reconnect_ns: u64,
    /// The sample's deadline from its start (0: none); see `run_sample`.
    #[pyo3(attribute)]
    pub deadline_ns: u64,
    /// How long past the deadline a sample may run before it is cut short.
    #[pyo3(attribute)]
    pub grace_ns: u64,
}

impl SampleCall<'_> {
    /// The checked plan of the sample.
    pub fn plan(&self) -> PyResult<Plan> {
        let slots = self
            .slots
            .try_iter()?
            .map(|v| parse_value(&v?))
            .collect::<PyResult<Vec<_>>>()?;
        let (transactions, sqls, captures, copies) =
            parse_transactions(&self.transactions, slots.len())?;
        if self.slot_names.len() != slots.len() {
            return Err(bad("one name per slot"));
        }
        if self.captured_slots.iter().any(|&s| s >= slots.len()) {
            return Err(bad("captured slot out of range"));
        }
        let protocol = Protocol::parse(&self.protocol)
            .ok_or_else(|| bad("protocol must be 'simple', 'extended' or 'prepared'"))?;
        if self.sessions == 0 {
            return Err(bad("sessions must be >= 1"));
        }
        if self.duration_ns == 0 && self.max_transactions == 0 {
            return Err(bad("need a duration or a transaction count"));
        }
        let abort_on_error = match self.on_error.as_str() {
            "continue" => false,
            "abort" => true,
            _ => return Err(bad("on_error must be 'continue' or 'abort'")),
        };
        let rate = self.rate;
        if !(rate >= 0.0 && rate.is_finite()) {
            return Err(bad("rate must be >= 0"));
        }
        let record = self.record;
        if !(0.0..=1.0).contains(&record) {
            return Err(bad("record must be a fraction from 0 to 1"));
        }
        let optional_slot = |i: i64, what: &str| match i {
            -1 => Ok(None),
            i if i >= 0 && (i as usize) < slots.len() => Ok(Some(i as usize)),
            _ => Err(bad(format!("{what} out of range"))),
        };
        let client_id_slot = optional_slot(self.client_id_slot, "client_id_slot")?;
        let default_seed_slot = optional_slot(self.default_seed_slot, "default_seed_slot")?;
        Ok(Plan {
            transactions,
            sqls,
            session_sql: self.session_sql.clone(),
            slots,
            slot_names: self.slot_names.clone(),
            captured_slots: self.captured_slots.clone(),
            captures,
            copies,
            protocol,
            fetch_size: self.fetch_size,
            client_id_slot,
            first_session: self.first_session,
            default_seed_slot,
            sessions: self.sessions,
            duration_ns: self.duration_ns,
            max_transactions: self.max_transactions,
            seed: parse_seed(&self.seed)?,
            abort_on_error,
            max_tries: self.max_tries.max(1),
            rate,
            warmup_ns: self.warmup_ns,
            record,
            max_rows: self.max_rows,
            reconnect_ns: self.reconnect_ns,
        })
    }
}
