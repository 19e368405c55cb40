//! Per-sample summaries built while the sample runs: for each (transaction type, warm-up)
//! the moments and latency histogram of its successful transactions, and for each
//! (transaction type, warm-up, status) a count. Each session thread keeps its own
//! [`SessionSummary`], sized once before the clock starts; the sample merges them at the end
//! (sums add, histograms merge exactly) into the three column tables of
//! `wannabet.store.summaries` (`moments`, `statuses`, `bins`).

use crate::backend::STATUS_NAMES;
use crate::histogram::LatencyHistogram;

/// A histogram's counts are sized up front for latencies to this value (10 s), so recording
/// does not allocate on the transaction path; a longer latency grows it once.
const PRESIZED_MAX_NS: u64 = 10_000_000_000;

/// The successful transactions of one (transaction type, warm-up).
#[derive(Clone)]
struct Group {
    count: u64,
    /// Exact integer sums, converted to milliseconds once at the end.
    sum_ns: u128,
    sumsq_ns: u128,
    sumlog_ms: f64,
    sumlog2_ms: f64,
    /// A latency of 0 ns has no logarithm: the log sums become NaN.
    nonpositive: bool,
    min_ns: u64,
    max_ns: u64,
    hist: LatencyHistogram,
}

impl Group {
    fn new() -> Group {
        Group {
            count: 0,
            sum_ns: 0,
            sumsq_ns: 0,
            sumlog_ms: 0.0,
            sumlog2_ms: 0.0,
            nonpositive: false,
            min_ns: u64::MAX,
            max_ns: 0,
            hist: LatencyHistogram::with_max(PRESIZED_MAX_NS),
        }
    }

    #[inline]
    fn record(&mut self, ns: u64) {
        self.count += 1;
        let wide = ns as u128;
        self.sum_ns += wide;
        self.sumsq_ns = self.sumsq_ns.saturating_add(wide * wide);
        if ns == 0 {
            self.nonpositive = true;
        } else {
            let l = (ns as f64 / 1e6).ln();
            self.sumlog_ms += l;
            self.sumlog2_ms += l * l;
        }
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.hist.record(ns);
    }

    fn merge(&mut self, o: &Group) {
        if o.count == 0 {
            return;
        }
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        self.sumsq_ns = self.sumsq_ns.saturating_add(o.sumsq_ns);
        self.sumlog_ms += o.sumlog_ms;
        self.sumlog2_ms += o.sumlog2_ms;
        self.nonpositive |= o.nonpositive;
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        self.hist.merge(&o.hist);
    }
}

const N_STATUS: usize = STATUS_NAMES.len();

/// The results (`result = true`) of the successful transactions of one
/// (transaction type, warm-up) that returned a number.
#[derive(Clone, Copy)]
struct ResultSums {
    count: u64,
    sum: f64,
    sumsq: f64,
    min: f64,
    max: f64,
}

impl Default for ResultSums {
    fn default() -> Self {
        ResultSums {
            count: 0,
            sum: 0.0,
            sumsq: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl ResultSums {
    fn record(&mut self, v: f64) {
        self.count += 1;
        self.sum += v;
        self.sumsq += v * v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    fn merge(&mut self, o: &ResultSums) {
        self.count += o.count;
        self.sum += o.sum;
        self.sumsq += o.sumsq;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
}

/// What one session has seen; index `2 * txn_type + warmup`.
#[derive(Clone, Default)]
pub struct SessionSummary {
    groups: Vec<Group>,
    statuses: Vec<[u64; N_STATUS]>,
    results: Vec<ResultSums>,
}

impl SessionSummary {
    /// Room for `n_types` transaction types, allocated now rather than on the
    /// transaction path.
    pub fn new(n_types: usize) -> SessionSummary {
        SessionSummary {
            groups: (0..2 * n_types).map(|_| Group::new()).collect(),
            statuses: vec![[0; N_STATUS]; 2 * n_types],
            results: vec![ResultSums::default(); 2 * n_types],
        }
    }

    /// The result of a successful transaction of type `txn`; NaN (no row,
    /// NULL) is not one.
    #[inline]
    pub fn record_result(&mut self, txn: usize, warmup: bool, value: f64) {
        if value.is_finite() {
            self.results[2 * txn + warmup as usize].record(value);
        }
    }

    /// One transaction of type `txn`: its status is counted; a successful one's latency
    /// (`end - intended`, clamped at 0) goes into the moments and the histogram.
    #[inline]
    pub fn record(&mut self, txn: usize, warmup: bool, status: i8, intended_ns: i64, end_ns: i64) {
        let g = 2 * txn + warmup as usize;
        self.statuses[g][status as usize] += 1;
        if status == 0 {
            self.groups[g].record(end_ns.saturating_sub(intended_ns).max(0) as u64);
        }
    }

    fn merge(&mut self, o: &SessionSummary) {
        if self.groups.is_empty() {
            *self = o.clone();
            return;
        }
        for (a, b) in self.groups.iter_mut().zip(&o.groups) {
            a.merge(b);
        }
        for (a, b) in self.statuses.iter_mut().zip(&o.statuses) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        for (a, b) in self.results.iter_mut().zip(&o.results) {
            a.merge(b);
        }
    }
}

/// The columns of `wannabet.store.summaries.MOMENT_COLUMNS`.
#[derive(Default, Debug, PartialEq)]
pub struct Moments {
    pub txn_type: Vec<i16>,
    pub warmup: Vec<bool>,
    pub count: Vec<i64>,
    pub sum_ms: Vec<f64>,
    pub sumsq_ms: Vec<f64>,
    pub sumlog_ms: Vec<f64>,
    pub sumlog2_ms: Vec<f64>,
    pub min_ns: Vec<i64>,
    pub max_ns: Vec<i64>,
}

/// The columns of `STATUS_COLUMNS`.
#[derive(Default, Debug, PartialEq)]
pub struct Statuses {
    pub txn_type: Vec<i16>,
    pub warmup: Vec<bool>,
    pub status: Vec<i8>,
    pub count: Vec<i64>,
}

/// The columns of `BIN_COLUMNS`: the non-empty histogram bins.
#[derive(Default, Debug, PartialEq)]
pub struct Bins {
    pub txn_type: Vec<i16>,
    pub warmup: Vec<bool>,
    pub lo_ns: Vec<i64>,
    pub hi_ns: Vec<i64>,
    pub count: Vec<i64>,
}

/// The columns of `RESULT_COLUMNS`: the transactions' results, where any.
#[derive(Default, Debug, PartialEq)]
pub struct Results {
    pub txn_type: Vec<i16>,
    pub warmup: Vec<bool>,
    pub count: Vec<i64>,
    pub sum: Vec<f64>,
    pub sumsq: Vec<f64>,
    pub min: Vec<f64>,
    pub max: Vec<f64>,
}

#[derive(Default, Debug, PartialEq)]
pub struct Summaries {
    pub moments: Moments,
    pub statuses: Statuses,
    pub bins: Bins,
    pub results: Results,
}

/// Merges the sessions' summaries into the sample's tables, ordered by transaction type,
/// warm-up first, then status or bin: the order of `wannabet.store.summaries.from_columns`.
pub fn merge_sessions<'a>(sessions: impl IntoIterator<Item = &'a SessionSummary>) -> Summaries {
    let mut all = SessionSummary::default();
    for s in sessions {
        all.merge(s);
    }
    let mut out = Summaries::default();
    let n_types = all.groups.len() / 2;
    for t in 0..n_types {
        for warmup in [true, false] {
            let i = 2 * t + warmup as usize;
            for (status, &n) in all.statuses[i].iter().enumerate() {
                if n > 0 {
                    let s = &mut out.statuses;
                    s.txn_type.push(t as i16);
                    s.warmup.push(warmup);
                    s.status.push(status as i8);
                    s.count.push(n as i64);
                }
            }
            let r = &all.results[i];
            if r.count > 0 {
                let o = &mut out.results;
                o.txn_type.push(t as i16);
                o.warmup.push(warmup);
                o.count.push(r.count as i64);
                o.sum.push(r.sum);
                o.sumsq.push(r.sumsq);
                o.min.push(r.min);
                o.max.push(r.max);
            }
            let g = &all.groups[i];
            if g.count == 0 {
                continue;
            }
            let m = &mut out.moments;
            m.txn_type.push(t as i16);
            m.warmup.push(warmup);
            m.count.push(g.count as i64);
            m.sum_ms.push(g.sum_ns as f64 / 1e6);
            m.sumsq_ms.push(g.sumsq_ns as f64 / 1e12);
            let (sl, sl2) = if g.nonpositive {
                (f64::NAN, f64::NAN)
            } else {
                (g.sumlog_ms, g.sumlog2_ms)
            };
            m.sumlog_ms.push(sl);
            m.sumlog2_ms.push(sl2);
            m.min_ns.push(g.min_ns as i64);
            m.max_ns.push(g.max_ns as i64);
            let (lo, hi, count) = g.hist.buckets();
            let b = &mut out.bins;
            b.txn_type.extend(std::iter::repeat_n(t as i16, lo.len()));
            b.warmup.extend(std::iter::repeat_n(warmup, lo.len()));
            // Every edge is at most MAX_VALUE_NS = i64::MAX.
            b.lo_ns.extend(lo.iter().map(|&v| v as i64));
            b.hi_ns.extend(hi.iter().map(|&v| v as i64));
            b.count.extend(count.iter().map(|&v| v as i64));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_sessions_equal_one_session_of_everything() {
        // (txn, warmup, status, intended, end)
        let rows: Vec<(usize, bool, i8, i64, i64)> = (0..2_000)
            .map(|i: i64| {
                let txn = (i % 3) as usize;
                let status = if i % 7 == 3 { 5 } else { 0 };
                let lat = (i * 7919) % 3_000_000 + (i % 5) * 10_000_000;
                (txn, i < 300, status, 1_000 * i, 1_000 * i + lat)
            })
            .collect();
        let mut one = SessionSummary::new(3);
        let mut a = SessionSummary::new(3);
        let mut b = SessionSummary::new(3);
        for (k, &(t, w, s, i, e)) in rows.iter().enumerate() {
            one.record(t, w, s, i, e);
            let half = if k % 2 == 0 { &mut a } else { &mut b };
            half.record(t, w, s, i, e);
        }
        let whole = merge_sessions([&one]);
        let split = merge_sessions([&a, &b]);
        assert_eq!(whole.statuses, split.statuses);
        assert_eq!(whole.bins, split.bins);
        assert_eq!(whole.moments.count, split.moments.count);
        assert_eq!(whole.moments.min_ns, split.moments.min_ns);
        assert_eq!(
            whole.moments.sum_ms, split.moments.sum_ms,
            "integer sums are exact"
        );
        // Row 0 (type 0, warm-up) succeeded in 0 ns: its group's log sums are NaN.
        assert!(whole.moments.sumlog_ms[0].is_nan());
        assert_eq!(whole.moments.txn_type, vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(
            whole.moments.warmup,
            vec![true, false, true, false, true, false]
        );
        let n_ok = rows.iter().filter(|r| r.2 == 0).count() as i64;
        assert_eq!(whole.moments.count.iter().sum::<i64>(), n_ok);
        assert_eq!(whole.bins.count.iter().sum::<i64>(), n_ok);
        assert_eq!(whole.statuses.count.iter().sum::<i64>(), rows.len() as i64);
    }

    #[test]
    fn results_add_up_across_sessions_and_skip_what_is_not_a_number() {
        let mut a = SessionSummary::new(2);
        let mut b = SessionSummary::new(2);
        a.record_result(1, false, 2.0);
        a.record_result(1, false, f64::NAN); // no row or NULL: not a result
        b.record_result(1, false, -3.5);
        b.record_result(1, true, 10.0);
        let r = merge_sessions([&a, &b]).results;
        assert_eq!(r.txn_type, vec![1, 1]);
        assert_eq!(r.warmup, vec![true, false]);
        assert_eq!(r.count, vec![1, 2]);
        assert_eq!(r.sum, vec![10.0, -1.5]);
        assert_eq!(r.sumsq, vec![100.0, 4.0 + 12.25]);
        assert_eq!((r.min[1], r.max[1]), (-3.5, 2.0));
    }

    #[test]
    fn moments_of_known_latencies() {
        let mut s = SessionSummary::new(1);
        for ns in [1_000_000i64, 2_000_000, 4_000_000] {
            s.record(0, false, 0, 10, 10 + ns);
        }
        s.record(0, false, 3, 0, 5); // a deadlock: counted, no latency
        s.record(0, false, 0, 100, 50); // ended "before" it was due: clamped to 0 ns
        let m = merge_sessions([&s]).moments;
        assert_eq!(m.count, vec![4]);
        assert_eq!(m.sum_ms, vec![7.0]);
        assert_eq!(m.sumsq_ms, vec![21.0]);
        assert_eq!(m.min_ns, vec![0]);
        assert_eq!(m.max_ns, vec![4_000_000]);
        assert!(m.sumlog_ms[0].is_nan() && m.sumlog2_ms[0].is_nan());

        let mut s = SessionSummary::new(1);
        for ns in [1_000_000i64, 2_000_000, 4_000_000] {
            s.record(0, true, 0, 0, ns);
        }
        let m = merge_sessions([&s]).moments;
        let l2 = 2f64.ln();
        assert!((m.sumlog_ms[0] - 3.0 * l2).abs() < 1e-12);
        assert!((m.sumlog2_ms[0] - 5.0 * l2 * l2).abs() < 1e-12);
    }
}
