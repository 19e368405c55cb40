//! The runner: one sample of a workload, with a thread per session, a
//! shared start line, one clock, and per-thread columnar records merged at
//! the end. `plan` is what to run, `gate` the start line, `session` a
//! session's thread, `progress` the live counters, `summary` the per-sample
//! moments, status counts and latency histograms, `sample` the whole.

mod gate;
mod plan;
mod progress;
mod sample;
mod session;
mod summary;
#[cfg(test)]
mod tests;

pub use gate::Anchor;
pub use plan::{Capture, Command, PipelineOp, Plan, Protocol, SqlText, Transaction};
pub use progress::{Progress, ThreadStats};
pub use sample::{thread_cpu_ns, Columns, Fatal, FatalKind, PrepareFailure, Sample, SampleResult};
pub use summary::{merge_sessions, Bins, Moments, SessionSummary, Statuses, Summaries};
