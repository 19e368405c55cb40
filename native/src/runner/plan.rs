//! The plan of a sample: the workload as the runner executes it, decoded
//! once from Python (see `decode`) before anything starts.

pub use crate::backend::Protocol;
use crate::script::{Expr, Value};

pub enum Command {
    Set(usize, Expr),
    Sleep(Expr, u64),
    /// A statement of `Plan::sqls`, the slots whose values are the parameters,
    /// and the `Plan::captures` entry that stores its result, if any.
    Sql {
        stmt: usize,
        params: Vec<usize>,
        capture: Option<usize>,
    },
    /// `\\copy`: a bulk load of `Plan::copies[usize]`; a generated one has its bounds.
    Copy(usize, Option<(Expr, Expr)>),
    /// `\if` and `\elif`: go on with command `usize` unless the condition holds.
    JumpUnless(Expr, usize),
    /// The end of a taken `\if` branch: continue after `\endif`.
    Jump(usize),
    /// `\startpipeline`, `\syncpipeline`, `\endpipeline`.
    Pipeline(PipelineOp),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PipelineOp {
    Start,
    Sync,
    End,
}

/// `\gset` / `\aset`: the result's columns become the variables named
/// prefix + column name. Column names are known only once the statement is
/// prepared, so each session maps them to slots in its set-up.
pub struct Capture {
    pub stmt: usize,
    /// `\aset`: any number of rows, the last one wins; `\gset` wants exactly one.
    pub any_rows: bool,
    pub prefix: String,
    /// Whether the columns become variables by name (`\gset`/`\aset`); a
    /// capture only of the transaction's result has none.
    pub names: bool,
    /// The slot the first column goes to: the statement is its transaction's
    /// last, and the transaction records its result (`result = true`).
    pub result_slot: Option<usize>,
}

pub struct Transaction {
    pub name: String,
    pub weight: u64,
    pub commands: Vec<Command>,
    /// The slot holding its result when it records one (`result = true`).
    pub result_slot: Option<usize>,
}

/// A distinct SQL text, prepared once per connection.
pub struct SqlText {
    pub text: String,
    pub n_params: usize,
    /// The literal text around the parameters (`n_params + 1` pieces), for the
    /// simple protocol, which sends values inside the text.
    pub parts: Vec<String>,
    /// Where it first appears, for error messages: (transaction, 1-based statement number).
    pub origin: (usize, usize),
    /// Several statements joined with `\\;`, sent as one query and never prepared.
    pub compound: bool,
    /// A compound's statements (empty otherwise), as the script's lexer split them.
    pub statements: Vec<String>,
}

pub struct Plan {
    pub transactions: Vec<Transaction>,
    pub sqls: Vec<SqlText>,
    pub session_sql: Vec<String>,
    pub slots: Vec<Value>,
    /// Each slot's variable name, for `\gset` columns and error messages.
    pub slot_names: Vec<String>,
    /// Slots that only a `\gset`/`\aset` column can set: a session checks,
    /// once its statements are prepared, that some capture provides each.
    pub captured_slots: Vec<usize>,
    pub captures: Vec<Capture>,
    pub copies: Vec<crate::copy::CopySpec>,
    pub protocol: Protocol,
    /// Rows per round trip of a result (PostgreSQL portals); 0: all at once.
    pub fetch_size: u32,
    pub client_id_slot: Option<usize>,
    /// `:client_id` of the first session: session `i` has `first_session + i`. Not 0 on a
    /// load generator, whose sessions are numbered after the earlier generators' ones.
    pub first_session: u64,
    /// pgbench's `:default_seed` (the seed `hash()` and `permute()` use by default).
    pub default_seed_slot: Option<usize>,
    pub sessions: usize,
    /// Warm-up + measurement: the sample's time budget (0: no time limit).
    pub duration_ns: u64,
    /// A transaction that starts before t0 + warmup_ns is summarised as warm-up.
    pub warmup_ns: u64,
    pub max_transactions: u64,
    pub seed: u64,
    pub abort_on_error: bool,
    pub max_tries: u32,
    pub rate: f64,
    /// Probability that a transaction's row is kept (1: all, 0: none); the summaries
    /// count every transaction either way.
    pub record: f64,
    /// At most this many rows per sample (0: no limit). Beyond it each session keeps a
    /// uniform random subset of its share (reservoir sampling), so a very fast workload
    /// writes a bounded sample of rows instead of every transaction.
    pub max_rows: u64,
    /// A session whose connection drops connects again, for up to this long per outage, and
    /// goes on (0: it is lost for the rest of the sample).
    pub reconnect_ns: u64,
}

pub(super) const STREAM_CHOOSE: u64 = 0;
pub(super) const STREAM_FUNC: u64 = 1;
pub(super) const STREAM_THROTTLE: u64 = 2;
pub(super) const STREAM_RECORD: u64 = 3;
